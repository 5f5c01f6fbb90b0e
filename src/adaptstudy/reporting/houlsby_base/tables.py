"""The runs on other backbones than the chapter's (`mpnet-base` at base size, `minilm-l3` at 3 layers) labelled, their
choices, the step times they were planned from and the layer ablation's records."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.common import SELECTION_SEED, config_column, reported
from adaptstudy.reporting.selection import at_learning_rates, choose_learning_rates, grid_edge_note

ARMS = ("houlsby-64", "full")
KEYS = ["backbone", "task", "label"]  # a rate is chosen per backbone, task and arm


def label_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """`label`: full, or houlsby-<size>; the backbone is a column of its own."""
    if runs.empty:
        return runs.assign(label=pd.Series(dtype=str))
    size = config_column(runs, "adapter_size")
    labels = [m if m != "houlsby" else f"houlsby-{int(s)}" for m, s in zip(runs["method"], size)]
    return runs.assign(label=labels)


def chosen_rates(runs: pd.DataFrame) -> pd.DataFrame:
    """Per backbone, task and arm, the rate the selection seed's run chose on the selection split."""
    return choose_learning_rates(runs[runs["seed"] == SELECTION_SEED], KEYS)


def at_chosen_rates(runs: pd.DataFrame, backbone: str) -> pd.DataFrame:
    """One backbone's reported runs (every seed but the choosing one) at the rates its selection seed chose."""
    mine = runs[runs["backbone"] == backbone]
    return reported(at_learning_rates(mine, chosen_rates(mine), KEYS))


def choices_note(runs: pd.DataFrame) -> str:
    """What a reader of the choices should know: the choices on the edge of their grid (no edge extension here, so
    they stand), and the selection runs that predicted one class on the dev set (a rate too large to train at)."""
    constant = runs[
        (runs["seed"] == SELECTION_SEED) & runs["record"].map(lambda r: bool(r.get("constant_predictions")))
    ]
    collapsed = ", ".join(
        f"{row.label} at {row.rate:g} on {row.task.upper()} ({row.backbone})"
        for row in constant.assign(rate=config_column(constant, "learning_rate")).itertuples()
    )
    return " ".join(
        part
        for part in (
            grid_edge_note(chosen_rates(runs), lambda row: f"{row.label} on {row.task.upper()} ({row.backbone})"),
            f"These selection runs predicted a single class on the dev set: {collapsed}." if collapsed else "",
        )
        if part
    )


def planned_from(benchmarks: Path = PROJECT_ROOT / "benchmarks" / "results") -> str:
    """The step times the base-size runs were planned from, as `benchmarks/backbone_scale.py` measured them on the
    machine the runs started on (each task's file), beside `minilm-l6`'s in the same run."""
    parts, machine = [], ""
    for task in ("mrpc", "cola"):
        suffix = "" if task == "mrpc" else f"-{task}"
        files = sorted(benchmarks.glob(f"backbone_scale{suffix}-*.json"))
        if not files:
            continue
        benchmark = json.loads(files[0].read_text())
        step = {(r["backbone"], r["row"].split("/")[1]): r["median_step_s"] for r in benchmark["rows"]}
        m = benchmark["machine"]
        machine = f"{m['cpu']}, {m['kind']}, {m['cores']} cores, {benchmark['precision']}"
        parts.append(
            f"{task.upper()} {step['mpnet-base', 'full']:.2f} s a step for full fine-tuning and "
            f"{step['mpnet-base', 'houlsby']:.2f} for size 64 (minilm-l6: {step['minilm-l6', 'full']:.2f} and "
            f"{step['minilm-l6', 'houlsby']:.2f})"
        )
    if not parts:
        return "The step times the runs were planned from are not measured yet (`benchmarks/backbone_scale.py`)."
    return f"Planned from the step times measured on the machine the runs started on ({machine}): {'; '.join(parts)}."


def ablation_records(runs: pd.DataFrame, backbone: str = "mpnet-base") -> dict[str, list[dict]]:
    """Per task, the records of the reported size-64 runs at their chosen rate that evaluated the layer ablation
    (what the page plots; the verdicts take the same runs)."""
    if runs.empty:
        return {}
    chosen = at_chosen_rates(runs, backbone)
    adapters = chosen[chosen["label"] == "houlsby-64"]
    by_task = {
        task: [r for r in group["record"] if r.get("layer_ablation")] for task, group in adapters.groupby("task")
    }
    return {task: records for task, records in sorted(by_task.items()) if records}
