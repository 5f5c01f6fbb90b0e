"""Your own claims on your own records, judged as the chapters judge theirs, without code:

    python -m adaptstudy.reporting.user_claims my_claims.yaml --results-dir results/mine

The file is a chapter's declaration (`declarations.Declaration`: the source, each claim's design) plus `arms`, which
say which runs each arm label of a claim means (`user_arms`: the settings of one configuration, per task where they
differ), and `selection_seed`, the seed that chose settings and so never reports (none by default). A claim compares
its first arm with each other (`a − b`, one comparison per other arm) over its units, which are task names, on each
record's `main_metric` (arms of other metrics or evaluation sets are refused, naming both); an arm
`{constant: true}` is the constant prediction's score. Its ledger may be left out (it is then declared now, and
every verdict reads exploratory).
`--freeze` writes each claim's ledger (declared, then frozen, dated now, with the fingerprints of its design and of
the protocol: the shared interval and regime code and the file's `arms` and `selection_seed`), and only its lines;
the runs made after it are the claim's fresh seeds, judged apart as its confirmatory verdict wherever they lie in the
folder. `--refreeze` freezes again a claim frozen already or changed since. A hand-written ledger is held to the
same: a freeze of another design or protocol, or dated outside its declaration and now, is refused.
The verdict table is the chapters' own (`verdict_tables.verdict_table`) with their status column, each arm's mean ±
sd, the confirmatory verdict, and (for `--csv`) the effect and its interval as numbers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from adaptstudy.claims.fresh_seeds import fresh_runs
from adaptstudy.claims.user_claims import UserDeclaration, freeze_user_claims, load_user_declaration, user_verdicts
from adaptstudy.common.files import write_text_atomic
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.scorecard import status
from adaptstudy.reporting.verdict_tables import verdict_table
from adaptstudy.runs.records import read_records


def user_table(declaration: UserDeclaration, runs: pd.DataFrame) -> pd.DataFrame:
    """The chapters' verdict table for the declaration's claims on every run (each verdict's status: exploratory,
    or confirmatory when every run it rests on finished after its ledger's `frozen` entry; a claim without a ledger
    is declared now), with what a user reads beside it: each arm's mean ± sd over its seeds per unit (`arms`), the
    effect and its interval as numbers (`effect`, `low`, `high`: one comparison's, for a CSV), and the confirmatory
    verdict: the claim judged again on the runs made after its freeze alone, wherever they lie in the folder
    (`fresh_seeds.fresh_runs`, as the chapters' fresh seeds)."""
    verdicts = user_verdicts(declaration, runs)
    finished = runs.set_index("run_id")["finished_at"]
    statuses = [
        status(v, finished) if c.ledger else f"exploratory: declared now, after its {len(v.run_ids)} runs"
        for v, c in zip(verdicts, declaration.claims.values())
    ]
    table = verdict_table(verdicts).drop(columns="declared").assign(status=statuses)  # the status says when
    one = [v.judgements[0] if len(v.judgements) == 1 else None for v in verdicts]
    return table.assign(
        arms=[_arms_said(v, c) for v, c in zip(verdicts, declaration.claims.values())],
        effect=[j.effect if j else float("nan") for j in one],
        low=[j.low if j else float("nan") for j in one],
        high=[j.high if j else float("nan") for j in one],
        confirmatory=[_confirmatory(declaration, name, runs) for name in declaration.claims],
    )


def _arms_said(v, claim) -> str:
    """Each arm's mean ± sd over its reported seeds on each unit: 'my-reviews: lora 80.8 ± 0.6 (3 seeds), bitfit
    70.8 ± 0.6 (3 seeds)'."""
    parts = []
    for comparison, units in v.comparisons.items():
        labels = [claim.arms[0], comparison.removeprefix("vs ") if comparison else claim.arms[1]]
        for unit in units:
            said = []
            for label, arm in zip(labels, unit.arms()):
                scores = np.asarray(arm.scores, dtype=float)
                sd = f"{np.std(scores, ddof=1):.1f}" if len(scores) > 1 else "–"
                said.append(f"{label} {scores.mean():.1f} ± {sd} ({len(scores)} seeds)")
            if len(unit.arms()) == 1:  # the other arm is the constant prediction, an offset
                said.append(f"{labels[1]} {-unit.offset:.1f} (the constant prediction)")
            parts.append(f"{unit.name}: {', '.join(said)}")
    return "; ".join(dict.fromkeys(parts)) or "–"


def _confirmatory(declaration: UserDeclaration, name: str, runs: pd.DataFrame) -> str:
    """The claim's verdict on its fresh seeds (runs made after its freeze), with its effect and interval; or why
    there is none (never frozen, no run since, or the fresh runs do not make every arm)."""
    claim = declaration.claims[name]
    if not any(e.event == "frozen" for e in claim.ledger):
        return "none: not frozen (freeze it with --freeze, then run fresh seeds)"
    chain, required = [name], claim.requires
    while required is not None and required not in chain:
        chain.append(required)
        required = declaration.claims[required].requires
    alone = declaration.model_copy(update={"claims": {n: declaration.claims[n] for n in reversed(chain)}})
    since = max(e.date for e in claim.ledger if e.event in ("frozen", "declared", "amended"))
    fresh = fresh_runs(runs, since, declaration.selection_seed)
    reported = fresh if declaration.selection_seed is None else fresh[fresh["seed"] != declaration.selection_seed]
    if reported.empty:
        return f"none: no run since its freeze of {since:%Y-%m-%d %H:%M}"
    try:
        verdict = next(v for v in user_verdicts(alone, fresh) if v.claim.key == name)
    except ValueError as error:
        return f"none: its {len(reported)} runs since its freeze do not make the claim ({error})"
    seeds = min((j.seeds for j in verdict.judgements), default=0)
    return f"{verdict.verdict}: {verdict.effects()} on {seeds} fresh seeds (runs since {since:%Y-%m-%d %H:%M})"


NUMERIC = ("effect", "low", "high")  # one comparison's effect and interval as numbers, for a CSV


def as_text(table: pd.DataFrame) -> str:
    """The verdict table for a terminal: each claim, then its fields one per line (the effect and interval once,
    as text: the numeric columns are the CSV's)."""
    blocks = []
    shown = [c for c in table.columns if c not in ("claim", *NUMERIC)]
    for _, row in table.iterrows():
        blocks.append("\n".join([row["claim"], *(f"  {c}: {row[c]}" for c in shown)]))
    return "\n\n".join(blocks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adaptstudy.reporting.user_claims", description=__doc__.split("\n")[0]
    )
    parser.add_argument("declaration", help="a YAML file declaring your claims (see the module's docstring)")
    parser.add_argument(
        "--results-dir", help="the folder holding your runs' records (with --freeze: counted in the ledger, optional)"
    )
    parser.add_argument("--csv", help="also write the verdict table to this CSV file")
    parser.add_argument(
        "--freeze", action="store_true", help="freeze the claims for confirmation (writes their ledgers, only)"
    )
    parser.add_argument(
        "--refreeze",
        action="store_true",
        help="with --freeze: freeze claims frozen already, or changed since (their runs until now stop confirming)",
    )
    args = parser.parse_args(argv)
    try:
        results = _checked(args)
        if args.freeze:
            read = None if results is None else read_records(results, None)  # each read first: none truncated
            replaced = freeze_user_claims(Path(args.declaration), None if read is None else len(read), args.refreeze)
            print(f"frozen: {', '.join(replaced)}")
            for name, since in ((n, t) for n, t in replaced.items() if t is not None):
                made = [r for r in read or [] if pd.Timestamp(r["finished_at"]) >= pd.Timestamp(since)]
                counted = f"{len(made)} records of {results} made since then" if results else "the runs made since"
                print(f"{name}: its freeze of {since:%Y-%m-%d %H:%M} is replaced: {counted} no longer confirm it")
            return 0
        declaration = load_user_declaration(args.declaration)
        table = user_table(declaration, load_runs(results))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(as_text(table))
    if args.csv:
        write_text_atomic(table.to_csv(index=False), args.csv)
    return 0


def _checked(args) -> Path | None:
    """The command's input, refused before anything is read or written, one line each: a results folder that
    exists (needed to judge; optional for a freeze), and a CSV file that is neither the declaration nor inside the
    results folder (it would overwrite what it reports on), in a folder that exists, and asked for only when a table
    is made."""
    if args.refreeze and not args.freeze:
        raise ValueError("--refreeze only goes with --freeze, which is not given: nothing is done")
    if args.results_dir is None and not args.freeze:
        raise ValueError("--results-dir is needed to judge the claims (the folder holding your runs' records)")
    results = None if args.results_dir is None else Path(args.results_dir)
    if results is not None and not results.is_dir():
        raise ValueError(f"--results-dir {results}: no such folder")
    if args.csv:
        csv = Path(args.csv).resolve()
        if args.freeze:
            raise ValueError(f"--csv {args.csv}: a freeze writes no verdict table; judge the claims without --freeze")
        if csv == Path(args.declaration).resolve():
            raise ValueError(f"--csv {args.csv} is the declaration file itself: name a new file for the table")
        if results is not None and csv.is_relative_to(results.resolve()):
            raise ValueError(
                f"--csv {args.csv} lies in the results folder {results}, among the records: write the table elsewhere"
            )
        if not csv.parent.is_dir():
            raise ValueError(f"--csv {args.csv}: its folder {csv.parent} does not exist")
        if csv.exists() and csv.suffix.lower() != ".csv":
            raise ValueError(f"--csv {args.csv}: an existing file that is not a .csv: it is not overwritten")
    return results


if __name__ == "__main__":
    sys.exit(main())
