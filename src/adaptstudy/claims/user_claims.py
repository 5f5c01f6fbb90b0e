"""Your own claims on your own records, judged as the chapters judge theirs (the command is
`python -m adaptstudy.reporting.user_claims`): the declaration file's model (`UserDeclaration`: the source, each
claim's design, the `arms` its labels mean and the choosing seed), its freeze, and its verdicts."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from adaptstudy.claims.baselines import flag_runs
from adaptstudy.claims.catalog import Claim
from adaptstudy.claims.declarations import Declared, Design, Entry, margin_said, one_line
from adaptstudy.claims.evidence import contrast
from adaptstudy.claims.ledgers import entry_written, ledger_text
from adaptstudy.claims.protocol import fingerprint, shared_parts
from adaptstudy.claims.user_arms import arm_runs, checked_arms
from adaptstudy.claims.verdicts import Verdict, arm, verdict_of
from adaptstudy.common import strict_yaml
from adaptstudy.common.files import locked_file, write_text_atomic
from adaptstudy.common.registry import did_you_mean


class UserClaim(Design):
    ledger: list[Entry] = Field(default_factory=list)
    margin_reason: str = ""  # a claim of closeness says why its margin is what it is (`Declared`)

    @model_validator(mode="after")
    def _a_margin_says_why(self):
        return margin_said(self)

    @model_validator(mode="after")
    def _a_ledger_written_as_the_chapters_are(self, info: ValidationInfo):
        """A hand-written ledger cannot make runs confirmatory that are not: it opens with the declaration, no entry
        is dated in the future or before it, each entry keeps the design it left (the last, this design's), and a
        `frozen` entry freezes the design the entry before it left."""
        if not self.ledger:
            return self
        now, first, design = datetime.now(timezone.utc), self.ledger[0], self.fingerprint()
        if first.event != "declared":
            raise ValueError(f"a ledger opens with its `declared` entry, not `{first.event}`")
        for before, entry in zip([None, *self.ledger], self.ledger):
            if not first.date <= entry.date <= now:
                raise ValueError(
                    f"its {entry.event} entry is dated {entry.date:%Y-%m-%d %H:%M}, outside its declaration "
                    f"({first.date:%Y-%m-%d %H:%M}) and now"
                )
            if entry.event == "frozen" and before is not None and entry.fingerprint != before.fingerprint:
                raise ValueError(
                    f"its frozen entry has fingerprint {entry.fingerprint!r}, not that of the design it freezes "
                    f"({before.fingerprint!r}, the entry before it)"
                )
        if self.ledger[-1].fingerprint != design and not (info.context or {}).get(REFREEZING):
            raise ValueError(
                f"its ledger ends at fingerprint {self.ledger[-1].fingerprint!r}, not its design's {design!r}: the "
                f"design changed after its ledger was written; {REFREEZE}"
            )
        return self

    @property
    def changed(self) -> bool:
        """Whether the design moved from the one its ledger last wrote down (read only when refreezing)."""
        return bool(self.ledger) and self.ledger[-1].fingerprint != self.fingerprint()


REFREEZING = "refreezing"  # the validation context of a file read to be frozen again: a changed design is expected
REFREEZE = "freeze it again with --freeze --refreeze (its runs until then stop confirming it)"


class UserDeclaration(BaseModel):
    """A declaration file for your records: the source, what each arm label selects, the choosing seed, the claims."""

    model_config = ConfigDict(extra="forbid")
    paper: str
    arms: dict[str, dict[str, Any]]
    selection_seed: int | None = None
    claims: dict[str, UserClaim]

    def check(self, refreezing: bool = False) -> None:
        """One error naming every arm a claim uses that `arms` does not define, a requirement that names no other
        claim of the file, or a last freeze of another protocol (not when `refreezing`: a new freeze replaces it)."""
        missing = {a for c in self.claims.values() for a in c.arms} - set(self.arms)
        if missing:
            raise ValueError(f"arms {sorted(missing)} are used by claims but not defined; defined: {sorted(self.arms)}")
        for label, settings in self.arms.items():
            if CONSTANT in settings and settings != {CONSTANT: True}:
                raise ValueError(
                    f"arm {label!r}: `{CONSTANT}: true` is an arm of its own (the constant prediction's score), "
                    f"with no other setting; it has {sorted(set(settings) - {CONSTANT}) or settings}"
                )
        for name, claim in self.claims.items():
            constant = [a for a in claim.arms if a in self.constants]
            if constant and (claim.arms[0] in constant or len(claim.arms) < 2):
                raise ValueError(
                    f"{name}: the constant arm {constant[0]!r} is what the first arm is compared with: name it after "
                    "the arm of runs"
                )
        for name, claim in self.claims.items():
            if claim.requires is not None and (claim.requires not in self.claims or claim.requires == name):
                others = sorted(set(self.claims) - {name})
                close = did_you_mean(claim.requires, others)
                raise ValueError(
                    f"{name}: requires {claim.requires!r}, not another claim of this file{close}; its other claims: "
                    f"{', '.join(others) or 'none'}"
                )
        self.judging_order()  # a circle of requirements is named here
        now = user_protocol(self)
        for name, claim in self.claims.items():
            for entry in [e for e in claim.ledger if e.event == "frozen" and not refreezing][-1:]:
                moved = sorted(k for k in {*now, *entry.protocol} if now.get(k) != entry.protocol.get(k))
                if moved:
                    raise ValueError(
                        f"{name}: its frozen entry is of another protocol than this one ({'; '.join(moved)}): "
                        f"{REFREEZE}"
                    )

    @property
    def constants(self) -> set[str]:
        """The arms that are the constant prediction (`{constant: true}`): the score of always predicting the
        majority class (a regression's mean) on the evaluation set of the arm compared with it."""
        return {label for label, settings in self.arms.items() if settings.get(CONSTANT) is True}

    def judging_order(self) -> list[str]:
        """The claims' names, each after the claim it requires (whose verdict gates it); a circle is a ValueError."""
        order: list[str] = []
        for name in self.claims:
            chain = [name]
            while (required := self.claims[chain[-1]].requires) is not None and required not in order:
                if required in chain:
                    raise ValueError(f"claims require each other in a circle: {' → '.join([*chain, required])}")
                chain.append(required)
            order += [n for n in reversed(chain) if n not in order]
        return order


CONSTANT = "constant"  # an arm `{constant: true}`: the constant prediction's score, which the engine computes
ARMS_PART = "arms and the choosing seed (the declaration's `arms`, `selection_seed`)"


def user_protocol(declaration: UserDeclaration) -> dict[str, str]:
    """The fingerprints of what decides a user's verdicts besides each claim's design: the parts every chapter
    shares (the interval, the regime, the evaluation set, the set-aside rule) and the file's arms and choosing seed."""
    parts = {name: fingerprint(objects) for name, objects in shared_parts().items()}
    return parts | {ARMS_PART: fingerprint([{"arms": declaration.arms, "seed": declaration.selection_seed}])}


def freeze_user_claims(path: Path, records: int | None = None, refreeze: bool = False) -> dict[str, datetime | None]:
    """Write each claim's ledger as the chapters' (declared where it had none, then frozen, dated now, with the
    design's and the protocol's fingerprints, and `records`, how many records the results folder held, where
    given). A claim frozen already is refused unless `refreeze`: then a design changed since its ledger is declared
    again before its new freeze (a user's file keeps no earlier design to amend from), and a protocol changed (the
    arms, the choosing seed, the shared code) is frozen anew. Only the ledgers' lines change
    (`ledgers.ledger_text`): the file's layout, comments and spellings stay, and it is written whole, under a lock
    (two freezes at once take turns; the second finds the claims frozen). Returns each claim's name with the freeze
    it replaced (None: none)."""
    with locked_file(path):
        declaration = load_user_declaration(path, refreezing=refreeze)
        before = {
            n: max((e.date for e in c.ledger if e.event == "frozen"), default=None)
            for n, c in declaration.claims.items()
        }
        frozen = [n for n, t in before.items() if t is not None]
        if frozen and not refreeze:
            raise ValueError(
                f"{path}: already frozen: {', '.join(frozen)}; a second freeze would move their confirmatory runs "
                "to after now: ask for it with --refreeze"
            )
        when, protocol = datetime.now(timezone.utc).replace(microsecond=0), user_protocol(declaration)
        ledgers = {}
        for name, claim in declaration.claims.items():
            design = claim.fingerprint()
            ledger = list(claim.ledger) or [
                Entry(event="declared", date=when, reason="declared at its freeze", fingerprint=design)
            ]
            if claim.changed:
                why = "declared again: its design changed after its freeze (the runs before this confirm no more)"
                ledger.append(Entry(event="declared", date=when, reason=why, fingerprint=design))
            entry = Entry(
                event="frozen",
                date=when,
                reason="frozen again for confirmation" if before[name] else "frozen for confirmation",
                records=records,
                fingerprint=design,
                protocol=protocol,
            )
            ledgers[name] = [entry_written(e.model_dump(mode="json")) for e in [*ledger, entry]]
        write_text_atomic(ledger_text(path.read_text(encoding="utf-8"), ledgers), path)
    return before


def load_user_declaration(path: str | os.PathLike, refreezing: bool = False) -> UserDeclaration:
    """The declaration at `path`, validated and checked; one error line naming the file and every problem (a field
    missing or of the wrong kind named by its place: `claims.mine.where: Field required`)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        raw = strict_yaml.load(path.read_text(encoding="utf-8"))
        declaration = UserDeclaration.model_validate(raw, context={REFREEZING: refreezing})
        declaration.check(refreezing)
    except (ValidationError, yaml.YAMLError, ValueError) as error:
        raise ValueError(f"{path}: not a valid claim declaration: {one_line(error)}") from None
    return declaration


def user_verdicts(declaration: UserDeclaration, runs: pd.DataFrame) -> list[Verdict]:
    """Every claim of `declaration` judged on `runs` (of `load_runs`), each first arm against each other arm, per
    task named in its units; one error naming every arm, setting and unit that cannot be read (`user_arms`)."""
    if runs.empty:
        raise ValueError("no ok record in the results folder: nothing to judge")
    try:
        runs = flag_runs(runs)
    except KeyError as missing:  # a record scored in another metric than its task's (a task whose metric changed)
        raise ValueError(
            f"a record holds no {missing} score, the metric its task's constant prediction is checked in: its task's "
            "main metric changed since it ran; judge runs of one main metric"
        ) from None
    if declaration.selection_seed is not None:
        runs = runs[runs["seed"] != declaration.selection_seed]
    units = {u for c in declaration.claims.values() for u in c.all_units}
    constants = declaration.constants
    arms = checked_arms({k: v for k, v in declaration.arms.items() if k not in constants}, units, runs)
    cells, chosen, problems = {}, {}, []
    for c in declaration.claims.values():
        for label in (a for a in c.arms if a not in constants):
            for task in c.all_units:
                if (label, task) not in cells:
                    try:
                        selected = arm_runs(runs, label, arms[label], task)
                        chosen[label, task], cells[label, task] = list(selected["record"]), arm(selected)
                    except ValueError as error:
                        problems.append(str(error))
    if problems:
        raise ValueError("; ".join(dict.fromkeys(problems)))
    problems = [p for name, c in declaration.claims.items() for p in _comparable(name, c, chosen, constants)]
    if problems:
        raise ValueError("; ".join(dict.fromkeys(problems)))
    verdicts, gates = {}, {}
    for name in declaration.judging_order():
        c = declaration.claims[name]
        ledger = c.ledger or [Entry(event="declared", date=datetime.now(timezone.utc), fingerprint=c.fingerprint())]
        declared = Declared(**c.model_dump(exclude={"ledger"}), ledger=ledger)
        first, others = c.arms[0], c.arms[1:]
        comparisons = {
            (f"vs {other}" if len(others) > 1 else ""): [
                contrast(
                    task,
                    cells[first, task],
                    constant_of(runs, cells[first, task]) if other in constants else cells[other, task],
                )
                for task in c.all_units
            ]
            for other in others
        }
        claim = Claim(name, declaration.paper, declared.model_copy(update={"comparisons": list(comparisons)}))
        verdicts[name] = verdict_of(claim, comparisons, gates=dict(gates))
        gates[name] = verdicts[name].verdict
    return [verdicts[name] for name in declaration.claims]


def constant_of(runs: pd.DataFrame, against) -> float:
    """The constant prediction's score on the evaluation set of the arm `against` (`baselines.flag_runs`' `constant`
    of its runs, which scored one set)."""
    return float(runs.loc[runs["run_id"].isin(against.run_ids), "constant"].mean())


def _comparable(
    name: str, claim: UserClaim, records: dict[tuple[str, str], list[dict]], constants: set[str] = frozenset()
) -> list[str]:
    """Why the claim's arms cannot be compared as its design says, one line each (none: they can): an arm whose
    runs report another main metric than the arm it is compared with (an effect of F1 minus accuracy), or score
    another evaluation set (another split, a cap of it, other examples: an interval as if they were paired), and a
    `quantity: measured`: a user's effect is the records' main metric, a score of their predictions (measured would
    drop the bootstrap over examples from the interval and the threshold's bounds)."""
    problems = []
    first, labels = claim.arms[0], [a for a in claim.arms if a not in constants]  # a constant scores the first's set
    for task in claim.all_units:
        sets = {label: _evaluation_set(records[label, task]) for label in labels}
        for label in labels:
            metrics = sorted({r.get("main_metric") for r in records[label, task]}, key=str)
            if len(metrics) > 1:
                problems.append(
                    f"{name}: arm {label!r} on {task} reports several main metrics ({', '.join(map(str, metrics))}): "
                    "an arm's runs are scored in one metric; state the setting that tells them apart"
                )
            if label == first:
                continue
            ours = {r.get("main_metric") for r in records[first, task]}
            if len(metrics) == 1 and len(ours) == 1 and ours != set(metrics):
                problems.append(
                    f"{name}: arm {label!r} on {task} reports {metrics[0]}, arm {first!r} {next(iter(ours))}: a "
                    "comparison is made on one metric (rerun one arm with the other's `main_metric`)"
                )
            if not _same_set(sets[label], sets[first]):
                problems.append(
                    f"{name}: arm {label!r} on {task} scored {_set_said(sets[label])}, arm {first!r} "
                    f"{_set_said(sets[first])}: a comparison is made on one evaluation set (run both arms with one "
                    "`max_eval_examples` and `data_seed`)"
                )
        if claim.quantity == "measured":  # a user's effect is always the records' main metric, a metric
            metric = ", ".join(sorted({str(r.get("main_metric")) for c in labels for r in records[c, task]}))
            problems.append(
                f"{name}: quantity measured, but its effect is the records' main metric ({metric} on {task}), a score "
                "of their predictions: declare `quantity: metric` (the interval then counts the evaluation examples "
                "where the records stored their predictions, and the threshold is held within ±100 points)"
            )
    return problems


def _evaluation_set(records: list[dict]) -> tuple:
    """What an arm's runs were scored on, as the arm is judged: the split and the examples every run scored (the
    smallest set: a run that scored the whole split is scored again on the others' cap, `shared_examples`), named
    by their digest where the runs stored predictions."""
    split = sorted({r["eval_split"] for r in records if r.get("eval_split") is not None})
    stored = [
        (r["predictions"]["examples"], r["predictions"]["examples_sha256"]) for r in records if r.get("predictions")
    ]
    if stored and len(stored) == len(records):
        n = min(e for e, _ in stored)
        return tuple(split), n, tuple(sorted({d for e, d in stored if e == n}))
    counts = [r.get("eval_examples") for r in records if r.get("eval_examples") is not None]
    return tuple(split), min(counts) if counts else None, ()


def _same_set(a: tuple, b: tuple) -> bool:
    """Whether two arms' evaluation sets agree in all that both records say (a record of before a field was kept
    says nothing of it)."""
    return all(x == y for x, y in zip(a, b) if x and y)


def _set_said(evaluation_set: tuple) -> str:
    split, n, digests = evaluation_set
    examples = "an unrecorded number of" if n is None else f"{n}"
    digest = f" (examples {', '.join(d[:8] for d in digests)})" if digests else ""
    return f"{examples} examples of {'/'.join(split) or 'an unrecorded split'}{digest}"
