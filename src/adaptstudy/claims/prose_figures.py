"""The figures a chapter's prose states with an interval ("+4.1 [+1.0, +7.2]", "3.6 s [0.5, 6.7]") are figures its
verdicts give: every effect and interval a verdict can show, over its comparisons and units, under its current and
earlier designs and on the fresh seeds alone (or a descriptive table of the chapter states), so a rerun that moves
a verdict cannot leave a sentence behind. A
paragraph that opens with a date in bold ("**Stage 2 (4 December 2026).**") gives the figures of that date and is
not checked."""

from __future__ import annotations

import re
from collections.abc import Iterable

import nbformat

from adaptstudy.claims.evidence import Judgement
from adaptstudy.claims.verdicts import Verdict

_NUMBER = r"[+−-]?\d+(?:\.\d+)?"
FIGURE = re.compile(
    rf"(?P<effect>{_NUMBER})(?:\s*(?:s|MB|points))?\s*\[\s*(?P<low>{_NUMBER})\s*,\s*(?P<high>{_NUMBER})\s*\]"
)
DATED = re.compile(
    r"^\*\*[^*]*\b\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|"
    r"November|December) \d{4}\b[^*]*\*\*"
)


def _value(text: str) -> float:
    return float(text.replace("−", "-"))


def _key(effect: float, low: float, high: float) -> tuple[float, float, float]:
    """Magnitudes to one decimal, the bounds unordered: prose may state a negative effect as "16.7 [9.3, 24.1]
    points worse"."""
    bounds = sorted(round(abs(x), 1) for x in (low, high))
    return (round(abs(effect), 1), *bounds)


def stated(text: str) -> list[tuple[str, tuple[float, float, float]]]:
    """Each figure with an interval the text states, as written and as a key."""
    return [(m.group(0), _key(_value(m["effect"]), _value(m["low"]), _value(m["high"]))) for m in FIGURE.finditer(text)]


def nested(j: Judgement) -> Iterable[Judgement]:
    """A judgement and its units', all the way down."""
    yield j
    for _, unit in j.units:
        yield from nested(unit)


def under_every_design(v: Verdict) -> list[Verdict]:
    """The verdict as judged now and under each design of its claim's ledger (prose may state an earlier one)."""
    declared = v.claim.declared
    return [v] + [v.under(declared.design_at(i)) for i in range(len(declared.ledger))]


def given(verdicts: Iterable[Verdict]) -> set[tuple[float, float, float]]:
    """Every effect with its interval the verdicts give, under every design of each claim's ledger."""
    keys = set()
    for judged in (j for v in verdicts for j in under_every_design(v)):
        for top in judged.judgements:
            keys |= {_key(j.effect, j.low, j.high) for j in nested(top) if j.low == j.low}  # not NaN
    return keys


def markdown_text(notebook_path) -> str:
    """A chapter's prose: its markdown cells, one after another."""
    notebook = nbformat.read(notebook_path, as_version=4)
    return "\n\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")


def undated_paragraphs(notebook_path) -> list[str]:
    """The markdown paragraphs of a chapter (a list stays with the paragraph it follows) that do not open with a date
    in bold."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", markdown_text(notebook_path)) if p.strip()]
    return [p for p in paragraphs if not DATED.match(p)]


def stray_figures(notebook_path, verdicts: Iterable[Verdict], described: Iterable[str] = ()) -> list[str]:
    """The figures with an interval that the chapter's undated prose states and neither a verdict gives nor a
    descriptive table of the chapter states (`described`: its cells, e.g. '-0.1 [-1.0, +0.8]')."""
    known = given(verdicts) | {key for text in described for _, key in stated(text)}
    return [written for p in undated_paragraphs(notebook_path) for written, key in stated(p) if key not in known]
