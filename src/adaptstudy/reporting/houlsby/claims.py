"""The Houlsby chapter's claims, each with a plain verdict, and the figures they rest on: the parameter/performance
trade-off against top-k fine-tuning, the layer ablation and the initialisation scale.

Every function takes the runs of `load_runs`, labelled by `tables.label_runs`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from adaptstudy.reporting.common import SELECTION_SEED, claim_row, claims_table, config_column, not_run
from adaptstudy.reporting.houlsby.tables import SIZES, chosen_learning_rates, size_table


def tradeoff_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Plain runs of every method family on the selection seed: trained parameters against the dev metric.

    Where a label had a learning-rate grid (full, adapters 8/64/256) only its chosen rate is kept;
    the other points were run once, at the rate chosen for size 64 (adapters) or full fine-tuning.
    """
    runs = runs[runs["plain"] & (runs["seed"] == SELECTION_SEED)]
    chosen = chosen_learning_rates(runs).set_index(["task", "label"])["learning_rate"]
    keep = [
        (t, lab) not in chosen.index or np.isclose(lr, chosen[(t, lab)])
        for t, lab, lr in zip(runs["task"], runs["label"], runs["config.learning_rate"].astype(float))
    ]
    runs = runs.loc[np.array(keep, dtype=bool)]
    family = runs["method"].replace(
        {
            "houlsby": "adapters (houlsby, sizes 2–256)",
            "top_k": "top-k layers fine-tuned",
            "layernorm": "layer norm only",
            "full": "full fine-tuning",
        }
    )
    return runs.assign(family=family)[
        [
            "task",
            "method",
            "label",
            "family",
            "trainable_params",
            "main_metric",
            "main_metric_value",
            "config.learning_rate",
        ]
    ]


def plot_tradeoff(frame: pd.DataFrame, tasks: list[str]):
    frame = frame[frame["task"].isin(tasks)]
    if frame.empty:
        return None
    grid = sns.relplot(
        data=frame,
        x="trainable_params",
        y="main_metric_value",
        hue="family",
        style="family",
        col="task",
        kind="line",
        marker="o",
        facet_kws={"sharey": False},
        height=3.5,
        aspect=1.2,
    )
    grid.set(xscale="log")
    grid.set_axis_labels("trained parameters (log scale)", "dev metric (points)")
    sns.move_legend(
        grid, "upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, title=None
    )  # below the panels, not on them
    plt.tight_layout()
    return grid


def ablation_records(runs: pd.DataFrame) -> list[dict]:
    """The records of the layer-ablation runs: their nested `layer_ablation` holds a score per span removed."""
    return [r for r in runs["record"] if r.get("layer_ablation")]


def ablation_matrix(record: dict) -> pd.DataFrame:
    """The dev metric with the adapters of layers first..last removed, as a first × last matrix."""
    rows = pd.DataFrame(record["layer_ablation"])
    return rows.pivot(index="first", columns="last", values=record["main_metric"])


def plot_ablation(record: dict, ax=None):
    matrix = ablation_matrix(record)
    ax = sns.heatmap(matrix, annot=True, fmt=".0f", cmap="viridis", ax=ax, cbar_kws={"label": record["main_metric"]})
    ax.set_title(f"{record['task']}: no adapters removed {record['metrics'][record['main_metric']]:.1f}")
    ax.set_xlabel("last layer removed")
    ax.set_ylabel("first layer removed")
    return ax


def init_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of the initialisation-scale study, with their `init_std`."""
    std = config_column(runs, "adapter_init_std")
    return runs.loc[std.notna()].assign(init_std=std[std.notna()].astype(float))


def plot_init(frame: pd.DataFrame):
    if frame.empty:
        return None
    ax = sns.lineplot(data=frame, x="init_std", y="main_metric_value", hue="task", marker="o")
    ax.set(xscale="log", xlabel="adapter init std (log scale)", ylabel="dev metric (points)")
    return ax


def claims(runs: pd.DataFrame) -> pd.DataFrame:
    """A plain verdict per claim of the paper, with the figures it rests on."""
    sizes = size_table(runs)
    means = sizes.pivot(index="task", columns="label", values="mean") if not sizes.empty else pd.DataFrame()
    return claims_table(
        [
            _gap_claim(means),
            _top_k_claim(runs),
            *_ablation_claims(ablation_records(runs)),
            _init_claim(runs),
            _size_claim(means),
        ]
    )


def _gap_claim(means: pd.DataFrame) -> dict[str, str]:
    """Adapters come within about 0.4 points of full fine-tuning on average (Table 1)."""
    if not {"full", "houlsby-64"} <= set(means.columns):
        return not_run("Adapters come within about 0.4 points of full fine-tuning (Table 1)")
    tasks = means.dropna(subset=["full", "houlsby-64"]).index
    best = means.loc[tasks, [c for c in means.columns if c.startswith("houlsby-")]].max(axis=1)
    gap_best = (best - means.loc[tasks, "full"]).mean()
    gap_64 = (means.loc[tasks, "houlsby-64"] - means.loc[tasks, "full"]).mean()
    return claim_row(
        "Adapters come within about 0.4 points of full fine-tuning (Table 1; −0.4 best size, −0.8 size 64)",
        f"ours over {len(tasks)} tasks: best size {gap_best:+.1f}, size 64 {gap_64:+.1f} points",
        gap_best >= -1.0,
        partly=gap_best >= -3.0,
    )


def _top_k_claim(runs: pd.DataFrame) -> dict[str, str]:
    """Adapters beat fine-tuning only the top layers at the same number of trained parameters (Figures 3–4)."""
    claim = "Adapters beat top-k fine-tuning with no more trained parameters (Figures 3–4)"
    comparisons = []
    for task, group in tradeoff_frame(runs).groupby("task"):
        adapters, top = group[group["method"] == "houlsby"], group[group["method"] == "top_k"]
        for _, t in top.iterrows():
            cheaper = adapters[adapters["trainable_params"] <= t["trainable_params"]]
            if not cheaper.empty:
                comparisons.append((task, t["label"], cheaper["main_metric_value"].max() - t["main_metric_value"]))
    if not comparisons:
        return not_run(claim)
    wins = sum(d >= 0 for *_, d in comparisons)
    detail = "; ".join(f"{task} {label}: {d:+.1f}" for task, label, d in comparisons)
    return claim_row(
        claim,
        f"best adapter with ≤ the parameters, minus top-k: {detail}",
        wins == len(comparisons),
        partly=wins > 0,
    )


def _ablation_claims(ablations: list[dict]) -> list[dict[str, str]]:
    """The layer ablation (Figure 6): single layers cost little, all of them everything, lower layers less."""
    if not ablations:
        return [not_run("Layer ablation (Figure 6)")]
    single, everything, lower_upper = [], [], []
    for record in ablations:
        m = ablation_matrix(record)
        full_score, n = record["metrics"][record["main_metric"]], len(m)
        single.append(max(full_score - m.loc[i, i] for i in range(n)))
        everything.append((record["task"], m.loc[0, n - 1], record.get("majority_class_score")))
        half = n // 2
        lower_upper.append(m.loc[0, half - 1] - m.loc[half, n - 1])
    return [
        claim_row(
            "Removing one layer's adapters costs little (at most 2 points in the paper)",
            f"largest single-layer drop: {', '.join(f'{d:.1f}' for d in single)} points",
            max(single) <= 2.0,
            partly=min(single) <= 2.0,
        ),
        claim_row(
            "Removing every adapter falls to the majority-class level",
            "; ".join(
                f"{t}: {v:.1f} (majority class {mc:.1f})" if mc is not None else f"{t}: {v:.1f}"
                for t, v, mc in everything
            ),
            all(mc is not None and abs(v - mc) <= 5.0 for _, v, mc in everything),
        ),
        claim_row(
            "Lower layers' adapters matter less than upper layers'",
            "score without the lower half minus without the upper half: " + ", ".join(f"{d:+.1f}" for d in lower_upper),
            all(d >= 0 for d in lower_upper),
            partly=any(d >= 0 for d in lower_upper),
        ),
    ]


def _init_claim(runs: pd.DataFrame) -> dict[str, str]:
    """The initialisation scale, judged per task (metrics of different tasks are not on one scale)."""
    claim = "Performance is stable for init std up to 1e-2 and degrades above"
    init = init_frame(runs)
    per_task = [(t, g) for t, g in init.groupby("task") if g["init_std"].nunique() >= 3] if not init.empty else []
    if not per_task:
        return not_run(claim)
    details, stable, degrades = [], [], []
    for task, group in per_task:
        small = group[group["init_std"] <= 1e-2]["main_metric_value"]
        large = group[group["init_std"] > 1e-2]["main_metric_value"]
        spread, drop = small.max() - small.min(), small.mean() - large.mean()
        stable.append(spread <= 2.0)
        degrades.append(drop > 1.0)
        details.append(f"{task}: spread up to 1e-2 {spread:.1f} points, mean above 1e-2 {drop:.1f} points lower")
    return claim_row(claim, "; ".join(details), all(stable) and all(degrades), partly=any(stable) or any(degrades))


def _size_claim(means: pd.DataFrame) -> dict[str, str]:
    """Performance is robust to the adapter size."""
    claim = "Performance is robust to the adapter size (8–256)"
    adapter_cols = [f"houlsby-{s}" for s in SIZES if f"houlsby-{s}" in means.columns]
    if len(adapter_cols) != len(SIZES):
        return not_run(claim)
    spread = (means[adapter_cols].max(axis=1) - means[adapter_cols].min(axis=1)).dropna()
    return claim_row(
        claim,
        "spread across sizes: " + ", ".join(f"{t} {v:.1f}" for t, v in spread.items()),
        spread.max() <= 2.0,
        partly=spread.median() <= 2.0,
    )
