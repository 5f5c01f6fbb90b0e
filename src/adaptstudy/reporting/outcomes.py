"""What a change to a claim's protocol did, measured on the committed records: every effect, interval and verdict of
a chapter's claims, exploratory (all reported seeds) and confirmatory (fresh seeds alone), as one line per claim.

The refactor rule reads two of these (`python -m adaptstudy.reporting.amend`): a change to fingerprinted code or
grids whose every claim's line is identical before and after is a refactor (recorded in the ledger, the freeze kept);
a claim whose line moved is amended, its before and after kept. Run as a script (`python outcomes.py RESULTS
CHAPTER`), this file computes the lines with whatever `adaptstudy` the interpreter imports: the amend command runs it
against the code at an earlier git revision, so the two sides are judged by the same reading of a verdict."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

DIGITS = 9  # significant digits an effect or bound is compared at: float noise below it is no change


def line(verdict) -> str:
    """A verdict as one comparable line: its verdict word, then each comparison's name, effect, bounds and verdict
    (how the interval was made is prose: its bounds say what it did)."""
    parts = [verdict.verdict]
    for name, j in zip(verdict.names, verdict.judgements):
        numbers = ", ".join(_number(x) for x in (j.effect, j.low, j.high))
        parts.append(f"{name or '-'}: {numbers} ({j.verdict})")
    return " | ".join(parts)


def _number(x: float) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{float(x):.{DIGITS}g}"


def chapter_outcomes(results: str | Path, chapter: str) -> dict[str, dict[str, str]]:
    """Per claim of `chapter` (by key): `line`, its exploratory and confirmatory lines on the records under
    `results`, compared in full; `shown`, the verdicts and intervals as a reader reads them (an amendment keeps
    them)."""
    from adaptstudy.reporting.chapters import load_chapters  # here: run as a script, the path is set first
    from adaptstudy.reporting.common import load_runs

    registered = {c.name: c for c in load_chapters() if c.study}
    if chapter not in registered:
        raise ValueError(f"no chapter {chapter!r} judges runs; valid: {sorted(registered)}")
    judging = registered[chapter]
    runs = judging.label_runs(load_runs(Path(results) / judging.study))
    verdicts = judging.verdicts(runs)
    confirmed = {v.claim.key: v for v in judging.fresh_verdicts(runs, verdicts)} if not runs.empty else {}
    records = len(runs)
    out = {}
    for v in verdicts:
        fresh = confirmed.get(v.claim.key)
        out[v.claim.key] = {
            "line": f"exploratory: {line(v)} || confirmatory: {line(fresh) if fresh else 'none'}",
            "shown": f"{v.verdict}, {v.effects()}; on fresh seeds alone: "
            + (f"{fresh.verdict}, {fresh.effects()}" if fresh else "none")
            + f"; on the {records} records",
        }
    return out


if __name__ == "__main__":  # python outcomes.py RESULTS CHAPTER: the lines, as JSON, with the adaptstudy importable
    sys.path.pop(0)  # this file's folder: its modules are the package's, imported as such
    print(json.dumps(chapter_outcomes(sys.argv[1], sys.argv[2]), sort_keys=True))
