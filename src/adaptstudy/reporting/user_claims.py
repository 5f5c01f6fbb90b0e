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
import sys
from pathlib import Path

import pandas as pd

from adaptstudy.claims.user_claims import UserDeclaration, freeze_user_claims, load_user_declaration, user_verdicts
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.scorecard import status
from adaptstudy.reporting.verdict_tables import verdict_table


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
