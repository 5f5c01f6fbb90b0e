"""Constant baselines, and the runs that learned nothing.

Per task and reported split: the score of the best constant prediction (the majority class for accuracy; all
positive for binary F1; 0 for correlations and Matthews). A run learned nothing when at least 95% of its stored
predictions are one class, or when its main metric is not above the constant's by more than noise: a one-sided 95%
margin of 1.645 standard errors — of the majority share on accuracy, of a coin (√(¼/n)) on F1 scores, 1/√n on a
correlation. Binary F1 is checked on accuracy instead (it rewards predicting every example positive: MRPC's
constant scores 81.2). A run whose record says it diverged (`diverged`) learned nothing, whatever it scored. Such a
run is flagged wherever it appears and counts under the claims' one regime (`claims`).

The labels are the ones the run kept in its record (`record["labels"]`): the report needs no data mirror.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from adaptstudy.data.metrics import compute_metrics
from adaptstudy.data.spec import resolve_task
from adaptstudy.runs.predictions import decode

Z = 1.645
CONCENTRATED = 0.95  # share of the predictions in one class from which a run learned nothing
CORRELATIONS = ("mcc", "pearson", "spearman")


@dataclass(frozen=True)
class Baseline:
    """A task's constant baseline on a reported split: the main metric of the best constant prediction, and the
    metric, constant score and noise margin a run is checked against; `constants` has every metric of the task."""

    constant: float
    check: str
    check_constant: float
    margin: float
    examples: int
    constants: dict[str, float]


def baseline(task, labels: np.ndarray) -> Baseline:
    """The constant baseline of `task` on examples with these `labels`: computed once per task and labels (every
    seed of a cell reports the same split, and scikit-learn's metrics take milliseconds a call: 42 of the
    scorecard's 130 s went here)."""
    labels = np.asarray(labels)
    key = (
        json.dumps(task, sort_keys=True, default=repr),
        labels.dtype.str,
        hashlib.blake2b(labels.tobytes()).hexdigest(),
    )
    if key not in _BASELINES:
        _BASELINES[key] = _baseline(task, labels)
    return _BASELINES[key]


_BASELINES: dict[tuple, Baseline] = {}


def _baseline(task, labels: np.ndarray) -> Baseline:
    spec = resolve_task(task)
    n = len(labels)
    check = "accuracy" if spec.main_metric == "f1" else spec.main_metric
    if spec.is_regression:
        constants = {m: 0.0 for m in spec.metrics}
    else:
        scores = [compute_metrics(spec.metrics, np.full_like(labels, c), labels) for c in np.unique(labels)]
        constants = {m: max(s[m] for s in scores) for m in spec.metrics}
    return Baseline(constants[spec.main_metric], check, constants[check], noise_margin(check, labels), n, constants)


def noise_margin(metric: str, labels: np.ndarray) -> float:
    """How far above the constant a score must be to count as learning (see the module docstring)."""
    n = len(labels)
    if metric in CORRELATIONS:
        return Z * 100 / np.sqrt(n)
    share = np.bincount(labels).max() / n if metric == "accuracy" else 0.5
    return float(Z * 100 * np.sqrt(share * (1 - share) / n))


def task_of(record: dict, task: str | None = None):
    """The task a record (a multi-task record: its `task`) was scored on: a registered name, or the custom task's
    declaration where its config holds one (a user's own task, whose name no registry knows)."""
    declared = record.get("config", {}).get("task")
    if isinstance(declared, dict) and task in (None, declared.get("name")):
        return declared
    return task or record["task"]


class MissingLabelsError(ValueError):
    """A record made before records kept their labels : backfill it."""


def stored_labels(record: dict, key: str) -> np.ndarray:
    """The labels a record kept for split `key` (`record["labels"]`: the reported split by name, `selection`, or a
    multi-task record's `<task>/validation` and `<task>/test`), in the split's order."""
    kept = record.get("labels", {}).get(key)
    if kept is None:
        raise MissingLabelsError(
            f"record {record.get('run_id')} keeps no labels for {key!r} (it has {sorted(record.get('labels', {}))}): "
            "records made before labels were kept gain them from `python scripts/backfill_labels.py results`"
        )
    return decode(kept)


def reported_labels(record: dict, task: str | None = None) -> np.ndarray:
    """The labels of the split a record reports (for a multi-task record: `task`'s test split), in the split's
    order, as the run kept them."""
    if "tasks" in record:
        return stored_labels(record, f"{task or record['task']}/test")
    return stored_labels(record, record.get("eval_split") or resolve_task(task_of(record, task)).eval_split)


def record_baseline(record: dict, task: str | None = None) -> Baseline:
    return baseline(task_of(record, task), reported_labels(record, task))


def learned_nothing(record: dict, task: str | None = None) -> bool:
    """Whether a run (a multi-task run: on `task`) learned nothing (see the module docstring); a run that diverged
    (its record's `diverged`, `training.callbacks.DIVERGENCE_RULE`) learned nothing whatever it scored."""
    if record.get("diverged"):
        return True
    spec = resolve_task(task_of(record, task))
    task = task or record["task"]
    stored = record.get("predictions")
    if stored and stored["kind"] == "class_ids" and not spec.is_regression:
        counts = np.bincount(decode(stored))
        if counts.max() >= CONCENTRATED * counts.sum():
            return True
    base = record_baseline(record, task)
    key = f"{task}/{base.check}" if "tasks" in record else base.check
    score, check_constant, margin = record["metrics"].get(key), base.check_constant, base.margin
    if score is None:  # a multi-task record keeps the main metric alone
        score, check_constant = record["metrics"][f"{task}/{spec.main_metric}"], base.constant
        margin = noise_margin(spec.main_metric, reported_labels(record, task))
    return bool(score <= check_constant + margin)


def selection_baseline(record: dict) -> Baseline:
    """The constant baseline on the selection split a run scored (`selection_split`), from the labels it kept."""
    return baseline(task_of(record), stored_labels(record, "selection"))


def validation_learned(record: dict, task: str) -> tuple[float, Baseline, bool]:
    """A multi-task run's score on `task`'s validation split (the split the Hyperformer paper's rule selects on), the
    constant baseline there, and whether the score is above it by more than noise."""
    base = baseline(task, stored_labels(record, f"{task}/validation"))
    score = record["validation_metrics"][f"{task}/{base.check}"]
    return score, base, bool(score > base.check_constant + base.margin)


def learned_on_selection(record: dict) -> bool:
    """Whether a run's score on its selection split is above the constant's by more than noise (the rule of
    `learned_nothing`, on the split that chooses: a gate that leaves the reported split untouched). The selection
    split's predictions are not stored, so only the score is checked. A diverged run learned nothing."""
    if record.get("diverged"):
        return False
    base = selection_baseline(record)
    return bool(record["selection_metrics"][base.check] > base.check_constant + base.margin)


def selection_failures(chosen: pd.DataFrame, keys: list[str], test=None) -> dict[tuple, str]:
    """Per group of `keys` among the selection seed's runs at their chosen settings (`chosen`): the evidence, where
    its run learned nothing on the split that chose — the only ground on which a claim sets a unit aside (see
    `claims`). `test(row) -> (score, Baseline, learned)` checks a run's row (default: its record's selection split;
    a multi-task run's row names the task it checks). A run that scored no such split (made before the protocol)
    gives no evidence."""
    test = test or (lambda row: _on_selection(row["record"]))
    failures = {}
    for _, row in chosen.iterrows():
        if not (row["record"].get("selection_metrics") or row["record"].get("validation_metrics")):
            continue
        score, base, learned = test(row)
        if not learned:
            rate = row["record"]["config"]["learning_rate"]
            failures[tuple(row[k] for k in keys)] = (
                f"the selection seed's run at lr {rate:g} scored {score:.1f} {base.check} on the split that chose, not "
                f"above the constant's {base.check_constant:.1f} by its noise margin {base.margin:.1f}"
            )
    return failures


def _on_selection(record: dict) -> tuple[float, Baseline, bool]:
    base = selection_baseline(record)
    return record["selection_metrics"][base.check], base, learned_on_selection(record)


def flag_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs (single-task, or a multi-task record's row for one of its tasks) with `constant` (the main metric of the
    constant prediction on their reported split) and `learned_nothing`."""
    if runs.empty:
        return runs.assign(constant=pd.Series(dtype=float), learned_nothing=pd.Series(dtype=bool))
    pairs = list(zip(runs["record"], runs["task"]))  # a multi-task record: one row per task it reports
    return runs.assign(
        constant=[record_baseline(r, t).constant for r, t in pairs],
        learned_nothing=np.array([learned_nothing(r, t) for r, t in pairs], dtype=bool),
    )


FLAG = "⚠"
FLAG_NOTE = (
    f"{FLAG}n: n of the cell's runs learned nothing (the scorecard's rule); a verdict counts them and names them."
)


def flagged(cell: str, learned_nothing: int) -> str:
    """A table cell with its count of runs that learned nothing, visible at a glance: '54.5 ± 0.3 (3) ⚠2'."""
    return f"{cell} {FLAG}{learned_nothing}" if learned_nothing else cell


def constants_by_task(runs: pd.DataFrame, metric: str | None = None) -> dict[str, float]:
    """Per task of these single-task runs: the constant prediction's score on the reported split, in the task's main
    metric or `metric` (read with the first run's data settings: every run of a task in a table reports the same
    split)."""
    firsts = runs.drop_duplicates("task")
    return {
        task: record_baseline(record, task).constants[metric or resolve_task(task).main_metric]
        for task, record in zip(firsts["task"], firsts["record"])
    }
