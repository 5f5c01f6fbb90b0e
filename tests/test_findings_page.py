"""The book opens with its findings, per source, written from the verdicts: a changed verdict moves its claim on
the page, and the headline counts the exploratory and the confirmatory verdicts."""

import dataclasses
import math
import re

import pandas as pd

from adaptstudy.claims.declarations import RuleSpec
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.findings import findings_by_paper, headline_claims
from adaptstudy.reporting.power_plan import NOT_RUN
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
    source = f"source {parity_64.design.published_effect:+g}"
    assert (
        parity_64.claim.sentence in reproduced
        and f": {parity_64.effects()}; {source}; holds if above {below:+g}." in reproduced
    )


def test_a_fresh_seed_verdict_is_stated_beside_the_claim_and_counted_in_the_headline(committed_verdicts):
    verdicts, seconds = committed_verdicts
    top_k = next(v for v in verdicts if v.claim.key == "houlsby.top-k")
    confirmed = {top_k.claim.key: dataclasses.replace(top_k)}
    page = findings_by_paper(verdicts, confirmed)
    line = next(x for x in page.splitlines() if x.startswith(f"- {top_k.claim.sentence}"))
    assert top_k.verdict == "holds" and line.endswith(f"Fresh seeds: *{top_k.verdict}*.")
    assert page.count("Fresh seeds: *") == 1 and page.count(f"; {NOT_RUN}.") == len(headline_claims())
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
    assert "-14.8 [-21.2, -8.3]; source +8.5 (opposite sign); holds if clear of 0." in findings_by_paper([bitfit])
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


def _committed_page(committed_verdicts, confirmed=None) -> tuple[str, pd.Series]:
    """The findings as the scorecard writes them from the committed records (`confirmed`: none unless given), and
    the runs' backbone labels."""
    from adaptstudy.reporting.findings import backbone_labels, training_examples
    from adaptstudy.reporting.scorecard import chapter_runs

    verdicts, seconds = committed_verdicts
    runs = chapter_runs(PROJECT_ROOT / "results")
    labels = backbone_labels(*runs.values())
    finished = seconds.drop_duplicates("run_id").set_index("run_id")["finished_at"]
    page = findings_by_paper(verdicts, confirmed or {}, finished, labels, training_examples(*runs.values()))
    return page, labels


def _section(page: str, paper: str) -> str:
    return page[page.index(f"### {paper}") :].split("\n### ")[0]


def test_each_source_opens_with_its_summary_and_every_finding_names_its_backbone(committed_verdicts):
    """Per source, at most four lines first: its scale, the headline claim's verdicts on every seed and on fresh
    seeds alone, the claims counted by verdict, and why the undecided are; the scale names every backbone its figures
    come from, and a claim after them names its backbone where it is not the source's usual one; the section reads
    in at most 1,800 words."""
    verdicts = committed_verdicts[0]
    page, labels = _committed_page(committed_verdicts)
    assert {"MiniLM-L6, 22.6M", "MPNet-base, 108.9M"} <= set(labels)
    heads = headline_claims()
    for section in page.split("### ")[1:]:
        paper, *lines = [x for x in section.splitlines() if x.strip()]
        summary = lines[: next(i for i, x in enumerate(lines) if not x.startswith("**") or x.endswith(":**"))]
        assert 3 <= len(summary) <= 4 and summary[0].startswith("**Scale:**")
        assert summary[1].startswith("**Headline:**") == (paper in heads)
        assert ("fresh seeds alone: " in summary[1] or NOT_RUN in summary[1]) and "(every reported seed)" in summary[1]
        judged = [v for v in verdicts if v.claim.paper == paper]
        ids = sorted(set().union(*(v.run_ids for v in judged)))
        for label in set(labels.reindex(ids).dropna()):
            name, size = label.split(", ")
            assert f"{name} ({size})" in summary[0], (paper, label)
        assert any(x.startswith("- ") for x in lines), paper
    houlsby = _section(page, "Houlsby et al. 2019")
    base = next(v for v in verdicts if v.claim.key == "houlsby_base.ablation-lower")
    assert f"- {base.claim.sentence} (MPNet-base): " in houlsby  # not the source's usual MiniLM-L6: named
    top_k = next(v for v in verdicts if v.claim.key == "houlsby.top-k")
    assert f"- {top_k.claim.sentence}: " in houlsby  # on the usual one, which the scale names
    assert set(heads) == {v.claim.paper for v in verdicts}
    assert _words(_scorecard_intro()) + _words(page) <= 1800


def test_each_source_s_scale_says_its_backbones_stand_ins_training_examples_and_seeds(committed_verdicts):
    """The scale names each of our backbones with its size and the source's model it stands in for, the training
    examples per task where the records give them, and the reported seeds per arm, from the verdicts."""
    from adaptstudy.reporting.findings import STAND_INS

    verdicts = committed_verdicts[0]
    page, labels = _committed_page(committed_verdicts)
    assert {v.claim.paper for v in verdicts} <= set(STAND_INS)
    scale = {paper: _section(page, paper).splitlines()[2] for paper in STAND_INS}
    assert "MiniLM-L6 (22.6M) stands in for BERT-large" in scale["Houlsby et al. 2019"]
    assert "MPNet-base (108.9M) for BERT-base" in scale["Houlsby et al. 2019"]
    assert "MiniLM-L6 (22.6M) stands in for RoBERTa-base" in scale["Adapt or Die (draft)"]  # sources/000 line 58
    assert "MiniLM-L3 (17.2M) for TinyBERT" in scale['the "Efficient Adaption of Large Pre-Trained Models" report']
    assert "MiniLM-L6 (22.6M) stands in for RoBERTa-base" in scale["Gururangan et al. 2020"]
    for paper, line in scale.items():
        judged = [v for v in verdicts if v.claim.paper == paper]
        seeds = sorted({j.seeds for v in judged for j in v.judgements if j.seeds})
        span = f"{seeds[0]}–{seeds[-1]}" if seeds[-1] != seeds[0] else f"{seeds[0]}"
        assert line.endswith(f"{span} seeds per arm.  "), paper
        ours = {label.split(", ")[0] for v in judged for label in labels.reindex(sorted(v.run_ids)).dropna()}
        assert ours <= set(STAND_INS[paper]), paper
    assert "training examples per task" in scale["Gururangan et al. 2020"]
    assert "training examples" not in scale["Mahabadi et al. 2021"]  # its records do not say


def test_each_finding_reads_our_effect_against_the_source_s_figure_and_the_rule(committed_verdicts):
    """Beside our effect and interval: the source's figure where the declaration gives it in our units, and the
    rule's threshold unless it is the one the page's introduction states (above 0)."""
    from adaptstudy.reporting.findings import DEFAULT_RULE, rule_said

    verdicts = committed_verdicts[0]
    page, _ = _committed_page(committed_verdicts)
    assert "a claim\nholds if its interval lies above 0 unless its line says otherwise" in _scorecard_intro()
    heads = set(headline_claims().values())
    lines = page.splitlines()
    for v in verdicts:
        start = "**Headline:** " if v.claim.key in heads else "- "
        line = next(x for x in lines if x.startswith(f"{start}{v.claim.sentence}"))
        figure = v.design.published_effect
        assert (figure is None) or f"; source {figure:+g}" in line, v.claim.key
        rule = v.design.decision
        assert (f"; {rule_said(rule)}" in line) == (rule != DEFAULT_RULE), v.claim.key
    data_loss = next(v for v in verdicts if v.claim.key == "peft.prompt-least-data-loss")
    assert data_loss.verdict == "inconclusive"
    assert f": {data_loss.effects()}; holds if below +5." in page  # why its interval decides nothing: the margin
    assert "; source -0.4 (opposite sign); holds if above -1 " in page  # Houlsby's headline
    assert rule_said(RuleSpec(kind="within", threshold=1.0)) == "holds if within ±1"


def test_undecided_claims_are_explained_in_plain_words(committed_verdicts):
    """A claim that waits on another says so ('waits on dsp.dapt, itself undecided'), not the engine's 'judged only
    where dsp.dapt holds (inconclusive here)'; a claim with no fresh-seed verdict says it was not run on fresh seeds
    yet; one that more seeds would decide says about how many, on the page and the scorecard."""
    from adaptstudy.claims.what_it_takes import plainly, what_it_takes
    from adaptstudy.reporting.scorecard import scorecard, untestable_reasons
    from adaptstudy.reporting.verdict_tables import verdict_list, verdict_table

    verdicts, seconds = committed_verdicts
    page, _ = _committed_page(committed_verdicts)
    assert "judged only where" not in page and "none" not in page
    die = _section(page, "Adapt or Die (draft)")
    assert "not testable: waits on dsp.dapt, itself undecided (2), waits on dsp.tapt, itself undecided (1)." in die
    assert "(waits on dsp.tapt, itself undecided)." in die
    assert page.count(f"(every reported seed); {NOT_RUN}.") == 6  # no fresh verdicts given here
    mahabadi = _section(page, "Mahabadi et al. 2021")
    top = next(v for v in verdicts if v.claim.key == headline_claims()["Mahabadi et al. 2021"])
    seeds = what_it_takes(top).split()[2]
    assert f" It needs about {seeds} seeds per arm to decide (now 3)." in mahabadi
    card = scorecard(verdicts, seconds, {})
    assert not card["rests on"].str.contains("judged only where").any()
    assert card["rests on"].str.contains("waits on dsp.dapt, itself undecided").sum() == 2
    assert not untestable_reasons(verdicts)["reason"].str.contains("judged only where").any()
    dsp = [v for v in verdicts if v.claim.chapter == "dsp"]  # a chapter's own verdict table and list say it plainly
    assert verdict_table(dsp)["why"].str.contains("waits on dsp.dapt, itself undecided").any()
    assert not verdict_table(dsp)["why"].str.contains("judged only where").any()
    assert "judged only where" not in verdict_list(dsp, [v.claim.key for v in dsp])
    assert not card["on fresh seeds alone"].str.startswith("none:").any()
    assert card["on fresh seeds alone"].str.startswith(NOT_RUN).any()
    assert card["to decide it"].str.startswith("needs about ").any()
    assert plainly("judged only where x.y holds (does not hold here)") == "waits on x.y, which does not hold here"
    said = "not testable (judged only where dsp.dapt holds (inconclusive here)): fresh seeds would not change that"
    assert plainly(said) == "not testable (waits on dsp.dapt, itself undecided): fresh seeds would not change that"
    assert plainly("a reading only: deciding it takes 31 fresh seeds per arm") == "needs about 31 seeds per arm"


def test_a_holds_on_every_seed_that_fresh_seeds_leave_inconclusive_says_both(committed_verdicts):
    verdicts = committed_verdicts[0]
    undecided = next(v for v in verdicts if v.verdict == "inconclusive")
    holds = [v for v in verdicts if v.verdict == "holds"]
    heads = set(headline_claims().values())
    page, _ = _committed_page(committed_verdicts, {v.claim.key: undecided for v in holds})
    shown = [v for v in holds if v.claim.key not in heads]
    assert shown
    for v in shown:
        line = next(x for x in page.splitlines() if x.startswith(f"- {v.claim.sentence}"))
        assert line.endswith(" Holds on every seed; *inconclusive* on fresh seeds alone."), v.claim.key
    assert page.count("Holds on every seed; *inconclusive* on fresh seeds alone.") == len(shown)


def test_the_word_count_reads_prose_not_markup():
    assert _words("### Houlsby\n\n- *holds*: +0.9 [-0.5, +2.2] <!-- claims: none -->") == 5
