"""The layer ablation (Houlsby et al.'s Figure 6), as both backbones' chapters judge it: a trained adapter run's
record holds its score with the adapters of each span of layers removed (`layer_ablation`), from which each claim
takes one value per run: the largest drop from removing one layer's, the score without any against the constant
prediction's, and the lower half's against the upper half's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from adaptstudy.claims.evidence import Arm, Unit, contrast
from adaptstudy.claims.verdicts import out_of_order


def ablation_matrix(record: dict) -> pd.DataFrame:
    """The dev metric with the adapters of layers first..last removed, as a first × last matrix."""
    rows = pd.DataFrame(record["layer_ablation"])
    return rows.pivot(index="first", columns="last", values=record["main_metric"])


def plot_ablation(records: list[dict], ax=None):
    """One task's ablation matrix, the mean over its runs (seeds)."""
    matrix = sum(ablation_matrix(r) for r in records) / len(records)
    metric = records[0]["main_metric"]
    score = np.mean([r["metrics"][metric] for r in records])
    ax = sns.heatmap(matrix, annot=True, fmt=".0f", cmap="viridis", ax=ax, cbar_kws={"label": metric})
    ax.set_title(f"{records[0]['task']}: nothing removed {score:.1f} (mean of {len(records)} seeds)")
    ax.set_xlabel("last layer removed")
    ax.set_ylabel("first layer removed")
    return ax


def ablation_stats(record: dict) -> tuple[float, float, float]:
    """(largest single-layer drop, score without adapters − the constant's, without lower half − without upper)."""
    m = ablation_matrix(record)
    score, n = record["metrics"][record["main_metric"]], len(m)
    half = n // 2
    constant = record.get("majority_class_score") or 0.0
    return (
        max(score - m.loc[i, i] for i in range(n)),
        m.loc[0, n - 1] - constant,
        m.loc[0, half - 1] - m.loc[half, n - 1],
    )


def ablation_units(
    runs: pd.DataFrame, by_task: dict[str, list[dict]], aside: dict[tuple[str, str], str]
) -> tuple[list[Unit], list[Unit], list[Unit]]:
    """Per task, each run's ablation record gives one value per claim (one layer, every layer, lower half), an arm
    against 0; the ablated adapters' selection evidence (`aside`, by their label) rides along. `runs` are flagged
    (`baselines.flag_runs`) and labelled, `by_task` the records of the runs the claims rest on."""
    flagged = set(runs.loc[runs["learned_nothing"].astype(bool), "run_id"]) if "learned_nothing" in runs else set()
    labels = dict(zip(runs["run_id"], runs["label"]))
    one, everything, lower = [], [], []
    for task, records in by_task.items():
        stats = [ablation_stats(r) for r in records]
        ids = tuple(r["run_id"] for r in records)
        nothing = sum(r in flagged for r in ids)
        evidence = "; ".join(sorted({aside.get((task, labels[i]), "") for i in ids} - {""}))
        for claim, values in zip((one, everything, lower), zip(*stats)):
            arm_ = Arm(list(values), nothing, run_ids=ids, set_aside=evidence, out_of_order=out_of_order(records))
            claim.append(contrast(task, arm_, 0.0))
    return one, everything, lower
