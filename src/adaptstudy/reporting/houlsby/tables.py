"""The Houlsby chapter's tables: Table 1, the adapter sizes, seeds, costs, and the published tables not run offline.

Learning rates are chosen with the selection seed (on the selection split where the runs scored one), per task for
full fine-tuning, each adapter size and each trade-off method (as the paper chose per size); the tables then report
mean ± sd over the other seeds at the chosen rate. Every function takes the runs of `load_runs`, labelled by
`label_runs`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from adaptstudy.claims.baselines import FLAG_NOTE, constants_by_task, flag_runs, flagged
from adaptstudy.claims.evidence import MIN_SEEDS
from adaptstudy.reporting.common import SELECTION_SEED, config_column, format_mean_sd, reported
from adaptstudy.reporting.costs import partly_timed
from adaptstudy.reporting.folding import short_number
from adaptstudy.reporting.houlsby.choices import (
    KEYS,
    SIZE_TIE_RULE,
    SIZES,
    at_ablation_rates,
    best_sizes,
    chosen_learning_rates,
    limits_hit,
    not_extended,
    parity_labels,
    reported_at_chosen_rates,
    selection_grid,
    size_tie_note,
)
from adaptstudy.reporting.houlsby.published import (
    HOULSBY_2019,
    HOULSBY_HUB_COPIES,
    HOULSBY_NOT_OFFLINE,
    HOULSBY_SIZE_MEANS,
    HOULSBY_TABLE2_AVERAGE,
    HOULSBY_TABLE2_METHODS,
    HOULSBY_TABLE2_PARAMS,
)
from adaptstudy.reporting.published import HOULSBY_TABLE1_PARAMS, published_frame
from adaptstudy.reporting.selection import RATE_TIE_RULE, chosen_on, grid_edge_note

TABLE1_TASKS = ["cola", "sst2", "mrpc", "stsb", "qqp", "mnli-m", "mnli-mm", "qnli", "rte"]
RECORD_COLUMNS = [
    "run_id",
    "task",
    "method",
    "seed",
    "main_metric",
    "main_metric_value",
    "trainable_params",
    "backbone_params",
    "config.learning_rate",
    "config.adapter_size",
    "record",
]


def label_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Adds `label` (full, houlsby-64, top_k-3, layernorm, ...) and `plain` (no init-scale or architecture variant;
    a layer-ablation run is plain: the ablation only evaluates the model it trained)."""
    if runs.empty:
        empty = pd.DataFrame(columns=[*RECORD_COLUMNS, "label", "plain"])
        return empty.astype(
            {
                "plain": bool,
                "seed": int,
                "main_metric_value": float,
                "trainable_params": int,
                "backbone_params": int,
                "config.learning_rate": float,
                "config.adapter_size": float,
            }
        )
    size, k = config_column(runs, "adapter_size"), config_column(runs, "top_k_layers")
    labels = [
        f"{m}-{int(a)}" if pd.notna(a) else f"{m}-{int(t)}" if pd.notna(t) else m
        for m, a, t in zip(runs["method"], size, k)
    ]
    plain = config_column(runs, "adapter_init_std").isna() & config_column(runs, "adapter_variant").isna()
    return runs.assign(label=labels, plain=plain.values)


def selection_note(runs: pd.DataFrame) -> str:
    """Which split and seed chose the learning rates and sizes, and which report."""
    return (
        f"Learning rates and each task's best adapter size were chosen with seed {SELECTION_SEED} on "
        f"{chosen_on(selection_grid(runs))}. Tables report the dev set over the other seeds, and the verdicts "
        f"rest on them alone. Ties: between rates, {RATE_TIE_RULE}; between sizes, {SIZE_TIE_RULE}."
        + size_tie_note(runs)
    )


def epochs_note(runs: pd.DataFrame) -> str:
    """Which arms chose their epochs, and what (the extended selection's rule, `choices`)."""
    chosen = chosen_learning_rates(runs, labels=None)
    chosen = chosen[chosen["epochs chosen"].astype(bool)]
    parity = parity_labels(runs)
    picked = [
        f"{t} {a} {e:g}" for t, a, e in zip(chosen["task"], chosen["label"], chosen["epochs"]) if (t, a) in parity
    ]
    if not picked:
        return "Every arm trained 3 epochs: no stage-1 run at 20 epochs has a record yet."
    return (
        "Epochs, chosen with the rate on the selection split for size 64 and each task's best size (3 or 20, as the "
        "paper chose adapters', but size 256 at 3 only: its 20-epoch runs were cut for the budget; full fine-tuning "
        "keeps the paper's 3-epoch baseline recipe): "
        + "; ".join(picked)
        + ". The other arms chose their rate among their 3-epoch runs and the ablations trained at size 64's 3-epoch "
        "choice, to keep both stages within 12 CPU-hours (the rule in `reporting/houlsby/choices.py`, written before "
        "any 20-epoch run)."
    )


def pending_note(runs: pd.DataFrame) -> str:
    """The settings the selection seed chose whose reported seeds have not all run: stage 1 runs over several sessions
    and stage 2 is generated only once it is complete, so until then a moved choice leaves its cells empty."""
    counts = reported_at_chosen_rates(runs).groupby(KEYS).size()
    short = [
        f"{r.task} {r.label} ({r.epochs:g} epochs at {short_number(r.learning_rate)}: "
        f"{counts.get((r.task, r.label), 0)} reported seeds)"
        for r in chosen_learning_rates(runs).itertuples()
        if counts.get((r.task, r.label), 0) < MIN_SEEDS
    ]
    if not short:
        return ""
    return (
        "Chosen, not yet reported: " + "; ".join(short) + ". The selection split chose these settings, and their "
        "reported seeds run in stage 2 (`houlsby_report.yaml`, generated from stage 1's records once stage 1 is "
        f"complete); until then their cells here are empty and a verdict resting on them reads *not testable* "
        f"(fewer than {MIN_SEEDS} reported seeds)."
    )


def rate_edge_note(runs: pd.DataFrame) -> str:
    """Which choices (every label stage 1 ran) fell on the largest or smallest rate tried, and which of them a stated
    limit keeps from extending further (the extended selection)."""
    note = grid_edge_note(chosen_learning_rates(runs, labels=None), lambda row: f"{row.task} {row.label}")
    limits, unextended = limits_hit(runs), not_extended(runs)
    if limits:
        note += (
            f" A parity arm's edge choice extends its rates a step at a time on the selection split; {len(limits)} "
            f"stopped at the limit stated for their family before the runs (`choices.RATE_LIMITS`): "
            f"{'; '.join(limits)}."
        )
    if unextended:
        note += (
            f" The other arms' {len(unextended)} edge choices were not extended (the extended selection's budget goes "
            "to the parity arms first), so each is a lower bound of what a wider grid would give: "
            f"{'; '.join(unextended)}."
        )
    return note


def size_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd and reported seeds per task for full fine-tuning and each adapter size, at the chosen rates."""
    chosen = reported_at_chosen_rates(runs)
    return (
        chosen.groupby(["task", "label"])["main_metric_value"].agg(mean="mean", sd="std", seeds="count").reset_index()
    )


def seed_scores(runs: pd.DataFrame) -> pd.DataFrame:
    """Each Table 1 cell's dev score per reported seed (full, size 64 and each task's best size), to show how far
    seeds disagree where the sd is large."""
    chosen = reported_at_chosen_rates(runs)
    best = best_sizes(runs)
    keep = chosen["label"].isin(["full", "houlsby-64"]) | (chosen["label"] == chosen["task"].map(best))
    table = chosen[keep].pivot_table(index=["task", "label"], columns="seed", values="main_metric_value")
    table.columns = [f"seed {s}" for s in table.columns]
    return table.reset_index()


def size_means(runs: pd.DataFrame) -> pd.DataFrame:
    """Per adapter size: our mean dev metric (the mean over reported seeds per task) over the tasks that have
    every size, beside the paper's mean."""
    sizes = size_table(runs)
    means = sizes.pivot(index="task", columns="label", values="mean") if not sizes.empty else pd.DataFrame()
    columns = [f"houlsby-{s}" for s in SIZES]
    complete = means[columns].dropna(how="any") if set(columns) <= set(means) else pd.DataFrame()
    return pd.DataFrame(
        {
            "adapter size": SIZES,
            "ours: mean over tasks (reported seeds)": [
                complete[f"houlsby-{s}"].mean() if not complete.empty else np.nan for s in SIZES
            ],
            "tasks": [", ".join(complete.index) if not complete.empty else "–"] * len(SIZES),
            "published: mean validation accuracy (BERT-large, GLUE)": [HOULSBY_SIZE_MEANS[s] for s in SIZES],
        }
    )


def table1(runs: pd.DataFrame) -> pd.DataFrame:
    """Houlsby Table 1: rows full / adapters (best size) / adapters (64), ours and published, tasks as columns; our
    cells flag the runs that learned nothing, and a row gives the constant prediction's score. Tasks not run offline
    read '–' on our side (`OFFLINE_NOTE`). The sources are 'ours' and 'paper': the page says once, above the table,
    that ours are minilm-l6 on the dev sets and the paper's BERT-large on the test server."""
    sizes = size_table(runs)
    chosen = flag_runs(reported_at_chosen_rates(runs))
    collapsed = chosen.groupby(["task", "label"])["learned_nothing"].sum() if not chosen.empty else pd.Series()
    ours: dict[str, dict[str, str]] = {"full": {}, "houlsby-best": {}, "houlsby-64": {}}
    means: dict[str, dict[str, float]] = {k: {} for k in ours}
    best_label = best_sizes(runs)
    for task, group in sizes.groupby("task"):
        for row_name, label in (("full", "full"), ("houlsby-64", "houlsby-64"), ("houlsby-best", best_label.get(task))):
            hit = group[group["label"] == label]
            if not hit.empty:
                r = hit.iloc[0]
                size = f" [{label.split('-')[1]}]" if row_name == "houlsby-best" else ""
                cell = format_mean_sd(r["mean"], r["sd"], r["seeds"]) + size
                ours[row_name][task] = flagged(cell, int(collapsed.get((task, label), 0)))
                means[row_name][task] = r["mean"]
    published = published_frame(HOULSBY_2019, source="Table 1")
    rows = []
    for row_name, text in ours.items():
        params = _ours_params(chosen, row_name, best_label)
        row = {"source": "ours", "method": row_name, **params}
        row.update({task: text.get(task, "–") for task in TABLE1_TASKS})
        values = list(means[row_name].values())
        row["average (tasks run)"] = f"{np.mean(values):.1f}" if values else "–"
        rows.append({**row, TABLE1_TOTAL: "–"})
    constants = constants_by_task(chosen) if not chosen.empty else {}
    ran = sorted({t for m in means.values() for t in m})
    rows.append(
        {
            "source": "ours",
            "method": "constant prediction",
            "total params": "–",
            "trained/task": "–",
            **{task: f"{constants[task]:.1f}" if task in constants else "–" for task in TABLE1_TASKS},
            "average (tasks run)": f"{np.mean([constants[t] for t in ran]):.1f}" if ran else "–",
            TABLE1_TOTAL: "–",
        }
    )
    for row_name, params in HOULSBY_TABLE1_PARAMS.items():
        pub = published[published["method"] == row_name].set_index("task")["value"]
        row = {
            "source": "paper",
            "method": row_name,
            "total params": f"{params['total_params_x']:.1f}×",
            "trained/task": f"{params['trained_pct']:.1f}%",
        }
        row.update({task: f"{pub[task]:.1f}" for task in TABLE1_TASKS})
        row["average (tasks run)"] = f"{pub[ran].mean():.1f}" if ran else "–"
        rows.append({**row, TABLE1_TOTAL: f"{params['total']:.1f}"})
    return pd.DataFrame(rows)


TABLE1_TOTAL = "Table 1's total (its 9 tasks)"


OFFLINE_NOTE = (
    f"{', '.join(t.upper() for t in HOULSBY_NOT_OFFLINE)}: not run offline (no training data in the mirror); their "
    f"columns give the published numbers only. {FLAG_NOTE}"
)


def _ours_params(chosen: pd.DataFrame, row_name: str, best_label: dict[str, str]) -> dict[str, str]:
    """Table 1's parameter columns for our runs: total parameters over the tasks run, as a multiple of
    one plain model (backbone and head), and the share of it trained per task (full fine-tuning: 100%)."""
    if chosen.empty:
        return {"total params": "–", "trained/task": "–"}
    if row_name == "houlsby-best":
        picked = chosen[[best_label.get(t) == lab for t, lab in zip(chosen["task"], chosen["label"])]]
    else:
        picked = chosen[chosen["label"] == row_name]
    if picked.empty:
        return {"total params": "–", "trained/task": "–"}
    per_task = picked.assign(plain=_plain_model_params(picked)).groupby("task")[["trainable_params", "plain"]].first()
    plain = per_task["plain"].iloc[0]
    if row_name == "full":
        total = len(per_task)
    else:
        total = 1 + per_task["trainable_params"].sum() / plain
    return {
        "total params": f"{total:.2f}×",
        "trained/task": f"{100 * (per_task['trainable_params'] / plain).mean():.2f}%",
    }


def _plain_model_params(runs: pd.DataFrame) -> pd.Series:
    """Backbone plus head: the model that full fine-tuning trains whole."""
    head = runs["head_params"].fillna(0) if "head_params" in runs else 0
    return runs["backbone_params"] + head


def variants_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Each architecture variant beside the plain adapter of the same task, size, learning rate and seed, over the
    reported seeds: both means and their paired difference (mean ± sd over seeds)."""
    columns = ["task", "variant", "seeds", "variant: dev metric", "plain adapter", "difference", "difference sd"]
    runs = reported(at_ablation_rates(runs))
    variants = runs[config_column(runs, "adapter_variant").notna()]
    if variants.empty:
        return pd.DataFrame(columns=columns)
    keys = ["task", "seed", "config.adapter_size", "config.learning_rate"]
    plain = runs[runs["plain"]].drop_duplicates(keys)
    merged = variants.merge(plain[[*keys, "main_metric_value"]], on=keys, suffixes=("", "_plain"))
    merged = merged.assign(difference=merged["main_metric_value"] - merged["main_metric_value_plain"])
    table = merged.groupby(["task", "config.adapter_variant"]).agg(
        seeds=("seed", "count"),
        variant=("main_metric_value", "mean"),
        plain=("main_metric_value_plain", "mean"),
        difference=("difference", "mean"),
        sd=("difference", "std"),
    )
    table = table.reset_index()
    table.columns = columns
    return table


def learned_nothing_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Reported runs at the chosen rates that learned nothing (`baselines`): their dev score beside the constant
    prediction's."""
    columns = ["task", "label", "seed", "learning rate", "dev score", "constant"]
    chosen = reported_at_chosen_rates(runs, labels=None)
    if chosen.empty:
        return pd.DataFrame(columns=columns)
    flagged = flag_runs(chosen)
    hits = flagged.loc[
        flagged["learned_nothing"], ["task", "label", "seed", "config.learning_rate", "main_metric_value", "constant"]
    ]
    hits.columns = columns
    return hits.sort_values(["task", "label", "seed"], ignore_index=True)


COST_COLUMNS = {  # cost_table's columns: (the record's column, how a task and label's runs aggregate it)
    "runs": ("run_id", "count"),
    "partly timed": ("partial", "sum"),
    "train s (sum)": ("train_runtime_s", "sum"),
    "train s (mean)": ("timed_s", "mean"),
    "examples/s": ("timed_rate", "mean"),
    "peak MB": ("peak_rss_mb", "max"),
    "trained %": ("trained_pct", "first"),
}


def cost_table(runs: pd.DataFrame) -> pd.DataFrame:
    """What the study cost, per task and method/size: runs, training seconds, examples/s, peak memory, trained share.
    Runs resumed before records kept the seconds of earlier sessions (`partly_timed`) count in the sum, a lower bound,
    and are left out of the mean seconds and the speed."""
    if runs.empty:
        return pd.DataFrame(columns=["task", "label", *COST_COLUMNS])
    partial = partly_timed(runs)
    runs = runs.assign(
        trained_pct=100 * runs["trainable_params"] / _plain_model_params(runs),
        partial=partial,
        timed_s=runs["train_runtime_s"].where(~partial),
        timed_rate=runs["train_examples_per_s"].where(~partial),
    )
    table = runs.groupby(["task", "label"], sort=False).agg(**COST_COLUMNS)
    return table.reset_index().sort_values(["task", "train s (sum)"], ascending=[True, False])


def table2_published() -> pd.DataFrame:
    """The paper's Table 2 (17 more classification tasks, BERT-base, test accuracy, mean ± s.e.m.), not run offline."""
    published = published_frame(HOULSBY_2019, source="Table 2")
    cell = [f"{v:.1f}" if pd.isna(e) else f"{v:.1f} ± {e:.1f}" for v, e in zip(published["value"], published["sem"])]
    table = published.assign(cell=cell).pivot(index="task", columns="method", values="cell")[
        list(HOULSBY_TABLE2_METHODS)
    ]
    table = table.loc[published["task"].unique()]  # the paper's order
    table["ours"] = "not run offline"
    table.loc["average"] = [*(f"{HOULSBY_TABLE2_AVERAGE[m]:.1f}" for m in HOULSBY_TABLE2_METHODS), "–"]
    for key, label, unit in (("total_params_x", "total params", "×"), ("trained_pct", "trained/task", "%")):
        table.loc[label] = ["–", *(f"{HOULSBY_TABLE2_PARAMS[m][key]:g}{unit}" for m in HOULSBY_TABLE2_METHODS[1:]), "–"]
    table["Hub data set (GPU profile)"] = [HOULSBY_HUB_COPIES.get(t, "–") for t in table.index]
    return table.rename_axis("task").reset_index()


def squad_published() -> pd.DataFrame:
    """The paper's SQuAD v1.1 figures (Section 3.5), not run offline."""
    published = published_frame(HOULSBY_2019, source="Section 3.5, Figure 5")
    return published.assign(ours="not run offline", hub=HOULSBY_HUB_COPIES["squad-v1.1"])[
        ["task", "method", "metric", "value", "backbone", "split", "ours", "hub"]
    ].rename(columns={"value": "published", "hub": "Hub data set (GPU profile)"})
