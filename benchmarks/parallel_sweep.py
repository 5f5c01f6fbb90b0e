"""Cells per hour of one sweep: in process with all threads against Ray workers sharing the cores.

One 6-cell CPU grid (MRPC, full fine-tuning and Houlsby adapters of size 64, seeds 1-3, 2,000 training examples,
one epoch, the whole dev set) runs twice through the documented command, each time into a fresh results folder:
`python -m adaptstudy.sweep GRID --threads C` (one cell after another, C = the machine's cores), then
`--workers C --threads 1` (C cells at once on a local Ray, one thread each). The wall time includes starting the
process and, for Ray, starting Ray: what a user waits for. The two runs train the same cells (same run ids); their
dev metrics differ only by the summation order of C threads against one.

    python benchmarks/parallel_sweep.py    # about 20 minutes on 2 cores; writes benchmarks/results/parallel_sweep.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from adaptstudy.common.files import write_json_atomic
from adaptstudy.training.device import provenance

GRID = {
    "study": "parallel_sweep_benchmark",
    "fixed": {
        "task": "mrpc",
        "backbone": "minilm-l6",
        "num_train_epochs": 1,
        "max_train_examples": 2000,
        "max_seq_length": 128,
        "batch_size": 32,
    },
    "axes": {
        "seed": [1, 2, 3],
        "method": {"full": {"learning_rate": [5.0e-5]}, "houlsby": {"adapter_size": [64], "learning_rate": [1.0e-3]}},
    },
}


def sweep(grid: Path, results: Path, *options: str, parallel: int = 1) -> dict:
    """One engine over the grid: wall seconds, cells per hour, and where the seconds went: `busy_s`, the cells'
    training and evaluation seconds over the `parallel` cells at once; `overhead_s`, the rest (starting the
    process, Ray and its workers, loading data and models)."""
    start = time.perf_counter()
    command = [sys.executable, "-m", "adaptstudy.sweep", str(grid), "--results-dir", str(results), *options]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    records = [json.loads(p.read_text()) for p in sorted(results.glob("*.json"))]
    busy = sum(r["train_runtime_s"] + r["eval_runtime_s"] for r in records) / parallel
    assert all(r["status"] == "ok" for r in records), "a cell failed"
    return {
        "command": "python -m adaptstudy.sweep GRID " + " ".join(options),
        "wall_s": wall,
        "cells": len(records),
        "cells_per_hour": len(records) * 3600 / wall,
        "train_s": sum(r["train_runtime_s"] for r in records),
        "eval_s": sum(r["eval_runtime_s"] for r in records),
        "busy_s": busy,
        "overhead_s": wall - busy,
        "torch_threads": sorted({r["torch_threads"] for r in records}),
        "metrics": {r["run_id"]: r["main_metric_value"] for r in records},
    }


def run() -> dict:
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="adaptstudy-parallel-") as scratch:
        grid = Path(scratch) / "grid.yaml"
        grid.write_text(yaml.safe_dump(GRID))
        engines = {
            "in process": sweep(grid, Path(scratch) / "sequential", "--threads", str(cores)),
            "ray": sweep(grid, Path(scratch) / "ray", "--workers", str(cores), "--threads", "1", parallel=cores),
        }
    sequential, ray = engines["in process"], engines["ray"]
    assert set(sequential["metrics"]) == set(ray["metrics"]), "the engines ran different cells"
    return {
        **provenance(cores=cores),
        "grid": GRID,
        "engines": engines,
        "speedup": ray["cells_per_hour"] / sequential["cells_per_hour"],
        "largest_metric_difference": max(abs(sequential["metrics"][k] - ray["metrics"][k]) for k in ray["metrics"]),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "parallel_sweep.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("ADAPTSTUDY_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    result = run()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(result, args.out)
    for name, engine in result["engines"].items():
        rate, wall, cells = engine["cells_per_hour"], engine["wall_s"], engine["cells"]
        print(f"{name:<11} {rate:6.1f} cells/h ({wall:.0f} s for {cells} cells)")
    print(f"ray / in process: {result['speedup']:.2f}x; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
