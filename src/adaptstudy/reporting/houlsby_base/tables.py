"""The runs on other backbones than the chapter's (`mpnet-base` at base size, `minilm-l3` at 3 layers) labelled, their
choices, the step times they were planned from and the layer ablation's records."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.common import SELECTION_SEED, config_column, format_mean_sd, reported
from adaptstudy.reporting.folding import short_number
from adaptstudy.reporting.published import HOULSBY_2019, HOULSBY_COURSE, HOULSBY_TABLE1_PARAMS, published_frame
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
        f"{row.label} at {short_number(row.rate)} on {row.task.upper()} ({row.backbone})"
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


TASK_ORDER = ("cola", "sst2", "mrpc", "stsb", "rte")  # Table 1's order
TOTAL = "Table 1's total (its 9 tasks)"
BACKBONE_NAMES = {"mpnet-base": "MPNet, mpnet-base", "minilm-l3": "minilm-l3"}
TASK_NAMES = {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "stsb": "STS-B", "rte": "RTE"}


def precision_note(runs: pd.DataFrame, backbone: str = "mpnet-base") -> str:
    """The precision each task's reported runs trained in, both arms together ('MRPC: bf16 (seeds 1-3), fp32 (seeds
    4-6)'): every run made after the campaign's precision was declared is fp32 on every machine, the earlier ones
    kept the precision their machine picked, and a reader of the table has to know which."""
    ours = at_chosen_rates(runs, backbone) if not runs.empty else runs
    if ours.empty:
        return f"No reported runs on {BACKBONE_NAMES[backbone]} yet."
    precision = ours["precision_used"].fillna("fp32") if "precision_used" in ours else pd.Series("fp32", ours.index)
    parts = []
    for task in [t for t in TASK_ORDER if t in set(ours["task"])]:
        mine = ours[ours["task"] == task].assign(precision=precision)
        seeds = mine.groupby("precision")["seed"].apply(lambda s: _seed_span(sorted(set(s))))
        said = seeds.index[0] if len(seeds) == 1 else ", ".join(f"{p} (seeds {span})" for p, span in seeds.items())
        parts.append(f"{TASK_NAMES[task]} {said}")
    return f"Precision of the reported runs on {BACKBONE_NAMES[backbone]}, both arms: " + "; ".join(parts) + "."


def _seed_span(seeds: list[int]) -> str:
    return (
        f"{seeds[0]}–{seeds[-1]}"
        if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 1
        else (", ".join(map(str, seeds)))
    )


def table_1(runs: pd.DataFrame, backbone: str = "mpnet-base") -> pd.DataFrame:
    """Table 1 at this backbone's size: our rows (full fine-tuning and size-64 adapters, mean ± sd over the reported
    seeds at the chosen rates, dev sets; '–' where not run), the course reproduction's rows (BERT-base, dev
    accuracy, MRPC and CoLA) and the paper's (BERT-large, GLUE test), with each row's average over the tasks we ran
    and the paper's own total over its nine tasks. Its sources read 'ours', 'course' and 'paper': the page says
    once, above the table, which backbone and split each stands for."""
    ours = at_chosen_rates(runs, backbone) if not runs.empty else runs
    means: dict[str, dict[str, float]] = {}
    rows = []
    for label in ("full", "houlsby-64"):
        cells = ours[ours["label"] == label] if not ours.empty else ours
        by_task = cells.groupby("task")["main_metric_value"] if not cells.empty else {}
        means[label] = {t: float(v.mean()) for t, v in by_task} if len(cells) else {}
        text = {t: format_mean_sd(v.mean(), v.std(ddof=1), len(v)) for t, v in by_task} if len(cells) else {}
        rows.append({"source": "ours", "method": label, **text})
    ran = [t for t in TASK_ORDER if all(t in m for m in means.values())]
    for row, label in zip(rows, ("full", "houlsby-64")):
        row["average (tasks run)"] = f"{np.mean([means[label][t] for t in ran]):.1f}" if ran else "–"
    course = published_frame(HOULSBY_COURSE).pivot(index="task", columns="method", values="value")
    for method, label in (("full", "full"), ("houlsby", "houlsby-64")):
        cells = {t: f"{course.loc[t, method]:.2f}" for t in course.index}
        rows.append({"source": "course", "method": label, **cells})
    paper = published_frame(HOULSBY_2019, "Table 1").pivot(index="task", columns="method", values="value")
    for label in ("full", "houlsby-64"):
        row = {"source": "paper", "method": label}
        row.update({t: f"{paper.loc[t, label]:.1f}" for t in TASK_ORDER})
        row["average (tasks run)"] = f"{paper.loc[ran, label].mean():.1f}" if ran else "–"
        rows.append({**row, TOTAL: f"{HOULSBY_TABLE1_PARAMS[label]['total']:.1f}"})
    return pd.DataFrame(rows, columns=["source", "method", *TASK_ORDER, "average (tasks run)", TOTAL]).fillna("–")
