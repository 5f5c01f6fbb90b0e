"""Claims declared as data (`declarations`; most before the runs that judge them, the rest marked post hoc): each
chapter's `claims.yaml` holds every claim's design and ledger; its code builds the units' arms from the runs and
`verdict_of` judges them under the design — which units enter, the regime for runs that learned nothing, the
quantity, the rule.

One regime for runs that learned nothing, in every chapter (a design's `collapse: count`): a unit is set aside
only on selection-stage evidence (an arm's `set_aside`: the selection seed's run at its chosen setting learned
nothing on the selection split), never on reported runs; a reported run that learned nothing counts with its score
and the verdict says how many it rests on. A declared unit with no runs makes the claim not testable ("not run").

A chapter that chose settings (a learning rate, an adapter size) on the selection seed reports the other seeds
only (`reported`): a verdict never rests on the runs that chose.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np
import pandas as pd

from adaptstudy.claims.catalog import Claim
from adaptstudy.claims.declarations import Design
from adaptstudy.claims.evidence import Arm, Judgement, Unit, all_of, format_reasons, judge
from adaptstudy.claims.shared_examples import on_shared_examples, unpaired
from adaptstudy.runs.resumption import unverified


class Judged(NamedTuple):
    """What judging a claim's units under a design gives (`Verdict._judged`)."""

    names: list[str]  # one per judgement: the comparison, or comparison and unit where every unit is judged alone
    judgements: list[Judgement]
    reasons: dict[str, list[str]]  # why the claim is not testable, by reason: the units or comparisons it concerns
    left_out: list[tuple[str, str, str]]  # (comparison, unit, why) of each declared unit that did not enter


@dataclass
class Verdict:
    """A claim judged on runs under a design (its current one unless given): `comparisons` are the units the chapter
    could build, by comparison name; the design decides which enter and how (see the module docstring). `detail`
    says what a reader needs beside the verdict; `why` makes it not testable for a reason outside the runs; `gates`
    holds the verdicts of the claims a design may require (`Design.requires`)."""

    claim: Claim
    comparisons: dict[str, list[Unit]]
    detail: str = ""
    why: str = ""
    design: Design | None = None
    gates: dict[str, str] = field(default_factory=dict)
    _judgements: dict = field(default_factory=dict, repr=False)  # shared by `under`: one judgement per distinct input

    def __post_init__(self):
        self.design = self.design or self.claim.design

    def under(self, design: Design) -> Verdict:
        """The same runs judged under another design (an earlier one of the claim's ledger)."""
        return dataclasses.replace(self, design=design)

    def history(self) -> list[tuple[str, str]]:
        """('declared 2026-11-25', verdict), then one pair per amendment: the verdict under each design the ledger
        names, the last being this one. A design an amendment of the protocol replaced shows the verdict that
        amendment recorded under the earlier protocol (code is not rebuilt from a fingerprint)."""
        ledger = self.claim.declared.ledger
        changes = [i for i, e in enumerate(ledger) if e.event in ("declared", "amended")]  # what changed a design
        shown = []
        for n, i in enumerate(changes):
            following = ledger[changes[n + 1]] if n + 1 < len(changes) else None
            verdict = following.before if following and following.before else None
            shown.append(
                (
                    f"{ledger[i].event} {ledger[i].date:%Y-%m-%d}",
                    verdict or self.under(self.claim.declared.design_at(i)).verdict,
                )
            )
        return shown

    @cached_property
    def _judged(self) -> Judged:
        """The comparisons' names and judgements, why the claim is not testable, and the units left out."""
        d = self.design
        names, judgements, reasons, left_out = [], [], {}, []
        for name in d.comparisons:
            built = {u.name: u for u in self.comparisons.get(name, [])}
            missing = [u for u in d.all_units if u not in built]
            units = [dataclasses.replace(built[u], against=u in d.versus_units) for u in d.all_units if u in built]
            if d.quantity == "measured":  # the bootstrap recomputes metrics, not seconds
                units = [dataclasses.replace(u, measured=True) for u in units]
            units, out = _regime(units, d.collapse)
            left_out += [(name, unit, why) for unit, why in out]
            parts = [(f"{_named(name)}{u.name}", [u]) for u in units] if d.every_unit else [(name, units)]
            for part, judged_units in parts:
                key = (part, tuple(u.name for u in judged_units), d.quantity, d.decision)
                if key not in self._judgements:
                    self._judgements[key] = judge(judged_units, d.decision)
                judgement = self._judgements[key]
                if missing:
                    reasons.setdefault("not run", []).extend(f"{_named(name)}{u}" for u in missing)
                    judgement = dataclasses.replace(judgement, verdict="not testable")
                if d.collapse == "block" and judgement.collapsed:
                    reasons.setdefault("learned nothing", []).extend(judgement.collapsed)
                    judgement = dataclasses.replace(judgement, verdict="not testable")
                for reason, why in judgement.reasons.items():
                    reasons.setdefault(reason, []).extend(why)
                names.append(part)
                judgements.append(judgement)
        for reason in reasons:
            reasons[reason] = list(dict.fromkeys(reasons[reason]))
        return Judged(names, judgements, reasons, left_out)

    @property
    def names(self) -> list[str]:
        return self._judged.names

    @property
    def judgements(self) -> list[Judgement]:
        return self._judged.judgements

    @property
    def left_out(self) -> list[str]:
        """The declared units that did not enter, each with why (set aside on selection-stage evidence, or under a
        superseded regime left out at chance), named by comparison where there are several; one reason given once."""
        merged: dict[str, list[str]] = {}
        for name, unit, why in self._judged.left_out:
            merged.setdefault(why, []).append(f"{_named(name)}{unit}")
        return [f"{', '.join(dict.fromkeys(units))}: {why}" for why, units in merged.items()]

    @property
    def run_ids(self) -> set[str]:
        return {r for j_units in self._used_units() for u in j_units for arm in u.arms() for r in arm.run_ids}

    def _used_units(self) -> list[list[Unit]]:
        left = {(name, unit) for name, unit, _ in self._judged.left_out}
        return [
            [u for u in self.comparisons.get(n, []) if u.name in self.design.all_units and (n, u.name) not in left]
            for n in self.design.comparisons
        ]

    def used_units(self) -> list[str]:
        """The units the verdict rests on, once each."""
        return list(dict.fromkeys(u.name for units in self._used_units() for u in units))

    def collapsed(self) -> list[str]:
        """The units whose counted runs include some that learned nothing, with how many ('rte (3 runs)'; named by
        comparison where there are several)."""
        named = (lambda n: "") if self.design.every_unit else _named  # a part judged alone is named by its unit
        return list(dict.fromkeys(f"{named(n)}{c}" for n, j in zip(self.names, self.judgements) for c in j.collapsed))

    @property
    def blocked(self) -> str:
        """Why the design keeps the claim from being judged here: `why`, or a required claim that does not hold."""
        required = self.design.requires
        if required and self.gates.get(required) != "holds":
            return "; ".join(
                filter(
                    None,
                    [self.why, f"judged only where {required} holds ({self.gates.get(required, 'not judged')} here)"],
                )
            )
        return self.why

    @property
    def verdict(self) -> str:
        if self.blocked or self._judged.reasons:
            return "not testable"
        return all_of(self.judgements)

    @property
    def not_testable_because(self) -> dict[str, list[str]]:
        """Why the verdict is not testable, by reason ('not run', 'learned nothing', ...): what each concerns."""
        return self._judged.reasons

    def reasons(self) -> str:
        """Why the verdict is not testable, merged over the comparisons."""
        return "; ".join(filter(None, [self.blocked, format_reasons(self._judged.reasons)]))

    def reason_kinds(self) -> list[str]:
        """The reasons without the units they name ('learned nothing', 'not run', `why`), to count what keeps claims
        from being judged."""
        kinds = [self.blocked] if self.blocked else []
        return kinds + [r for r in self._judged.reasons if r not in kinds]

    def rests_on(self) -> str:
        """What the verdict rests on and what it left out, in one line: every verdict says it, not only the
        untestable ones."""
        used = self.used_units()
        parts = [f"{len(used)} of {len(self.design.all_units)} units: {', '.join(used) or 'none'}"]
        if self.left_out:
            parts.append("left out: " + "; ".join(self.left_out))
        if collapsed := self.collapsed():
            parts.append("counted, though they learned nothing: " + ", ".join(collapsed))
        if out_of_order := self.out_of_order():
            parts.append(
                f"{len(out_of_order)} of its runs resumed past their first epoch without its batch order and not yet "
                f"rerun: {', '.join(sorted(out_of_order))}"
            )
        if len(mix := self.precisions()) > 1:
            parts.append("its runs mix precisions: " + ", ".join(f"{p} ({n} runs)" for p, n in mix.items()))
        return "; ".join(parts)

    def out_of_order(self) -> set[str]:
        """The runs the verdict rests on that resumed past their first epoch without its batch order and were not
        rerun (`runs.resumption.unverified`): flagged wherever a verdict uses them."""
        return {r for units in self._used_units() for u in units for a in u.arms() for r in a.out_of_order}

    def precisions(self) -> dict[str, int]:
        """How many of the runs the verdict rests on trained in each precision (`precision_used`)."""
        runs = {
            r: p
            for units in self._used_units()
            for u in units
            for a in u.arms()
            for r, p in zip(a.run_ids, a.precisions)
        }
        return dict(sorted(Counter(runs.values()).items()))

    def effects(self) -> str:
        """Each comparison's effect and interval, named where there are several."""
        if len(self.judgements) == 1:
            return self.judgements[0].interval()
        return "; ".join(f"{n}: {j.interval()}" for n, j in zip(self.names, self.judgements)) or "–"

    def interval_basis(self) -> str:
        """How each comparison's interval was made (over seeds; widened over how many examples, or why not)."""
        methods = list(dict.fromkeys(j.method for j in self.judgements))
        if len(methods) <= 1:
            return methods[0] if methods else "–"
        return "; ".join(f"{n}: {j.method}" for n, j in zip(self.names, self.judgements))

    def rules_out(self) -> str:
        """What each comparison's interval excludes, named where there are several."""
        if len(self.judgements) == 1:
            return self.judgements[0].rules_out()
        return "; ".join(f"{n}: {j.rules_out()}" for n, j in zip(self.names, self.judgements)) or "–"

    def detectable(self) -> float:
        """The smallest effect the design detects with 80% power (the largest over its comparisons)."""
        values = [j.detectable() for j in self.judgements]
        return float(np.nanmax(values)) if values and not np.all(np.isnan(values)) else np.nan

    def published_inside(self) -> str:
        """Whether the source's figure (in our effect's units, where the design gives one) lies inside our interval:
        'inside', 'outside', or '–'."""
        figure = self.design.published_effect
        if figure is None or not self.judgements:
            return "–"
        lows, highs = [j.low for j in self.judgements], [j.high for j in self.judgements]
        if any(np.isnan(x) for x in lows + highs):
            return "–"
        return "inside" if all(lo <= figure <= hi for lo, hi in zip(lows, highs)) else "outside"

    def against_source(self) -> str:
        """Where a decided verdict's effect has the sign opposite to the source's figure, that (a two-sided rule holds
        either way, so *holds* alone would read as agreement); '' otherwise."""
        figure = self.design.published_effect
        if figure is None or len(self.judgements) != 1 or self.verdict not in ("holds", "does not hold"):
            return ""
        effect = self.judgements[0].effect
        return f"our effect has the opposite sign to the source's {figure:+g}" if effect * figure < 0 else ""


def _regime(units: list[Unit], collapse: str) -> tuple[list[Unit], list[tuple[str, str]]]:
    """The units a regime lets in, and those it leaves out with why: `count` sets aside the units an arm of which
    carries selection-stage evidence; the superseded `drop` left out the units with a reported run at chance;
    `include` and `block` let every unit in (`block` then makes a unit with such a run untestable)."""
    if collapse == "count":
        out = {u.name: "; ".join(dict.fromkeys(a.set_aside for a in u.arms() if a.set_aside)) for u in units}
        return [u for u in units if not out[u.name]], [(n, f"set aside ({why})") for n, why in out.items() if why]
    if collapse == "drop":
        return [u for u in units if not u.collapsed()], [(u.name, "a run at chance") for u in units if u.collapsed()]
    return units, []


def _named(comparison: str) -> str:
    return f"{comparison}: " if comparison else ""


def verdict_of(
    claim: Claim,
    comparisons: dict[str, Sequence[Unit]] | Sequence[Unit],
    detail: str = "",
    why: str = "",
    gates: dict[str, str] | None = None,
) -> Verdict:
    """Judge `claim` on one comparison (a list of units), or on several named ones that must all hold; `gates`: the
    verdicts of the claims its design may require."""
    named = comparisons if isinstance(comparisons, dict) else {"": comparisons}
    return Verdict(claim, {name: list(units) for name, units in named.items()}, detail, why, gates=gates or {})


def arm(
    runs: pd.DataFrame, score: str = "main_metric_value", learned: str = "learned_nothing", set_aside: str = ""
) -> Arm:
    """The arm of these runs: their scores, how many learned nothing, their run ids, and their predictions with the
    labels when every run stored them (for the bootstrap over examples), on the examples every run scored: where
    some runs scored a cap of the split and others all of it, each is scored again on the capped examples
    (`shared_examples`) in the metric `score` is in (the runs' main metric, or the one a `scored_as` column names);
    `set_aside` carries the selection-stage evidence against its setting, if any."""
    records = list(runs["record"]) if "record" in runs else []
    main = runs["main_metric"].unique() if score == "main_metric_value" and "main_metric" in runs else []
    named = runs["scored_as"].unique() if score != "main_metric_value" and "scored_as" in runs else main
    shared = (
        on_shared_examples(records, named[0] if len(named) == 1 else None)
        if records or runs.empty
        else unpaired("its rows are scores without their runs' records (a multi-task run's, per task): no predictions")
    )
    rescored = shared.scores is not None
    return Arm(
        shared.scores if rescored else runs[score].astype(float).tolist(),
        int(runs[learned].sum()) if learned in runs else 0,
        shared.predictions,
        shared.labels,
        tuple(runs["run_id"]) if "run_id" in runs else (),
        main[0] if len(main) == 1 else None,
        runs["label"].iloc[0] if "label" in runs and runs["label"].nunique() == 1 else "",
        set_aside,
        tuple(r.get("precision_used") or "fp32" for r in records),  # records from before it was kept: fp32
        out_of_order(records),
        rescored,
        shared.why,
    )


def out_of_order(records: Sequence[dict]) -> tuple[str, ...]:
    """The run ids of `records` that resumed past their first epoch without its batch order and were not rerun: an
    arm's `out_of_order`, however the arm is built."""
    return tuple(r["run_id"] for r in records if unverified(r))
