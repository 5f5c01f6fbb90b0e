"""Runs resumed past their first epoch before a checkpoint kept the epoch's batch order, and their reruns.

Until checkpoints kept the generator state each epoch's order was drawn from (`training.epoch_order`), a fine-tuning
run resumed in its second epoch or later trained that epoch on another order of batches than the uninterrupted run,
and its record did not say so (it has no `resumed_order`). Multi-task runs draw their batches from a generator seeded
per epoch, and a run resumed inside its first epoch drew from the seed's state: both are unaffected. Such a record
is rerun uninterrupted (`planning.resumed`); the ledger (`RERUNS`, under the results root) keeps both figures, and the
new record replaces the old where they differ. One that is not rerun stays flagged wherever a verdict uses it.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

RERUNS = "resumed_reruns.csv"  # under the results root: one row per rerun of such a record
MATCHES, DIFFERS = "matches", "differs"  # a rerun's outcome: the same metrics and predictions, or not


def steps_per_epoch(record: dict[str, Any]) -> int | None:
    """A single-task run's updates per epoch (None for a multi-task run, whose batches are seeded per epoch)."""
    examples = record.get("train_examples")
    if not isinstance(examples, int):
        return None
    return math.ceil(examples / record["config"]["batch_size"])


def resumed_out_of_order(record: dict[str, Any]) -> bool:
    """Whether the run resumed past its first epoch without its epoch's batch order (see the module docstring)."""
    step = record.get("resumed_from_step")
    if not step:
        return False
    if "resumed_order" in record:
        return record["resumed_order"] == "lost"
    per_epoch = steps_per_epoch(record)
    return per_epoch is not None and step > per_epoch


def read_reruns(results_root: str | Path) -> dict[str, dict[str, str]]:
    """The ledger's rows by run id ({} where nothing was rerun)."""
    path = Path(results_root) / RERUNS
    if not path.exists():
        return {}
    with path.open(newline="") as f:
        return {row["run_id"]: row for row in csv.DictReader(f)}


def unverified(record: dict[str, Any], reruns: dict[str, dict[str, str]]) -> bool:
    """Resumed out of order and not shown by an uninterrupted rerun to give the same metrics and predictions."""
    if not resumed_out_of_order(record):
        return False
    row = reruns.get(record["run_id"])
    return row is None or row["outcome"] != MATCHES or row.get("finished_at") != record.get("finished_at")
