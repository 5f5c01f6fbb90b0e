"""Tables as the book shows them when a plain one would not fit its column at 1,400 px: a verdict table with the
columns a reader needs at a glance and the rest of each row folded under its claim, and a listing that readers rarely
need (every run resumed from a checkpoint, every choice) folded under a summary line. Both are HTML that a notebook
displays as it displays a table; they need no script, and a closed fold costs the page no width."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence

import pandas as pd


class Html:
    """HTML that Jupyter (and so the book) displays as such; its plain text, for a console, is `text`."""

    def __init__(self, markup: str, text: str = ""):
        self.markup, self.text = markup, text

    def _repr_html_(self) -> str:
        return self.markup

    def __repr__(self) -> str:
        return self.text or self.markup


def cell_text(value) -> str:
    """A cell as a reader writes it: no `nan`, `None`, `True`/`False` or `3.0` for a count."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return f"{value:.0f}"
    return str(value)


def glance_table(table: pd.DataFrame, glance: Sequence[str], css: str = "glance-table") -> Html:
    """`table` with the `glance` columns side by side and, under the first of them, the row's other columns in a
    closed `<details>` (a dash-only value left out), so that a table of a dozen columns fits the page's column."""
    shown = [c for c in glance if c in table.columns]
    rest = [c for c in table.columns if c not in shown]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in shown)
    rows = []
    for record in table.to_dict("records"):
        detail = "".join(
            f"<dt>{html.escape(c)}</dt><dd>{html.escape(cell_text(record[c]))}</dd>"
            for c in rest
            if cell_text(record[c]) not in ("–", "")
        )
        cells = [html.escape(cell_text(record[c])) for c in shown]
        if detail:
            cells[0] += f"<details><summary>details</summary><dl>{detail}</dl></details>"
        rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    markup = (
        f'<table class="{css}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n' + "\n".join(rows) + "\n</tbody>\n</table>"
    )
    return Html(markup, table.to_string(index=False))


def folded(summary: str, table) -> Html:
    """`table` (a DataFrame or a pandas Styler) under a closed summary line: a listing a reader opens when needed."""
    inner = table.to_html(index=False) if isinstance(table, pd.DataFrame) else table.to_html()
    markup = f'<details class="folded"><summary>{html.escape(summary)}</summary>\n{inner}\n</details>'
    text = table.to_string(index=False) if isinstance(table, pd.DataFrame) else table.data.to_string(index=False)
    return Html(markup, f"{summary}\n{text}")


# Columns that count (a float column of whole numbers among them is shown as whole numbers: `3` epochs, not `3.0`).
COUNT_WORDS = ("epochs", "seeds", "runs", "tasks", "cells", "k", "steps", "workers", "threads", "layers")


def is_count(column: str) -> bool:
    """Whether a column's heading names a count: its first word is one of `COUNT_WORDS` ('epochs', 'seeds per arm',
    'tasks learned'), not 'average (tasks run)' (a score) nor 'examples/s' (a rate)."""
    words = str(column).lower().replace("_", " ").split()
    return bool(words) and words[0] in COUNT_WORDS


def readable(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with its cells as readers write them, for display: yes/no for a true/false column, whole numbers in
    a column that counts (`is_count`; one with a missing value stays as it was, for the page's own `na_rep`), and a
    dash for a missing value in a column of text. Numbers stay numbers, so a page's formats still apply."""
    out = table.copy()
    for column in out.columns:
        values = out[column]
        present = values.dropna()
        if values.dtype == bool or (values.dtype == object and len(present) and present.map(type).eq(bool).all()):
            out[column] = values.map(cell_text)
        elif pd.api.types.is_float_dtype(values) and is_count(column) and len(present) == len(values):
            if (present == present.round()).all():
                out[column] = values.round().astype("Int64")
        elif pd.api.types.is_string_dtype(values) and len(present) and present.map(lambda v: isinstance(v, str)).all():
            out[column] = values.where(values.notna(), "–")
    return out


def short_number(value) -> str:
    """A number as a reader writes it: `5e-5`, not Python's `5e-05`; `3`, `0.0003`, `0.01`; a dash for nothing."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "–"
    if isinstance(value, str):
        return value
    return re.sub(r"e([+-])0*(\d)", lambda m: f"e{'-' if m[1] == '-' else ''}{m[2]}", f"{value:g}")
