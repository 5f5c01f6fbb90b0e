"""One evaluation set per arm: where some of an arm's runs scored a seeded cap of the evaluation split
(`max_eval_examples`) and others the whole split, every run is scored again on the capped examples, which the whole
split contains (`data.splits.subsample_indices` finds them), so the arm's seeds are comparable and the bootstrap
over examples can pair them. The labels must agree example by example, or the runs did not score one set. Where
the runs cannot be paired, the reason is kept: a verdict that is not widened says why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from adaptstudy.claims.baselines import reported_labels
from adaptstudy.claims.resampling import resampled_metric
from adaptstudy.data.splits import subsample_indices
from adaptstudy.runs.predictions import decode


@dataclass
class Scored:
    """The runs' predictions and the labels on the examples every run scored; `scores`: each run's metric on them
    where some runs scored more (None: every run scored exactly these); `why`: why there are none to pair."""

    predictions: list[np.ndarray] | None
    labels: np.ndarray | None
    scores: list[float] | None = None
    why: str = ""


def unpaired(why: str) -> Scored:
    return Scored(None, None, why=why)


def on_shared_examples(records: Sequence[dict], metric: str | None) -> Scored:
    """The records' predictions on the examples each of them scored, or why they cannot be paired (see the module
    docstring); rescored in `metric` (None: the runs cannot be rescored, so only runs that scored one set pair)."""
    stored = [r.get("predictions") for r in records]
    if not records:
        return unpaired("no runs")
    if not all(stored):
        return unpaired(f"{sum(not s for s in stored)} of its {len(records)} runs stored no predictions")
    predictions = [decode(s) for s in stored]
    if len({s["examples_sha256"] for s in stored}) == 1:
        return Scored(predictions, reported_labels(records[0]))
    n = min(len(p) for p in predictions)
    capped = {s["examples_sha256"] for s, p in zip(stored, predictions) if len(p) == n}
    if len(capped) != 1:
        return unpaired("its runs scored different sets of the same size")
    if len({r.get("config", {}).get("data_seed", 0) for r in records}) != 1:
        return unpaired("its runs drew their evaluation caps with different data seeds")
    if metric is None:
        return unpaired("its runs scored different sets, in a score the predictions do not recompute")
    caps = {r.get("config", {}).get("max_eval_examples") for r, p in zip(records, predictions) if len(p) > n}
    if caps != {None} or any(
        r.get("config", {}).get("max_eval_examples") != n for r, p in zip(records, predictions) if len(p) == n
    ):
        return unpaired("its runs scored sets that are not one cap of the split the others scored whole")
    seed = records[0].get("config", {}).get("data_seed", 0)
    kept, labels = [], None
    for record, p in zip(records, predictions):
        rows = subsample_indices(len(p), n, seed)
        mine = reported_labels(record)[rows]
        if labels is None:
            labels = mine
        elif not np.array_equal(labels, mine):
            return unpaired("its runs' labels differ on the capped examples")
        kept.append(p[rows])
    everything = np.arange(n)[None, :]
    scores = [float(resampled_metric(metric, p, labels, everything)[0]) for p in kept]
    return Scored(kept, labels, scores)
