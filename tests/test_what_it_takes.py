"""What an undecided claim would take: seeds per arm where the seeds' spread is what leaves it undecided, none where
the evaluation examples' sampling error alone is wider than our effect's distance from the rule's boundary."""

import math

from adaptstudy.claims.evidence import Judgement, Rule
from adaptstudy.claims.what_it_takes import Z, distance, need, what_it_takes
from adaptstudy.reporting.findings import findings_by_paper, headline_claims
from adaptstudy.reporting.scorecard import scorecard


def _judged(effect: float, se: float, example_var: float, seeds: int = 3) -> Judgement:
    return Judgement(
        effect, effect - 2 * se, effect + 2 * se, seeds, "inconclusive", "", se=se, df=4.0, example_var=example_var
    )


def test_seeds_shrink_the_seeds_part_of_the_variance_only():
    rule = Rule("above", 0.0)
    found = need(_judged(1.0, 1.0, 0.0), rule)  # all the spread from seeds: 3 × (Z / 1)² seeds
    assert found.seeds == math.ceil(3 * Z**2) and found.distance == 1.0 and found.floor == 0.0
    assert Z * math.sqrt(3 / found.seeds) <= 1.0 < Z * math.sqrt(3 / (found.seeds - 1))
    # the same se, half of it the examples': more seeds, and past a point none suffice
    half = need(_judged(1.0, 1.0, 0.5), rule)
    assert half.seeds is None and half.floor == Z * math.sqrt(0.5)
    mostly_seeds = need(_judged(3.0, 1.0, 0.1), rule)
    assert mostly_seeds.seeds == math.ceil(3 * 0.9 / ((3.0 / Z) ** 2 - 0.1))


def test_the_distance_is_to_the_boundary_that_decides():
    assert distance(Rule("above", -1.0), 0.4) == 1.4
    assert distance(Rule("within", 1.0), 0.4) == 0.6  # to hold: the interval inside ±1
    assert math.isclose(distance(Rule("within", 1.0), -1.5), 0.5)  # to not hold: wholly outside
    assert distance(Rule("outside", 0.0), -2.0) == 2.0


def test_the_findings_say_what_deciding_each_undecided_claim_would_take(committed_verdicts):
    verdicts, seconds = committed_verdicts
    parity = next(v for v in verdicts if v.claim.key == "houlsby.size")
    j = parity.judgements[0]
    # the size claim's interval is widened by the examples' bootstrap: its floor alone is wider than its distance
    # to the boundary of ±1 that would decide it
    assert parity.verdict == "inconclusive" and 0 < j.example_var < j.se**2
    assert what_it_takes(parity).startswith("more seeds would not: the evaluation examples' sampling error alone")
    decided = [v for v in verdicts if v.verdict in ("holds", "does not hold")]
    assert decided and all(what_it_takes(v) == "" for v in decided)
    # a claim the seeds leave undecided gets a number of seeds, and their cost at its runs' pace
    by_seeds = [v for v in verdicts if what_it_takes(v).startswith("needs about ")]
    assert by_seeds
    card = scorecard(verdicts, seconds)
    card = card.set_index(card["claim"].map({claim_text(v.claim): v.claim.key for v in verdicts}))
    said = card.loc[by_seeds[0].claim.key, "to decide it"]
    assert said.startswith("needs about ") and "CPU-hours more at its runs' pace (" in said
    hyper = card.loc["hyperformer.beats-st-adapters", "to decide it"]  # the headline no plan could buy: on what
    assert "CPU-hours more at its runs' pace (bf16 on AVX512" in hyper, hyper
    undecided = [v.claim.key for v in verdicts if v.verdict == "inconclusive"]
    assert (card.loc[undecided, "to decide it"] != "–").all()
    assert (card.drop(index=undecided)["to decide it"] == "–").all()
    # a headline claim the seeds cannot decide says in one sentence what would, where its source's findings open
    page = findings_by_paper(verdicts)
    stuck = [k for k in headline_claims().values() if what_it_takes(by_key(verdicts)[k]).startswith("more seeds")]
    assert stuck and page.count("Only more evaluation examples would decide it.") == len(stuck)


def claim_text(claim) -> str:
    return f"{claim.paper}: {claim.sentence} ({claim.where})"  # the scorecard's claim column


def by_key(verdicts):
    return {v.claim.key: v for v in verdicts}
