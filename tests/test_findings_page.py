"""The book opens with its findings, per source, written from the verdicts: a changed verdict moves its claim on
the page, and the headline counts the exploratory and the confirmatory verdicts."""

import dataclasses

from adaptstudy.reporting.declarations import RuleSpec
from adaptstudy.reporting.findings import findings_by_paper
from adaptstudy.reporting.scorecard import headline, scorecard


def test_the_findings_follow_the_verdicts(committed_verdicts):
    verdicts = committed_verdicts[0]
    page = findings_by_paper(verdicts)
    papers = {v.claim.paper for v in verdicts}
    assert all(f"### {paper}" in page for paper in papers)
    parity_64 = next(v for v in verdicts if v.claim.key == "houlsby.parity-64")
    houlsby = page[page.index("### Houlsby et al. 2019") :].split("\n### ")[0]
    assert parity_64.verdict == "inconclusive"
    assert houlsby.index("Not decided at this scale") < houlsby.index(parity_64.claim.sentence)
    # the same runs under a wider margin (above −3): the claim holds, and the page moves it
    wider = parity_64.claim.design.model_copy(update={"rule": RuleSpec(kind="above", threshold=-3.0)})
    moved = [v.under(wider) if v is parity_64 else v for v in verdicts]
    assert moved[verdicts.index(parity_64)].verdict == "holds"
    houlsby = findings_by_paper(moved).split("### Houlsby et al. 2019")[1].split("\n### ")[0]
    reproduced = houlsby[houlsby.index("Reproduced here") : houlsby.index("Not reproduced here")]
    assert parity_64.claim.sentence in reproduced and f"ours {parity_64.effects()}" in reproduced


def test_a_fresh_seed_verdict_is_stated_beside_the_claim_and_counted_in_the_headline(committed_verdicts):
    verdicts, seconds = committed_verdicts
    top_k = next(v for v in verdicts if v.claim.key == "houlsby.top-k")
    confirmed = {top_k.claim.key: dataclasses.replace(top_k)}
    page = findings_by_paper(verdicts, confirmed)
    assert f"On fresh seeds alone: *{top_k.verdict}*, {top_k.effects()}." in page
    assert page.count("On fresh seeds alone: none yet.") == len(verdicts) - 1
    card = scorecard(verdicts, seconds, confirmed)
    line = headline(card, confirmed)
    assert f"On fresh seeds alone (*confirmatory*): 1 {top_k.verdict}; {len(card) - 1} have no fresh-seed" in line
