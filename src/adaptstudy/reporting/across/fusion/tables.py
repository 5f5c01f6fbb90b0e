"""The AdapterFusion half of the "across tasks" chapter (study `fusion`): the paper's Table 1 for our targets, the
source adapters that learned, and the claims (the fusion attention's in `attention`).

Fusion records are single-task fine-tuning records (methods head_only, full, pfeiffer = ST-A, fusion); every table
reports mean ± sd over seeds. Under the protocol (runs with a selection split) seed 0 trains the sources and chooses
the rates, and only the other seeds report; the first round's runs (no selection split, seed 0 alone) report as they
are until the protocol's replace them. Every function takes the runs of `load_runs`, labelled by `label_runs`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from adaptstudy.claims.baselines import (
    FLAG_NOTE,
    constants_by_task,
    flag_runs,
    flagged,
    learned_on_selection,
    selection_baseline,
    selection_failures,
)
from adaptstudy.claims.evidence import Unit, contrast
from adaptstudy.claims.verdicts import Verdict, arm, verdict_of
from adaptstudy.reporting.across.fusion.attention import attention_verdicts
from adaptstudy.reporting.across.fusion.claims import DECLARED
from adaptstudy.reporting.across.fusion.published import FUSION_COLUMNS, FUSION_NOT_OFFLINE, PFEIFFER_2021
from adaptstudy.reporting.common import SELECTION_SEED, config_column, mean_sd, scale_note
from adaptstudy.reporting.findings import finished_times
from adaptstudy.reporting.published import published_frame
from adaptstudy.reporting.selection import choose_learning_rates
from adaptstudy.reporting.verdict_tables import verdict_table

FUSION_TARGETS = ("rte", "mrpc", "sst2", "imdb", "cb")
CHOSEN = ("head_only", "full")  # the columns whose rates stage 1 chooses
FUSION_LABEL = {
    "head_only": "head_only",
    "full": "full",
    "pfeiffer": "st-a",
    "task_adapters": "mt-a",
    "fusion": "fusion-st-a",
    "houlsby": "st-a-houlsby",  # Houlsby's architecture as the target's single-task adapter, at ST-A's size and rate
}
ALONE = "fusion-n1"  # the N = 1 control: fusion layers over the target's own adapter alone (ours, not the paper's)
OVER_MT_A = "fusion-mt-a"  # fusion over MT-A's adapters, on MT-A's encoder (`fusion_from`)
COLUMNS = (*FUSION_COLUMNS, ALONE)
CELL_COLUMNS = ["task", "label", "seed", "score", "trainable_params", "backbone_params"]


def is_target_cell(task: str, method: str, epochs: float, protocol: bool = False) -> bool:
    """Whether a fusion-study run is a cell of the table (a target task's column). In the first round CB's source
    adapter (trained like every source, 3 epochs) was not its ST-A cell (20 epochs, as CB's other columns); under the
    protocol every source is of seed 0, which no table cell is."""
    first_round_source = task == "cb" and epochs <= 3 and method != "fusion" and not protocol
    return task in FUSION_TARGETS and method in FUSION_LABEL and not first_round_source


def label_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Adds `label` (the table's column a run's method fills; `ALONE` for fusion over the target's own adapter only,
    `OVER_MT_A` for fusion over MT-A's), `target_cell` (whether the run is a cell of the table) and `score`: dev
    accuracy, as the paper's Table 1 reports for every task, MRPC included (whose main metric here is F1). An MT-A
    record (multi-task) gives a row per target task it reports."""
    if runs.empty:
        return pd.DataFrame(
            columns=[*CELL_COLUMNS, "method", "config.num_train_epochs", "record", "target_cell"]
        ).astype({"target_cell": bool})
    runs = _per_target(runs)
    epochs = config_column(runs, "num_train_epochs", 0)
    protocol = [bool(r["config"].get("selection_split")) for r in runs["record"]]
    chooses = np.array(protocol, dtype=bool) & (runs["seed"] == SELECTION_SEED).to_numpy()
    cells = [
        is_target_cell(t, m, e, p) and not c
        for t, m, e, p, c in zip(runs["task"], runs["method"], epochs, protocol, chooses)
    ]
    alone = np.array([list(r["config"].get("fusion_sources") or []) == [r["task"]] for r in runs["record"]], dtype=bool)
    over_mt_a = np.array([r["config"].get("fusion_from") is not None for r in runs["record"]], dtype=bool)
    label = runs["method"].map(FUSION_LABEL).where(~alone, ALONE).where(~over_mt_a, OVER_MT_A)
    return runs.assign(
        label=label,
        target_cell=np.array(cells, dtype=bool),
        score=runs["metric.accuracy"] if "metric.accuracy" in runs else np.nan,
    )


def _per_target(runs: pd.DataFrame) -> pd.DataFrame:
    """Multi-task records (MT-A) as one row per target task they report, its dev accuracy as `metric.accuracy`."""
    multi = np.array(["tasks" in r for r in runs["record"]], dtype=bool)
    if not multi.any():
        return runs
    rows = [
        {**run.to_dict(), "task": task, "metric.accuracy": run["record"]["metrics"].get(f"{task}/accuracy")}
        for _, run in runs[multi].iterrows()
        for task in run["record"]["tasks"]
        if task in FUSION_TARGETS
    ]
    columns = list(dict.fromkeys([*runs.columns, "metric.accuracy"]))
    return pd.concat([runs[~multi], pd.DataFrame(rows, columns=columns)], ignore_index=True)


def protocol_sources(runs: pd.DataFrame) -> pd.Series:
    """The source adapters trained under the protocol: kept (`keep_adapter`) and scored on a selection split."""
    kept = config_column(runs, "keep_adapter", False).fillna(False).astype(bool)
    return kept & config_column(runs, "selection_split", False).fillna(False).astype(bool)


def source_gate(runs: pd.DataFrame) -> pd.DataFrame:
    """The source adapters trained under the protocol (`keep_adapter`, seed 0): per task its selection-split score,
    the constant prediction's there and the noise margin, and whether it learned (`baselines.learned_on_selection`).
    Only those that learned are fused in stage 2 (besides the target's own adapter, which every Fusion w/ ST-A has)."""
    columns = ["task", "metric", "selection score", "constant", "margin", "learned", "run_id"]
    sources = runs[protocol_sources(runs)] if not runs.empty else runs
    rows = []
    for record in sources["record"] if not sources.empty else []:
        base = selection_baseline(record)
        rows.append(
            {
                "task": record["task"],
                "metric": base.check,
                "selection score": record["selection_metrics"][base.check],
                "constant": base.check_constant,
                "margin": base.margin,
                "learned": learned_on_selection(record),
                "run_id": record["run_id"],
            }
        )
    return pd.DataFrame(rows, columns=columns).astype({"learned": bool})


def set_aside(runs: pd.DataFrame) -> dict[str, str]:
    """Per target whose own ST-A adapter learned nothing on the selection split in stage 1 (`source_gate`): the
    evidence. Every arm of a fusion claim builds on that adapter (fused, alone as the N = 1 control) or is judged
    beside it, so the claims set the target aside."""
    sources = runs[protocol_sources(runs)] if not runs.empty else runs
    return {task: why for (task,), why in selection_failures(sources, ["task"]).items()} if not sources.empty else {}


def flagged_cells(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that are cells of the table, with `learned_nothing` and `constant` (`baselines.flag_runs`)."""
    return flag_runs(runs[runs["target_cell"]]) if not runs.empty else runs.assign(learned_nothing=False)


def target_cells(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run that is a cell of the table: its column label, seed, dev accuracy and parameters."""
    return runs.loc[runs["target_cell"], CELL_COLUMNS].reset_index(drop=True)


def fusion_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table 1 for our targets: ours (mean ± sd over seeds, flagged where runs learned nothing) beside the
    published row, and the constant prediction's accuracy on each target's dev set. Columns and rows we did not run
    read '–' on our side (`FUSION_NOTE`)."""
    cells = flagged_cells(runs)
    constants = constants_by_task(cells, "accuracy") if not cells.empty else {}
    published = published_frame(PFEIFFER_2021).pivot(index="task", columns="method", values="value")
    rows = []
    for task in (*FUSION_TARGETS, *FUSION_NOT_OFFLINE):
        ours = cells[cells["task"] == task]
        row = {"task": task, "source": "ours"}  # the backbone and split: the scale note above the table
        for label in COLUMNS:
            here = ours[ours["label"] == label]
            row[label] = flagged(mean_sd(here["score"]), int(here["learned_nothing"].sum()))
        row["constant"] = f"{constants[task]:.1f}" if task in constants else "–"
        rows.append(row)
        rows.append(
            {
                "task": task,
                "source": "published",
                **{c: f"{published.loc[task, c]:.2f}" for c in FUSION_COLUMNS},
                ALONE: "–",
                "constant": "–",
            }
        )
    rows.append(
        {
            "task": "trained / target",
            "source": "ours: % of the backbone (mean over targets)",
            **_fusion_params(cells),
            "constant": "–",
        }
    )
    return pd.DataFrame(rows)


FUSION_NOTE = (
    "*fusion-n1* (ours only): the fusion layers trained over the target's own adapter alone, which adds fusion's "
    "capacity without other tasks' adapters. *mt-a*: an adapter per task and the whole encoder trained jointly on "
    "the targets and the sources that learned (method `task_adapters`, as we read the paper's MT-A); *fusion-mt-a* "
    "fuses its adapters over its encoder. *st-a-houlsby*: Houlsby's architecture as the target's single-task adapter, "
    "at ST-A's size and rate (the paper's last column). Ours read '–' where not run (BoolQ has no training data "
    f"offline). *Constant*: the majority class's dev accuracy. {FLAG_NOTE}"
)


def fusion_scale_note(runs: pd.DataFrame) -> str:
    """The scale note of the fusion table (its cells), and how many source adapters ran: the study's other runs,
    besides the seed-0 ST-A cells that double as sources."""
    if runs.empty:
        return scale_note(runs)
    kept = protocol_sources(runs)
    if kept.any():  # the protocol: sources are cells of their own, of the selection seed
        sources = runs[kept]
        epochs = ", ".join(f"{e:g}" for e in sorted(sources["config.num_train_epochs"].unique()))
        return scale_note(runs[runs["target_cell"]]) + (
            f" Source adapters: {len(sources)} single-task runs of seed 0 ({epochs} epochs; "
            f"{', '.join(sorted(sources['task']))}), scored on their selection splits; seeds 1-3 report."
        )
    sources = runs[(runs["method"] == "pfeiffer") & (runs["config.num_train_epochs"] == 3) & (runs["seed"] == 0)]
    shared = sorted(sources.loc[sources["target_cell"], "task"])
    return (
        scale_note(runs[runs["target_cell"]]) + f" Source adapters: {len(sources)} single-task runs, 3 epochs each "
        f"({', '.join(sorted(sources['task']))}); those of {', '.join(shared) or 'no target'} are also their targets' "
        "ST-A cells of seed 0."
    )


def _fusion_params(cells: pd.DataFrame) -> dict[str, str]:
    """Per column: trained parameters per target as a share of the backbone (fusion: its fusion layers and head;
    the frozen source adapters it reads are counted apart, in the chapter's text)."""
    share = (100 * cells["trainable_params"] / cells["backbone_params"]).groupby(cells["label"]).mean()
    return {label: f"{share[label]:.2f}%" if label in share else "–" for label in COLUMNS}


FUSION_BEATS = DECLARED["beats-st-a"]
FUSION_SMALL = DECLARED["small-targets"]
FUSION_COMPOSES = DECLARED["composition"]
FUSION_BEATS_MT = DECLARED["beats-mt-a"]
BEATS_FULL = DECLARED["beats-full"]
ST_A_BEATS_FULL = DECLARED["st-a-beats-full"]
HEAD_BELOW_FULL = DECLARED["head-below-full"]
OVER_MT_A_NOT_WORSE = DECLARED["over-mt-a-not-worse"]
PFEIFFER_ON_PAR = DECLARED["pfeiffer-on-par-houlsby"]
ON_OWN_ADAPTER = ("fusion-st-a", "st-a", ALONE)  # the arms built on the target's own ST-A adapter


def verdicts(runs: pd.DataFrame) -> list[Verdict]:
    """The fusion claims on the table's cells (under the protocol, the seeds that chose nothing), under their
    declarations. Fusion trains more parameters than ST-A (its fusion layers), which the verdict table says beside
    it."""
    cells = flagged_cells(runs)
    aside = set_aside(runs)

    def unit(task: str, other: str = "st-a", first: str = "fusion-st-a") -> Unit:
        """first − other on `task`; set aside where the target's own adapter learned nothing in stage 1 and the
        comparison builds on it."""
        here = cells[cells["task"] == task]
        why = aside.get(task, "") if {first, other} & set(ON_OWN_ADAPTER) else ""
        return contrast(
            task,
            arm(here[here["label"] == first], "score", set_aside=why),
            arm(here[here["label"] == other], "score", set_aside=why),
            metric="accuracy",
        )

    def having(other: str, first: str = "fusion-st-a") -> list[str]:
        """The targets with runs of both arms, and those the comparison sets aside whatever ran (runs made after
        stage 1, fresh seeds among them, never train on a set-aside target: it stays aside, not "not run")."""
        built_on_own = bool({first, other} & set(ON_OWN_ADAPTER))
        return [
            t
            for t in FUSION_TARGETS
            if {first, other} <= set(cells.loc[cells["task"] == t, "label"]) or (built_on_own and t in aside)
        ]

    tasks = having("st-a")
    share = (cells["trainable_params"] / cells["backbone_params"]).groupby(cells["label"]).mean()
    capacity = (
        f"Fusion trains {share['fusion-st-a'] / share['st-a']:.1f}× ST-A's parameters: capacity, not composition, may "
        "explain a gain"
        if {"fusion-st-a", "st-a"} <= set(share.index)
        else ""
    )
    return [
        verdict_of(FUSION_BEATS, [unit(t) for t in tasks], detail=capacity),
        verdict_of(FUSION_SMALL, [unit(t) for t in tasks], detail=capacity),
        verdict_of(FUSION_COMPOSES, [unit(t, ALONE) for t in having(ALONE)]),
        verdict_of(FUSION_BEATS_MT, [unit(t, "mt-a") for t in having("mt-a")]),
        verdict_of(BEATS_FULL, [unit(t, "full") for t in having("full")], detail=capacity),
        verdict_of(ST_A_BEATS_FULL, [unit(t, "full", "st-a") for t in having("full", "st-a")]),
        verdict_of(HEAD_BELOW_FULL, [unit(t, "head_only", "full") for t in having("head_only", "full")]),
        verdict_of(OVER_MT_A_NOT_WORSE, [unit(t, "mt-a", OVER_MT_A) for t in having("mt-a", OVER_MT_A)]),
        verdict_of(PFEIFFER_ON_PAR, [unit(t, "st-a-houlsby", "st-a") for t in having("st-a-houlsby", "st-a")]),
        *attention_verdicts(cells, aside),
    ]


def claims(runs: pd.DataFrame) -> pd.DataFrame:
    """The fusion half's verdict table."""
    return verdict_table(verdicts(runs), finished_times(runs))


def chosen_rates(runs: pd.DataFrame) -> pd.DataFrame:
    """Per target and chosen column: the rate with the best selection-split score among stage 1's runs."""
    grid = runs[(runs["seed"] == SELECTION_SEED) & runs["method"].isin(CHOSEN) & runs["task"].isin(FUSION_TARGETS)]
    return choose_learning_rates(grid, ["task", "method"])
