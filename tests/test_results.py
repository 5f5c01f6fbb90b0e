import json
import os
from pathlib import Path

import pytest

from adaptstudy.runs import records as results
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.multitask_config import MultiTaskConfig
from adaptstudy.runs.pretrain_config import PretrainConfig
from adaptstudy.runs.records import read_ok_record, read_records, records_frame, write_record

ROOT = Path(__file__).resolve().parents[1]


def _record(fake_record, **fields):
    return fake_record(FinetuneConfig(task="rte", method="houlsby"), folder=None, **fields)


def test_record_is_written_whole_and_named_by_run_id(tmp_path, fake_record):
    record = _record(fake_record)
    path = write_record(record, tmp_path)
    assert path.name == f"{record['run_id']}.json"
    assert json.loads(path.read_text())["metrics"] == {"accuracy": 60.0}
    assert os.listdir(tmp_path) == [path.name]


def test_failed_write_leaves_no_partial_record(tmp_path, monkeypatch, fake_record):
    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(results.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        write_record(_record(fake_record), tmp_path)
    assert os.listdir(tmp_path) == []


def test_incomplete_record_is_refused(tmp_path, fake_record):
    record = _record(fake_record)
    del record["metrics"]
    with pytest.raises(ValueError, match=r"metrics"):
        write_record(record, tmp_path)


def test_readers_skip_temporary_files_and_filter_status(tmp_path, fake_record):
    write_record(_record(fake_record), tmp_path)
    failed = _record(fake_record) | {"run_id": "f" * 16, "status": "failed"}
    write_record(failed, tmp_path)
    (tmp_path / ".tmp-abc.json").write_text('{"run_id": "half')
    assert [r["status"] for r in read_records(tmp_path)] == ["ok"]
    assert len(read_records(tmp_path, status=None)) == 2
    frame = records_frame(tmp_path)
    assert frame.loc[0, "metric.accuracy"] == 60.0 and frame.loc[0, "config.adapter_size"] == 64


def test_only_a_whole_record_with_status_ok_counts_as_done(tmp_path, fake_record):
    ok = write_record(_record(fake_record), tmp_path / "ok")
    failed = write_record(_record(fake_record, status="failed"), tmp_path / "failed")
    cut = tmp_path / "cut.json"
    cut.write_text(ok.read_text()[:40])
    assert read_ok_record(ok)["run_id"] == ok.stem
    assert [read_ok_record(p) for p in (failed, cut, tmp_path / "absent.json")] == [None, None, None]


def test_a_write_that_fails_midway_leaves_nothing(tmp_path, fake_record):
    record = _record(
        fake_record, history=[{"epoch": 1.0}, {"epoch": object()}]
    )  # not JSON: fails after a partial write
    with pytest.raises(TypeError):
        write_record(record, tmp_path)
    assert os.listdir(tmp_path) == []


def test_every_committed_record_keeps_its_run_id():
    """A setting added later must not change earlier runs' ids, or a resumed sweep would redo finished runs."""
    records = read_records(ROOT / "results", status=None)
    assert records, "no committed records found"
    for record in records:
        kind = (
            MultiTaskConfig if "tasks" in record else PretrainConfig if "corpus" in record["config"] else FinetuneConfig
        )
        config = {k: v for k, v in record["config"].items() if k in kind.model_fields}
        assert kind(**config).run_id == record["run_id"], record["run_id"]


def test_a_record_made_before_the_selection_split_had_one_name_reads_in_todays_spelling(tmp_path, fake_record):
    """Multi-task records once said `split_rule: selection | hyperformer`; readers see `selection_split` alone."""
    for rule, flag in (("selection", True), ("hyperformer", False)):
        record = _record(fake_record)
        record["config"] = {k: v for k, v in record["config"].items() if k != "selection_split"} | {"split_rule": rule}
        path = write_record(record, tmp_path / rule)
        config = read_ok_record(path)["config"]
        assert config["selection_split"] is flag and "split_rule" not in config
        assert json.loads(path.read_text())["config"]["split_rule"] == rule  # the file itself is left as it was
