"""A chapter's "what the sources claim, what we test" table, from its declaration's findings."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from adaptstudy.claims.catalog import CLAIMS, DECLARATIONS
from adaptstudy.claims.declarations import load_declaration
from adaptstudy.claims.verdicts import Verdict
from adaptstudy.claims.what_it_takes import what_it_takes
from adaptstudy.reporting.power_plan import power_plan, why_unconfirmed
from adaptstudy.runs.records import made_at


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


GROUPS = {  # how the findings page groups the four verdicts
    "holds": "Reproduced here (the claim holds)",
    "does not hold": "Not reproduced here (the claim does not hold)",
    "inconclusive": "Not decided at this scale (inconclusive)",
    "not testable": "Not testable here",
}


def findings_by_paper(
    verdicts: Sequence[Verdict],
    confirmed: dict[str, Verdict] | None = None,
    finished: pd.Series | None = None,
    hours: dict[str, float] | None = None,
) -> str:
    """The study's findings as Markdown, per source: the claims that hold, do not hold, are inconclusive or not
    testable, each with our effect and interval, the source's figure, whether it was declared after its runs existed
    (given the runs' `finished` times by run id), its verdict on fresh seeds alone (the confirmatory one) or that it
    has none, and for an inconclusive one what deciding it would take (at the pace of its runs' CPU-`hours`, by
    claim). Written from the verdicts, so the page cannot drift from them."""
    confirmed, hours = confirmed or {}, hours or {}
    papers: dict[str, list[Verdict]] = {}
    for v in verdicts:
        papers.setdefault(v.claim.paper, []).append(v)
    sections = []
    for paper, judged in papers.items():
        lines = [f"### {paper}", ""]
        for verdict, title in GROUPS.items():
            these = [v for v in judged if v.verdict == verdict]
            if not these:
                continue
            lines.append(f"**{title}: {len(these)} of {len(judged)}.**")
            lines.append("")
            lines += [f"- {_finding(v, confirmed.get(v.claim.key), finished, hours.get(v.claim.key))}" for v in these]
            lines.append("")
        sections.append("\n".join(lines))
    return "\n".join(sections)


def _finding(v: Verdict, fresh: Verdict | None, finished: pd.Series | None, hours: float | None) -> str:
    why = f" ({v.reasons()})" if v.verdict == "not testable" else ""
    when = declared(v, finished) if finished is not None else ""
    post_hoc = f" Declared {when.removeprefix('post hoc: ')}: post hoc." if when.startswith("post hoc") else ""
    against = f" Note: {v.against_source()}." if v.against_source() else ""
    on_fresh = f"*{fresh.verdict}*, {fresh.effects()}" if fresh else why_unconfirmed(v.claim.key, power_plan())
    takes = f" To decide it: {need}." if (need := what_it_takes(v, hours)) else ""
    return (
        f"{v.claim.sentence} ({v.claim.where}): ours {v.effects()}{why}; the source: {v.claim.published}. "
        f"On fresh seeds alone: {on_fresh}.{against}{post_hoc}{takes}"
    )


def finished_times(*runs: pd.DataFrame) -> pd.Series:
    """When each run of these labelled runs was first made, by run id (a rerun of a seed is not a new run)."""
    frames = [pd.Series(made_at(r).to_numpy(), index=r["run_id"]) for r in runs if not r.empty]
    times = pd.concat(frames) if frames else pd.Series(dtype=object)
    return times[~times.index.duplicated()]  # a multi-task run has a row per task, and chapters share runs


def declared(v: Verdict, finished: pd.Series) -> str:
    """Whether the claim was declared before the runs it rests on or after some of them existed (post hoc): 'before
    its runs', or 'post hoc: after 126 of its 140 runs'."""
    ids = sorted(v.run_ids)
    times = pd.to_datetime(finished.reindex(ids), utc=True, format="ISO8601")
    older = int((times < pd.Timestamp(v.claim.declared.ledger[0].date)).sum())
    return f"post hoc: after {older} of its {len(ids)} runs" if older else "before its runs"


def declared_counts(verdicts: list[Verdict], finished: pd.Series) -> str:
    """When a chapter's claims were declared, counted from the records as the scorecard's *declared* column reads
    them (`declared`): 'Of its 12 claims, 6 were declared before every run they rest on and 6 after some existed
    (*post hoc*: a, b, …); 0 rest on no run.'"""
    said = {v.claim.key: declared(v, finished) if v.run_ids else "" for v in verdicts}
    before = [k for k, d in said.items() if d == "before its runs"]
    post_hoc = [k for k, d in said.items() if d.startswith("post hoc")]
    none = [k for k, d in said.items() if not d]
    named = f" ({', '.join(post_hoc)})" if post_hoc else ""
    return (
        f"Of its {len(said)} claims, {len(before)} were declared before every run they rest on and {len(post_hoc)} "
        f"after some of those runs existed (*post hoc*{named}){f'; {len(none)} rest on no run yet' if none else ''}."
    )
