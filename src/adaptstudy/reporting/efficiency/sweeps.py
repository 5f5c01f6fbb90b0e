"""The Efficiency page's last section: sweeps beyond one process (`benchmarks/parallel_sweep.py`), one grid run in
process and on a local Ray, and what that means for the default."""

from __future__ import annotations

import pandas as pd

PARALLEL_GAIN = 1.05  # Ray must give at least 5% more cells per hour to be worth its start-up and its extra package


def parallel_table(benchmark: dict) -> pd.DataFrame:
    """One row per sweep engine: cells per hour over the same grid, and where the seconds went."""
    rows = []
    for engine, e in benchmark.get("engines", {}).items():
        rows.append(
            {
                "engine": engine,
                "command": e["command"],
                "torch threads per cell": ", ".join(map(str, e["torch_threads"])),
                "cells": e["cells"],
                "wall (min)": e["wall_s"] / 60,
                "cells per hour": e["cells_per_hour"],
                "training and evaluation, over the cells at once (min)": e["busy_s"] / 60,
                "the rest: start-up, loading (min)": e["overhead_s"] / 60,
            }
        )
    return pd.DataFrame(rows)


def parallel_note(benchmark: dict) -> str:
    """What the comparison measured, on which machine, and what it means for the default."""
    if "missing" in benchmark:
        return f"**Not measured yet**: run `python benchmarks/parallel_sweep.py` to write `{benchmark['missing']}`."
    m, grid, gain = benchmark["machine"], benchmark["grid"]["fixed"], benchmark["speedup"]
    here, ray = benchmark["engines"]["in process"], benchmark["engines"]["ray"]
    work_gain = here["busy_s"] / ray["busy_s"]
    extra = ray["overhead_s"] - here["overhead_s"]
    setting = (
        f"Measured on {m['cpu']} ({m['cores']} cores, CPU capability {m['cpu_capability']}, precision "
        f"{m['precision']}) over one grid of {ray['cells']} cells ({grid['task'].upper()}, full fine-tuning and "
        f"Houlsby adapters, {grid['max_train_examples']:,} training examples, {grid['num_train_epochs']} epoch, the "
        "whole dev set), each engine once, in process first. Wall time includes starting the process and, for Ray, "
        "starting Ray and its workers. Both ran the same run ids; "
        + (
            f"their dev metrics differ by at most {difference:.2f} points (threads sum in another order). "
            if (difference := benchmark["largest_metric_difference"]) > 0
            else "their dev metrics are equal. "
        )
    )
    measured = (
        f"Ray with {m['cores']} workers of one thread ran **{gain:.2f}×** the cells per hour of one process with "
        f"{m['cores']} threads. The cells' own work (training and evaluation) ran {work_gain:.2f}× as fast; Ray cost "
        f"{extra:.0f} s more of start-up and loading, paid once per sweep"
        + (
            f", so a grid gains once it is longer than about {extra / (1 - 1 / work_gain) / 60:.0f} minutes in "
            "process (an estimate from these two figures, not a measurement). "
            if work_gain > 1
            else ". "
        )
    )
    default = (
        f"A long grid on a CPU like this one is worth running with `--workers {m['cores']} --threads 1`; the default "
        "stays `--workers 1` (in process, nothing more to install or start), which a single run or a short grid is "
        "better off with."
        if gain >= PARALLEL_GAIN
        else "Two workers did not beat one process here, so on a CPU the default stays one worker (`--workers 1`, in "
        "process)."
    )
    return setting + measured + default
