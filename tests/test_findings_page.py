"""The book opens with its findings, per source, written from the verdicts: a changed verdict moves its claim on
the page, and the headline counts the exploratory and the confirmatory verdicts."""

import dataclasses
import math
import re

import pandas as pd

from adaptstudy.claims.declarations import RuleSpec
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.findings import findings_by_paper, headline_claims
from adaptstudy.reporting.scorecard import headline, scorecard


def test_the_findings_follow_the_verdicts(committed_verdicts):
    verdicts = committed_verdicts[0]
    page = findings_by_paper(verdicts)
    papers = {v.claim.paper for v in verdicts}
    assert all(f"### {paper}" in page for paper in papers)
    parity_64 = next(v for v in verdicts if v.claim.key == "houlsby_base.parity-64")
    houlsby = page[page.index("### Houlsby et al. 2019") :].split("\n### ")[0]
    assert parity_64.verdict == "inconclusive"
    assert houlsby.index("Inconclusive at this scale") < houlsby.index(parity_64.claim.sentence)
    # the same runs under a margin below the interval's lower bound: the claim holds, and the page moves it
    below = math.floor(parity_64.judgements[0].low) - 1.0
    wider = parity_64.claim.design.model_copy(update={"rule": RuleSpec(kind="above", threshold=below)})
    moved = [v.under(wider) if v is parity_64 else v for v in verdicts]
    assert moved[verdicts.index(parity_64)].verdict == "holds"
    houlsby = findings_by_paper(moved).split("### Houlsby et al. 2019")[1].split("\n### ")[0]
    reproduced = houlsby[houlsby.index("Holds here") : houlsby.index("Does not hold here")]
    assert parity_64.claim.sentence in reproduced and f": {parity_64.effects()}." in reproduced


def test_a_fresh_seed_verdict_is_stated_beside_the_claim_and_counted_in_the_headline(committed_verdicts):
    verdicts, seconds = committed_verdicts
    top_k = next(v for v in verdicts if v.claim.key == "houlsby.top-k")
    confirmed = {top_k.claim.key: dataclasses.replace(top_k)}
    page = findings_by_paper(verdicts, confirmed)
    line = next(x for x in page.splitlines() if x.startswith(f"- {top_k.claim.sentence}"))
    assert top_k.verdict == "holds" and line.endswith(f"Fresh seeds: *{top_k.verdict}*.")
    assert page.count("Fresh seeds: *") == 1 and page.count("fresh seeds alone: none.") == len(headline_claims())
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
    assert line.startswith(f"- {layernorm.claim.sentence} (post hoc): ")
    assert "post hoc" not in next(
        x for x in page.splitlines() if x.startswith(f"**Headline:** {parity.claim.sentence}")
    )
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


def _scorecard_intro() -> str:
    """The markdown that opens the scorecard's findings section, as the notebook writes it."""
    import json

    from adaptstudy.common.paths import PROJECT_ROOT

    cells = json.loads((PROJECT_ROOT / "notebooks" / "06_scorecard.ipynb").read_text(encoding="utf-8"))["cells"]
    return next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith("## Findings, per source"))


def _words(markdown: str) -> int:
    """Words as a reader counts them: markup (bullets, headings, emphasis) and HTML comments are no words."""
    text = re.sub(r"<!--.*?-->", " ", markdown, flags=re.S)
    return sum(bool(re.search(r"\w", token)) for token in re.sub(r"[*#`]", " ", text).split())


def test_each_source_opens_with_its_summary_and_every_finding_names_its_backbone(committed_verdicts):
    """Per source, at most three lines first: the headline claim's verdicts on every seed and on fresh seeds alone,
    the claims counted by verdict, and why the undecided are; every claim after them names the backbone its figures
    come from; the section reads in at most 1,800 words."""
    from adaptstudy.reporting.findings import backbone_labels
    from adaptstudy.reporting.scorecard import chapter_runs

    verdicts, seconds = committed_verdicts
    runs = chapter_runs(PROJECT_ROOT / "results")
    labels = backbone_labels(*runs.values())
    assert {"MiniLM-L6, 22.6M", "MPNet-base, 108.9M"} <= set(labels)
    finished = seconds.drop_duplicates("run_id").set_index("run_id")["finished_at"]
    page = findings_by_paper(verdicts, {}, finished, labels)
    heads = headline_claims()
    for section in page.split("### ")[1:]:
        paper, *lines = [x for x in section.splitlines() if x.strip()]
        summary = lines[: next(i for i, x in enumerate(lines) if not x.startswith("**") or x.endswith(":**"))]
        assert 2 <= len(summary) <= 3 and summary[0].startswith("**Headline:**") == (paper in heads)
        assert "fresh seeds alone: " in summary[0] and "(every reported seed)" in summary[0]
        bullets = [x for x in lines if x.startswith("- ")]
        named = [*set(labels), "no runs yet"]  # a claim with no runs has no figure to name a backbone for
        assert bullets and all(any(f"({label}" in x for label in named) for x in bullets), paper
    assert set(heads) == {v.claim.paper for v in verdicts}
    assert _words(_scorecard_intro()) + _words(page) <= 1800


def test_the_word_count_reads_prose_not_markup():
    assert _words("### Houlsby\n\n- *holds*: +0.9 [-0.5, +2.2] <!-- claims: none -->") == 5
