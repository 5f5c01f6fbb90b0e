"""Claims, written down before the runs that judge them: the paper's sentence and where it stands, what it reports,
the effect we measure and the rule that decides (`evidence.Rule`). Each chapter declares its claims in its claims
module (`declare`) and judges them on its runs (`Verdict`); the scorecard lists every declared claim.

A chapter that chose settings (a learning rate, an adapter size) on the selection seed reports the other seeds
only (`reported`): a verdict never rests on the runs that chose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from adaptstudy.common.registry import Registry
from adaptstudy.reporting.baselines import reported_labels
from adaptstudy.reporting.evidence import VERDICTS, Arm, Judgement, Rule, Unit, all_of, format_reasons, judge
from adaptstudy.runs.predictions import decode


@dataclass(frozen=True)
class Claim:
    """One claim of a paper: `key` (chapter.name), the paper, its sentence and where it stands, what it reports,
    the effect we measure (points unless said) and the decision rule; `chapter` is the book page that judges it."""

    key: str
    paper: str
    sentence: str
    where: str
    published: str
    effect: str
    rule: Rule
    chapter: str


CLAIMS: Registry[Claim] = Registry("claim")


def declare(key: str, paper: str, sentence: str, where: str, published: str, effect: str, rule: Rule) -> Claim:
    """A claim, registered under `key` (its chapter is the key's first part)."""
    if key in CLAIMS:
        raise ValueError(f"claim {key!r} is declared twice")
    return CLAIMS.add(key, Claim(key, paper, sentence, where, published, effect, rule, key.split(".")[0]))


@dataclass
class Verdict:
    """A claim judged on runs: one judgement per comparison it needs (all must hold; `names` tell them apart), the
    runs behind it, and what a reader needs beside the verdict (`detail`; `why` overrides the verdict with
    `not testable`)."""

    claim: Claim
    judgements: list[Judgement]
    names: list[str] = field(default_factory=list)
    run_ids: set[str] = field(default_factory=set)
    detail: str = ""
    why: str = ""

    @property
    def verdict(self) -> str:
        return "not testable" if self.why else all_of(self.judgements)

    def _merged_reasons(self) -> dict[str, list[str]]:
        """Each reason the comparisons give, with the parts it names, once each."""
        merged: dict[str, list[str]] = {}
        for j in self.judgements:
            for reason, parts in j.reasons.items():
                merged.setdefault(reason, [])
                merged[reason] += [p for p in parts if p not in merged[reason]]
        return merged

    def reasons(self) -> str:
        """Why the verdict is not testable, merged over the comparisons."""
        return "; ".join(filter(None, [self.why, format_reasons(self._merged_reasons())]))

    def reason_kinds(self) -> list[str]:
        """The reasons without the tasks they name ('learned nothing', 'fewer than 3 reported seeds', `why`), to count
        what keeps claims from being judged."""
        kinds = [self.why] if self.why else []
        return kinds + [r for r in self._merged_reasons() if r not in kinds]

    def effects(self) -> str:
        """Each comparison's effect and interval, named where there are several."""
        if len(self.judgements) == 1:
            return self.judgements[0].interval()
        return "; ".join(f"{n}: {j.interval()}" for n, j in zip(self.names, self.judgements)) or "–"


def verdict_of(
    claim: Claim, comparisons: dict[str, Sequence[Unit]] | Sequence[Unit], detail: str = "", why: str = ""
) -> Verdict:
    """Judge `claim` on one comparison (a list of units), or on several named ones that must all hold."""
    named = comparisons if isinstance(comparisons, dict) else {"": comparisons}
    judgements = [judge(units, claim.rule) for units in named.values()]
    run_ids = {r for units in named.values() for u in units for arm in u.arms() for r in arm.run_ids}
    return Verdict(claim, judgements, list(named), run_ids, detail, why)


def learned_units(units: Sequence[Unit]) -> tuple[list[Unit], str]:
    """The units none of whose runs learned nothing, and a note naming those left out: a claim over many cells (every
    k, every training size) rests on the cells where both sides learned, and says which it left out at chance."""
    kept = [u for u in units if not any(arm.learned_nothing for arm in u.arms())]
    out = [_at_chance(u) for u in units if any(arm.learned_nothing for arm in u.arms())]
    return kept, (f"left out, a run at chance: {', '.join(out)}" if out else "")


def learned_groups(groups: dict[str, Sequence[Unit]]) -> tuple[dict[str, list[Unit]], str]:
    """`learned_units` for each named comparison of a claim (each size, each component), with one note."""
    kept = {name: learned_units(units) for name, units in groups.items()}
    return {name: units for name, (units, _) in kept.items()}, "; ".join(
        f"{name}: {out}" for name, (_, out) in kept.items() if out
    )


def _at_chance(unit: Unit) -> str:
    """'cb (st-a)': the unit, and which of its named arms learned nothing."""
    named = [a.name for a in unit.arms() if a.learned_nothing and a.name]
    return f"{unit.name} ({', '.join(named)})" if named else unit.name


def verdict_over_learned(claim: Claim, units: Sequence[Unit], detail: str = "") -> Verdict:
    """`verdict_of` over the units where every run learned (`learned_units`), naming those left out in the detail:
    a target whose runs sit at chance cannot say whether one arm beats the other, but need not silence the rest."""
    kept, out = learned_units(units)
    return verdict_of(claim, kept, detail="; ".join(filter(None, [out, detail])))


def arm(runs: pd.DataFrame, score: str = "main_metric_value", learned: str = "learned_nothing") -> Arm:
    """The arm of these runs: their scores, how many learned nothing, their run ids, and their predictions with the
    labels when every run stored them on the same examples (for the bootstrap over examples), in the runs' main
    metric when `score` is it."""
    records = list(runs["record"]) if "record" in runs else []
    stored = [r.get("predictions") for r in records]
    shared = bool(records) and all(stored) and len({s["examples_sha256"] for s in stored}) == 1
    main = runs["main_metric"].unique() if score == "main_metric_value" and "main_metric" in runs else []
    return Arm(
        runs[score].astype(float).tolist(),
        int(runs[learned].sum()) if learned in runs else 0,
        [decode(s) for s in stored] if shared else None,
        reported_labels(records[0]) if shared else None,
        tuple(runs["run_id"]) if "run_id" in runs else (),
        main[0] if len(main) == 1 else None,
        runs["label"].iloc[0] if "label" in runs and runs["label"].nunique() == 1 else "",
    )


VERDICT_COLUMNS = ["claim", "where", "paper reports", "ours: effect [95% CI]", "seeds", "rule", "verdict", "why"]


def verdict_table(verdicts: Sequence[Verdict]) -> pd.DataFrame:
    """A chapter's verdicts: the claim, the paper's figure, our effect with its interval (one line per comparison),
    the fewest reported seeds behind it, the rule, the verdict (one of four) and the reason where not testable."""
    rows = []
    for v in verdicts:
        assert v.verdict in VERDICTS, v.verdict
        rows.append(
            {
                "claim": v.claim.sentence,
                "where": v.claim.where,
                "paper reports": v.claim.published,
                "ours: effect [95% CI]": v.effects(),
                "seeds": min((j.seeds for j in v.judgements), default=0),
                "rule": f"{v.claim.effect}: {v.claim.rule}",
                "verdict": v.verdict,
                "why": "; ".join(filter(None, [v.reasons(), v.detail])) or "–",
            }
        )
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def detail_table(verdicts: Sequence[Verdict]) -> pd.DataFrame:
    """Per claim, comparison and unit (task or setting): the effect with its interval, reported seeds and verdict,
    so a reader sees which tasks a claim-wide verdict rests on (or which made it not testable)."""
    rows = [
        {
            "claim": v.claim.sentence,
            "comparison": name or "–",
            "unit": unit,
            "effect [95% CI]": j.interval(),
            "seeds": j.seeds,
            "verdict": j.verdict,
            "why": j.why or "–",
        }
        for v in verdicts
        for name, judged in zip(v.names, v.judgements)
        for unit, j in (judged.units or [("all", judged)])
    ]
    return pd.DataFrame(rows, columns=["claim", "comparison", "unit", "effect [95% CI]", "seeds", "verdict", "why"])


PROTOCOL = (
    "**How a verdict is reached.** Each claim was declared in code before it was judged: the paper's sentence, the "
    "effect measured, and the rule. The effect is a mean over tasks (or settings) of one arm minus another; its 95% "
    "interval a Welch t-interval over the reported seeds, widened by a paired bootstrap over evaluation examples "
    "where every run stored its predictions. *holds* / *does not hold*: the interval lies on one side of the rule's "
    "threshold; *inconclusive*: it straddles it; *not testable*: an arm has fewer than 3 reported seeds or a run that "
    "learned nothing (where a chapter judges over the tasks both arms learned, those left out are named in *why*, with "
    "the arm at chance). Runs of the seed that chose a setting never report."
)
TEXT_COLUMNS = ("claim", "paper reports", "ours: effect [95% CI]", "rule", "why", "why not testable")


def styled(table: pd.DataFrame):
    """A verdict table for the book: long text wraps in its columns (the book keeps other cells on one line)."""
    wrap = [c for c in TEXT_COLUMNS if c in table.columns]
    return (
        table.style.hide(axis="index")
        .set_properties(subset=wrap, **{"white-space": "normal", "min-width": "14em", "max-width": "28em"})
        .set_properties(subset=["verdict"], **{"font-weight": "bold"})
    )
