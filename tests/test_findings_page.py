"""The book opens with its findings, per source, written from the verdicts: a changed verdict moves its claim on
the page, and the headline counts the exploratory and the confirmatory verdicts."""

import dataclasses
import math

import pandas as pd

from adaptstudy.claims.declarations import RuleSpec
from adaptstudy.reporting.findings import findings_by_paper
from adaptstudy.reporting.scorecard import headline, scorecard


def test_the_findings_follow_the_verdicts(committed_verdicts):
    verdicts = committed_verdicts[0]
    page = findings_by_paper(verdicts)
    papers = {v.claim.paper for v in verdicts}
    assert all(f"### {paper}" in page for paper in papers)
    parity_64 = next(v for v in verdicts if v.claim.key == "houlsby_base.parity-64")
    houlsby = page[page.index("### Houlsby et al. 2019") :].split("\n### ")[0]
    assert parity_64.verdict == "inconclusive"
    assert houlsby.index("Not decided at this scale") < houlsby.index(parity_64.claim.sentence)
    # the same runs under a margin below the interval's lower bound: the claim holds, and the page moves it
    below = math.floor(parity_64.judgements[0].low) - 1.0
    wider = parity_64.claim.design.model_copy(update={"rule": RuleSpec(kind="above", threshold=below)})
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
    assert page.count("On fresh seeds alone: ") == len(verdicts) and page.count("On fresh seeds alone: *") == 1
    card = scorecard(verdicts, seconds, confirmed)
    line = headline(card, confirmed)
    assert f"On fresh seeds alone (*confirmatory*): 1 {top_k.verdict}; {len(card) - 1} have no fresh-seed" in line


def test_a_claim_declared_after_its_runs_is_marked_post_hoc_on_the_page_and_the_scorecard(committed_verdicts):
    from adaptstudy.reporting.findings import declared

    verdicts, seconds = committed_verdicts
    finished = seconds.drop_duplicates("run_id").set_index("run_id")["finished_at"]
    layernorm = next(v for v in verdicts if v.claim.key == "houlsby.layernorm-poor")  # declared over its runs
    parity = next(v for v in verdicts if v.claim.key == "houlsby.parity")  # declared before any run
    n = len(layernorm.run_ids)
    times = pd.to_datetime(finished.reindex(sorted(layernorm.run_ids)), utc=True, format="ISO8601")
    m = int((times < pd.Timestamp(layernorm.claim.declared.ledger[0].date)).sum())
    assert 0 < m <= n and declared(layernorm, finished) == f"post hoc: after {m} of its {n} runs"
    assert declared(parity, finished) == "before its runs"
    page = findings_by_paper(verdicts, {}, finished)
    line = next(x for x in page.splitlines() if x.startswith(f"- {layernorm.claim.sentence}"))
    assert line.endswith(f"Declared after {m} of its {n} runs: post hoc.")
    assert "post hoc" not in next(x for x in page.splitlines() if x.startswith(f"- {parity.claim.sentence}"))
    card = scorecard(verdicts, seconds, {})
    assert (card["declared"].str.startswith("post hoc")).sum() >= 14
    # the chapter's verdict table says the same, from its own runs' times
    from adaptstudy.reporting.verdict_tables import verdict_table

    table = verdict_table([layernorm, parity], finished)
    assert table["declared"].tolist() == [f"post hoc: after {m} of its {n} runs", "before its runs"]
    assert verdict_table([parity])["declared"].tolist() == ["–"]


def test_a_two_sided_verdict_against_the_source_s_direction_says_so(committed_verdicts):
    """BitFit's dependence on the backbone holds under a two-sided rule, but our effect has the report's sign
    reversed: the verdict's reason and the findings say so beside *holds*."""
    from adaptstudy.reporting.verdict_tables import verdict_table

    verdicts = committed_verdicts[0]
    bitfit = next(v for v in verdicts if v.claim.key == "peft.bitfit-depends-on-backbone")
    assert bitfit.design.rule.kind == "outside" and bitfit.design.published_effect == 8.5
    assert bitfit.verdict == "holds" and bitfit.judgements[0].effect < 0
    note = "our effect has the opposite sign to the source's +8.5"
    assert bitfit.against_source() == note
    assert note in verdict_table([bitfit])["why"].iloc[0]
    assert f"Note: {note}." in findings_by_paper([bitfit])
    parity = next(v for v in verdicts if v.claim.key == "houlsby_base.parity-64")
    assert parity.verdict == "inconclusive" and parity.design.published_effect is not None
    assert parity.against_source() == ""  # undecided: no direction to set against the source's
