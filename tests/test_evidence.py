"""The decision rule behaves: calibrated on synthetic records, not testable on collapsed or thin arms, and the
vectorised resampled metrics equal the project's metrics."""

import numpy as np
import pytest

from adaptstudy.data.metrics import compute_metrics
from adaptstudy.reporting.evidence import VERDICTS, Arm, Rule, Unit, all_of, contrast, judge, resampled_metric

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


def test_an_arm_that_learned_nothing_or_has_fewer_than_3_seeds_is_not_testable():
    rng = np.random.default_rng(2)
    units = synthetic_units(rng, 5.0)
    units[3].terms[1][1].learned_nothing = 1  # one collapsed run, however large the effect
    judged = judge(units, Rule("above", 0.0))
    assert judged.verdict == "not testable" and judged.why == "learned nothing: task3 (1 run)"
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
    assert "paired bootstrap over evaluation examples" in judged[0].method
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
