"""Runs resumed past their first epoch before checkpoints kept the epoch's batch order: which committed records they
are (`runs.resumption`), and that every verdict using one that was not rerun says so (`Verdict.out_of_order`)."""

from pathlib import Path

import pytest

from adaptstudy.reporting.scorecard import chapter_runs, chapter_verdicts
from adaptstudy.runs.records import read_records
from adaptstudy.runs.resumption import RERUN, rerun, resumed_out_of_order, unverified

ROOT = Path(__file__).resolve().parents[1]
SINGLE = {"run_id": "r", "train_examples": 100, "config": {"batch_size": 10}}  # 10 steps an epoch


@pytest.mark.parametrize(
    "fields, out_of_order",
    [
        ({}, False),  # not resumed
        ({"resumed_from_step": 7}, False),  # inside its first epoch: the seed's order
        (
            {"resumed_from_step": 10},
            False,
        ),  # at the end of its first epoch: the Trainer restored the state it drew from
        ({"resumed_from_step": 13}, True),  # in its second epoch, before the order was kept
        ({"resumed_from_step": 13, "resumed_order": "kept"}, False),
        ({"resumed_from_step": 13, "resumed_order": "lost"}, True),
        ({"resumed_from_step": 13, "train_examples": {"rte": 100, "mrpc": 100}}, False),  # multi-task: seeded
    ],
)
def test_which_resumed_records_lost_their_epochs_batch_order(fields, out_of_order):
    record = {**SINGLE, **fields}
    assert resumed_out_of_order(record) is out_of_order
    assert unverified(record) is out_of_order
    settled = {**record, "retrained": [{"train_runtime_s": 1.0, "why": RERUN}]}
    assert not unverified(settled) and (rerun(settled) is not None)


def test_no_committed_record_resumed_out_of_order_is_used_by_a_verdict_unflagged():
    """Every verdict names the runs it rests on that resumed out of order and were not rerun; each arm carries its
    run ids, so none escapes the check."""
    records = {r["run_id"]: r for r in read_records(ROOT / "results")}
    verdicts, _ = chapter_verdicts(chapter_runs(ROOT / "results"))
    checked = 0
    for v in verdicts:
        arms = [a for units in v._used_units() for u in units for a in u.arms()]
        assert all(len(a.run_ids) == len(a.scores) for a in arms), f"{v.claim.key}: an arm without its run ids"
        used = {r for a in arms for r in a.run_ids}
        assert {r for r in used if unverified(records[r])} == v.out_of_order(), v.claim.key
        for run_id in v.out_of_order():
            assert run_id in v.rests_on()
        checked += len(used)
    assert checked > 500
