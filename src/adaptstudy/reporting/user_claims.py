"""Your own claims on your own records, judged as the chapters judge theirs, without code:

    python -m adaptstudy.reporting.user_claims my_claims.yaml --results-dir results/mine

The file is a chapter's declaration (`declarations.Declaration`: the source, each claim's design) plus `arms`, which
say which runs each arm label of a claim means (`user_arms`: the settings of one configuration, per task where they
differ), and `selection_seed`, the seed that chose settings and so never reports (none by default). A claim compares
its first arm with each other (`a − b`, one comparison per other arm) over its units, which are task names, on each
record's `main_metric`; its ledger may be left out (it is then declared now, and every verdict reads exploratory).
`--freeze` writes each claim's ledger (declared, then frozen, dated now, with the fingerprints of its design and of
the protocol: the shared interval and regime code and the file's `arms` and `selection_seed`); the runs that finish
after it are confirmatory. A hand-written ledger is held to the same: a freeze of another design or protocol, or
dated outside its declaration and now, is refused.
The verdict table is the chapters' own (`verdict_tables.verdict_table`) with their status column.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from adaptstudy.common import strict_yaml
from adaptstudy.reporting.baselines import flag_runs
from adaptstudy.reporting.claims import Claim, Verdict, arm, verdict_of
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.declarations import Declared, Design, Entry, margin_said
from adaptstudy.reporting.evidence import contrast
from adaptstudy.reporting.ledgers import entry_written
from adaptstudy.reporting.protocol import fingerprint, shared_parts
from adaptstudy.reporting.scorecard import status
from adaptstudy.reporting.user_arms import arm_runs, checked_arms
from adaptstudy.reporting.verdict_tables import verdict_table


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


def freeze_user_claims(path: Path) -> list[str]:
    """Write each claim's ledger as the chapters' (declared where it had none, then frozen, dated now, with the
    design's and the protocol's fingerprints); refused for a claim frozen already. Keeps the file's leading comment."""
    declaration = load_user_declaration(path)
    frozen = [n for n, c in declaration.claims.items() if any(e.event == "frozen" for e in c.ledger)]
    if frozen:
        raise ValueError(
            f"{path}: already frozen: {', '.join(frozen)}; a second freeze would move their confirmatory runs"
        )
    when, protocol = datetime.now(timezone.utc).replace(microsecond=0), user_protocol(declaration)
    raw = strict_yaml.load(path.read_text(encoding="utf-8"))
    for name, claim in declaration.claims.items():
        design = claim.fingerprint()
        ledger = claim.ledger or [
            Entry(event="declared", date=when, reason="declared at its freeze", fingerprint=design)
        ]
        entry = Entry(
            event="frozen", date=when, reason="frozen for confirmation", fingerprint=design, protocol=protocol
        )
        raw["claims"][name]["ledger"] = [entry_written(e.model_dump(mode="json")) for e in [*ledger, entry]]
    header = "".join(line for line in path.read_text(encoding="utf-8").splitlines(True) if line.startswith("#"))
    path.write_text(header + yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
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


def user_table(declaration: UserDeclaration, runs: pd.DataFrame) -> pd.DataFrame:
    """The chapters' verdict table for the declaration's claims, with each verdict's status (exploratory, or
    confirmatory when every run it rests on finished after its ledger's `frozen` entry; a claim without a ledger is
    declared now)."""
    verdicts = user_verdicts(declaration, runs)
    finished = runs.set_index("run_id")["finished_at"]
    statuses = [
        status(v, finished) if c.ledger else f"exploratory: declared now, after its {len(v.run_ids)} runs"
        for v, c in zip(verdicts, declaration.claims.values())
    ]
    return verdict_table(verdicts).drop(columns="declared").assign(status=statuses)  # the status says when


def as_text(table: pd.DataFrame) -> str:
    """The verdict table for a terminal: each claim, then its fields one per line."""
    blocks = []
    for _, row in table.iterrows():
        blocks.append("\n".join([row["claim"], *(f"  {c}: {row[c]}" for c in table.columns if c != "claim")]))
    return "\n\n".join(blocks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adaptstudy.reporting.user_claims", description=__doc__.split("\n")[0]
    )
    parser.add_argument("declaration", help="a YAML file declaring your claims (see the module's docstring)")
    parser.add_argument("--results-dir", required=True, help="the folder holding your runs' records")
    parser.add_argument("--csv", help="also write the verdict table to this CSV file")
    parser.add_argument("--freeze", action="store_true", help="freeze the claims for confirmation (writes the file)")
    args = parser.parse_args(argv)
    try:
        if args.freeze:
            print(f"frozen: {', '.join(freeze_user_claims(Path(args.declaration)))}")
            return 0
        declaration = load_user_declaration(args.declaration)
        if not Path(args.results_dir).is_dir():
            raise ValueError(f"--results-dir {args.results_dir}: no such folder")
        if args.csv and not Path(args.csv).resolve().parent.is_dir():
            raise ValueError(f"--csv {args.csv}: its folder {Path(args.csv).resolve().parent} does not exist")
        table = user_table(declaration, load_runs(args.results_dir))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(as_text(table))
    if args.csv:
        table.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
