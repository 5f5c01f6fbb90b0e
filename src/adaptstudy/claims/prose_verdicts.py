"""The verdict words a chapter's prose writes by hand come from the claims' verdict objects: a paragraph (or bullet)
that says *holds*, *does not hold*, *inconclusive* or *not testable* names the claims it speaks of in a tag the
reader does not see, `<!-- claims: houlsby.size, houlsby.top-k -->`, and every verdict word it writes must be one
those claims' verdicts give (the claim's or a comparison's or unit's, on every reported seed or on the fresh seeds,
under its current or an earlier design). A rerun that moves a verdict then fails a test until the sentence follows,
as `prose_figures` does for the figures. `<!-- claims: none -->` marks a paragraph whose verdict words define the
verdicts rather than report one. A paragraph that opens with a date in bold reports its date and is not checked."""

from __future__ import annotations

import re
from collections.abc import Iterable

from adaptstudy.claims.prose_figures import nested, undated_paragraphs, under_every_design
from adaptstudy.claims.verdicts import Verdict

TAG = re.compile(r"<!--\s*claims:\s*(?P<names>[^>]*?)\s*-->")
NONE = "none"
_WORDS = [  # the longest first, so "does not hold" is not also read as "holds"
    ("does not hold", re.compile(r"\b(?:does|do|did) not hold\b", re.IGNORECASE)),
    ("not testable", re.compile(r"\bnot testable\b", re.IGNORECASE)),
    ("inconclusive", re.compile(r"\binconclusive\b", re.IGNORECASE)),
    ("holds", re.compile(r"\bholds\b(?! on to)", re.IGNORECASE)),
]


def written(text: str) -> set[str]:
    """The verdicts a text writes, without its tags."""
    text = TAG.sub("", text)
    found = set()
    for verdict, pattern in _WORDS:
        if pattern.search(text):
            found.add(verdict)
            text = pattern.sub("", text)
    return found


def blocks(notebook_path) -> list[str]:
    """The undated paragraphs of a chapter, a list split into its bullets (each bullet states its own claim)."""
    return [b for p in undated_paragraphs(notebook_path) for b in re.split(r"\n(?=- )", p) if b.strip()]


def tagged(block: str) -> list[str]:
    """The claim names a block's tags give (`none` included)."""
    return [name.strip() for m in TAG.finditer(block) for name in m["names"].split(",") if name.strip()]


def given(verdicts: Iterable[Verdict]) -> dict[str, set[str]]:
    """Every verdict each claim gives, by claim key: the claim's and each comparison's and unit's, under every design
    of its ledger, over every verdict object passed (exploratory and confirmatory)."""
    out: dict[str, set[str]] = {}
    for v in verdicts:
        words = out.setdefault(v.claim.key, set())
        for judged in under_every_design(v):
            words.add(judged.verdict)
            words |= {j.verdict for top in judged.judgements for j in nested(top)}
    return out


def problems(notebook_path, verdicts: Iterable[Verdict], known: Iterable[str]) -> list[str]:
    """What a chapter writes that no verdict gives: an untagged block with a verdict word, a tag naming no declared
    claim (`known`: every claim key), or a verdict word none of the tagged claims' verdicts give."""
    by_claim = given(verdicts)
    known = set(known)
    out = []
    for block in blocks(notebook_path):
        words, names = written(block), tagged(block)
        head = " ".join(TAG.sub("", block).split())[:90]
        if names == [NONE]:
            continue
        if words and not names:
            out.append(f"{head!r}: writes {sorted(words)} and names no claim in a <!-- claims: ... --> tag")
            continue
        unknown = [n for n in names if n not in known]
        if unknown:
            out.append(f"{head!r}: tags {unknown}, which are not declared claims")
            continue
        gives = set().union(*(by_claim.get(n, {"not testable"}) for n in names)) if names else set()
        if words - gives:
            out.append(f"{head!r}: writes {sorted(words - gives)}; the verdicts of {names} give {sorted(gives)}")
    return out
