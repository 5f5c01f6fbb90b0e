"""The Don't Stop Pretraining chapter's claims, declared with their rules and judged on every seed (no setting was
chosen on a seed). Fine-tuning runs come labelled by `tables.label_runs`, pretraining runs by
`tables.label_pretraining`.
"""

from __future__ import annotations

import pandas as pd

from adaptstudy.reporting.claims import Verdict, arm, declare, verdict_of, verdict_table
from adaptstudy.reporting.dsp.tables import CONDITIONS, pretraining_cost
from adaptstudy.reporting.evidence import Arm, Rule, Unit, contrast

PAPER = "Gururangan et al. 2020"
DAPT_HELPS = declare(
    "dsp.dapt",
    PAPER,
    "Domain-adaptive pretraining (DAPT) improves over the pretrained model on the domain's tasks",
    "Table 3",
    "gains on all 8 tasks, e.g. IMDb 95.0 → 95.4, Helpfulness 65.1 → 66.5 (RoBERTa-base)",
    "mean over tasks of DAPT − baseline (full model)",
    Rule("above", 0.0),
)
DAPT_DOMAIN = declare(
    "dsp.dapt-domain",
    PAPER,
    "DAPT's gain comes from the domain, not from more masked-LM training: DAPT beats a matched control",
    "§3 (domain relevance), Table 3",
    "the paper's control is ¬DAPT on an irrelevant domain; ours adds continued MLM on general text of neither domain "
    "(`neutral`) with DAPT's steps, rate and batch",
    "mean over tasks of DAPT − control (full model)",
    Rule("above", 0.0),
)
TAPT_HELPS = declare(
    "dsp.tapt",
    PAPER,
    "Task-adaptive pretraining (TAPT) improves over the pretrained model",
    "Table 5",
    "gains on all 8 tasks (RoBERTa-base)",
    "mean over tasks of TAPT − baseline (full model)",
    Rule("above", 0.0),
)
BOTH_BEST = declare(
    "dsp.dapt-tapt",
    PAPER,
    "DAPT followed by TAPT is best: above DAPT and above TAPT",
    "Table 5",
    "best on every task (RoBERTa-base)",
    "per condition: mean over tasks of DAPT+TAPT − it (full model)",
    Rule("above", 0.0),
)
NOT_DAPT = declare(
    "dsp.not-dapt",
    PAPER,
    "Pretraining on another domain (¬DAPT) does worse than DAPT",
    "Table 3",
    "¬DAPT below DAPT on every task (RoBERTa-base)",
    "mean over tasks of DAPT − ¬DAPT (full model)",
    Rule("above", 0.0),
)
ADAPTER_DAPT = declare(
    "dsp.adapter-dapt",
    "Adapt or Die (report)",
    "An adapter pretrained on the domain gains as much as the full model's DAPT",
    "report, DAPT with adapters",
    "adapters recover DAPT's gains at a fraction of the trained parameters",
    "mean over tasks of the adapter's DAPT gain − the full model's (both over their own baseline)",
    Rule("above", -1.0),
)
ADAPTER_VARIANT = "pfeiffer adapter, seq_bn pretrained (continue)"


def verdicts(runs: pd.DataFrame) -> list[Verdict]:
    """Every claim of the chapter on all seeds (no setting was chosen on a seed): the full model's conditions, and
    the adapter's DAPT gain against the full model's, which is only judged where the full model's DAPT gain holds."""
    runs = runs[runs["condition"].notna() & (runs["corpus_fraction"].fillna(1.0) == 1.0)]

    def cells(task: str, condition: str, adaptation: str = "full model", family: str = "full model") -> Arm:
        chosen = runs[(runs["task"] == task) & (runs["condition"] == condition) & (runs["family"] == family)]
        return arm(chosen[chosen["adaptation"] == adaptation], "score")

    full = runs[runs["adaptation"] == "full model"]
    tasks_with = {c: sorted(set(full.loc[full["condition"] == c, "task"])) for c in CONDITIONS}
    metric = runs.groupby("task")["scored_as"].first().to_dict()

    def vs(condition: str, other: str) -> list[Unit]:
        both = [t for t in tasks_with[condition] if t in tasks_with[other]]
        return [contrast(t, cells(t, condition), cells(t, other), metric=metric[t]) for t in both]

    dapt = verdict_of(DAPT_HELPS, vs("dapt", "baseline"))
    family = ADAPTER_VARIANT.split(",")[0]
    adapter_units = [
        Unit(
            t,
            [
                (1.0, cells(t, "dapt", ADAPTER_VARIANT, family)),
                (-1.0, cells(t, "baseline", family, family)),
                (-1.0, cells(t, "dapt")),
                (1.0, cells(t, "baseline")),
            ],
        )
        for t in tasks_with["dapt"]
        if not runs[(runs["task"] == t) & (runs["adaptation"] == ADAPTER_VARIANT)].empty
    ]
    no_gain = "" if dapt.verdict == "holds" else f"the full model's DAPT gain is not established ({dapt.verdict})"
    return [
        dapt,
        verdict_of(DAPT_DOMAIN, vs("dapt", "control")),
        verdict_of(TAPT_HELPS, vs("tapt", "baseline")),
        verdict_of(BOTH_BEST, {f"vs {c}": vs("dapt+tapt", c) for c in ("dapt", "tapt", "baseline")}),
        verdict_of(NOT_DAPT, vs("dapt", "not-dapt")),
        verdict_of(ADAPTER_DAPT, adapter_units, why=no_gain),
    ]


def claims(runs: pd.DataFrame, pretrain_runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The chapter's verdict table; with the pretraining runs, the adapter claim also says what DAPT cost per mode."""
    table = verdict_table(verdicts(runs))
    cost = pretraining_cost(pretrain_runs) if pretrain_runs is not None else ""
    if cost:
        last = table.index[table["claim"] == ADAPTER_DAPT.sentence]
        table.loc[last, "why"] = table.loc[last, "why"] + f"; DAPT per corpus: {cost}"
    return table
