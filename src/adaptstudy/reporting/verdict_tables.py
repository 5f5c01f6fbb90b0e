"""Verdicts as the book shows them: a chapter's verdict table, the per-unit detail, the amendments with the verdict
before and after each, and the protocol paragraph every chapter prints above them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from adaptstudy.claims.catalog import Claim
from adaptstudy.claims.evidence import VERDICTS
from adaptstudy.claims.verdicts import Verdict
from adaptstudy.claims.what_it_takes import plainly
from adaptstudy.reporting.findings import declared
from adaptstudy.reporting.folding import Html, glance_table

VERDICT_COLUMNS = [
    "claim",
    "verdict",
    "ours: effect [95% CI]",
    "rules out",
    "detectable (80% power)",
    "interval",
    "rule",
    "rests on",
    "declared",
    "why",
    "seeds",
    "where",
    "paper reports",
]

GLANCE_COLUMNS = ("claim", "verdict", "ours: effect [95% CI]", "paper reports", "rule")  # the rest fold (`styled`)


def verdict_table(verdicts: Sequence[Verdict], finished: pd.Series | None = None) -> pd.DataFrame:
    """A chapter's verdicts: the claim, the paper's figure, our effect with its interval (one line per comparison),
    the fewest reported seeds behind it, the rule, the verdict (one of four), the reason where not testable, and,
    given the runs' `finished` times by run id (`findings.finished_times`), whether the claim was declared before
    its runs or after some of them existed (post hoc)."""
    rows = []
    for v in verdicts:
        assert v.verdict in VERDICTS, v.verdict
        rows.append(
            {
                "claim": v.claim.sentence,
                "where": v.claim.where,
                "paper reports": v.claim.published,
                "ours: effect [95% CI]": v.effects(),
                "rules out": v.rules_out(),
                "detectable (80% power)": _detectable(v),
                "interval": v.interval_basis(),
                "seeds": min((j.seeds for j in v.judgements), default=0),
                "rule": rule_text(v.claim),
                "verdict": v.verdict,
                "why": "; ".join(filter(None, [plainly(v.reasons()), v.against_source(), v.detail])) or "–",
                "rests on": v.rests_on(),
                "declared": declared(v, finished) if finished is not None and v.run_ids else "–",
            }
        )
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def rule_text(claim: Claim) -> str:
    """The effect and its rule, with the margin's reason where the claim is one of closeness."""
    text = f"{claim.effect}: {claim.rule}"
    return f"{text} (margin: {claim.declared.margin_reason})" if claim.declared.margin_reason else text


def _detectable(v: Verdict) -> str:
    """The smallest true effect the design detects with 80% power, in the effect's units ('2.5'), beside the
    source's figure for the smallest effect that matters where it gives one; or '–'."""
    value, source = v.detectable(), v.design.smallest_effect
    if np.isnan(value):
        return "–"
    return f"{value:.1f}" + (f" (the source's figure: {source:g})" if source is not None else "")


def detail_table(verdicts: Sequence[Verdict]) -> pd.DataFrame:
    """Per claim, comparison and unit (task or setting): the effect with its interval, reported seeds and verdict,
    so a reader sees which tasks a claim-wide verdict rests on (or which made it not testable)."""
    rows = [
        {
            "claim": v.claim.sentence,
            "comparison": name or "–",
            "unit": unit,
            "effect [95% CI]": j.interval(),
            "seeds": j.seeds,
            "verdict": j.verdict,
            "why": j.why or "–",
        }
        for v in verdicts
        for name, judged in zip(v.names, v.judgements)
        for unit, j in (judged.units or [("all", judged)])
    ]
    return pd.DataFrame(rows, columns=["claim", "comparison", "unit", "effect [95% CI]", "seeds", "verdict", "why"])


def amendments(verdicts: list[Verdict]) -> pd.DataFrame:
    """Every amendment, once for the claims it changed together: when, why, how many of their chapter's records
    existed then, what it changed (as it was), and each claim's verdict before → after it, on today's records."""
    groups: dict[tuple, dict] = {}
    for v in verdicts:
        history = v.history()
        changes = [e for e in v.claim.declared.ledger if e.event not in ("recorded", "refactor")]  # they change none
        for i, entry in enumerate(changes):
            if entry.event != "amended":
                continue
            was = ", ".join(
                [f"{k}: {_short(x)}" for k, x in entry.was.items()] + [f"protocol: {k}" for k in entry.protocol_was]
            )
            group = groups.setdefault(
                (entry.date, entry.reason, was),
                {"date": f"{entry.date:%Y-%m-%d %H:%M}", "reason": entry.reason, "was": was, "records then": set()},
            )
            group["records then"].add(entry.records)
            before, after = (entry.before, entry.after) if entry.before else (history[i - 1][1], history[i][1])
            group.setdefault("claims", []).append(f"{v.claim.key}: {before} → {after}")
    rows = [
        {
            **g,
            "records then": ", ".join(str(n) for n in sorted(g["records then"], key=str)),
            "claims": "; ".join(g["claims"]),
        }
        for _, g in sorted(groups.items(), key=lambda kv: kv[0][0])
    ]
    return pd.DataFrame(rows, columns=["date", "reason", "was", "records then", "claims"])


def verdict_list(verdicts: Sequence[Verdict], keys: Sequence[str]) -> str:
    """The named claims as a Markdown list, each with its effect, interval and verdict (and why, where not
    testable), in `keys`' order: a chapter's prose states its verdicts from the verdicts themselves."""
    by_key = {v.claim.key: v for v in verdicts}
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        raise KeyError(f"no verdict for {', '.join(unknown)}; judged here: {', '.join(by_key)}")
    lines = []
    for key in keys:
        v = by_key[key]
        why = f" ({plainly(v.reasons())})" if v.verdict == "not testable" else ""
        lines.append(f"- {v.claim.sentence}: {v.effects()}, *{v.verdict}*{why}.")
    return "\n".join(lines)


def _short(value) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "…"


PROTOCOL = (
    "**How a verdict is reached.** Each claim is declared as data (the chapter's `claims.yaml`): the paper's "
    "sentence, the effect, the arms, the units, the rule; *declared* says whether that was before its runs or after "
    "some of them existed (*post hoc*). A later change is a dated amendment, and the scorecard shows the verdict "
    "under each design. The effect is a mean over units of one arm minus another; "
    "its 95% interval a Welch t-interval over the reported seeds, widened by a paired bootstrap over evaluation "
    "examples where the effect is a metric and every run stored its predictions. *holds* / *does not hold*: the "
    "interval lies on one side of the rule's threshold (for a margin: inside it, or wholly outside); *inconclusive*: "
    "it straddles it; *not testable*: an arm has fewer than 3 reported seeds, or a declared unit was not run. Runs "
    "that learned nothing, one regime in every chapter: a unit is set aside only on selection-stage evidence (the "
    "selection seed's run at its chosen setting learned nothing on the split that chose); a reported run that learned "
    "nothing counts with its score, and *rests on* names how many each verdict counted. Runs of the seed that chose a "
    "setting never report."
)


def styled(table: pd.DataFrame) -> Html:
    """A verdict table for the book: the claim, its verdict, our effect, the paper's figure and the rule side by side,
    the rest of each row (what the interval rules out, the power, the seeds, why, ...) folded under its claim, so the
    table fits the page's column at 1,400 px instead of scrolling across a dozen columns."""
    return glance_table(table, GLANCE_COLUMNS, css="verdict-table")
