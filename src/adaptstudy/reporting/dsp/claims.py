"""The Don't Stop Pretraining chapter's claims, declared with their rules and judged on every seed (no setting was
chosen on a seed). Fine-tuning runs come labelled by `tables.label_runs`, pretraining runs by
`tables.label_pretraining`.
"""

from __future__ import annotations

import pandas as pd

from adaptstudy.claims.catalog import declaration_path, declare_chapter
from adaptstudy.claims.evidence import Arm, Rule, Unit, contrast, judge
from adaptstudy.claims.verdicts import Verdict, arm, verdict_of
from adaptstudy.reporting.dsp.tables import pretraining_cost
from adaptstudy.reporting.findings import finished_times
from adaptstudy.reporting.verdict_tables import verdict_table

DECLARED = declare_chapter(declaration_path(__file__), "dsp")
DAPT_HELPS = DECLARED["dapt"]
DAPT_DOMAIN = DECLARED["dapt-domain"]
TAPT_HELPS = DECLARED["tapt"]
BOTH_BEST = DECLARED["dapt-tapt"]
NOT_DAPT = DECLARED["not-dapt"]
ADAPTER_DAPT = DECLARED["adapter-dapt"]
ADAPTER_TAPT = DECLARED["adapter-tapt"]
ADAPTER_BOTH = DECLARED["adapter-dapt-tapt"]
TAPT_OVER_DAPT = DECLARED["tapt-beats-dapt"]
TRANSFER_TAPT = DECLARED["transfer-tapt"]
SEQBN_VS_UNIPELT = DECLARED["seqbn-vs-unipelt"]
SMALL_CORPUS = DECLARED["adapter-small-corpus"]
UNIPELT_VARIANT = "unipelt adapter, unipelt pretrained (continue)"
ADAPTER_VARIANT = "pfeiffer adapter, seq_bn pretrained (continue)"


def _whole_corpus(runs: pd.DataFrame) -> pd.DataFrame:
    """The labelled runs from a starting point pretrained on the whole corpus (the corpus-size runs apart)."""
    return runs[runs["condition"].notna() & (runs["corpus_fraction"].fillna(1.0) == 1.0)]


def _cells(runs: pd.DataFrame, task: str, condition: str, adaptation="full model", family="full model") -> Arm:
    chosen = runs[(runs["task"] == task) & (runs["condition"] == condition) & (runs["family"] == family)]
    return arm(chosen[chosen["adaptation"] == adaptation], "score")


def _metric(runs: pd.DataFrame) -> dict[str, str]:
    """Per task, the metric its scores are in (the bootstrap over examples recomputes it)."""
    return runs.groupby("task")["scored_as"].first().to_dict()


def _vs(runs: pd.DataFrame, condition: str, other: str) -> list[Unit]:
    """The full model's `condition` − `other`, one unit per task that ran both."""
    full = runs[runs["adaptation"] == "full model"]
    has = {c: set(full.loc[full["condition"] == c, "task"]) for c in (condition, other)}
    metric = _metric(runs)
    return [
        contrast(t, _cells(runs, t, condition), _cells(runs, t, other), metric=metric[t])
        for t in sorted(has[condition] & has[other])
    ]


def _gain(runs: pd.DataFrame, task: str, adaptation: str, family: str, fraction: float = 1.0) -> list[tuple]:
    """The terms of `adaptation`'s DAPT gain over its family's baseline on `task`, its DAPT on `fraction` of the
    corpus."""
    dapt = runs[(runs["condition"] == "dapt") & (runs["corpus_fraction"].fillna(1.0) == fraction)]
    return [
        (1.0, _cells(dapt, task, "dapt", adaptation, family)),
        (-1.0, _cells(runs, task, "baseline", family, family)),
    ]


def _draft_units(runs: pd.DataFrame) -> tuple[list[Unit], list[Unit]]:
    """The draft's two questions: UniPELT's DAPT gain − SeqBN's per task; SeqBN's − the full model's per corpus
    fraction below the whole (Helpfulness)."""
    metric = _metric(runs)
    seqbn, unipelt = ADAPTER_VARIANT.split(",")[0], UNIPELT_VARIANT.split(",")[0]
    tasks = sorted(set(runs.loc[runs["adaptation"] == UNIPELT_VARIANT, "task"]))
    versus = [
        Unit(
            t,
            [*_gain(runs, t, UNIPELT_VARIANT, unipelt), *((-w, a) for w, a in _gain(runs, t, ADAPTER_VARIANT, seqbn))],
            metric=metric[t],
        )
        for t in tasks
    ]
    small = runs[(runs["adaptation"] == ADAPTER_VARIANT) & (runs["corpus_fraction"].fillna(1.0) < 1.0)]
    corpus = [
        Unit(
            f"{t} {f:.0%}",
            [
                *_gain(runs, t, ADAPTER_VARIANT, seqbn, f),
                *((-w, a) for w, a in _gain(runs, t, "full model", "full model", f)),
            ],
            metric=metric[t],
        )
        for t, f in sorted(set(zip(small["task"], small["corpus_fraction"])))
    ]
    return versus, corpus


def _adapter_verdict(claim, runs: pd.DataFrame, condition: str, gates: dict[str, str]) -> Verdict:
    """The SeqBN adapter's gain from `condition` (over its own baseline) − the full model's, per task that ran the
    adapter's; `gates`: the full model's verdicts, which the declaration may require (`requires`) to hold."""
    family = ADAPTER_VARIANT.split(",")[0]
    has = set(runs.loc[(runs["adaptation"] == ADAPTER_VARIANT) & (runs["condition"] == condition), "task"])
    units = [
        Unit(
            u.name,
            [
                (1.0, _cells(runs, u.name, condition, ADAPTER_VARIANT, family)),
                (-1.0, _cells(runs, u.name, "baseline", family, family)),
                *((-w, a) for w, a in u.terms),  # − the full model's gain
            ],
            metric=u.metric,
        )
        for u in _vs(runs, condition, "baseline")
        if u.name in has
    ]
    return verdict_of(claim, units, gates=gates)


def verdicts(runs: pd.DataFrame) -> list[Verdict]:
    """Every claim of the chapter on all seeds (no setting was chosen on a seed): the full model's conditions, and
    the adapter's gains against the full model's, judged where the claim their declaration requires holds."""
    versus, corpus = _draft_units(runs) if not runs.empty else ([], [])
    runs = _whole_corpus(runs)
    dapt = verdict_of(DAPT_HELPS, _vs(runs, "dapt", "baseline"))
    tapt = verdict_of(TAPT_HELPS, _vs(runs, "tapt", "baseline"))
    both = verdict_of(BOTH_BEST, {f"vs {c}": _vs(runs, "dapt+tapt", c) for c in ("dapt", "tapt", "baseline")})
    gates = {v.claim.key: v.verdict for v in (dapt, tapt, both)}
    return [
        dapt,
        verdict_of(DAPT_DOMAIN, _vs(runs, "dapt", "control")),
        tapt,
        both,
        verdict_of(NOT_DAPT, _vs(runs, "dapt", "not-dapt")),
        _adapter_verdict(ADAPTER_DAPT, runs, "dapt", gates),
        _adapter_verdict(ADAPTER_TAPT, runs, "tapt", gates),
        _adapter_verdict(ADAPTER_BOTH, runs, "dapt+tapt", gates),
        verdict_of(TAPT_OVER_DAPT, _vs(runs, "tapt", "dapt")),
        verdict_of(TRANSFER_TAPT, _vs(runs, "tapt", "transfer-tapt")),
        verdict_of(SEQBN_VS_UNIPELT, versus),
        verdict_of(SMALL_CORPUS, corpus),
    ]


DECOMPOSITION = {  # DAPT − baseline = (control − baseline) + (DAPT − control)
    "more masked-LM training (control − baseline)": ("control", "baseline"),
    "the domain (DAPT − control)": ("dapt", "control"),
    "DAPT − baseline": ("dapt", "baseline"),
}


def domain_or_more_mlm(runs: pd.DataFrame) -> pd.DataFrame:
    """DAPT's effect split in two, per task that ran the baseline, the control and DAPT, and over those tasks: what
    continued masked-LM training on neutral text does (control − baseline) and what the domain adds on top of it
    (DAPT − control). Descriptive, with the protocol's intervals and no verdict (the declared claims have theirs);
    a cell an arm of which learned nothing or has fewer than 3 seeds says so."""
    runs = _whole_corpus(runs)
    full = runs[runs["adaptation"] == "full model"]
    tasks = set.intersection(*(set(full.loc[full["condition"] == c, "task"]) for c in ("baseline", "control", "dapt")))

    def cell(units: list[Unit]) -> str:
        j = judge(units, Rule("above", 0.0))
        return j.interval() + (f" ({j.why})" if j.reasons else "")

    columns = {}
    for name, (a, b) in DECOMPOSITION.items():
        units = [u for u in _vs(runs, a, b) if u.name in tasks]
        columns[name] = {**{u.name: cell([u]) for u in units}, "over tasks": cell(units)} if units else {}
    return pd.DataFrame(columns, columns=list(DECOMPOSITION)).rename_axis("task").reset_index()


def described_intervals(runs: pd.DataFrame) -> list[str]:
    """The intervals the chapter's descriptive table states (`domain_or_more_mlm`), which its prose may quote."""
    table = domain_or_more_mlm(runs).drop(columns="task")
    return [cell for column in table for cell in table[column].dropna()]


def claims(runs: pd.DataFrame, pretrain_runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The chapter's verdict table; with the pretraining runs, the adapter claim also says what DAPT cost per mode."""
    table = verdict_table(verdicts(runs), finished_times(runs))
    cost = pretraining_cost(pretrain_runs) if pretrain_runs is not None else ""
    if cost:
        last = table.index[table["claim"] == ADAPTER_DAPT.sentence]
        table.loc[last, "why"] = table.loc[last, "why"] + f"; DAPT per corpus: {cost}"
    return table
