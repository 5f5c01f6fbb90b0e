"""Rerun, uninterrupted, the committed records that resumed past their first epoch without its batch order.

    python -m adaptstudy.planning.resumed                    # list them, cheapest first, with what a rerun costs
    python -m adaptstudy.planning.resumed --run --budget-h 6 --threads 1   # rerun them (run twice for two cores)

Each rerun trains the record's own settings from step 0 in a hidden scratch folder beside its study
(`<results>/<study>/.rerun/`, checkpointed and resumable like a sweep cell, under the same lock, so two commands
share the list), then settles it: the same metrics and predictions keep the old record (its costs are those of the
run that first reported); otherwise the new record replaces it. Either way the ledger (`runs.resumption.RERUNS`)
keeps both figures. Cells are taken cheapest first (their records' whole-run seconds, as estimated where a record
counted the seconds after its resume only) within the budget of CPU-hours; those beyond it stay flagged.
"""

from __future__ import annotations

import argparse
import csv
import fcntl
import os
import sys
from pathlib import Path
from typing import Any

from adaptstudy.common.files import remove_folder
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.launch.cells import attempt
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.records import load_record, read_ok_record
from adaptstudy.runs.resumption import DIFFERS, MATCHES, RERUNS, read_reruns, resumed_out_of_order, steps_per_epoch

SCRATCH = ".rerun"
FIELDS = [
    "study", "run_id", "task", "method", "seed", "resumed_from_step", "steps_per_epoch", "outcome",
    "old_main_metric", "new_main_metric", "old_selection_metric", "new_selection_metric", "old_train_loss",
    "new_train_loss", "predictions_changed", "old_machine", "new_machine", "rerun_train_runtime_s", "finished_at",
    "rerun_finished_at",
]  # fmt: skip


def whole_run_seconds(record: dict[str, Any]) -> float:
    """The record's training seconds over the whole run (where it counted those after its resume only, scaled up)."""
    seconds = record["train_runtime_s"] + (record.get("eval_runtime_s") or 0.0)
    if record.get("train_runtime_covers", "whole run") in (None, "whole run"):
        return seconds
    total = steps_per_epoch(record) * record["config"]["num_train_epochs"]
    return seconds / max(1.0 - record["resumed_from_step"] / total, 1e-3)


def to_rerun(results_root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every committed record resumed out of order that no rerun has settled, cheapest first."""
    settled = read_reruns(results_root)
    found = []
    for path in sorted(results_root.glob("*/*.json")):
        record = load_record(path)
        row = settled.get(record["run_id"])
        if resumed_out_of_order(record) and not (row and row["finished_at"] == record["finished_at"]):
            found.append((path, record))
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
        raise ValueError(
            f"{path}: its settings now give run id {config.resolved().run_id}, so it cannot be rerun as is"
        )
    status, error = attempt(config, scratch, threads)
    if status in ("ok", "done"):
        settle(path, record, scratch / path.name)
    elif error:
        print(f"  {record['run_id']}: {status}: {error}", file=sys.stderr, flush=True)
    return status


def settle(path: Path, old: dict[str, Any], new_path: Path) -> str:
    """Keep the old record if the rerun gives its metrics and predictions, else replace it; write the ledger row."""
    new = read_ok_record(new_path)
    same = new["metrics"] == old["metrics"] and new.get("predictions") == old.get("predictions")
    row = {
        "study": path.parent.name,
        "run_id": old["run_id"],
        "task": old["task"],
        "method": old["method"],
        "seed": old["seed"],
        "resumed_from_step": old["resumed_from_step"],
        "steps_per_epoch": steps_per_epoch(old),
        "outcome": MATCHES if same else DIFFERS,
        "old_main_metric": old["main_metric_value"],
        "new_main_metric": new["main_metric_value"],
        "old_selection_metric": old.get("selection_metric_value"),
        "new_selection_metric": new.get("selection_metric_value"),
        "old_train_loss": old["train_loss"],
        "new_train_loss": new["train_loss"],
        "predictions_changed": _changed(old.get("predictions"), new.get("predictions")),
        "old_machine": (old.get("sessions") or [{}])[0].get("machine") or old["machine"].get("cpu"),
        "new_machine": new["sessions"][0]["machine"],
        "rerun_train_runtime_s": round(new["train_runtime_s"], 1),
        "finished_at": old["finished_at"] if same else new["finished_at"],
        "rerun_finished_at": new["finished_at"],
    }
    append_row(path.parent.parent / RERUNS, row)
    if same:
        new_path.unlink()
    else:
        os.replace(new_path, path)  # the uninterrupted run's record, under the same run id
    print(f"  {old['run_id']}: {row['outcome']} ({row['old_main_metric']:.2f} then {row['new_main_metric']:.2f})")
    return row["outcome"]


def _changed(old: Any, new: Any) -> int | None:
    """How many stored predictions differ (None where either record has none)."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return None
    pairs = [(a, b) for split in old if split in new for a, b in zip(old[split], new[split], strict=True)]
    return sum(a != b for a, b in pairs)


def append_row(ledger: Path, row: dict[str, Any]) -> None:
    """One row appended under a lock (two commands may settle at once), with the header when the file is new."""
    with ledger.open("a+", newline="") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0, os.SEEK_END)
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        if f.tell() == 0:
            writer.writeheader()
        writer.writerow(row)
        f.flush()
        os.fsync(f.fileno())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m adaptstudy.planning.resumed", description=__doc__.split("\n")[0])
    parser.add_argument("--results", default=str(PROJECT_ROOT / "results"), help="the results root")
    parser.add_argument("--run", action="store_true", help="rerun them (else list them)")
    parser.add_argument("--budget-h", type=float, default=6.0, help="CPU-hours for the reruns, by their estimates")
    parser.add_argument("--threads", type=int, help="torch threads")
    parser.add_argument("--study", action="append", help="only this study's records (repeatable)")
    args = parser.parse_args(argv)
    root = Path(args.results)
    found = [(p, r) for p, r in to_rerun(root) if not args.study or p.parent.name in args.study]
    chosen = within(found, args.budget_h)
    for path, record in found:
        mark = "rerun" if any(p == path for p, _ in chosen) else "beyond the budget"
        print(f"{path.parent.name}/{record['run_id']} {record['task']} {record['method']} seed {record['seed']}: "
              f"resumed at step {record['resumed_from_step']} ({steps_per_epoch(record)} an epoch), "
              f"~{whole_run_seconds(record) / 3600:.2f} h: {mark}")  # fmt: skip
    if not args.run:
        return 0
    statuses = [rerun(path, record, args.threads) for path, record in chosen]
    for path, _ in chosen:
        if not any((path.parent / SCRATCH).glob("*.json")):
            remove_folder(path.parent / SCRATCH)
    return 1 if "failed" in statuses else 0


if __name__ == "__main__":
    sys.exit(main())
