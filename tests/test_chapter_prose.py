"""No prose states more than its verdict: a paragraph of a chapter that reports an inconclusive verdict, or an
interval that straddles zero, never calls the arms equal ("matches", "level with", "without changing", ...); an
interval that merely includes zero is not evidence of no difference."""

import re

import pytest

from adaptstudy.claims.prose_figures import markdown_text
from adaptstudy.common.paths import PROJECT_ROOT

CHAPTERS = sorted((PROJECT_ROOT / "notebooks").glob("06_*.ipynb"))
EQUIVALENCE = re.compile(
    r"\bmatch(es|ed)?\b|\blevel with\b|\bwithout changing\b|\bno different\b|\bthe same as\b|\bon par\b|"
    r"\bas good as\b|\bcosts nothing\b|\bequivalent\b|\bindistinguishable\b",
    re.IGNORECASE,
)
STRADDLES = re.compile(r"\[\s*[−-]\s*\d+(\.\d+)?\s*,\s*\+\s*\d+(\.\d+)?\s*\]")  # [−1.1, +1.2]


def paragraphs(path) -> list[str]:
    """The chapter's prose: markdown paragraphs and bullets."""
    return [p for p in re.split(r"\n\s*\n|\n(?=- )", markdown_text(path)) if p.strip()]


def offending(paragraph: str) -> str | None:
    undecided = "inconclusive" in paragraph.lower() or STRADDLES.search(paragraph)
    found = EQUIVALENCE.search(paragraph)
    return found.group(0) if undecided and found else None


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_paragraph_claims_equivalence_beside_an_undecided_interval(path):
    bad = {p[:100]: word for p in paragraphs(path) if (word := offending(p))}
    assert not bad, f"{path.name}: {bad}"


def test_the_scan_catches_the_sentences_the_audit_found():
    assert offending("- **The N = 1 control matches fusion.** mean difference +0.0 [−1.1, +1.2]")
    assert offending("inconclusive, level with both")
    assert offending("lowers the loss without changing what the classifier reaches (+0.0 [−1.4, +1.5])")
    assert not offending("holds, +16.0 [+11.8, +20.3]; the same rule as before")


def test_a_figure_with_an_interval_is_found_only_among_the_verdicts_it_could_come_from():
    from adaptstudy.claims.prose_figures import stated

    written = dict(stated("worse by 16.7 [9.3, 24.1] points; −1.9 MB [−135.4, +131.6]; +4.1 [+1.0,\n  +7.2]"))
    assert list(written.values()) == [(16.7, 9.3, 24.1), (1.9, 131.6, 135.4), (4.1, 1.0, 7.2)]


@pytest.fixture(scope="module")
def every_verdict(committed_verdicts):
    """Every chapter's verdicts on the committed records, on all reported seeds and on the fresh seeds alone, and the
    intervals each chapter's descriptive tables state, by chapter."""
    from adaptstudy.common.paths import PROJECT_ROOT
    from adaptstudy.reporting.chapters import load_chapters
    from adaptstudy.reporting.scorecard import chapter_runs, confirmatory

    verdicts, _ = committed_verdicts
    runs = chapter_runs(PROJECT_ROOT / "results")
    described = {c.name: c.described(runs[c.name]) for c in load_chapters() if c.study}
    return verdicts + list(confirmatory(runs, verdicts).values()), described


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_undated_figure_with_an_interval_is_one_a_verdict_gives(path, every_verdict):
    """A rerun that moves a verdict fails here until the chapter's prose follows (a paragraph opening with a date
    in bold gives the figures of its date)."""
    from adaptstudy.claims.prose_figures import stray_figures
    from adaptstudy.reporting.chapters import load_chapters

    verdicts, described = every_verdict
    names = {c.name for c in load_chapters() if c.page == path.stem}
    mine = [v for v in verdicts if v.claim.chapter in names]
    stray = stray_figures(path, mine, [cell for name in names for cell in described.get(name, [])])
    assert not stray, f"{path.name}: figures no verdict gives: {stray}"


def test_a_verdict_word_is_read_once_and_only_as_a_verdict():
    from adaptstudy.claims.prose_verdicts import written

    assert written("**Low resource: does not hold.** <!-- claims: holds -->") == {"does not hold"}
    assert written("glibc holds on to the memory") == set()
    assert written("*inconclusive* here, and it holds there; not testable before") == {
        "inconclusive",
        "holds",
        "not testable",
    }


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_verdict_word_the_prose_writes_is_one_its_claims_give(path, every_verdict):
    """A rerun that moves a verdict fails here until the sentence that writes it follows."""
    from adaptstudy.claims.catalog import CLAIMS
    from adaptstudy.claims.prose_verdicts import problems

    verdicts, _ = every_verdict
    bad = problems(path, verdicts, CLAIMS.names())
    assert not bad, f"{path.name}: " + "\n".join(bad)


def test_the_verdict_check_catches_a_wrong_word_an_untagged_one_and_an_unknown_claim(tmp_path, every_verdict):
    import nbformat
    from nbformat.v4 import new_markdown_cell, new_notebook

    from adaptstudy.claims.catalog import CLAIMS
    from adaptstudy.claims.prose_verdicts import given, problems

    verdicts, _ = every_verdict
    key = next(k for k, words in sorted(given(verdicts).items()) if "holds" not in words)
    text = (
        f"- **{key}: holds.** <!-- claims: {key} -->\n"
        "- **Something: inconclusive.**\n"
        "- **Another: holds.** <!-- claims: houlsby.no-such-claim -->\n"
        "- **The rules: holds, does not hold.** <!-- claims: none -->"
    )
    path = tmp_path / "06_planted.ipynb"
    nbformat.write(new_notebook(cells=[new_markdown_cell(text)]), path)
    bad = problems(path, verdicts, CLAIMS.names())
    assert len(bad) == 3, bad
    assert "the verdicts of" in bad[0] and "names no claim" in bad[1] and "not declared claims" in bad[2]
