"""The decision rule behaves: the interval equals an independent reference at the chapters' designs and covers the
true effect 93–97% of the time there, the bootstrap over examples is paired and widens only metrics, thin arms are
not testable, and the vectorised resampled metrics equal the project's metrics.

Each of these changes to `evidence` fails a test named here:
- a normal quantile (z) for Student's t: `test_one_unit_equals_scipys_welch_interval_at_3_seeds`,
  `test_the_interval_over_units_equals_a_hand_computed_welch_interval`, `test_coverage_at_the_chapters_designs`;
- a 90% level: the same three;
- pooled degrees of freedom (n_a + n_b − 2) for Welch's: `test_one_unit_equals_scipys_welch_interval_at_3_seeds`,
  `test_the_interval_over_units_equals_a_hand_computed_welch_interval`;
- an unpaired bootstrap (each arm resampled on its own draw of examples): `test_the_bootstrap_is_paired_over_examples`;
- no widening (the bootstrap variance times 0): `test_the_bootstrap_is_paired_over_examples`.
(Checked by applying each change and running this file: 6, 9, 6, 1 and 1 tests fail.)
"""

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from adaptstudy.claims.evidence import VERDICTS, Arm, Rule, Unit, all_of, contrast, judge
from adaptstudy.claims.resampling import resampled_metric
from adaptstudy.data.metrics import compute_metrics

TASKS, SEEDS, DRAWS = 5, 5, 500


def synthetic_units(rng, effect: float, sd: float = 0.5, seeds: int = SEEDS) -> list[Unit]:
    """5 tasks, each with its own level, arms a and b over `seeds` seeds; a is `effect` points above b."""
    units = []
    for task in range(TASKS):
        level = rng.uniform(50, 90)
        units.append(
            contrast(
                f"task{task}",
                Arm(level + effect + rng.normal(0, sd, seeds)),
                Arm(level + rng.normal(0, sd, seeds)),
            )
        )
    return units


def holds_rate(effect: float, rule: Rule, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    verdicts = [judge(synthetic_units(rng, effect), rule).verdict for _ in range(DRAWS)]
    assert set(verdicts) <= set(VERDICTS)
    return verdicts.count("holds") / DRAWS


def test_a_directional_claim_with_no_true_effect_holds_in_at_most_5_percent_of_draws():
    assert holds_rate(0.0, Rule("above", 0.0)) <= 0.05


def test_a_true_effect_of_2_points_at_seed_sd_half_a_point_holds_in_at_least_95_percent_of_draws():
    assert holds_rate(2.0, Rule("above", 0.0)) >= 0.95


def test_a_parity_claim_is_judged_against_its_margin():
    rng = np.random.default_rng(1)
    assert judge(synthetic_units(rng, -0.1), Rule("above", -1.0)).verdict == "holds"
    assert judge(synthetic_units(rng, -3.0), Rule("above", -1.0)).verdict == "does not hold"
    assert judge(synthetic_units(rng, 0.0, sd=0.05), Rule("within", 1.0)).verdict == "holds"
    assert judge(synthetic_units(rng, 5.0, sd=0.05), Rule("within", 1.0)).verdict == "does not hold"


def test_runs_that_learned_nothing_are_counted_and_named_and_fewer_than_3_seeds_is_not_testable():
    rng = np.random.default_rng(2)
    units = synthetic_units(rng, 5.0)
    units[3].terms[1][1].learned_nothing = 1  # one collapsed run: counted with its score, named (claims decide)
    judged = judge(units, Rule("above", 0.0))
    assert judged.verdict == "holds" and judged.collapsed == ["task3 (1 run)"] and not judged.reasons
    thin = synthetic_units(rng, 5.0, seeds=2)
    judged = judge(thin, Rule("above", 0.0))
    assert judged.verdict == "not testable" and judged.why.startswith(
        "fewer than 3 reported seeds: task0 (2), task1 (2)"
    )
    assert not np.isnan(judged.low)  # the interval is still shown


def test_a_difference_of_differences_adds_the_variance_of_each_arm():
    rng = np.random.default_rng(7)
    arms = [Arm(rng.normal(m, 1.0, 5)) for m in (72, 70, 60, 59)]  # gain 2 against gain 1
    judged = judge([Unit("t", [(1, arms[0]), (-1, arms[1]), (-1, arms[2]), (1, arms[3])])], Rule("above", 0.0))
    two = judge([contrast("t", arms[0], arms[1])], Rule("above", 0.0))
    assert judged.effect == pytest.approx(two.effect - (arms[2].scores.mean() - arms[3].scores.mean()))
    assert judged.high - judged.low > two.high - two.low


def test_per_unit_detail_rides_along_and_a_conjunction_needs_every_part():
    rng = np.random.default_rng(3)
    judged = judge(synthetic_units(rng, 2.0), Rule("above", 0.0))
    assert [name for name, _ in judged.units] == [f"task{t}" for t in range(TASKS)]
    assert all(j.verdict == "holds" for _, j in judged.units)
    assert all_of([judged, judged]) == "holds"
    assert all_of([judged, judge(synthetic_units(rng, -2.0), Rule("above", 0.0))]) == "does not hold"
    assert all_of([judged, judge([], Rule("above", 0.0))]) == "not testable"


def prediction_units(rng, effect: float, n: int = 300) -> list[Unit]:
    """5 binary tasks with fresh test sets; each run predicts each example right with probability p (+ effect)."""
    units = []
    for task in range(TASKS):
        labels = rng.integers(0, 2, n)
        arms = []
        for p in (0.75 + effect / 100, 0.75):
            runs = [np.where(rng.random(n) < p + rng.normal(0, 0.01), labels, 1 - labels) for _ in range(3)]
            scores = [compute_metrics(["accuracy"], r, labels)["accuracy"] for r in runs]
            arms.append(Arm(scores, predictions=runs))
        units.append(contrast(f"task{task}", *arms, labels=labels, metric="accuracy"))
    return units


def test_with_predictions_the_interval_covers_the_examples_drawn():
    rng = np.random.default_rng(4)
    judged = [judge(prediction_units(rng, 0.0), Rule("above", 0.0), resamples=200, seed=i) for i in range(100)]
    assert "paired bootstrap over 300 evaluation examples (200 resamples)" in judged[0].method
    assert sum(j.verdict == "holds" for j in judged) <= 5
    widened = judge(prediction_units(rng, 8.0), Rule("above", 0.0), resamples=200)
    assert widened.verdict == "holds"


def test_a_contrast_of_arms_in_one_metric_resamples_that_metric_unless_told_another():
    a, b = Arm([70.0, 71.0, 72.0], metric="mcc"), Arm([60.0, 61.0, 62.0], metric="mcc")
    assert contrast("cola", a, b).metric == "mcc"
    assert contrast("cola", a, b, metric="accuracy").metric == "accuracy"
    assert contrast("cola", a, 50.0).metric == "mcc"
    assert contrast("mixed", a, Arm([1.0, 2.0, 3.0], metric="f1")).metric is None


@pytest.mark.parametrize("metric", ["accuracy", "f1", "macro_f1", "micro_f1", "mcc"])
def test_resampled_class_metrics_equal_the_projects_metrics(metric):
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 3 if metric != "f1" else 2, 120)
    predictions = np.where(rng.random(120) < 0.6, labels, rng.integers(0, labels.max() + 1, 120))
    idx = rng.integers(0, 120, size=(20, 120))
    expected = [compute_metrics([metric], predictions[i], labels[i])[metric] for i in idx]
    np.testing.assert_allclose(resampled_metric(metric, predictions, labels, idx), expected, atol=1e-9)


@pytest.mark.parametrize("metric", ["pearson", "spearman"])
def test_resampled_correlations_equal_the_projects_metrics(metric):
    rng = np.random.default_rng(6)
    labels = np.round(rng.uniform(0, 5, 80), 1)  # ties, as STS-B's scores have
    predictions = labels + rng.normal(0, 1, 80)
    idx = rng.integers(0, 80, size=(20, 80))
    expected = [compute_metrics([metric], predictions[i], labels[i])[metric] for i in idx]
    np.testing.assert_allclose(resampled_metric(metric, predictions, labels, idx), expected, atol=1e-9)


def test_one_unit_equals_scipys_welch_interval_at_3_seeds():
    """3 seeds × 1 unit, unequal spreads (Welch's df ≈ 2, pooled would say 4): scipy's own Welch interval."""
    a, b = [70.0, 71.0, 75.0], [60.0, 60.2, 60.1]
    judged = judge([contrast("t", Arm(a), Arm(b))], Rule("above", 0.0))
    reference = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert judged.low == pytest.approx(reference.low, abs=1e-9)
    assert judged.high == pytest.approx(reference.high, abs=1e-9)
    assert judged.df == pytest.approx(stats.ttest_ind(a, b, equal_var=False).df)


def welch_reference(units: list[tuple[np.ndarray, np.ndarray]], level: float = 0.95) -> tuple[float, float]:
    """The mean over units of mean(a) − mean(b) and its Welch–Satterthwaite t-interval, written out term by term."""
    k = len(units)
    effect = sum(a.mean() - b.mean() for a, b in units) / k
    terms = [(x.var(ddof=1) / len(x) / k**2, len(x) - 1) for pair in units for x in pair]
    variance = sum(v for v, _ in terms)
    df = variance**2 / sum(v * v / d for v, d in terms)
    half = stats.t.ppf((1 + level) / 2, df) * variance**0.5
    return effect - half, effect + half


@pytest.mark.parametrize("seeds, n_units", [(3, 5), (5, 4)])
def test_the_interval_over_units_equals_a_hand_computed_welch_interval(seeds, n_units):
    rng = np.random.default_rng(seeds * 10 + n_units)
    pairs = [(rng.normal(70, sd, seeds), rng.normal(69, 0.2 * sd, seeds)) for sd in rng.uniform(0.3, 3.0, n_units)]
    judged = judge([contrast(f"u{i}", Arm(a), Arm(b)) for i, (a, b) in enumerate(pairs)], Rule("above", 0.0))
    low, high = welch_reference(pairs)
    assert (judged.low, judged.high) == pytest.approx((low, high), abs=1e-9)


COVERAGE_DRAWS = 2000


@pytest.mark.parametrize("seeds, n_units", [(3, 1), (3, 5), (5, 4)])
def test_coverage_at_the_chapters_designs(seeds, n_units):
    """At the designs the chapters judge (3 seeds × 1 unit, 3 × 5, 5 × 4; spreads differing by arm and unit), the
    95% interval covers the true effect 93–97% of the time, and no true effect gives holds at most 5% of the time."""
    rng = np.random.default_rng(seeds * 100 + n_units)
    covered = holds = 0
    for _ in range(COVERAGE_DRAWS):
        sds = rng.uniform(0.3, 3.0, size=(n_units, 2))
        units = [
            contrast(f"u{i}", Arm(rng.normal(60, sa, seeds)), Arm(rng.normal(60, sb, seeds)))
            for i, (sa, sb) in enumerate(sds)
        ]
        judged = judge(units, Rule("above", 0.0))
        covered += judged.low <= 0.0 <= judged.high
        holds += judged.verdict == "holds"
    assert 0.93 <= covered / COVERAGE_DRAWS <= 0.97
    assert holds / COVERAGE_DRAWS <= 0.05


def test_the_bootstrap_is_paired_over_examples():
    """Two arms that differ on 20 of 1,000 examples, every seed predicting the same (no spread over seeds): the
    interval is the paired one, ±1.96 × the standard error of a difference of discordant pairs (√((n10 + n01) −
    (n10 − n01)²/n) / n) — an unpaired bootstrap would add each arm's whole binomial variance (about 7× wider here),
    no widening would leave a zero-width interval."""
    rng = np.random.default_rng(8)
    n = 1000
    labels = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.8, labels, 1 - labels)
    a = b.copy()
    flip = rng.choice(n, 20, replace=False)
    a[flip] = 1 - a[flip]
    n10, n01 = int(((a == labels) & (b != labels)).sum()), int(((a != labels) & (b == labels)).sum())
    expected_se = 100 * np.sqrt((n10 + n01) - (n10 - n01) ** 2 / n) / n

    def arm(p):
        score = compute_metrics(["accuracy"], p, labels)["accuracy"]
        return Arm([score] * 3, predictions=[p] * 3, labels=labels, metric="accuracy")

    judged = judge([contrast("t", arm(a), arm(b))], Rule("above", 0.0), resamples=4000)
    half = (judged.high - judged.low) / 2
    assert half == pytest.approx(stats.norm.ppf(0.975) * expected_se, rel=0.12)


def test_a_measured_quantity_is_not_widened_by_the_bootstrap_over_examples():
    """Seconds beside stored predictions: the interval over seeds alone."""
    rng = np.random.default_rng(9)
    labels = rng.integers(0, 2, 200)
    predictions = [np.where(rng.random(200) < 0.7, labels, 1 - labels) for _ in range(3)]
    a = Arm([10.0, 10.5, 11.0], predictions=predictions, labels=labels, metric="accuracy")
    b = Arm([12.0, 12.1, 12.6], predictions=predictions, labels=labels, metric="accuracy")
    widened = judge([contrast("t", a, b)], Rule("above", 0.0))
    unit = contrast("t", a, b)
    unit.measured = True
    measured = judge([unit], Rule("above", 0.0))
    reference = stats.ttest_ind(a.scores, b.scores, equal_var=False).confidence_interval(0.95)
    assert (measured.low, measured.high) == pytest.approx((reference.low, reference.high), abs=1e-9)
    assert "bootstrap" not in measured.method and "bootstrap" in widened.method


def test_the_smallest_detectable_effect_is_the_power_calculation_on_the_intervals_scale():
    judged = judge([contrast("t", Arm([70.0, 71.0, 75.0]), Arm([60.0, 60.2, 60.1]))], Rule("above", 0.0))
    se = (judged.high - judged.low) / 2 / stats.t.ppf(0.975, judged.df)
    assert judged.detectable() == pytest.approx((stats.t.ppf(0.975, judged.df) + stats.t.ppf(0.8, judged.df)) * se)


def test_a_comparison_between_groups_of_units_is_the_difference_of_their_means():
    """'Helps most on the small targets': the mean gain over three units − the mean over two others, each arm's
    variance weighted by its group's 1/n² (the Welch reference term by term); per-unit detail stays unweighted."""
    rng = np.random.default_rng(7)
    pairs = [(rng.normal(70 + 3 * (i < 3), 1.0 + i, 3), rng.normal(69, 0.5, 3)) for i in range(5)]
    units = [contrast(f"u{i}", Arm(a), Arm(b)) for i, (a, b) in enumerate(pairs)]
    units = [replace(u, against=i >= 3) for i, u in enumerate(units)]
    judged = judge(units, Rule("above", 0.0))
    gains = [a.mean() - b.mean() for a, b in pairs]
    assert judged.effect == pytest.approx(np.mean(gains[:3]) - np.mean(gains[3:]))
    terms = [(x.var(ddof=1) / len(x) / (3 if i < 3 else 2) ** 2, len(x) - 1) for i, p in enumerate(pairs) for x in p]
    variance = sum(v for v, _ in terms)
    df = variance**2 / sum(v * v / d for v, d in terms)
    half = stats.t.ppf(0.975, df) * variance**0.5
    assert (judged.low, judged.high) == pytest.approx((judged.effect - half, judged.effect + half), abs=1e-9)
    assert [j.effect for _, j in judged.units] == pytest.approx(gains)
    alone = judge([u for u in units if u.against], Rule("above", 0.0))  # nothing to compare with
    assert alone.verdict == "not testable" and "no units to compare with" in alone.why


def test_a_two_sided_claim_holds_on_either_side_and_cannot_be_refused_at_margin_0():
    """`outside` ('depends on'): an interval wholly above or below ±m holds; inside ±m does not hold; across it is
    inconclusive; at m = 0 nothing shows that an effect is exactly 0."""
    rule = Rule("outside", 1.0)
    assert [rule.verdict(*ci) for ci in ((1.5, 3), (-4, -2), (-0.5, 0.5), (0.5, 2))] == [
        "holds",
        "holds",
        "does not hold",
        "inconclusive",
    ]
    assert Rule("outside", 0.0).verdict(-0.1, 0.1) == "inconclusive"
    assert str(rule) == "holds if the 95% CI lies outside ±1"


def test_the_bootstrap_is_computed_once_per_input_and_again_for_another():
    """The scorecard judges the same units under each design of a claim: the second judgement reuses the first's
    resamples, and a unit whose predictions differ in one example (its scores kept) is resampled anew."""
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 200)
    runs = [np.where(rng.random(200) < 0.8, labels, 1 - labels) for _ in range(3)]
    others = [np.where(rng.random(200) < 0.7, labels, 1 - labels) for _ in range(3)]

    def unit(a_runs):
        score = [compute_metrics(["accuracy"], p, labels)["accuracy"] for p in runs]  # the seeds' part stays
        base = [compute_metrics(["accuracy"], p, labels)["accuracy"] for p in others]
        a = Arm(score, predictions=a_runs, labels=labels, metric="accuracy")
        return contrast("t", a, Arm(base, predictions=others, labels=labels, metric="accuracy"))

    first, again = judge([unit(runs)], Rule("above", 0.0)), judge([unit([p.copy() for p in runs])], Rule("above", 0.0))
    assert (first.low, first.high) == (again.low, again.high)
    changed = [runs[0].copy(), *runs[1:]]
    changed[0][0] = 1 - changed[0][0]
    assert judge([unit(changed)], Rule("above", 0.0)).se != first.se
