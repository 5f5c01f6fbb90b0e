"""Each chapter's runs that resumed from a checkpoint, and what became of those that resumed out of order.

A chapter says how many of its runs resumed, how many resumed past their first epoch before checkpoints kept the
epoch's batch order (`runs.resumption`), which of those were rerun uninterrupted and whether the rerun gave the same
metrics, and which were not (its verdicts name them). Counts come from the records, so the sentence cannot drift.
"""

from __future__ import annotations

import pandas as pd

from adaptstudy.runs.resumption import rerun, resumed_out_of_order

COLUMNS = [
    "run",
    "task",
    "method",
    "setting",
    "seed",
    "resumed at step",
    "rerun",
    "main metric: resumed",
    "uninterrupted",
]
COLUMNS += ["selection: resumed", "selection: uninterrupted"]  # the split that chooses settings, where a run has one
COLUMNS += ["resumed run's machine", "rerun's machine"]


def _records(frames: tuple[pd.DataFrame, ...]) -> list[dict]:
    return [r for runs in frames if "record" in runs for r in runs["record"]]


def _rows(records: list[dict]) -> list[dict]:
    rows = []
    for record in records:
        entry = rerun(record)
        replaced = entry is not None and "resumed_from_step" in entry  # the new record lists the resumed run
        if not (resumed_out_of_order(record) or replaced):
            continue
        step = entry["resumed_from_step"] if replaced else record["resumed_from_step"]
        outcome = "other metrics: record replaced" if replaced else "same metrics" if entry else "not rerun"
        rows.append(
            {
                "run": record["run_id"],
                "task": record["task"],
                "method": record["method"],
                "setting": _setting(record["config"]),
                "seed": record["seed"],
                "resumed at step": step,
                "rerun": outcome,
                "main metric: resumed": entry["main_metric_value"] if replaced else record["main_metric_value"],
                "uninterrupted": record["main_metric_value"] if entry else float("nan"),
                "selection: resumed": (entry if replaced else record).get("selection_metric_value", float("nan")),
                "selection: uninterrupted": record.get("selection_metric_value", float("nan"))
                if entry
                else float("nan"),
                "resumed run's machine": _machine(entry if replaced else record),
                "rerun's machine": _machine(record if replaced else entry) if entry else "–",
            }
        )
    return rows


def _setting(config: dict) -> str:
    """'size 64, rate 0.001, 20 epochs': what tells the run from the others of its method."""
    size = f"size {config['adapter_size']}, " if config.get("adapter_size") else ""
    return f"{size}rate {config['learning_rate']:g}, {config['num_train_epochs']:g} epochs"


def _machine(trained: dict) -> str:
    """The machine kind a training started on (its first session's), as records name it."""
    sessions = trained.get("sessions") or [{}]
    return sessions[0].get("machine") or (trained.get("machine") or {}).get("cpu", "–")


def resumed_table(*runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run of the chapter (its frames of runs) that resumed past its first epoch out of order: its rerun,
    both scores and both machines."""
    return pd.DataFrame(_rows(_records(runs)), columns=COLUMNS).sort_values(
        ["task", "method", "seed"], ignore_index=True
    )


def resumed_note(*runs: pd.DataFrame) -> str:
    """How many of the chapter's runs (its frames of runs) resumed, how many out of order, and what their reruns
    showed."""
    records = _records(runs)
    table = resumed_table(*runs)
    resumed = sum(bool(r.get("resumed_from_step")) for r in records) + int(
        (table["rerun"] == "other metrics: record replaced").sum()
    )
    if table.empty:
        return f"Of the chapter's {len(records)} runs, " + (
            "none resumed from a checkpoint."
            if not resumed
            else f"{resumed} resumed from a checkpoint, none of them past its first epoch without that epoch's "
            "order of batches."
        )
    counts = table["rerun"].value_counts()
    same, replaced, not_rerun = (
        int(counts.get(k, 0)) for k in ("same metrics", "other metrics: record replaced", "not rerun")
    )
    parts = [
        f"Of the chapter's {len(records)} runs, {resumed} resumed from a checkpoint after their process was stopped. "
        "Until checkpoints kept it, a fine-tuning run resumed in its second epoch or later drew that epoch's order of "
        "batches afresh, not as the uninterrupted run drew it (a run resumed in its first epoch, and a multi-task "
        f"run, whose batches are seeded per epoch, trained as uninterrupted): {len(table)} of the chapter's runs "
        "resumed so.",
    ]
    if same or replaced:
        parts.append(
            f"{same + replaced} of them {_were(same + replaced)} rerun uninterrupted: {same} gave the same metrics "
            f"and keep their records; {replaced} gave other metrics, and their records now hold the uninterrupted "
            "runs. The table gives both scores and both machines. A difference is not the order's alone: bf16 "
            "kernels differ between machine kinds, and two uninterrupted trainings of one run in different "
            "processes of one machine kind have given different scores too; what a rerun secures is a score from an "
            "uninterrupted run. Both trainings' seconds are counted in the costs."
        )
    if not_rerun:
        parts.append(f"{not_rerun} {_were(not_rerun)} not rerun: every verdict that rests on one of them names it.")
    return " ".join(parts)


def _were(n: int) -> str:
    return "was" if n == 1 else "were"


def as_resumed(runs: pd.DataFrame) -> pd.DataFrame:
    """`runs` as they stood before the reruns: where an uninterrupted rerun replaced a resumed run's record, that
    run's scores (main metric, selection scores, metrics) in its row, so a chapter can show what its choices were on
    them and which the reruns moved."""
    out = runs.copy()
    for index, record in runs["record"].items() if "record" in runs else []:
        entry = rerun(record)
        if entry is None or "resumed_from_step" not in entry:  # kept, or never rerun: its row is as it stood
            continue
        for field in ("main_metric_value", "selection_metric_value"):
            if field in entry and field in out:
                out.at[index, field] = entry[field]
        for name, value in entry.get("metrics", {}).items():
            if f"metric.{name}" in out:
                out.at[index, f"metric.{name}"] = value
    return out
