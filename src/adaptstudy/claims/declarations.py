"""Claims as declared data: each chapter's claims live in one YAML file beside its code (`claims.yaml`), holding a
claim's whole design — the source's words and where they stand, the published figure, the arms, the units, the
quantity and rule, the smallest effect that matters, and the regime for runs that learned nothing. Chapter code
computes the units' runs; the design decides which enter and how they are judged.

Each claim carries a ledger: the entry that declared it, then one entry per amendment (date, reason, how many records
of its chapter existed then, and `was`: the fields it changed, as they were). Every entry keeps the fingerprint of the
design it left, so a design edited without an amendment no longer matches its ledger (`unamended`, tested in CI),
and the design under any earlier entry can be rebuilt (`Declared.design_at`) to show the verdict it gave.

Ledger dates before 2026-12-03 come from the commits that declared or changed a claim; wording edits made before the
ledger existed are in git, not here.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from adaptstudy.claims.budgets import Budget
from adaptstudy.claims.evidence import Rule
from adaptstudy.common import strict_yaml

DESIGN_FIELDS = (
    "sentence",
    "where",
    "published",
    "published_effect",
    "effect",
    "arms",
    "comparisons",
    "units",
    "versus_units",
    "every_unit",
    "quantity",
    "rule",
    "smallest_effect",
    "collapse",
    "requires",
)

ADDED_FIELDS = (
    "versus_units",
    "every_unit",
    "requires",
)  # design fields added after the first ledgers: left out of a fingerprint when empty


ENTRY_ADDED = (
    "protocol",
    "protocol_was",
    "before",
    "after",
    "outcomes_fingerprint",
)  # ledger fields written only where set


class RuleSpec(BaseModel):
    """A rule and its threshold, both stated: a threshold left out is not read as 0, nor `true` as 1 (YAML's
    booleans are no numbers a verdict should turn on)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["above", "below", "within", "outside"]
    threshold: float

    @field_validator("threshold", mode="before")
    @classmethod
    def _a_number(cls, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"the threshold is a number of the effect's units, not {value!r}")
        return value


class Design(BaseModel):
    """What a claim tests and how it is decided. `units` are the names of the units (tasks, settings, cells) every
    comparison is taken over; `comparisons` name the parts that must all hold (one unnamed part by default).
    `quantity`: `metric` (a score the stored predictions recompute: the bootstrap over examples may widen its
    interval) or `measured` (seconds, an early-epoch score: the interval over seeds alone). `published_effect`: the
    source's figure in our effect's units, where it gives one. `smallest_effect`: the smallest effect that matters,
    where the source implies one. `collapse`, the regime for runs that learned nothing: `count` (the one regime: a
    unit is set aside only on selection-stage evidence, a reported run that learned nothing counts with its score and
    is named); the superseded `include` (every run counts, nothing set aside), `block` (any such reported run makes the
    claim not testable) and `drop` (a unit with such a reported run is left out) rebuild earlier verdicts.
    `versus_units`, where given, makes the effect a comparison between groups: the mean over `units` − the mean over
    these ("helps most on the small targets": their gain above the large targets'). `every_unit`: the rule must
    hold on each unit alone ("never worse on any target"), not only on their mean. `requires`: the key of a claim
    that must hold for this one to be judged ("does an adapter gain as much as the full model?" asks only where the
    full model's gain holds); elsewhere the verdict is not testable, saying why."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    sentence: str
    where: str
    published: str
    published_effect: float | None = None
    effect: str
    arms: list[str]
    comparisons: list[str] = Field(default_factory=lambda: [""])
    units: list[str]
    versus_units: list[str] = Field(default_factory=list)
    every_unit: bool = False
    quantity: Literal["metric", "measured"] = "metric"
    rule: RuleSpec
    smallest_effect: float | None = None
    collapse: Literal["count", "include", "block", "drop"] = "count"
    requires: str | None = None

    @model_validator(mode="after")
    def _a_rule_that_can_decide_over_named_arms_and_units(self):
        """A threshold a verdict can turn on, and each arm, unit and comparison named once: a threshold that is no
        number, a margin of zero or less, or a metric's threshold beyond ±100 points would decide nothing (or
        everything), and a name written twice would be judged twice."""
        kind, t = self.rule.kind, self.rule.threshold
        if not math.isfinite(t):
            raise ValueError(f"rule {kind} {t}: the threshold is not a finite number")
        if (kind == "within" and t <= 0) or (kind == "outside" and t < 0):
            raise ValueError(f"rule {kind} {t:g}: a margin is a positive number of points, not {t:g}")
        if self.quantity == "metric" and abs(t) > 100:
            raise ValueError(f"rule {kind} {t:g}: a metric's effect lies within ±100 points; this decides nothing")
        for field in ("arms", "units", "versus_units", "comparisons"):
            names = getattr(self, field)
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise ValueError(f"{field} name {', '.join(map(repr, twice))} twice; each is named once")
        both = [u for u in self.units if u in self.versus_units]
        if both:
            raise ValueError(
                f"unit {', '.join(map(repr, both))} is in both `units` and `versus_units`: a group compared with "
                "itself; each unit is on one side"
            )
        return self

    @property
    def decision(self) -> Rule:
        return Rule(self.rule.kind, self.rule.threshold)

    @property
    def closeness(self) -> bool:
        """Whether the rule tests closeness against a margin (within it; no worse than −m; at most +m) rather than a
        direction (above or below zero)."""
        kind, threshold = self.rule.kind, self.rule.threshold
        return kind == "within" or (kind == "above" and threshold < 0) or (kind == "below" and threshold > 0)

    @property
    def all_units(self) -> list[str]:
        """Every unit the effect is taken over, `versus_units` included."""
        return [*self.units, *self.versus_units]

    def fingerprint(self) -> str:
        """A stable hash of the design (16 hex digits)."""
        design = self.model_dump(mode="json", include=set(DESIGN_FIELDS))  # a ledger is not part of the design
        for name in ADDED_FIELDS:  # fields added after the ledgers began count only where set
            if not design[name]:
                del design[name]
        canonical = json.dumps(design, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class Entry(BaseModel):
    """One line of a claim's ledger: `declared`, `amended`, `recorded` (the protocol's fingerprints written down,
    nothing changed), `frozen` (the design and protocol fixed for confirmation: only runs made after it, and after
    any later amendment, confirm) or `refactor` (fingerprinted code or grids changed, and every effect, interval and
    verdict of the claim, exploratory and confirmatory, came out identical on the committed records before and
    after: `outcomes_fingerprint` keeps their digest; the freeze holds); when, why, how many of its chapter's
    records existed, the fields an amendment changed as they were before it, and the fingerprint of the design after
    it. `protocol`:
    the fingerprint of each part of the protocol after it (`reporting.protocol`), and `protocol_was` the parts an
    amendment or a refactor changed, as they were. Code cannot be rebuilt from a fingerprint, so an amendment of the
    protocol keeps the verdicts it moved: `before` (under the earlier protocol) and `after`, each with the records it
    was judged on."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    event: Literal["declared", "amended", "recorded", "frozen", "refactor"]
    date: datetime
    reason: str = ""
    records: int | None = None
    was: dict[str, Any] = Field(default_factory=dict)
    fingerprint: str
    protocol: dict[str, str] = Field(default_factory=dict)
    protocol_was: dict[str, str] = Field(default_factory=dict)

    @field_validator("protocol", "protocol_was", mode="before")
    @classmethod
    def _parts_as_written(cls, value):
        """A file lists the parts (`part` with its `fingerprint`, or with what it `was`); the ledger keys them."""
        if isinstance(value, list):
            return {item["part"]: item.get("fingerprint", item.get("was")) for item in value}
        return value

    before: str = ""
    after: str = ""
    outcomes_fingerprint: str = ""

    @model_validator(mode="after")
    def _amendments_say_why(self):
        if self.event == "amended" and not (self.reason and (self.was or self.protocol_was)):
            raise ValueError(
                "an amendment needs a reason and `was` or `protocol_was` (the fields or parts it changed, as they were)"
            )
        if self.event in ("recorded", "frozen") and (self.was or self.protocol_was or not self.protocol):
            raise ValueError(f"a `{self.event}` entry writes down the protocol (`protocol`) and changes nothing")
        if self.event == "refactor" and (self.was or not (self.reason and self.protocol and self.outcomes_fingerprint)):
            raise ValueError(
                "a refactor changes no design field (`was`) and gives a reason, the protocol after it (`protocol`) and "
                "the digest of the outcomes it left identical (`outcomes_fingerprint`)"
            )
        unknown = set(self.was) - set(DESIGN_FIELDS)
        if unknown:
            raise ValueError(f"`was` names {sorted(unknown)}, not fields of a design; valid: {list(DESIGN_FIELDS)}")
        return self


def margin_said(claim):
    """The claim, checked: a claim of closeness (`Design.closeness`) gives `margin_reason`."""
    if claim.closeness and not claim.margin_reason:
        raise ValueError(
            f"{claim.sentence!r} is a claim of closeness (rule {claim.rule.kind} {claim.rule.threshold:g}): give "
            "`margin_reason`, why the margin is what it is (from its source, or why the source gives none)"
        )
    return claim


class Declared(Design):
    """A claim as its chapter declares it: the design and its ledger, `paper` where its source is not the chapter's
    (an attribution, not part of the design), and `margin_reason`: for a claim of closeness (`Design.closeness`),
    why its margin is what it is, from its source (prose beside the threshold, which the design holds)."""

    ledger: list[Entry] = Field(min_length=1)
    paper: str | None = None
    margin_reason: str = ""

    @model_validator(mode="after")
    def _a_margin_says_why(self, info: ValidationInfo):
        return self if (info.context or {}).get("as_it_was") else margin_said(self)  # a file before the rule

    @property
    def design(self) -> Design:
        return Design(**{f: getattr(self, f) for f in DESIGN_FIELDS})

    def design_at(self, index: int) -> Design:
        """The design as ledger entry `index` left it: the current one with every later amendment undone."""
        values = self.design.model_dump()
        for entry in reversed(self.ledger[index + 1 :]):
            values.update(entry.was)
        return Design(**values)

    @property
    def amendments(self) -> list[Entry]:
        return [e for e in self.ledger if e.event == "amended"]

    @property
    def last_change(self) -> datetime:
        """When the design or protocol last changed (its declaration or last amendment; recording or freezing
        changes nothing)."""
        return [e for e in self.ledger if e.event in ("declared", "amended")][-1].date

    @property
    def recorded_protocol(self) -> dict[str, str]:
        """The protocol's fingerprints as the ledger last wrote them down ({} before it did)."""
        return next((e.protocol for e in reversed(self.ledger) if e.protocol), {})

    def unamended(self, protocol: dict[str, str] | None = None) -> str:
        """'' when the ledger accounts for the design and, given it, the protocol (`reporting.protocol`), else what
        does not match (the latest entry first: an edit without an amendment shows there)."""
        last = len(self.ledger) - 1
        if protocol is not None and protocol != (recorded := self.recorded_protocol):
            changed = sorted(k for k in {*protocol, *recorded} if protocol.get(k) != recorded.get(k))
            return (
                f"its protocol changed without an amendment: {'; '.join(changed)} (fingerprints now "
                f"{[protocol.get(k) for k in changed]}, the ledger says {[recorded.get(k) for k in changed]}); "
                "add a ledger entry (event: amended, protocol_was, protocol: the fingerprints now) with "
                "`python -m adaptstudy.reporting.amend`"
            )
        found = self.design.fingerprint()
        if found != self.ledger[last].fingerprint:
            return (
                f"the design has fingerprint {found}, its ledger's last entry says {self.ledger[last].fingerprint}: a "
                "change to a declared claim is an amendment — add a ledger entry (event: amended, date, reason, "
                f"records, was: the changed fields as they were, fingerprint: {found})"
            )
        for i, entry in enumerate(self.ledger[:last]):
            if (found := self.design_at(i).fingerprint()) != entry.fingerprint:
                return f"ledger entry {i} says {entry.fingerprint}, the design its later entries undo to is {found}"
        return ""


class Finding(BaseModel):
    """One main finding of a chapter's sources, and how the chapter treats it: `claims`, the keys of the claims that
    test it, or `untested`, why none can (data not offline, scale, a figure without a claim)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str
    finding: str
    where: str
    claims: list[str] = Field(default_factory=list)
    untested: str = ""

    @model_validator(mode="after")
    def _tested_or_why_not(self):
        if bool(self.claims) == bool(self.untested):
            raise ValueError(f"finding {self.finding!r}: name the claims that test it or say why none can, not both")
        return self


class Declaration(BaseModel):
    """A chapter's declaration file: the source it judges, its claims by name, `findings`: what the sources claim
    and which claim tests each (the chapter's "what we test" table), `headlines`: the claim a reader looks for first,
    one per source the file judges (the findings open each source with it), and `budgets`: its stages' budgets."""

    model_config = ConfigDict(extra="forbid")
    paper: str
    budgets: dict[str, Budget] = Field(default_factory=dict)
    claims: dict[str, Declared]
    findings: list[Finding] = Field(default_factory=list)
    headlines: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _findings_name_declared_claims(self):
        unknown = sorted({c for f in self.findings for c in f.claims} - set(self.claims))
        if unknown:
            raise ValueError(f"findings name {unknown}, not claims of this file; valid: {sorted(self.claims)}")
        return self

    @model_validator(mode="after")
    def _one_declared_headline_per_source(self):
        unknown = sorted(set(self.headlines) - set(self.claims))
        if unknown:
            raise ValueError(f"headlines name {unknown}, not claims of this file; valid: {sorted(self.claims)}")
        sources = [self.claims[h].paper or self.paper for h in self.headlines]
        twice = sorted({s for s in sources if sources.count(s) > 1})
        if twice:
            raise ValueError(f"headlines name two claims of one source: {twice}; one per source")
        return self


def load_declaration(path: str | os.PathLike) -> Declaration:
    """A declaration file, validated; one error line naming the file and what is wrong."""
    path = Path(path)
    try:
        return Declaration.model_validate(strict_yaml.load(path.read_text(encoding="utf-8")))
    except (ValidationError, yaml.YAMLError) as error:
        raise ValueError(f"{path}: not a valid claim declaration: {one_line(error)}") from None


def one_line(error: Exception) -> str:
    """A validation or YAML error as one line: each problem named by its place in the file (`claims.mine.where:
    Field required`), not pydantic's dump over several lines with a link."""
    if isinstance(error, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'the file'}: {e['msg'].removeprefix('Value error, ')}"
            for e in error.errors()
        )
    return " ".join(str(error).split())
