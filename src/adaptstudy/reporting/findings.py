"""A chapter's "what the sources claim, what we test" table, from its declaration's findings."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from adaptstudy.reporting.claims import CLAIMS, DECLARATIONS, Verdict
from adaptstudy.reporting.declarations import load_declaration


def findings_table(chapter: str, verdicts: Sequence[Verdict] = ()) -> pd.DataFrame:
    """The chapter's "what the sources claim, what we test": each main finding of its sources, the claims that test
    it with their verdicts (where `verdicts` are given), or why none can."""
    by_key = {v.claim.key: v for v in verdicts}
    rows = []
    for f in load_declaration(DECLARATIONS[chapter]).findings:
        keys = [f"{chapter}.{c}" for c in f.claims]
        tested = "; ".join(
            f"{CLAIMS.get(k).sentence} ({by_key[k].verdict})" if k in by_key else CLAIMS.get(k).sentence for k in keys
        )
        rows.append(
            {
                "source": f.source,
                "finding": f.finding,
                "where": f.where,
                "we test it as (verdict)": tested or "–",
                "not tested, because": f.untested or "–",
            }
        )
    return pd.DataFrame(rows, columns=FINDING_COLUMNS)


FINDING_COLUMNS = ["source", "finding", "where", "we test it as (verdict)", "not tested, because"]
