"""One evaluation set per comparison: seeds scored on a cap of the split and seeds scored on the whole split are
rescored on the capped examples every seed scored, so the bootstrap pairs them; a verdict that is not widened says
why, and the DSP verdicts say over how many examples they widened."""

import json

import numpy as np
import pandas as pd
import pytest

from adaptstudy.claims.shared_examples import on_shared_examples
from adaptstudy.claims.verdicts import arm
from adaptstudy.common.paths import PROJECT_ROOT


def _agnews_dapt_records() -> list[dict]:
    """The committed AG News runs of the full model after DAPT on the news corpus: seeds 0-4 scored on a
    500-example cap of the evaluation split, seeds 5-9 on the whole 1,000-example split (the later, confirmatory
    seeds are capped again, and not needed here)."""
    records = [json.loads(p.read_text()) for p in sorted((PROJECT_ROOT / "results" / "dsp").glob("*.json"))]
    return [
        r
        for r in records
        if r["config"]["task"] == "agnews"
        and r["config"]["method"] == "full"
        and (r["config"]["init_from"] or {}).get("corpus") == "news"
        and r["config"]["seed"] < 10
    ]


def test_whole_split_runs_are_rescored_on_the_capped_examples_and_capped_runs_keep_their_scores():
    records = _agnews_dapt_records()
    sizes = {len(r["predictions"]["values"]) for r in records}
    assert sizes == {500, 1000} and len(records) == 10, sizes  # both sets are committed
    metric = records[0]["main_metric"]
    scored = on_shared_examples(records, metric)
    assert scored.why == "" and len(scored.labels) == 500 and len(scored.predictions) == len(records)
    for record, score in zip(records, scored.scores):
        if record["config"].get("max_eval_examples") == 500:  # a capped run's rescore is its own score
            assert score == pytest.approx(record["metrics"][metric], abs=1e-6)
    whole = [s for r, s in zip(records, scored.scores) if r["config"].get("max_eval_examples") is None]
    own = [r["metrics"][metric] for r in records if r["config"].get("max_eval_examples") is None]
    assert whole != pytest.approx(own)  # a whole-split run's score on 500 of its 1,000 examples is another figure


def test_runs_that_cannot_be_paired_say_why():
    records = _agnews_dapt_records()
    assert on_shared_examples(records, None).why.startswith("its runs scored different sets")
    hollow = [dict(records[0], predictions=None), *records[1:]]
    assert on_shared_examples(hollow, "accuracy").why == f"1 of its {len(records)} runs stored no predictions"
    rows = pd.DataFrame({"main_metric_value": [1.0, 2.0, 3.0], "main_metric": "accuracy"})
    assert "no predictions" in arm(rows).unpaired and arm(rows).predictions is None


def test_every_verdict_says_over_how_many_examples_it_widened_or_why_not(committed_verdicts):
    verdicts = committed_verdicts[0]
    for v in (v for v in verdicts if v.run_ids):  # a claim with no runs yet has no interval
        basis = v.interval_basis()
        assert "widened by a paired bootstrap over" in basis or "not widened by the examples' sampling error (" in basis
        assert "stored no predictions, or" not in basis, v.claim.key  # one reason, not a choice of two
    dsp = [v for v in verdicts if v.claim.chapter == "dsp" and v.design.quantity == "metric"]
    assert len(dsp) >= 10
    for v in dsp:
        assert "widened by a paired bootstrap over" in v.interval_basis(), (v.claim.key, v.interval_basis())


def test_the_transfer_tapt_verdict_on_the_runs_before_the_freeze_is_the_chapters_dated_figure():
    """Seeds 0-9 are the runs the chapter's dated paragraph reports (the confirmatory seeds 10-12 came later)."""
    from adaptstudy.reporting.scorecard import CHAPTERS, chapter_runs

    chapter = next(c for c in CHAPTERS if c.name == "dsp")
    runs = chapter_runs(PROJECT_ROOT / "results")["dsp"]
    early = chapter.verdicts(runs[runs["seed"] < 10])
    transfer = next(v for v in early if v.claim.key == "dsp.transfer-tapt")
    assert transfer.verdict == "inconclusive" and np.isclose(transfer.judgements[0].effect, -1.3, atol=0.05)
