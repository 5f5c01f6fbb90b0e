"""The Hyperformer half's claims, declared with their rules and judged on the seeds that chose no learning rate.
Every function takes the runs of `load_runs`, labelled by `tables.label_runs`.
"""

from __future__ import annotations

import pandas as pd

from adaptstudy.claims.baselines import selection_failures, validation_learned
from adaptstudy.claims.catalog import declaration_path, declare_chapter
from adaptstudy.claims.evidence import Unit, contrast
from adaptstudy.claims.verdicts import Verdict, arm, verdict_of
from adaptstudy.data.spec import resolve_task
from adaptstudy.reporting.across.hyperformer.published import HYPER_FEW_SHOT
from adaptstudy.reporting.across.hyperformer.tables import (
    ABLATED,
    ABLATIONS,
    FEW_SHOT_GRID,
    FEW_SHOT_LABELS,
    GLUE5,
    at_chosen_rates,
    few_shot_runs,
    main_cap,
    main_table_runs,
    task_runs,
)
from adaptstudy.reporting.common import SELECTION_SEED, reported
from adaptstudy.reporting.findings import finished_times
from adaptstudy.reporting.verdict_tables import verdict_table

DECLARED = declare_chapter(declaration_path(__file__), "hyperformer")
BEATS_ST_ADAPTERS = DECLARED["beats-st-adapters"]
BEATS_ST_FULL = DECLARED["beats-st-full"]
BEATS_SHARED = DECLARED["beats-mt-adapters"]
COMPONENTS = DECLARED["components"]
LOW_RESOURCE = DECLARED["low-resource"]
FEW_SHOT = DECLARED["few-shot"]


def set_aside(runs: pd.DataFrame) -> dict[tuple[str, int, str], str]:
    """Per (label, cap, task) whose selection-seed run at its chosen rate learned nothing on the task's validation
    split (the split the paper's rule chooses on): the evidence, the one ground on which a claim sets a task aside."""
    if runs.empty:
        return {}
    chosen = at_chosen_rates(runs)
    chosen = chosen[chosen["seed"] == SELECTION_SEED]
    rows = pd.DataFrame(
        [
            {"label": r["label"], "cap": r["cap"], "task": t, "record": r["record"]}
            for _, r in chosen.iterrows()
            for t in r["tasks"]
        ],
        columns=["label", "cap", "task", "record"],
    )
    return selection_failures(
        rows, ["label", "cap", "task"], lambda row: validation_learned(row["record"], row["task"])
    )


def verdicts(runs: pd.DataFrame) -> list[Verdict]:
    """Every claim of the Hyperformer half, on the seeds that chose no learning rate, under their declarations (the
    few-shot claim's units are the grid's cells, `FEW_SHOT_GRID`; the published ones it does not run are named)."""
    main = task_runs(main_table_runs(runs)) if not runs.empty else task_runs(runs)

    aside = set_aside(runs)

    def versus(frame: pd.DataFrame, a: str, b: str) -> list[Unit]:
        def cells(label, task):
            rows = frame[(frame["label"] == label) & (frame["task"] == task)]
            why = "; ".join(sorted({aside.get((label, cap, task), "") for cap in rows["cap"]} - {""}))
            return arm(rows, "score", set_aside=why)

        return [contrast(t, cells(a, t), cells(b, t), metric=resolve_task(t).main_metric) for t in GLUE5]

    ablations = task_runs(reported(at_chosen_rates(runs[(runs["cap"] == main_cap(runs))]))) if not runs.empty else main
    several = task_runs(reported(at_chosen_rates(runs[runs["tasks"].apply(len) > 1]))) if not runs.empty else main
    caps = sorted(set(several.loc[several["label"] == "hyperformer++", "cap"]))
    few = (
        few_shot_runs(reported(runs))
        if not runs.empty
        else pd.DataFrame(columns=["task", "k", "label", "score", "learned_nothing"])
    )
    few_units = [
        contrast(
            f"{task} k={k}",
            arm(few[(few["task"] == task) & (few["k"] == k) & (few["label"] == FEW_SHOT_LABELS[0])], "score"),
            arm(few[(few["task"] == task) & (few["k"] == k) & (few["label"] == FEW_SHOT_LABELS[1])], "score"),
        )
        for task, sizes in FEW_SHOT_GRID.items()
        for k in sizes
    ]
    not_run = [
        f"{t} k={k}" for t, rows in HYPER_FEW_SHOT.items() for k in rows["k"] if k not in FEW_SHOT_GRID.get(t, {})
    ]
    sizes = {f"{cap:g} per task": versus(several[several["cap"] == cap], "hyperformer++", "mt-full") for cap in caps}
    components = {m: versus(ablations, ABLATED, m) for m in ABLATIONS}
    return [
        verdict_of(BEATS_ST_ADAPTERS, versus(main, "hyperformer++", "st-adapters")),
        verdict_of(BEATS_ST_FULL, versus(main, "hyperformer++", "st-full")),
        verdict_of(BEATS_SHARED, versus(main, "hyperformer", "mt-adapters")),
        verdict_of(COMPONENTS, components),
        verdict_of(LOW_RESOURCE, sizes),
        verdict_of(FEW_SHOT, few_units, detail=f"not in the grid: {', '.join(not_run)}" if not_run else ""),
    ]


def claims(runs: pd.DataFrame) -> pd.DataFrame:
    """The Hyperformer half's verdict table."""
    return verdict_table(verdicts(runs), finished_times(runs))
