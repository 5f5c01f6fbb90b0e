"""The Efficiency page: the throughput benchmark's JSON as tables, a plot and whether each target is met."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

CLASSIFICATION_SPEEDUP, MLM_SPEEDUP, MFU_AIM, METRIC_TOLERANCE = 3.0, 4.0, 0.40, 1.0


def load_benchmark(path) -> dict:
    """The benchmark's JSON, or an empty benchmark (no rows) when it has not been run yet."""
    path = Path(path)
    if not path.is_file():
        return {"rows": [], "missing": str(path)}
    return json.loads(path.read_text())


def efficiency_table(benchmark: dict) -> pd.DataFrame:
    """The benchmark's rows: stock recipe and our path side by side, with ratios."""
    keep = {
        "row": "workload",
        "path": "path",
        "examples_per_s": "examples/s",
        "useful_tokens_per_s": "useful tokens/s",
        "speedup_examples": "× examples/s",
        "speedup_tokens": "× tokens/s",
        "mfu_fp32": "MFU % (fp32 peak)",
        "mfu_bf16": "MFU % (bf16 peak)",
        "peak_rss_added_mb": "peak memory added (MB)",
        "dev_metric": "dev metric (mean)",
        "dev_metric_sd": "dev sd",
    }
    rows = pd.DataFrame(benchmark["rows"]).reindex(columns=list(keep)).rename(columns=keep)
    for peak in ("fp32", "bf16"):
        rows[f"MFU % ({peak} peak)"] = 100 * rows[f"MFU % ({peak} peak)"]
    return rows


def display_efficiency(table: pd.DataFrame):
    """The benchmark table rounded for reading."""
    formats = {
        "examples/s": "{:.1f}",
        "useful tokens/s": "{:,.0f}",
        "× examples/s": "{:.2f}",
        "× tokens/s": "{:.2f}",
        "MFU % (fp32 peak)": "{:.0f}",
        "MFU % (bf16 peak)": "{:.0f}",
        "peak memory added (MB)": "{:,.0f}",
        "dev metric (mean)": "{:.1f}",
        "dev sd": "{:.1f}",
    }
    return table.style.format(formats, na_rep="–").hide(axis="index")


def targets(benchmark: dict) -> pd.DataFrame:
    """Each of the performance issue's targets, measured, and whether it is met (an engineering target, not a
    paper's claim: the scorecard's verdicts do not apply)."""
    rows = pd.DataFrame(benchmark["rows"])
    if rows.empty:
        return pd.DataFrame(columns=["workload", "target", "measured", "met"])
    out = []
    for workload, group in rows.groupby("row", sort=False):
        stock, ours = group.iloc[0], group[group["path"] == "ours"].iloc[0]
        mlm = workload.startswith("mlm")
        need = MLM_SPEEDUP if mlm else CLASSIFICATION_SPEEDUP
        speed = ours["speedup_tokens"] if mlm else ours["speedup_examples"]
        unit = "useful tokens/s" if mlm else "train examples/s"
        out.append((workload, f"≥ {need:g}× the stock {unit}", f"{speed:.2f}×", speed >= need))
        if not mlm and pd.notna(ours["dev_metric"]):
            gap, seeds = ours["dev_metric"] - stock["dev_metric"], len(ours["dev_metrics"])
            out.append(
                (
                    workload,
                    f"dev metric within {METRIC_TOLERANCE:g} point of the stock recipe's (mean of {seeds} seeds)",
                    f"{ours['dev_metric']:.1f} ± {ours['dev_metric_sd']:.1f} vs "
                    f"{stock['dev_metric']:.1f} ± {stock['dev_metric_sd']:.1f} ({gap:+.1f})",
                    abs(gap) <= METRIC_TOLERANCE,
                )
            )
        if mlm or workload.startswith("mrpc"):
            out.append(
                (
                    workload,
                    f"MFU ≥ {100 * MFU_AIM:.0f}% of the fp32 matmul peak (aim)",
                    f"{100 * ours['mfu_fp32']:.0f}% (of the bf16 peak: {100 * ours['mfu_bf16']:.0f}%)",
                    ours["mfu_fp32"] >= MFU_AIM,
                )
            )
        out.append(
            (
                workload,
                "peak memory no higher than the stock recipe's",
                f"{ours['peak_rss_added_mb']:.0f} vs {stock['peak_rss_added_mb']:.0f} MB above the process's baseline",
                ours["peak_rss_added_mb"] <= stock["peak_rss_added_mb"],
            )
        )
    table = pd.DataFrame(out, columns=["workload", "target", "measured", "met"])
    table["met"] = table["met"].map({True: "yes", False: "no"})
    return table


def machine_note(benchmark: dict) -> str:
    if "missing" in benchmark:
        return f"**Not measured yet**: run `python benchmarks/throughput.py` to write `{benchmark['missing']}`."
    m, precision = benchmark["machine"], benchmark.get("precision", {})
    return (
        f"Measured on {m['cpu']} ({m['cores']} cores, {m['torch_threads']} torch threads, "
        f"CPU capability {m['cpu_capability']}, native bf16: {'yes' if m.get('native_bf16') else 'no'}): "
        f"matmul peak {m['matmul_fp32_flops'] / 1e9:.0f} GFLOP/s in fp32, "
        f"{m['matmul_bf16_flops'] / 1e9:.0f} GFLOP/s in bf16. "
        f"Stock recipe in {precision.get('stock', 'fp32')}, ours in {precision.get('ours', 'fp32')}. "
        f"Torch {benchmark['versions']['torch']}, transformers {benchmark['versions']['transformers']}; "
        f"the whole benchmark took {benchmark.get('wall_s', float('nan')) / 60:.0f} minutes."
        + (" Quick run: step times only, no dev metric." if benchmark.get("quick") else "")
    )


def plot_efficiency(table: pd.DataFrame):
    if table.empty:
        return None
    ax = sns.barplot(data=table, y="workload", x="useful tokens/s", hue="path", orient="h")
    ax.set_xscale("log")
    ax.set_xlabel("useful (non-pad) training tokens per second, log scale")
    ax.legend(title=None, fontsize="small")
    plt.tight_layout()
    return ax


# Sweeps beyond one process: `benchmarks/parallel_sweep.py`.

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
