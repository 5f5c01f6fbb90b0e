"""Your own claims on your own records, judged as the chapters judge theirs, without code:

    python -m adaptstudy.reporting.user_claims my_claims.yaml --results-dir results/mine

The file is a chapter's declaration (`declarations.Chapter`: the source, then each claim's design) plus `arms`, which
say which runs each arm label of a claim means (`user_arms`: the settings of one configuration, per task where they
differ), and `selection_seed`, the seed that chose settings and so never reports (none by default). A claim compares
its first arm with each other (`a − b`, one comparison per other arm) over its units, which are task names, on each
record's `main_metric`; its ledger may be left out (it is then declared now, and every verdict reads exploratory);
a ledger with a `frozen` entry makes the runs that finished after it confirmatory.
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

from adaptstudy.reporting.baselines import flag_runs
from adaptstudy.reporting.claims import Claim, Verdict, arm, verdict_of
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.declarations import Declared, Design, Entry, margin_said
from adaptstudy.reporting.evidence import contrast
from adaptstudy.reporting.scorecard import status
from adaptstudy.reporting.user_arms import arm_runs, checked_arms
from adaptstudy.reporting.verdict_tables import verdict_table


class UserClaim(Design):
    ledger: list[Entry] = Field(default_factory=list)
    margin_reason: str = ""  # a claim of closeness says why its margin is what it is (`Declared`)

    @model_validator(mode="after")
    def _a_margin_says_why(self):
        return margin_said(self)


class UserDeclaration(BaseModel):
    """A declaration file for your records: the source, what each arm label selects, the choosing seed, the claims."""

    model_config = ConfigDict(extra="forbid")
    paper: str
    arms: dict[str, dict[str, Any]]
    selection_seed: int | None = None
    claims: dict[str, UserClaim]

    def check(self) -> None:
        """One error naming every arm a claim uses that `arms` does not define."""
        missing = {a for c in self.claims.values() for a in c.arms} - set(self.arms)
        if missing:
            raise ValueError(f"arms {sorted(missing)} are used by claims but not defined; defined: {sorted(self.arms)}")


def load_user_declaration(path: str | os.PathLike) -> UserDeclaration:
    path = Path(path)
    try:
        declaration = UserDeclaration.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
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
    args = parser.parse_args(argv)
    try:
        declaration = load_user_declaration(args.declaration)
        if not Path(args.results_dir).is_dir():
            raise ValueError(f"--results-dir {args.results_dir}: no such folder")
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
