import pytest

from adaptstudy.data.metrics import compute_metrics


def test_binary_metrics_against_hand_computed_values():
    # TP=2, FP=1, FN=0, TN=1
    pred, gold = [1, 1, 1, 0], [1, 1, 0, 0]
    m = compute_metrics(["accuracy", "f1", "mcc"], pred, gold)
    assert m["accuracy"] == pytest.approx(75.0)
    assert m["f1"] == pytest.approx(100 * 2 * 2 / (2 * 2 + 1))  # 2TP / (2TP + FP + FN)
    assert m["mcc"] == pytest.approx(100 * 2 / 12**0.5)  # (TP*TN - FP*FN) / sqrt(3*2*2*1)


def test_mcc_is_zero_for_chance_and_f1_uses_the_positive_class():
    m = compute_metrics(["mcc", "f1"], [1, 1, 0, 0], [1, 0, 1, 0])
    assert m["mcc"] == pytest.approx(0.0)
    assert m["f1"] == pytest.approx(50.0)


def test_correlations_against_hand_computed_values():
    assert compute_metrics(["spearman"], [1, 2, 3], [1, 3, 2])["spearman"] == pytest.approx(50.0)
    # dx = (-1, 0, 1), dy = (-7/3, -1/3, 8/3): r = 5 / sqrt(2 * 114/9)
    assert compute_metrics(["pearson"], [1, 2, 3], [2, 4, 7])["pearson"] == pytest.approx(
        100 * 5 / (2 * 114 / 9) ** 0.5
    )


def test_constant_predictions_have_zero_correlation():
    assert compute_metrics(["pearson", "spearman"], [2.0, 2.0, 2.0], [1.0, 2.0, 3.0]) == {
        "pearson": 0.0,
        "spearman": 0.0,
    }


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match=r"unknown metric\(s\) \['auc'\]; valid: .*accuracy"):
        compute_metrics(["auc"], [1], [1])
    with pytest.raises(ValueError, match="differ in shape"):
        compute_metrics(["accuracy"], [1, 0], [1])
