"""The scorecard on the committed records: every declared claim once, four verdicts only, and the protocol's
consequences for runs made before it."""

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.claims import CLAIMS
from adaptstudy.reporting.evidence import VERDICTS
from adaptstudy.reporting.scorecard import PAGES, chapter_verdicts, scorecard


def test_the_scorecard_lists_every_claim_of_every_paper_with_one_of_four_verdicts(data_dir):
    verdicts, seconds = chapter_verdicts(PROJECT_ROOT / "results")
    card = scorecard(verdicts, seconds)
    assert len(card) == len(CLAIMS.names()) >= 20
    assert set(card["verdict"]) <= set(VERDICTS)
    assert card["paper"].nunique() >= 5 and {CLAIMS.get(k).chapter for k in CLAIMS} == set(PAGES)
    assert card["chapter"].str.contains(r'href="06_analysis_\w+\.html"').all()
    # runs made before the protocol: seed 0 chose, so Houlsby's cells keep two reported seeds; CoLA and RTE collapsed
    houlsby = {v.claim.key: v for v in verdicts}["houlsby.parity"]
    assert houlsby.verdict == "not testable"
    assert houlsby.reasons().startswith("learned nothing: cola (2 runs), rte")  # full fine-tuning at Matthews 2.6, −2.1
    assert (card["CPU-hours"] >= 0).all() and card.loc[card["runs"] > 0, "CPU-hours"].gt(0).all()
