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
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from adaptstudy.claims.baselines import flag_runs
from adaptstudy.claims.catalog import Claim
from adaptstudy.claims.declarations import Declared, Design, Entry, margin_said
from adaptstudy.claims.evidence import contrast
from adaptstudy.claims.ledgers import entry_written, with_ledgers
from adaptstudy.claims.protocol import fingerprint, shared_parts
from adaptstudy.claims.user_arms import arm_runs, checked_arms
from adaptstudy.claims.verdicts import Verdict, arm, verdict_of
from adaptstudy.common import strict_yaml
from adaptstudy.common.files import locked_file, write_text_atomic


class UserClaim(Design):
    ledger: list[Entry] = Field(default_factory=list)
    margin_reason: str = ""  # a claim of closeness says why its margin is what it is (`Declared`)

    @model_validator(mode="after")
    def _a_margin_says_why(self):
        return margin_said(self)

    @model_validator(mode="after")
    def _a_ledger_written_as_the_chapters_are(self):
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
        if self.ledger[-1].fingerprint != design:
            raise ValueError(
                f"its ledger ends at fingerprint {self.ledger[-1].fingerprint!r}, not its design's {design!r}: the "
                "design changed without an amendment"
            )
        return self


class UserDeclaration(BaseModel):
    """A declaration file for your records: the source, what each arm label selects, the choosing seed, the claims."""

    model_config = ConfigDict(extra="forbid")
    paper: str
    arms: dict[str, dict[str, Any]]
    selection_seed: int | None = None
    claims: dict[str, UserClaim]

    def check(self) -> None:
        """One error naming every arm a claim uses that `arms` does not define, or a freeze of another protocol."""
        missing = {a for c in self.claims.values() for a in c.arms} - set(self.arms)
        if missing:
            raise ValueError(f"arms {sorted(missing)} are used by claims but not defined; defined: {sorted(self.arms)}")
        now = user_protocol(self)
        for name, claim in self.claims.items():
            for entry in (e for e in claim.ledger if e.event == "frozen"):
                moved = sorted(k for k in {*now, *entry.protocol} if now.get(k) != entry.protocol.get(k))
                if moved:
                    raise ValueError(
                        f"{name}: its frozen entry is of another protocol than this one ({'; '.join(moved)}): freeze "
                        "again with --freeze, after which new runs confirm it"
                    )


ARMS_PART = "arms and the choosing seed (the declaration's `arms`, `selection_seed`)"


def user_protocol(declaration: UserDeclaration) -> dict[str, str]:
    """The fingerprints of what decides a user's verdicts besides each claim's design: the parts every chapter
    shares (the interval, the regime, the evaluation set, the set-aside rule) and the file's arms and choosing seed."""
    parts = {name: fingerprint(objects) for name, objects in shared_parts().items()}
    return parts | {ARMS_PART: fingerprint([{"arms": declaration.arms, "seed": declaration.selection_seed}])}


def freeze_user_claims(path: Path, records: int | None = None) -> list[str]:
    """Write each claim's ledger as the chapters' (declared where it had none, then frozen, dated now, with the
    design's and the protocol's fingerprints, and `records`, how many records the results folder held, where
    given); refused for a claim frozen already. Only the ledgers' lines change (`ledgers.with_ledgers`): the
    file's layout, comments and spellings stay, and it is written whole, under a lock (two freezes at once take
    turns; the second finds the claims frozen)."""
    with locked_file(path):
        declaration = load_user_declaration(path)
        frozen = [n for n, c in declaration.claims.items() if any(e.event == "frozen" for e in c.ledger)]
        if frozen:
            raise ValueError(
                f"{path}: already frozen: {', '.join(frozen)}; a second freeze would move their confirmatory runs"
            )
        when, protocol = datetime.now(timezone.utc).replace(microsecond=0), user_protocol(declaration)
        ledgers = {}
        for name, claim in declaration.claims.items():
            design = claim.fingerprint()
            ledger = claim.ledger or [
                Entry(event="declared", date=when, reason="declared at its freeze", fingerprint=design)
            ]
            entry = Entry(
                event="frozen",
                date=when,
                reason="frozen for confirmation",
                records=records,
                fingerprint=design,
                protocol=protocol,
            )
            ledgers[name] = [entry_written(e.model_dump(mode="json")) for e in [*ledger, entry]]
        write_text_atomic(with_ledgers(path.read_text(encoding="utf-8"), ledgers), path)
    return list(declaration.claims)


def load_user_declaration(path: str | os.PathLike) -> UserDeclaration:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        declaration = UserDeclaration.model_validate(strict_yaml.load(path.read_text(encoding="utf-8")))
        declaration.check()
    except (ValidationError, yaml.YAMLError, ValueError) as error:
        raise ValueError(f"{path}: not a valid claim declaration: {error}") from None
    return declaration


def user_verdicts(declaration: UserDeclaration, runs: pd.DataFrame) -> list[Verdict]:
    """Every claim of `declaration` judged on `runs` (of `load_runs`), each first arm against each other arm, per
    task named in its units; one error naming every arm, setting and unit that cannot be read (`user_arms`)."""
    if runs.empty:
        raise ValueError("no ok record in the results folder: nothing to judge")
    runs = flag_runs(runs)
    if declaration.selection_seed is not None:
        runs = runs[runs["seed"] != declaration.selection_seed]
    units = {u for c in declaration.claims.values() for u in c.all_units}
    arms = checked_arms(declaration.arms, units, runs)
    cells, problems = {}, []
    for c in declaration.claims.values():
        for label in c.arms:
            for task in c.all_units:
                if (label, task) not in cells:
                    try:
                        cells[label, task] = arm(arm_runs(runs, label, arms[label], task))
                    except ValueError as error:
                        problems.append(str(error))
    if problems:
        raise ValueError("; ".join(dict.fromkeys(problems)))
    verdicts = []
    for name, c in declaration.claims.items():
        ledger = c.ledger or [Entry(event="declared", date=datetime.now(timezone.utc), fingerprint=c.fingerprint())]
        declared = Declared(**c.model_dump(exclude={"ledger"}), ledger=ledger)
        first, others = c.arms[0], c.arms[1:]
        comparisons = {
            (f"vs {other}" if len(others) > 1 else ""): [
                contrast(task, cells[first, task], cells[other, task]) for task in c.all_units
            ]
            for other in others
        }
        claim = Claim(name, declaration.paper, declared.model_copy(update={"comparisons": list(comparisons)}))
        verdicts.append(verdict_of(claim, comparisons))
    return verdicts
