"""The one-off backfill of what the report needs into records made before records kept it
(`scripts/backfill_labels.py`): it gives back what the committed records hold, and refuses a record whose examples
are not the ones it scored."""

import importlib.util
import json

import pytest

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.runs.records import read_records

SCRIPT = PROJECT_ROOT / "scripts" / "backfill_labels.py"
spec = importlib.util.spec_from_file_location("backfill_labels", SCRIPT)
backfill = importlib.util.module_from_spec(spec)
spec.loader.exec_module(backfill)


def stripped(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("labels", "method_description")}


@pytest.fixture(scope="module")
def committed():
    houlsby = read_records(PROJECT_ROOT / "results" / "houlsby")
    single = next(r for r in houlsby if r["task"] == "mrpc" and r.get("selection_metrics"))
    multi = min(read_records(PROJECT_ROOT / "results" / "hyperformer"), key=lambda r: len(r["tasks"]))
    return single, multi


def test_backfill_gives_back_the_committed_labels_and_description(data_dir, committed):
    for record in committed:
        assert backfill.backfilled(stripped(record)) == record, record["run_id"]
    assert set(committed[0]["labels"]) == {"dev", "selection"}
    assert set(committed[1]["labels"]) == {f"{t}/{s}" for t in committed[1]["tasks"] for s in ("validation", "test")}


def test_backfill_leaves_a_complete_record_alone(data_dir, committed):
    assert backfill.backfilled(committed[0]) is None


def test_backfill_refuses_a_record_whose_examples_are_not_those_it_scored(data_dir, committed, tmp_path):
    record = stripped(committed[0])
    record["predictions"] = {**record["predictions"], "examples_sha256": "0" * 64}
    with pytest.raises(ValueError, match="does not hash to its predictions' fingerprint"):
        backfill.backfilled(record)
    folder = tmp_path / "houlsby"
    folder.mkdir()
    (folder / f"{record['run_id']}.json").write_text(json.dumps(record), encoding="utf-8")
    assert backfill.main([str(tmp_path)]) == 1  # named, and left as it was
    assert json.loads((folder / f"{record['run_id']}.json").read_text(encoding="utf-8")) == record
