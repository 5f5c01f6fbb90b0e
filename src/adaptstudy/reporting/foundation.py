"""The foundation chapter (`06_analysis`): our runs aggregated per task and method beside the published numbers, and
Houlsby et al.'s adapter-gap claim judged on them."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from adaptstudy.claims.evidence import Arm, Rule, contrast, judge
from adaptstudy.reporting.common import config_column, method_label
from adaptstudy.reporting.folding import readable
from adaptstudy.reporting.published import published_frame


def aggregate_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, method, backbone): mean and std of the main metric over seeds, costs, run count."""
    if runs.empty:
        return pd.DataFrame(
            columns=["task", "method", "backbone", "metric", "ours_mean", "ours_std", "runs", "train_examples"]
        )
    runs = runs.assign(method=[method_label(m, a) for m, a in zip(runs["method"], runs["config.adapter_size"])])
    runs = runs.assign(trainable_pct=100 * runs["trainable_params"] / runs["total_params"])
    grouped = runs.groupby(["task", "method", "backbone", "main_metric"], as_index=False)
    out = grouped.agg(
        ours_mean=("main_metric_value", "mean"),
        ours_std=("main_metric_value", "std"),
        runs=("run_id", "count"),
        train_examples=("train_examples", "max"),
        epochs=("config.num_train_epochs", "max"),
        learning_rate=("config.learning_rate", "first"),
        trainable_pct=("trainable_pct", "mean"),
        train_runtime_s=("train_runtime_s", "mean"),
        train_examples_per_s=("train_examples_per_s", "mean"),
        peak_rss_mb=("peak_rss_mb", "max"),
    )
    return out.rename(columns={"main_metric": "metric"})


def compare_with_published(runs: pd.DataFrame, paper: str, tasks=None, methods=None) -> pd.DataFrame:
    """Our aggregated runs joined with a paper's numbers on (task, method, metric).

    Published cells we have no run for are kept (ours empty), so the table shows what is missing;
    `tasks`/`methods` limit the published side to a chapter's scope.
    """
    ours = aggregate_runs(runs)
    theirs = published_frame(paper)[["task", "method", "metric", "value", "backbone", "split", "source"]]
    if tasks is not None:
        theirs = theirs[theirs["task"].isin(tasks)]
    if methods is not None:
        theirs = theirs[theirs["method"].isin(methods)]
    theirs = theirs.rename(columns={"value": "published", "backbone": "published_backbone", "split": "published_split"})
    table = theirs.merge(ours, on=["task", "method", "metric"], how="outer")
    table["difference"] = table["ours_mean"] - table["published"]
    return table.sort_values(["task", "method"]).reset_index(drop=True)


COST_HEADINGS = {  # the cost columns as the book heads them
    "train_examples": "train examples",
    "epochs": "epochs",
    "train_runtime_s": "train s",
    "train_examples_per_s": "examples/s",
    "trainable_pct": "trained %",
    "peak_rss_mb": "peak MB",
}


def display_table(table: pd.DataFrame):
    """The comparison table rounded for reading (a pandas Styler, rendered in the book), its cost columns headed in
    words that wrap (`train s`, not `train_runtime_s`) and its counts whole (`readable`), so it fits the column."""
    shown = readable(table.rename(columns={"ours_mean": "ours", "ours_std": "ours sd", **COST_HEADINGS}))
    cols = ["task", "method", "metric", "published", "ours", "ours sd", "runs", "difference"]
    cols = [c for c in [*cols, *COST_HEADINGS.values()] if c in shown.columns]
    return (
        shown[cols]
        .style.format(  # one call: a second would reset the other columns to six decimals
            {"examples/s": "{:.1f}", "trained %": "{:.2f}", "peak MB": "{:.0f}", "runs": "{:.0f}"},
            precision=1,
            na_rep="–",
        )
        .hide(axis="index")
    )


def plot_comparison(table: pd.DataFrame):
    """Ours (dev) beside published (as the paper reports) per task and method."""
    long = table.melt(
        id_vars=["task", "method"], value_vars=["ours_mean", "published"], var_name="source", value_name="score"
    ).replace({"source": {"ours_mean": "ours", "published": "published"}})
    long["bar"] = long["method"] + " (" + long["source"] + ")"
    ax = sns.barplot(data=long.dropna(subset=["score"]), x="task", y="score", hue="bar")
    ax.set_ylabel("main metric (points)")
    ax.legend(title=None, loc="lower right", fontsize="small")
    plt.tight_layout()
    return ax


def adapter_gap(table: pd.DataFrame, runs: pd.DataFrame, adapter: str = "houlsby-64", margin: float = 1.0):
    """Per task: adapters minus full fine-tuning, ours and published, judged by Houlsby et al.'s claim that adapters
    come within a point or so of full fine-tuning (`margin`: holds if the 95% CI of ours lies above −margin)."""
    rule = Rule("above", -margin)
    labels = [method_label(m, a) for m, a in zip(runs["method"], config_column(runs, "adapter_size"))]
    scores = runs.assign(label=labels)
    rows = []
    for task, group in table.groupby("task"):
        by_method = group.set_index("method")
        if not {"full", adapter} <= set(by_method.index):
            continue
        here = scores[scores["task"] == task]
        a, b = (Arm(here.loc[here["label"] == x, "main_metric_value"].tolist()) for x in (adapter, "full"))
        judged = judge([contrast(task, a, b)], rule)
        rows.append(
            {
                "task": task,
                "metric": by_method.loc["full", "metric"],
                "ours: adapters − full [95% CI]": judged.interval(),
                "published: adapters − full": by_method.loc[adapter, "published"] - by_method.loc["full", "published"],
                "seeds": judged.seeds,
                "verdict": judged.verdict,
                "why": judged.why or str(rule),
            }
        )
    return pd.DataFrame(rows)
