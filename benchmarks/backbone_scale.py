"""Our training path on `minilm-l6` and on the base-size `mpnet-base`, in one run on this machine: the step time a
base-size run is planned from, and each backbone's throughput and model FLOP utilization (MFU).

Both backbones train the throughput benchmark's MRPC rows (`--task cola`: CoLA's, for planning): `full` and
`houlsby` size 64, batch 32, sequences cut at 128 tokens, length-grouped batches, in the machine's precision
(`precision: auto`), each training in its own process under the sweep's allocator. The backbones alternate round by
round (small, base; base, small; ...), so the VM's drifts fall on both. MFU is against the matmul peak of the
precision the runs train in, measured before and after each round (the best). Step times only, no dev metric.

    python benchmarks/backbone_scale.py   # about 12 minutes on AVX512-BF16; writes backbone_scale-<kind>.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import torch
from throughput import _model_for_flops, machine_kind, matmul_peak, train_flops_per_token

from adaptstudy.common.files import write_json_atomic
from adaptstudy.launch.allocator import preload_env
from adaptstudy.training.device import provenance, resolve_precision

BACKBONES = ("minilm-l6", "mpnet-base")
METHODS = ("full", "houlsby")
EXAMPLES = 480  # 15 steps of 32
WARMUP = 3
ROUNDS = 2


def timed_steps(task: str, backbone: str, method: str) -> dict:
    """The throughput benchmark's `ours_classification` on `task` for `backbone`, in a process of its own."""
    job = json.dumps(
        {"fn": "ours_classification", "args": [task, method, EXAMPLES, 32, False, 0], "kw": {"backbone": backbone}}
    )
    done = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "throughput.py"), "--child", job],
        env=preload_env(os.environ),
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"{backbone} {method} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"  {task} {backbone} {method}: median step {statistics.median(result['step_times'][WARMUP:]):.2f} s",
        flush=True,
    )
    return result


def run(task: str = "mrpc") -> dict:
    precision = resolve_precision("auto")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    peaks, times, useful = [matmul_peak(dtype)], {}, {}
    for round_ in range(ROUNDS):
        order = BACKBONES if round_ % 2 == 0 else BACKBONES[::-1]
        for backbone in order:
            for method in METHODS:
                result = timed_steps(task, backbone, method)
                times.setdefault((backbone, method), []).extend(result["step_times"][WARMUP:])
                useful[(backbone, method)] = result["useful"]
        peaks.append(matmul_peak(dtype))
    peak = max(peaks)
    rows = []
    for (backbone, method), steps in times.items():
        step = statistics.median(steps)
        tokens_per_s = 32 / step * useful[(backbone, method)]
        flops = train_flops_per_token(_model_for_flops(task, method, backbone), useful[(backbone, method)])
        rows.append(
            {
                "backbone": backbone,
                "row": f"{task}/{method}",
                "timed_steps": len(steps),
                "median_step_s": step,
                "steps_per_s": 1 / step,
                "useful_tokens_per_example": useful[(backbone, method)],
                "useful_tokens_per_s": tokens_per_s,
                "model_flops_per_s": flops * tokens_per_s,
                "mfu": flops * tokens_per_s / peak,
            }
        )
        print(f"{backbone:<11} {task}/{method:<8} {step:6.2f} s/step  MFU {100 * rows[-1]['mfu']:4.1f}% ({precision})")
    return {
        **provenance(kind=machine_kind(precision), matmul_peak_flops=peak, matmul_peaks_measured=peaks),
        "precision": precision,
        "examples": EXAMPLES,
        "warmup_steps": WARMUP,
        "rounds": ROUNDS,
        "rows": rows,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="mrpc", help="the rows' task (default mrpc; the book shows mrpc)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = run(args.task)
    suffix = "" if args.task == "mrpc" else f"-{args.task}"
    out = args.out or Path(__file__).parent / "results" / f"backbone_scale{suffix}-{result['machine']['kind']}.json"
    write_json_atomic(result, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
