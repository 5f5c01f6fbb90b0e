"""Task metrics as the papers report them, computed with scikit-learn and scipy, and served to training as an
`evaluate` module (`task_metric`) loaded from this package's `adaptstudy_metrics.py`, offline.

`evaluate.load("glue", ...)` fetches its script from the Hub and fails offline, so the project ships its own.
Every value is in points (0-100), the scale of the published tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

if TYPE_CHECKING:
    import evaluate


def _accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    return accuracy_score(gold, pred)


def _f1(pred: np.ndarray, gold: np.ndarray) -> float:
    """Binary F1 of the positive class (label 1), as GLUE scores MRPC."""
    return f1_score(gold, pred, average="binary", pos_label=1, zero_division=0.0)


def _macro_f1(pred: np.ndarray, gold: np.ndarray) -> float:
    return f1_score(gold, pred, average="macro", zero_division=0.0)


def _micro_f1(pred: np.ndarray, gold: np.ndarray) -> float:
    return f1_score(gold, pred, average="micro", zero_division=0.0)


def _mcc(pred: np.ndarray, gold: np.ndarray) -> float:
    return matthews_corrcoef(gold, pred)


def _pearson(pred: np.ndarray, gold: np.ndarray) -> float:
    return _correlation(pearsonr, pred, gold)


def _spearman(pred: np.ndarray, gold: np.ndarray) -> float:
    return _correlation(spearmanr, pred, gold)


def _correlation(fn, pred: np.ndarray, gold: np.ndarray) -> float:
    """In float64 whatever the scores' width (scipy computes float32 inputs in float32, so a retrained STS-B run once
    scored 83.837890625 against its record's 83.83788466453552). A constant prediction has no correlation; scipy
    warns and returns nan: report 0, as GLUE does."""
    pred, gold = pred.astype(np.float64), gold.astype(np.float64)
    if np.ptp(pred) == 0 or np.ptp(gold) == 0:
        return 0.0
    return float(fn(pred, gold)[0])


METRICS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "accuracy": _accuracy,
    "f1": _f1,
    "macro_f1": _macro_f1,
    "micro_f1": _micro_f1,
    "mcc": _mcc,
    "pearson": _pearson,
    "spearman": _spearman,
}


def check_metric_names(names: Sequence[str]) -> None:
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; valid: {sorted(METRICS)}")


def compute_metrics(names: Sequence[str], predictions, labels) -> dict[str, float]:
    """Each named metric of `predictions` against `labels`, in points (0-100)."""
    check_metric_names(names)
    pred, gold = np.asarray(predictions), np.asarray(labels)
    if pred.shape != gold.shape:
        raise ValueError(f"predictions {pred.shape} and labels {gold.shape} differ in shape")
    return {name: 100.0 * float(METRICS[name](pred, gold)) for name in names}


METRIC_SCRIPT = Path(__file__).with_name("adaptstudy_metrics.py")


@cache
def task_metric(regression: bool) -> evaluate.EvaluationModule:
    """The project's metrics as an `evaluate` module (kept in memory: no cache files shared between processes);
    `.compute(predictions=..., references=..., metric_names=[...])` gives `compute_metrics`' values. `evaluate` is
    imported here, not with the module: it brings in transformers and torch (21 s of the report's 25 s of imports,
    measured with `python -X importtime`), and reading records needs none of them."""
    import evaluate

    kind = "regression" if regression else "classification"
    return evaluate.load(str(METRIC_SCRIPT), config_name=kind, keep_in_memory=True)
