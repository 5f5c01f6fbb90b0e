"""Rerun, uninterrupted, the committed records that resumed past their first epoch without its batch order.

    python -m adaptstudy.planning.resumed                    # list them, cheapest first, with what a rerun costs
    python -m adaptstudy.planning.resumed --run --budget-h 6 --threads 1   # rerun them (start two for two cores)

Each rerun trains the record's own settings from step 0 in a hidden scratch folder of its study
(`<results>/<study>/.rerun/`: checkpointed and resumable like a sweep cell, under a lock, so two commands share the
list and a killed one continues), then settles it as a retrained prerequisite is settled (`runner.keep_or_replace`):
the same metrics keep the record, with the rerun's costs under `retrained`; other metrics put the new record in its
place, with the resumed run's scores and costs under `retrained`. Records are taken cheapest first (their whole-run
seconds, scaled up where a record counted only those after its resume) within the budget of CPU-hours; those beyond
it stay flagged (`runs.resumption.unverified`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from adaptstudy.common.files import remove_folder
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.launch.allocator import reexec_with_allocator
from adaptstudy.launch.cells import attempt
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.records import load_record, read_ok_record
from adaptstudy.runs.resumption import RERUN, steps_per_epoch, unverified
from adaptstudy.training.runner import keep_or_replace

SCRATCH = ".rerun"


def whole_run_seconds(record: dict[str, Any]) -> float:
    """The record's training seconds over the whole run (where it counted those after its resume only, scaled up)."""
    seconds = record["train_runtime_s"] + (record.get("eval_runtime_s") or 0.0)
    if record.get("train_runtime_covers") in (None, "whole run"):
        return seconds
    total = steps_per_epoch(record) * record["config"]["num_train_epochs"]
    return seconds / max(1.0 - record["resumed_from_step"] / total, 1e-3)


def to_rerun(results_root: Path, studies: list[str] | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """Every committed record resumed out of order that no rerun has settled, cheapest first."""
    found = [
        (path, record)
        for path in sorted(results_root.glob("*/*.json"))
        if (not studies or path.parent.name in studies) and unverified(record := load_record(path))
    ]
    return sorted(found, key=lambda item: whole_run_seconds(item[1]))


def within(found: list[tuple[Path, dict]], budget_h: float) -> list[tuple[Path, dict]]:
    """The cheapest of `found` whose estimated seconds sum to at most the budget."""
    chosen, spent = [], 0.0
    for path, record in found:
        spent += whole_run_seconds(record)
        if spent > budget_h * 3600:
            break
        chosen.append((path, record))
    return chosen


def rerun(path: Path, record: dict[str, Any], threads: int | None) -> str:
    """Train the record's settings uninterrupted in the scratch folder and settle it; returns the cell's status."""
    scratch = path.parent / SCRATCH
    config = FinetuneConfig.model_validate({**record["config"], "results_dir": str(scratch)})
    if config.resolved().run_id != record["run_id"]:
        raise ValueError(f"{path}: its settings now give run id {config.resolved().run_id}; it cannot be rerun as is")
    status, error = attempt(config, scratch, threads)
    new_path = scratch / path.name
    if status in ("ok", "done") and (new := read_ok_record(new_path)) is not None:
        if unverified(load_record(path)):  # not settled by the other command meanwhile
            keep_or_replace(record, new, path, why=RERUN)
        new_path.unlink()
    elif error:
        print(f"  {record['run_id']}: {status}: {error}", file=sys.stderr, flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m adaptstudy.planning.resumed", description=__doc__.split("\n")[0])
    parser.add_argument("--results", default=str(PROJECT_ROOT / "results"), help="the results root")
    parser.add_argument("--run", action="store_true", help="rerun them (else list them)")
    parser.add_argument("--budget-h", type=float, default=6.0, help="CPU-hours for the reruns, by their estimates")
    parser.add_argument("--threads", type=int, help="torch threads")
    parser.add_argument("--study", action="append", help="only this study's records (repeatable)")
    parser.add_argument("--only", action="append", help="only this run id (repeatable): the most used first")
    args = parser.parse_args(argv)
    found = [(p, r) for p, r in to_rerun(Path(args.results), args.study) if not args.only or r["run_id"] in args.only]
    chosen = within(found, args.budget_h)
    for path, record in found:
        mark = "to rerun" if any(p == path for p, _ in chosen) else "beyond the budget"
        print(f"{path.parent.name}/{record['run_id']} {record['task']} {record['method']} seed {record['seed']}: "
              f"resumed at step {record['resumed_from_step']} ({steps_per_epoch(record)} an epoch), "
              f"~{whole_run_seconds(record) / 3600:.2f} h: {mark}", flush=True)  # fmt: skip
    if not args.run:
        return 0
    if argv is None:  # as the sweep does: under tcmalloc where the system has it, so costs compare with its runs'
        reexec_with_allocator("adaptstudy.planning.resumed", sys.argv[1:])
    statuses = [rerun(path, record, args.threads) for path, record in chosen]
    for folder in {path.parent / SCRATCH for path, _ in chosen}:
        if not any(folder.glob("*.json")) and not any((folder / ".checkpoints").glob("*")):
            remove_folder(folder)
    return 1 if "failed" in statuses else 0


if __name__ == "__main__":
    sys.exit(main())
