"""The scorecard on the committed records: every declared claim once, four verdicts only, and the protocol kept:
no verdict rests on the seed that chose."""

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.claims import CLAIMS
from adaptstudy.reporting.common import SELECTION_SEED
from adaptstudy.reporting.evidence import VERDICTS
from adaptstudy.reporting.scorecard import PAGES, UNJUDGED, chapter_verdicts, scorecard, untestable_reasons
from adaptstudy.runs.records import read_records


def test_the_scorecard_lists_every_claim_of_every_paper_with_one_of_four_verdicts(data_dir):
    verdicts, seconds = chapter_verdicts(PROJECT_ROOT / "results")
    card = scorecard(verdicts, seconds)
    assert len(card) == len(CLAIMS.names()) >= 20
    assert set(card["verdict"]) <= set(VERDICTS)
    assert card["paper"].nunique() >= 5 and {CLAIMS.get(k).chapter for k in CLAIMS} == set(PAGES)
    assert card["chapter"].str.contains(r'href="06_analysis_\w+\.html"').all()
    # the protocol on the committed records: no Houlsby verdict rests on a run of the seed that chose
    seeds = {r["run_id"]: r["seed"] for r in read_records(PROJECT_ROOT / "results" / "houlsby", status=None)}
    houlsby = [v for v in verdicts if v.claim.chapter == "houlsby"]
    assert len(houlsby) == 9 and seeds
    for v in houlsby:
        assert all(seeds[i] != SELECTION_SEED for i in v.run_ids), v.claim.key
        assert (v.verdict == "not testable") == bool(v.reasons()), v.claim.key
    assert (card["CPU-hours"] >= 0).all() and card.loc[card["runs"] > 0, "CPU-hours"].gt(0).all()


def test_every_untestable_claim_says_why_and_the_reasons_are_counted(data_dir):
    verdicts, seconds = chapter_verdicts(PROJECT_ROOT / "results")
    card = scorecard(verdicts, seconds)
    untestable = card["verdict"] == "not testable"
    assert untestable.any() and (~untestable).any()
    assert (card.loc[untestable, "why not testable"] != "–").all()
    assert (card.loc[~untestable, "why not testable"] == "–").all()
    # the committed RTE runs of the Houlsby chapter learned nothing, and the parity claim names them
    parity = card.loc[card["claim"].str.startswith("Adapters (the best size per task)"), "why not testable"]
    assert parity.str.contains(r"learned nothing: .*rte \(\d+ runs\)").all() and len(parity) == 1
    reasons = untestable_reasons(verdicts)
    assert reasons["claims"].is_monotonic_decreasing and reasons["reason"].is_unique
    # each untestable claim counted once per kind of reason, and no testable claim counted
    kinds = sum(len(v.reason_kinds()) for v in verdicts if v.verdict == "not testable")
    assert reasons["claims"].sum() == kinds + (card["why not testable"] == UNJUDGED).sum()
    assert reasons["claims"].sum() >= untestable.sum()
    assert "learned nothing" in set(reasons["reason"])
