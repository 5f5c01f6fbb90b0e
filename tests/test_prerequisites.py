"""A confirmatory run's prerequisites are part of what its claim froze: a pretraining or transfer source trained again
after the freeze stands in for the frozen one only within the declared tolerance, and every committed record names
what it started from."""

import json
import math

import pandas as pd
import pytest

from adaptstudy.claims.freeze import confirmatory_since
from adaptstudy.claims.prerequisites import TOLERANCE, differs, standing, trainings, unaccepted
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.common import load_runs

RESULTS = PROJECT_ROOT / "results"
SOURCE = "84d690388213c146"  # Hyperformer++ on five GLUE tasks: the few-shot cells' transfer source


def _record(study: str, run_id: str) -> dict:
    return json.loads((RESULTS / study / f"{run_id}.json").read_text())


def test_a_prerequisite_s_trainings_carry_the_metrics_each_left_its_model_with():
    source = _record("hyperformer", SOURCE)
    done = trainings(source)
    assert [t.strftime("%Y-%m-%d") for t, _ in done] == ["2026-11-27", "2026-11-28", "2026-12-05"]  # 18 diverged
    assert done[-1][1] == source["metrics"]
    frozen = standing(source, pd.Timestamp("2026-12-05T15:18:50Z"))
    assert frozen[0].strftime("%Y-%m-%d") == "2026-11-28" and frozen[1]["rte/accuracy"] == pytest.approx(
        66.19, abs=0.01
    )
    assert "rte/accuracy 66.19 → 61.15" in differs(frozen[1], done[-1][1])
    assert differs({"perplexity": 100.0}, {"perplexity": 100.0 * (1 + TOLERANCE / 2)}) == ""
    assert differs({"perplexity": 100.0}, {"perplexity": 100.0 * (1 + 2 * TOLERANCE)}) != ""


def test_the_few_shot_runs_on_the_source_trained_again_after_the_freeze_are_no_fresh_seeds():
    hyper = load_runs(RESULTS / "hyperformer")
    transfer = hyper[hyper["record"].map(lambda r: bool(r["config"].get("transfer_from")))]
    freeze = pd.Timestamp("2026-12-05T15:18:50Z")
    out = unaccepted(transfer, freeze)
    late = transfer[
        pd.to_datetime(transfer["finished_at"], utc=True, format="ISO8601") > pd.Timestamp("2026-12-05T23:54Z")
    ]
    assert len(late) >= 21 and set(late["run_id"]) <= set(out)
    assert all("trained again on 2026-12-05" in why and "rte/accuracy" in why for why in out.values())


def test_the_dsp_pretrainings_trained_again_after_the_freeze_matched_within_the_tolerance():
    dsp = load_runs(RESULTS / "dsp")
    assert dsp["prerequisites"].map(len).gt(0).sum() > 100
    assert unaccepted(dsp, pd.Timestamp("2026-12-05T15:00:00Z")) == {}


def test_every_committed_run_that_starts_from_another_names_it_and_its_record_is_committed():
    for study in ("dsp", "dsp_pretrain", "fusion", "hyperformer"):
        for record in load_runs(RESULTS / study)["record"]:
            config = record["config"]
            starts = any(
                isinstance(config.get(k), (dict, list)) for k in ("init_from", "transfer_from", "fusion_sources")
            )
            starts |= isinstance(config.get("fusion_from"), dict)
            assert starts == bool(record.get("prerequisites")), (study, record["run_id"])
            for need in record.get("prerequisites", []):
                assert (RESULTS / need["study"] / f"{need['run_id']}.json").is_file(), (record["run_id"], need)


def test_no_confirmatory_verdict_rests_on_a_prerequisite_trained_after_its_freeze_beyond_the_tolerance(
    committed_verdicts,
):
    """Checked from the records alone: for every run of every confirmatory verdict, each prerequisite's training
    that stood when the run was made either stood at the claim's freeze or scored within the tolerance of the one
    that did."""
    from adaptstudy.reporting.scorecard import chapter_runs, confirmatory

    runs = chapter_runs(RESULTS)
    records = {r["run_id"]: r for frame in runs.values() for r in frame["record"]}
    checked = 0
    for key, v in confirmatory(runs, committed_verdicts[0]).items():
        since = pd.Timestamp(confirmatory_since(v.claim.declared))
        for run_id in v.run_ids:
            record = records[run_id]
            made = pd.Timestamp(record["finished_at"])
            for need in record.get("prerequisites", []):
                source = _record(need["study"], need["run_id"])
                used, frozen = standing(source, made), standing(source, since)
                if frozen is None or used[0] <= since:
                    continue
                checked += 1
                for name, value in frozen[1].items():
                    assert math.isclose(value, used[1][name], rel_tol=TOLERANCE), (key, run_id, need, name)
    assert checked > 0  # the DSP pretrainings trained again after the freeze are among them
