import socket

import evaluate
import numpy as np
import pytest

from adaptstudy.data.metrics import compute_metrics, task_metric
from adaptstudy.data.tasks import load_task, resolve_task


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


def test_a_correlation_does_not_depend_on_the_scores_float_width(data_dir):
    gold = np.asarray(load_task("stsb", data_dir)["dev"]["label"], dtype=np.float32)
    pred = gold + np.random.default_rng(0).normal(0, 1, len(gold)).astype(np.float32)  # a model's float32 scores
    names = ["pearson", "spearman"]
    assert compute_metrics(names, pred, gold) == compute_metrics(names, pred.astype(float), gold.astype(float))


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


REAL_LABELS = [("cola", ["mcc", "accuracy"]), ("mrpc", ["f1", "accuracy"]), ("chemprot", ["micro_f1", "macro_f1"])]


@pytest.mark.parametrize("task, names", REAL_LABELS)
def test_the_evaluate_module_gives_the_projects_values_for_every_class_metric(task, names, data_dir):
    """On a real dev set's labels, with predictions that are the labels with a third of them redrawn at random."""
    gold = np.asarray(load_task(task, data_dir)[resolve_task(task).eval_split]["label"])
    rng = np.random.default_rng(0)
    pred = np.where(rng.random(len(gold)) < 1 / 3, rng.integers(0, gold.max() + 1, len(gold)), gold)
    shipped = task_metric(regression=False).compute(predictions=pred, references=gold, metric_names=names)
    assert shipped == compute_metrics(names, pred, gold)


def test_the_evaluate_module_gives_the_projects_correlations(data_dir):
    gold = np.asarray(load_task("stsb", data_dir)["dev"]["label"])
    pred = (gold + np.random.default_rng(0).normal(0, 1, len(gold))).astype(np.float32)  # a model's float32 scores
    names = ["pearson", "spearman"]
    shipped = task_metric(regression=True).compute(predictions=pred, references=gold, metric_names=names)
    assert shipped == pytest.approx(compute_metrics(names, pred, gold), abs=1e-9)


def _hub_reachable() -> bool:
    try:
        socket.create_connection(("huggingface.co", 443), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _hub_reachable(), reason="offline: evaluate.load('glue', ...) fetches its script from the Hub")
def test_glue_from_the_hub_gives_the_same_values(data_dir):
    gold = np.asarray(load_task("mrpc", data_dir)["dev"]["label"])
    pred = np.where(np.random.default_rng(1).random(len(gold)) < 0.3, 1 - gold, gold)
    glue = evaluate.load("glue", "mrpc").compute(predictions=pred, references=gold)
    ours = compute_metrics(["accuracy", "f1"], pred, gold)
    assert {k: 100 * v for k, v in glue.items()} == pytest.approx(ours)
