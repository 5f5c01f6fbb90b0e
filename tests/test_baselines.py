"""Constant baselines on the mirror's reported splits, and the runs flagged as having learned nothing."""

import numpy as np
import pytest

from adaptstudy.claims.baselines import MissingLabelsError, baseline, learned_nothing, record_baseline
from adaptstudy.data.tasks import load_task
from adaptstudy.runs.predictions import stored_labels, stored_predictions
from adaptstudy.training.splits import task_splits


def mrpc_record(metrics: dict, predictions=None) -> dict:
    """An MRPC record as a run keeps it: its dev labels (from the mirror) beside its scores."""
    labels = load_task("mrpc")["dev"]["label"]
    record = {"task": "mrpc", "eval_split": "dev", "config": {"data_seed": 0}, "metrics": metrics}
    record["labels"] = {"dev": stored_labels(labels, regression=False)}
    if predictions is not None:
        record["predictions"] = predictions
    return record


def test_a_record_without_its_labels_names_the_backfill_rather_than_reading_the_mirror(data_dir):
    record = mrpc_record({"f1": 84.0, "accuracy": 76.0})
    del record["labels"]
    with pytest.raises(MissingLabelsError, match=r"keeps no labels for 'dev'.*backfill_labels\.py"):
        learned_nothing(record)


def test_mrpc_dev_constants_are_the_majority_accuracy_and_the_all_positive_f1(data_dir):
    base = record_baseline(mrpc_record({}))
    assert base.examples == 408
    assert base.constant == pytest.approx(81.22, abs=0.01)  # F1 of predicting every pair a paraphrase
    assert (base.check, round(base.check_constant, 1)) == ("accuracy", 68.4)
    assert base.margin == pytest.approx(1.645 * 100 * np.sqrt(0.684 * 0.316 / 408), abs=0.01)


def test_cola_constant_is_zero_matthews_with_a_correlation_margin(data_dir):
    labels = load_task("cola", data_dir)["dev"]["label"]
    base = baseline("cola", labels)
    assert (base.constant, base.check) == (0.0, "mcc")
    assert base.margin == pytest.approx(164.5 / np.sqrt(1043))


@pytest.mark.parametrize(
    "metrics, learned",
    [
        ({"f1": 77.7, "accuracy": 67.6}, True),  # the fusion table's MRPC adapter: below the majority
        ({"f1": 82.0, "accuracy": 70.0}, True),  # within noise of the majority's 68.4
        ({"f1": 84.0, "accuracy": 76.0}, False),
    ],
)
def test_a_run_not_above_the_constant_by_more_than_noise_learned_nothing(data_dir, metrics, learned):
    assert learned_nothing(mrpc_record(metrics)) is learned


def test_a_run_predicting_one_class_for_95_percent_of_examples_learned_nothing(data_dir):
    dev = load_task("mrpc", data_dir)["dev"]
    labels = np.asarray(dev["label"])
    mostly_one = labels.copy()
    mostly_one[: int(0.96 * len(labels))] = 1
    stored = stored_predictions(mostly_one, dev, "dev", regression=False)
    assert learned_nothing(mrpc_record({"f1": 90.0, "accuracy": 90.0}, stored))
    right = stored_predictions(labels, dev, "dev", regression=False)
    assert not learned_nothing(mrpc_record({"f1": 100.0, "accuracy": 100.0}, right))


def test_a_multitask_record_is_checked_per_task_on_its_test_split(data_dir):
    tests = {t: task_splits(t, None, 0, None, None)["test"]["label"] for t in ("cola", "rte")}
    record = {
        "task": "cola+rte",
        "tasks": ["cola", "rte"],
        "config": {"data_seed": 0, "max_eval_examples": None},
        "metrics": {"cola/mcc": 0.0, "rte/accuracy": 70.0},
        "labels": {f"{t}/test": stored_labels(labels, regression=False) for t, labels in tests.items()},
    }
    assert learned_nothing(record, "cola")
    assert not learned_nothing(record, "rte")
