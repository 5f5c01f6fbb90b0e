"""The scorecard's claim table as the book shows it: every claim once, the five columns a reader needs at a glance,
the rest of its row in a closed detail, and the data the page's script filters and sorts by."""

import html
import re

from adaptstudy.reporting.claim_table import GLANCE, claim_table
from adaptstudy.reporting.power_plan import NOT_RUN
from adaptstudy.reporting.scorecard import scorecard


def test_every_claim_is_a_row_with_its_verdicts_effect_and_paper_and_the_rest_in_its_detail(committed_verdicts):
    verdicts, seconds = committed_verdicts
    card = scorecard(verdicts, seconds)
    table = claim_table(card)
    rows = re.findall(r"<tr data-paper=.*?</tr>", table, flags=re.S)
    assert len(rows) == len(card) and f'data-rows="{len(card)}"' in table
    headings = re.findall(r"<th class=\"[^\"]*\">(.*?)</th>", table)
    assert headings == [heading for heading, _ in GLANCE.values()]
    for row, r in zip(rows, card.to_dict("records")):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        assert len(cells) == len(GLANCE)
        assert cells[0].startswith(html.escape(r["claim"])) and "<details>" in cells[0]
        assert html.escape(r["verdict"]) in cells[1] and html.escape(r["ours: effect [95% CI]"]) == cells[3]
        assert html.escape(r["paper reports"]) == cells[4]
        # the rest of the row, under the claim: the rule, what it rests on, its status
        for column in ("rule", "rests on", "status", "verdict by design", "CPU-hours"):
            assert f"<dt>{html.escape(column)}</dt>" in cells[0]
        assert f'data-verdict="{html.escape(r["verdict"])}"' in row and f'data-paper="{html.escape(r["paper"])}"' in row
    # the effect to sort by is the first comparison's, and only a claim with no effect has none
    effects = re.findall(r'data-effect="([^"]*)"', table)
    assert sum(e != "" for e in effects) == card["effect"].notna().sum() >= 30
    parity = next(v for v in verdicts if v.claim.key == "houlsby.parity")
    row = next(r for r in rows if html.escape(parity.claim.sentence) in r)
    assert f'data-effect="{parity.judgements[0].effect:.4g}"' in row


def test_the_fresh_seed_verdict_is_a_filterable_value(committed_verdicts):
    verdicts, seconds = committed_verdicts
    top_k = next(v for v in verdicts if v.claim.key == "houlsby.top-k")
    table = claim_table(scorecard(verdicts, seconds, {top_k.claim.key: top_k}))
    fresh = re.findall(r'data-fresh="([^"]*)"', table)
    assert fresh.count(top_k.verdict) == 1
    why_none = (NOT_RUN, "planned", "none since its amendment")  # why it has none, filterable
    assert all(f.startswith(why_none) for f in fresh if f != top_k.verdict)
