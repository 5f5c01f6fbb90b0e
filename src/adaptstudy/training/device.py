"""Where training runs and in which precision: CUDA when present, else the CPU.

`precision="auto"` means bf16 autocast wherever the hardware computes in bf16 natively (CUDA
with bf16, or a CPU with AVX512-BF16/AMX, where a bf16 matmul runs several times faster than
fp32) and fp32 elsewhere; CPUs without native bf16 would only emulate it. Weights, optimizer
state and the loss stay in fp32 under autocast. The record keeps which precision was used.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import torch
from transformers import TrainingArguments

NATIVE_BF16_CPU_FLAGS = {"avx512_bf16", "amx_bf16"}


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


def native_bf16() -> bool:
    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    return bool(NATIVE_BF16_CPU_FLAGS & cpu_flags())


def use_bf16(precision: str) -> bool:
    return precision == "bf16" or (precision == "auto" and native_bf16())


def trainer_device_args(precision: str = "auto") -> dict[str, Any]:
    """`TrainingArguments` for the device at hand: bf16 autocast per `precision`, TF32 on Ampere+."""
    if torch.cuda.is_available():
        return {"use_cpu": False, "bf16": use_bf16(precision), "tf32": torch.cuda.get_device_capability()[0] >= 8}
    return {"use_cpu": True, "bf16": use_bf16(precision)}


def training_arguments(precision: str = "auto", **kwargs):
    """`transformers.TrainingArguments` on this device, in `precision`, with `kwargs`.

    TrainingArguments(bf16=True) sets the environment variable ACCELERATE_MIXED_PRECISION and
    nothing ever unsets it (transformers 4.57), so a later fp32 run in the same process (a sweep,
    a benchmark) would silently run under bf16 autocast. Each run here says its own precision.
    """
    device = trainer_device_args(precision)
    os.environ["ACCELERATE_MIXED_PRECISION"] = "bf16" if device["bf16"] else "no"
    return TrainingArguments(**{**device, **kwargs})
