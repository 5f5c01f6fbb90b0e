"""Small command-line helpers: `python -m adaptstudy.launch.cli done PARAMS RESULTS_DIR` (for the Makefile) and
`python -m adaptstudy.launch.cli check-records FOLDER` (every invalid record under a results folder)."""

from __future__ import annotations

import argparse
import sys

import yaml

import adaptstudy.models.methods  # noqa: F401  (registers the methods' facts, which the run configs read)
from adaptstudy.runs.base import validate
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.records import invalid_records, read_ok_record, record_paths


def run_is_done(params_file: str, results_dir: str) -> bool:
    """Whether the run a params file describes already has a record with status `ok`."""
    with open(params_file) as f:
        config = validate(FinetuneConfig, yaml.safe_load(f) or {})
    return read_ok_record(f"{results_dir}/{config.run_id}.json") is not None


def check_records(folder: str) -> int:
    """Print each invalid record under `folder` with what is wrong, one line each."""
    problems = invalid_records(folder)
    for path, problem in problems.items():
        print(f"{path}: {problem}")
    print(f"{len(problems)} invalid of {len(record_paths(folder))} records under {folder}", file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="adaptstudy")
    sub = parser.add_subparsers(dest="command", required=True)
    done = sub.add_parser("done", help="exit 0 if the run in PARAMS has an ok record in RESULTS_DIR, else 1")
    done.add_argument("params")
    done.add_argument("results_dir")
    check = sub.add_parser("check-records", help="list every invalid record under FOLDER; exit 1 if there is one")
    check.add_argument("folder")
    args = parser.parse_args(argv)
    if args.command == "check-records":
        return check_records(args.folder)
    if args.command == "done":
        finished = run_is_done(args.params, args.results_dir)
        print(f"{args.params}: {'done, skipped' if finished else 'to run'}", file=sys.stderr)
        return 0 if finished else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
