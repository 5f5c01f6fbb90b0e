"""Small command-line helpers for the Makefile: `python -m adaptstudy.launch.cli done PARAMS RESULTS_DIR`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from adaptstudy.runs.base import validate
from adaptstudy.runs.finetune_config import FinetuneConfig


def run_is_done(params_file: str, results_dir: str) -> bool:
    """Whether the run a params file describes already has a record with status `ok`."""
    with open(params_file) as f:
        config = validate(FinetuneConfig, yaml.safe_load(f) or {})
    record = Path(results_dir) / f"{config.run_id}.json"
    return record.is_file() and json.loads(record.read_text()).get("status") == "ok"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="adaptstudy")
    sub = parser.add_subparsers(dest="command", required=True)
    done = sub.add_parser("done", help="exit 0 if the run in PARAMS has an ok record in RESULTS_DIR, else 1")
    done.add_argument("params")
    done.add_argument("results_dir")
    args = parser.parse_args(argv)
    if args.command == "done":
        finished = run_is_done(args.params, args.results_dir)
        print(f"{args.params}: {'done, skipped' if finished else 'to run'}", file=sys.stderr)
        return 0 if finished else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
