"""Where training runs and in which precision: CUDA when present, else the CPU.

`precision="auto"` means mixed precision wherever the hardware computes in 16 bits natively and fp32
elsewhere: bf16 autocast on a CUDA GPU with native bf16 (Ampere and newer: A100, L4) or a CPU with
AVX512-BF16/AMX where a bf16 matmul measures faster than fp32 (`cpu_bf16_speedup`: about 2× on most such
machines; an Intel Xeon virtual machine with the flag ran it at 0.55×); fp16 autocast with dynamic loss
scaling (the Trainer's GradScaler) on a CUDA GPU without it (T4, V100), whose range needs the scaling; fp32 on
other CPUs, which would only emulate bf16. torch reports bf16 on a T4 as "supported" by emulation, so native
support is asked for.

The CPU's speedup is measured once per kind of machine (`machine_kind`) and kept in the cache with its figure
(`cpu_bf16_speedup`), not timed again in each process: a 0.1-second stopwatch under a neighbour's load picked fp32 in
one process and bf16 in the next, so one configuration trained in two precisions. Flags alone cannot decide (an Intel
Xeon VM with AVX512-BF16 ran bf16 at 0.55x fp32), and a table of machine kinds would not know the next one.

Weights, optimizer state and the loss stay in fp32 under autocast. The record keeps which
precision was used. fp16 is refused on the CPU before any work starts.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, get_args

import torch
from transformers import TrainingArguments

from adaptstudy.common.files import run_lock, write_json_atomic
from adaptstudy.common.paths import cache_root
from adaptstudy.runs.base import ConfigError, Precision
from adaptstudy.runs.identity import git_commit, versions

NATIVE_BF16_CPU_FLAGS = {"avx512_bf16", "amx_bf16"}
BF16_MIN_SPEEDUP = 1.2  # below it bf16's rounding buys too little time (the matmuls are part of a step only)
PRECISIONS: tuple[str, ...] = get_args(Precision)


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux); empty where /proc/cpuinfo is not there."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def cuda_native_bf16() -> bool:
    """The CUDA GPU computes in bf16 natively (not by emulation, which torch>=2.3 also calls supported)."""
    try:
        return torch.cuda.is_bf16_supported(including_emulation=False)
    except TypeError:  # torch < 2.3: no emulation counted
        return torch.cuda.is_bf16_supported()


def cpu_name() -> str:
    """The processor's model name (Linux), recorded beside every speed figure."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def machine_description() -> dict[str, Any]:
    """What every speed figure is recorded with: the processor, its cores and torch's threads, the kernels torch
    picks (CPU capability), native bf16 (on such a CPU, how much faster bf16 measured), and the precision `auto`
    trains in here."""
    return {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "native_bf16": native_bf16(),
        **({"bf16_speedup": round(cpu_bf16_speedup(), 2)} if native_bf16() and not torch.cuda.is_available() else {}),
        "precision": resolve_precision("auto"),
        "allocator": allocator_in_use(),
    }


def provenance(**machine: Any) -> dict[str, Any]:
    """The header of every benchmark's JSON: a speed means nothing without the machine (with any extra fields the
    benchmark knows, e.g. its measured matmul peak), the library versions and the commit it was measured at."""
    return {"machine": {**machine_description(), **machine}, "versions": versions(), "git_commit": git_commit()}


def allocator_in_use() -> str:
    """ "tcmalloc" or "jemalloc" when one is loaded into this process (`adaptstudy.launch.allocator`), else "system"."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return "system"
    return next((name for name in ("tcmalloc", "jemalloc") if f"lib{name}" in maps), "system")


def native_bf16() -> bool:
    if torch.cuda.is_available():
        return cuda_native_bf16()
    return bool(NATIVE_BF16_CPU_FLAGS & cpu_flags())


def machine_kind() -> str:
    """What a kept bf16 measurement holds for: the processor, its native bf16 flags, torch's CPU kernels, the cores."""
    flags = ",".join(sorted(NATIVE_BF16_CPU_FLAGS & cpu_flags())) or "no native bf16"
    return f"{cpu_name()} | {flags} | {torch.backends.cpu.get_cpu_capability()} | {os.cpu_count()} cores"


@functools.cache
def cpu_bf16_speedup() -> float:
    """`measure_bf16_speedup` on this kind of machine, measured once (under a lock: concurrent processes wait for the
    first) and kept in the cache's `machines/` folder with its figure and date, so every process here agrees."""
    kind = machine_kind()
    folder = cache_root() / "machines"
    path = folder / f"{hashlib.sha256(kind.encode()).hexdigest()[:16]}.json"
    folder.mkdir(parents=True, exist_ok=True)
    with run_lock(folder, path.stem):
        try:
            kept = json.loads(path.read_text())
            if kept["kind"] == kind:
                return float(kept["bf16_speedup"])
        except (OSError, ValueError, KeyError):
            pass
        speedup = measure_bf16_speedup()
        measured = {"kind": kind, "bf16_speedup": speedup, "measured_at": datetime.now(timezone.utc).isoformat()}
        write_json_atomic({**measured, "torch": torch.__version__}, path)
        return speedup


def measure_bf16_speedup(rounds: int = 20, calls: int = 4) -> float:
    """How much faster one linear layer of a training step's shape (512 tokens, 384 to 1,536) runs under bf16
    autocast than in fp32 on one core of this CPU: the best time of each over interleaved rounds (about 0.4 s in
    all), so a neighbour's load slows both alike. The flags say the CPU has bf16 instructions, not that torch's
    kernels run faster with them here."""
    x, w = torch.randn(512, 384), torch.randn(1536, 384)

    def best(bf16: bool) -> float:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            torch.nn.functional.linear(x, w)  # warm-up: the kernel's first call pays for its setup
            start = time.perf_counter()
            for _ in range(calls):
                torch.nn.functional.linear(x, w)
            return time.perf_counter() - start

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a property of the machine, not of how many threads this process runs
    try:
        times = {False: float("inf"), True: float("inf")}
        for _ in range(rounds):  # interleaved: a burst of load during one side's rounds would bias the ratio
            for bf16 in times:
                times[bf16] = min(times[bf16], best(bf16))
    finally:
        torch.set_num_threads(threads)
    return times[False] / times[True]


def resolve_precision(precision: str = "auto") -> str:
    """The precision a run set to `precision` trains in on this machine: "bf16", "fp16" or "fp32".

    Raises `ConfigError` (naming the valid choices) for an unknown precision and for fp16 without a CUDA GPU."""
    if precision not in PRECISIONS:
        raise ConfigError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
    cuda = torch.cuda.is_available()
    if precision == "fp16" and not cuda:
        valid = ", ".join(p for p in PRECISIONS if p != "fp16")
        raise ConfigError(
            f"precision 'fp16' needs a CUDA GPU (autocast with loss scaling); this machine has none. "
            f"Valid here: {valid} ('auto' picks fp16 on a GPU without bf16)"
        )
    if precision != "auto":
        return precision
    if cuda:
        return "bf16" if cuda_native_bf16() else "fp16"
    return "bf16" if native_bf16() and cpu_bf16_speedup() >= BF16_MIN_SPEEDUP else "fp32"


def use_bf16(precision: str) -> bool:
    return resolve_precision(precision) == "bf16"


def trainer_device_args(precision: str = "auto") -> dict[str, Any]:
    """`TrainingArguments` for the device at hand: bf16 or fp16 autocast per `precision`, TF32 on Ampere+."""
    used = resolve_precision(precision)
    half = {"bf16": used == "bf16", "fp16": used == "fp16"}
    if torch.cuda.is_available():
        return {"use_cpu": False, **half, "tf32": torch.cuda.get_device_capability()[0] >= 8}
    return {"use_cpu": True, **half}


def training_arguments(precision: str = "auto", **kwargs):
    """`transformers.TrainingArguments` on this device, in `precision`, with `kwargs`.

    TrainingArguments(bf16=True) (or fp16=True) sets the environment variable ACCELERATE_MIXED_PRECISION and
    nothing ever unsets it (transformers 4.57), so a later fp32 run in the same process (a sweep, a benchmark)
    would silently run under autocast. Each run here says its own precision.
    """
    device = trainer_device_args(precision)
    os.environ["ACCELERATE_MIXED_PRECISION"] = "bf16" if device["bf16"] else "fp16" if device["fp16"] else "no"
    return TrainingArguments(**{**device, **kwargs})
