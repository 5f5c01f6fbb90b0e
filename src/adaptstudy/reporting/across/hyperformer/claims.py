"""The Hyperformer half's claims, declared with their rules and judged on the seeds that chose no learning rate.
Every function takes the runs of `load_runs`, labelled by `tables.label_runs`.
"""

from __future__ import annotations

import pandas as pd

from adaptstudy.data.tasks import resolve_task
from adaptstudy.reporting.across.hyperformer.plan import FEW_SHOT as FEW_SHOT_GRID
from adaptstudy.reporting.across.hyperformer.tables import (
    FEW_SHOT_LABELS,
    GLUE5,
    at_chosen_rates,
    few_shot_runs,
    main_cap,
    main_table_runs,
    task_runs,
)
from adaptstudy.reporting.claims import (
    Verdict,
    arm,
    declare,
    learned_groups,
    verdict_of,
    verdict_over_learned,
    verdict_table,
)
from adaptstudy.reporting.common import reported
from adaptstudy.reporting.evidence import Rule, Unit, contrast
from adaptstudy.reporting.published import HYPER_ABLATION, HYPER_FEW_SHOT, HYPER_TABLE1

PAPER = "Mahabadi et al. 2021"


def _average(label: str) -> float:
    return HYPER_TABLE1[label][2][-1]


BEATS_ST_ADAPTERS = declare(
    "hyperformer.beats-st-adapters",
    PAPER,
    "Hyperformer++ beats single-task adapters while training fewer parameters per task",
    "Table 1",
    f"GLUE average {_average('hyperformer++'):.2f} vs {_average('st-adapters'):.2f} with "
    f"{HYPER_TABLE1['hyperformer++'][1]:.2f}% vs {HYPER_TABLE1['st-adapters'][1]:.2f}% per task (T5-base)",
    "mean over the 5 tasks of Hyperformer++ − single-task adapters (test half of dev)",
    Rule("above", 0.0),
)
BEATS_ST_FULL = declare(
    "hyperformer.beats-st-full",
    PAPER,
    "Hyperformer++ beats single-task fine-tuning",
    "Table 1",
    f"GLUE average {_average('hyperformer++'):.2f} vs {_average('st-full'):.2f} (T5-base)",
    "mean over the 5 tasks of Hyperformer++ − single-task fine-tuning",
    Rule("above", 0.0),
)
BEATS_SHARED = declare(
    "hyperformer.beats-mt-adapters",
    PAPER,
    "Hyperformer beats one adapter shared by the tasks",
    "Table 1",
    f"GLUE average {_average('hyperformer'):.2f} vs {_average('mt-adapters'):.2f} (T5-base)",
    "mean over the 5 tasks of Hyperformer − multi-task adapters",
    Rule("above", 0.0),
)
COMPONENTS = declare(
    "hyperformer.components",
    PAPER,
    "Each component of Hyperformer++ helps: removing it lowers the score",
    "Table 4",
    "GLUE average (T5-small) " + ", ".join(f"{k} {v:.2f}" for k, v in HYPER_ABLATION.items()),
    "per component: mean over the 5 tasks of Hyperformer++ − without it",
    Rule("above", 0.0),
)
LOW_RESOURCE = declare(
    "hyperformer.low-resource",
    PAPER,
    "Hyperformer++ beats multi-task fine-tuning at every training size per task",
    "Figure 2",
    "above T5 fine-tuning at every size (T5-base)",
    "per training size: mean over the 5 tasks of Hyperformer++ − multi-task fine-tuning",
    Rule("above", 0.0),
)
FEW_SHOT = declare(
    "hyperformer.few-shot",
    PAPER,
    "Few-shot: a new task embedding for a trained Hyperformer++ beats an adapter trained on the same k examples",
    "Table 3",
    "IMDb and CB, every k: "
    + ", ".join(
        f"{t} k={k} {h - a:+.1f}"
        for t, rows in HYPER_FEW_SHOT.items()
        for k, h, a in zip(rows["k"], rows["hyperformer++"], rows["st-adapters"])
    ),
    "mean over (task, k) of Hyperformer++ transfer − the adapter",
    Rule("above", 0.0),
)


def verdicts(runs: pd.DataFrame) -> list[Verdict]:
    """Every claim of the Hyperformer half, on the seeds that chose no learning rate; each comparison over the tasks
    (sizes, k) where both arms learned, naming those left out and which arm sat at chance (as the fusion half).
    Few-shot is judged over the grid's cells (`plan.FEW_SHOT`), naming the published ones it does not run: a cell
    the grid never runs would otherwise leave the claim not testable for good."""
    main = task_runs(main_table_runs(runs)) if not runs.empty else task_runs(runs)

    def versus(frame: pd.DataFrame, a: str, b: str) -> list[Unit]:
        def cells(label, task):
            return arm(frame[(frame["label"] == label) & (frame["task"] == task)], "score")

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
    sizes, sizes_out = learned_groups(
        {f"{cap:g} per task": versus(several[several["cap"] == cap], "hyperformer++", "mt-full") for cap in caps}
    )
    components, components_out = learned_groups(
        {m: versus(ablations, "hyperformer++", m) for m in list(HYPER_ABLATION)[1:]}
    )
    return [
        verdict_over_learned(BEATS_ST_ADAPTERS, versus(main, "hyperformer++", "st-adapters")),
        verdict_over_learned(BEATS_ST_FULL, versus(main, "hyperformer++", "st-full")),
        verdict_over_learned(BEATS_SHARED, versus(main, "hyperformer", "mt-adapters")),
        verdict_of(COMPONENTS, components, detail=components_out),
        verdict_of(LOW_RESOURCE, sizes, detail=sizes_out),
        verdict_over_learned(FEW_SHOT, few_units, detail=f"not in the grid: {', '.join(not_run)}" if not_run else ""),
    ]


def claims(runs: pd.DataFrame) -> pd.DataFrame:
    """The Hyperformer half's verdict table."""
    return verdict_table(verdicts(runs))
