"""The scorecard as the book shows it: one row per claim with what a reader needs at a glance (the claim, its
verdict on every seed and on fresh seeds alone, our effect with its interval, the paper's figure), the rest of its
row in an expandable detail, and data attributes the book's script (`book/_static/claim-table.js`) filters by paper
and verdict and sorts by effect, offline."""

from __future__ import annotations

import html
import math

import pandas as pd

GLANCE = {  # the card's column -> (its heading at a glance, its cells' class, which the book's style and script use)
    "claim": ("claim", "claim"),
    "verdict": ("verdict, every seed (exploratory)", "verdict"),
    "on fresh seeds alone": ("fresh seeds alone (confirmatory)", "fresh"),
    "ours: effect [95% CI]": ("ours: effect [95% CI]", "effect"),
    "paper reports": ("paper reports", "paper"),
}
RAW_HTML = {"chapter"}  # columns whose values are markup already (a link to the chapter's page)
ATTRIBUTES = {"paper", "effect"}  # columns the rows carry as data only (to filter and sort by)


def claim_table(card: pd.DataFrame) -> str:
    """The card (`scorecard.scorecard`) as an HTML table whose every row carries its paper, verdicts and effect as
    data attributes; the columns beyond `GLANCE` are listed in a closed `<details>` under the claim."""
    head = "".join(f'<th class="{css}">{html.escape(h)}</th>' for h, css in GLANCE.values())
    rows = "\n".join(_row(r) for r in card.to_dict("records"))
    return (
        f'<table class="claim-table" data-rows="{len(card)}">\n<thead><tr>{head}</tr></thead>\n'
        f"<tbody>\n{rows}\n</tbody>\n</table>"
    )


def _row(r: dict) -> str:
    fresh = str(r["on fresh seeds alone"]).split(":")[0]
    effect = r.get("effect", math.nan)
    attributes = {
        "data-paper": r["paper"],
        "data-verdict": r["verdict"],
        "data-fresh": fresh,
        "data-effect": "" if pd.isna(effect) else f"{effect:.4g}",
    }
    attrs = " ".join(f'{k}="{html.escape(str(v))}"' for k, v in attributes.items())
    detail = "".join(
        f"<dt>{html.escape(c)}</dt><dd>{_value(c, v)}</dd>" for c, v in r.items() if c not in {*GLANCE, *ATTRIBUTES}
    )
    claim = f"{html.escape(r['claim'])}<details><summary>details</summary><dl>{detail}</dl></details>"
    cells = [claim] + [
        f'<span class="verdict {_slug(str(r[c]).split(":")[0])}">{html.escape(str(r[c]))}</span>'
        if c in ("verdict", "on fresh seeds alone")
        else html.escape(str(r[c]))
        for c in list(GLANCE)[1:]
    ]
    return (
        f"<tr {attrs}>"
        + "".join(f'<td class="{css}">{cell}</td>' for (_, css), cell in zip(GLANCE.values(), cells))
        + "</tr>"
    )


def _value(column: str, value) -> str:
    if column in RAW_HTML:
        return str(value)
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.2f}" if column == "CPU-hours" else f"{value:.1f}"
    return html.escape(str(value))


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")
