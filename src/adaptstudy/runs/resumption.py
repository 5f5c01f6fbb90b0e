"""Runs resumed past their first epoch before a checkpoint kept the epoch's batch order, and their reruns.

Until checkpoints kept the generator state each epoch's order was drawn from (`training.epoch_order`), a fine-tuning
run resumed in its second epoch or later trained that epoch on another order of batches than the uninterrupted run,
and its record did not say so (it has no `resumed_order`). Multi-task runs draw their batches from a generator seeded
per epoch, and a run resumed inside its first epoch drew from the seed's state: both are unaffected.

Such a record is rerun uninterrupted (`planning.resumed`): where the metrics come out the same the record is kept and
the rerun joins its `retrained` list; where they differ the new record replaces it and the old training (its scores,
costs and resume) joins the new record's `retrained` list. Either entry says why (`RERUN`). A record resumed out of
order with no such entry is `unverified`, and is flagged wherever a verdict uses it.
"""

from __future__ import annotations

import math
from typing import Any

RERUN = "resumed past its first epoch without the epoch's batch order: rerun uninterrupted"


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


def rerun(record: dict[str, Any]) -> dict[str, Any] | None:
    """The `retrained` entry of the uninterrupted rerun (on a kept record) or of the replaced resumed run (on the new
    record), if there is one."""
    return next((r for r in record.get("retrained", []) if r.get("why") == RERUN), None)


def unverified(record: dict[str, Any]) -> bool:
    """Resumed out of order, and not shown by an uninterrupted rerun to give the same metrics."""
    return resumed_out_of_order(record) and rerun(record) is None
