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


@pytest.mark.parametrize("outcome", ["same metrics", "other metrics"])
def test_a_resumed_record_rerun_uninterrupted_is_kept_or_replaced_and_its_first_training_stays_paid(
    tmp_path, data_dir, monkeypatch, outcome
):
    """`planning.resumed`: the record of a run resumed out of order is trained again from step 0 and settled as a
    retrained prerequisite is; either way it is no longer flagged, and the run counts as made when it was first."""
    import json

    from adaptstudy.planning import resumed
    from adaptstudy.reporting.common import load_runs
    from adaptstudy.runs.finetune_config import FinetuneConfig
    from adaptstudy.runs.records import made_at, paid_seconds
    from adaptstudy.training.finetune import finetune

    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    study = tmp_path / "results" / "houlsby"
    tiny = {"task": "rte", "method": "bitfit", "num_train_epochs": 2, "max_train_examples": 32, "batch_size": 8}
    config = FinetuneConfig(**tiny, max_seq_length=48, max_eval_examples=32, results_dir=str(study))
    record = finetune(config)  # 4 steps an epoch
    old = {**record, "resumed_from_step": 6, "finished_at": "2026-11-26T14:12:00+00:00", "train_runtime_s": 1000.0}
    del old["resumed_order"]  # as records made before the order was kept
    if outcome == "other metrics":
        old["metrics"] = {k: v - 1.0 for k, v in old["metrics"].items()}
        old["main_metric_value"] -= 1.0
    path = study / f"{config.run_id}.json"
    path.write_text(json.dumps(old))
    assert [p for p, _ in resumed.to_rerun(tmp_path / "results")] == [path]
    assert resumed.main(["--results", str(tmp_path / "results"), "--run", "--threads", "1"]) == 0
    settled = json.loads(path.read_text())
    (entry,) = settled["retrained"]
    assert entry["why"] == RERUN and not unverified(settled) and resumed.to_rerun(tmp_path / "results") == []
    if outcome == "same metrics":
        assert settled["finished_at"] == old["finished_at"] and settled["resumed_from_step"] == 6
    else:
        assert settled["metrics"] == record["metrics"] and settled["resumed_from_step"] is None
        assert entry["resumed_from_step"] == 6 and entry["main_metric_value"] == old["main_metric_value"]
    runs = load_runs(study)
    assert list(made_at(runs)) == [old["finished_at"]]  # a rerun of a seed is not a fresh seed
    assert paid_seconds(runs, "train_runtime_s", reruns=False).iloc[0] == 1000.0  # what it cost when first made
    assert paid_seconds(runs, "train_runtime_s").iloc[0] > 1000.0  # and the rerun is paid too
    assert not (study / resumed.SCRATCH).exists()
