"""Tables as readers read them (`reporting.folding`): yes/no rather than True/False, `3` epochs rather than `3.0`, a
dash for a missing text; a dozen-column verdict table as five columns with the rest folded under each claim; a rarely
needed listing under a summary line."""

import math

import numpy as np
import pandas as pd

from adaptstudy.reporting.folding import cell_text, folded, glance_table, is_count, readable, short_number
from adaptstudy.reporting.verdict_tables import GLANCE_COLUMNS, styled


def test_cells_are_written_as_readers_write_them():
    assert [cell_text(v) for v in (True, False, None, math.nan, 3.0, 2.5, "x")] == [
        "yes",
        "no",
        "–",
        "–",
        "3",
        "2.5",
        "x",
    ]
    assert is_count("epochs") and is_count("seeds per arm") and is_count("tasks learned (seed 0)")
    assert not is_count("examples/s") and not is_count("accuracy") and not is_count("seed 3")
    assert (
        not is_count("examples_per_s")
        and not is_count("average (tasks run)")
        and not is_count("Table 1's total (its 9 tasks)")
    )


def test_readable_turns_booleans_and_whole_counts_but_keeps_scores_and_formats():
    table = pd.DataFrame(
        {
            "epochs": [3.0, 20.0],
            "epochs chosen": [True, False],
            "note": ["a", None],
            "score": [85.0, 3.0],
            "seeds per arm": [120.0, np.nan],  # a missing count: left for the page's na_rep
            "examples/s": [3.0, 4.0],
        }
    )
    shown = readable(table)
    assert shown["epochs"].tolist() == [3, 20] and str(shown["epochs"].dtype) == "Int64"
    assert shown["epochs chosen"].tolist() == ["yes", "no"] and shown["note"].tolist() == ["a", "–"]
    assert shown["score"].tolist() == [85.0, 3.0] and shown["examples/s"].dtype == float
    html = shown.style.format({"epochs": "{:g}"}, precision=1, na_rep="–").to_html()
    assert ">3<" in html and ">85.0<" in html and "True" not in html and "None" not in html
    assert table["epochs chosen"].tolist() == [True, False]  # the table itself is left as it was


def test_a_wide_table_shows_its_glance_columns_and_folds_the_rest_under_its_first():
    table = pd.DataFrame(
        {"claim": ["A <b>"], "verdict": ["holds"], "why": ["–"], "seeds": [3.0], "rule": ["effect: above +0"]}
    )
    html = glance_table(table, ["claim", "verdict", "rule"])._repr_html_()
    assert html.count("<th>") == 3 and "<th>seeds</th>" not in html and "A &lt;b&gt;" in html
    assert "<details><summary>details</summary><dl><dt>seeds</dt><dd>3</dd></dl></details>" in html  # no '–' row
    verdicts = pd.DataFrame([{c: f"{c} text" for c in [*GLANCE_COLUMNS, "why", "rests on"]}])
    shown = styled(verdicts)._repr_html_()
    assert 'class="verdict-table"' in shown and shown.count("<th>") == len(GLANCE_COLUMNS)
    assert "<dt>why</dt><dd>why text</dd>" in shown


def test_a_listing_folds_under_its_summary_line():
    listing = pd.DataFrame({"run": ["r1", "r2"], "epochs": [3, 3]})
    html = folded("Every run resumed (2)", listing.style.hide(axis="index"))._repr_html_()
    assert html.startswith('<details class="folded"><summary>Every run resumed (2)</summary>') and "r2" in html
    assert "object at 0x" not in repr(folded("x", listing))


def test_numbers_are_written_short_as_readers_write_them():
    assert [short_number(v) for v in (5e-05, 3e-4, 0.0003, 1e-06, 3.0, 20, 2.5e10, math.nan, None, "–")] == [
        "5e-5",
        "0.0003",
        "0.0003",
        "1e-6",
        "3",
        "20",
        "2.5e10",
        "–",
        "–",
        "–",
    ]
    html = readable(pd.DataFrame({"learning_rate": [5e-05, 1e-3]})).style.format({"learning_rate": short_number})
    assert ">5e-5<" in html.to_html() and "e-05" not in html.to_html()
