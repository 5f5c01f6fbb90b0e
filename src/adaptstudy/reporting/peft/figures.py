"""The IMDb chapter's figures: per-epoch loss and accuracy, accuracy against costs, and the learning curve.

Every function takes the runs of `load_runs`, labelled by `tables.label_runs` (or a table made from them).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from adaptstudy.reporting.common import SELECTION_SEED, config_column
from adaptstudy.reporting.peft.tables import SELECTION_SETTING, at_chosen_rates
from adaptstudy.reporting.published import PEFT_REPORT_METHODS


def method_palette(methods) -> dict[str, tuple]:
    """One clearly distinct colour per method, the same in every figure: the report's five first."""
    present = set(methods)
    order = [m for m in PEFT_REPORT_METHODS if m in present] + sorted(present - set(PEFT_REPORT_METHODS))
    colours = sns.color_palette("tab10") + [(0.0, 0.0, 0.0), (0.6, 0.6, 0.0), (0.0, 0.75, 0.75), (0.75, 0.0, 0.75)]
    return dict(zip(order, colours))


def epoch_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Per-epoch training loss, validation accuracy and epoch seconds of the reported seeds' runs at the chosen
    rates (the full training cap), from each record's history."""
    chosen = at_chosen_rates(runs)
    chosen = chosen[(chosen["seed"] != SELECTION_SEED) & (chosen["fraction"] == 1.0)]
    picked = runs[runs["run_id"].isin(chosen["run_id"])]
    return pd.DataFrame(
        [
            {
                "backbone": run["backbone"],
                "setting": run["setting"],
                "method": run["method"],
                "seed": run["seed"],
                **row,
            }
            for _, run in picked.iterrows()
            for row in run["record"]["history"]
        ]
    )


def plot_epochs(frame: pd.DataFrame):
    """Training loss and validation accuracy per epoch, one line per method (the mean over the reported seeds, with
    a 95% bootstrap confidence band), a column per backbone and setting."""
    if frame.empty:
        return None
    frame = frame.assign(panel=frame["backbone"] + ", " + frame["setting"])
    long = frame.melt(id_vars=["panel", "method", "epoch"], value_vars=["train_loss", "accuracy"], var_name="measure")
    grid = sns.relplot(
        data=long.dropna(),
        x="epoch",
        y="value",
        hue="method",
        col="panel",
        row="measure",
        kind="line",
        marker="o",
        errorbar=("ci", 95),
        seed=0,
        palette=(palette := method_palette(frame["method"])),
        hue_order=list(palette),
        facet_kws={"sharey": "row"},
        height=3,
        aspect=1.1,
    )
    grid.set_titles("{col_name}: {row_name}")
    grid.set(xticks=sorted(frame["epoch"].unique()))
    return grid


def plot_costs(table: pd.DataFrame):
    """Validation accuracy against trained parameters (log scale) and against training seconds."""
    if table.empty:
        return None
    table = table.assign(panel=table["backbone"] + ", " + table["setting"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    palette = method_palette(table["method"])
    sns.scatterplot(
        data=table,
        x="trainable",
        y="accuracy",
        hue="method",
        hue_order=list(palette),
        style="panel",
        palette=palette,
        s=70,
        ax=axes[0],
    )
    axes[0].set(xscale="log", xlabel="trained parameters, head included (log scale)", ylabel="validation accuracy (%)")
    sns.scatterplot(
        data=table,
        x="train_s",
        y="accuracy",
        hue="method",
        hue_order=list(palette),
        style="panel",
        palette=palette,
        s=70,
        ax=axes[1],
        legend=False,
    )
    axes[1].set(xlabel="training seconds, median over seeds (2 CPU cores)")
    handles, labels = axes[0].get_legend_handles_labels()
    axes[0].get_legend().remove()
    fig.tight_layout()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small", frameon=False)
    return fig


def updates(runs: pd.DataFrame) -> pd.Series:
    """Optimizer steps of each run: `max_steps` where set, else batches per epoch times epochs."""
    by_epochs = np.ceil(runs["train_examples"] / runs["config.batch_size"]) * runs["config.num_train_epochs"]
    return config_column(runs, "max_steps").fillna(by_epochs).astype(int)


def learning_curve(runs: pd.DataFrame) -> pd.DataFrame:
    """Validation accuracy against training examples (90%/10% setting) for the methods run at several fractions,
    per schedule: the same epochs at every size, or the same number of updates (`max_steps`) at every size. The
    full-cap run belongs to a fixed-updates schedule too when it made that many updates."""
    columns = ["backbone", "method", "schedule", "train_examples", "accuracy", "seeds"]
    chosen = at_chosen_rates(runs)
    chosen = chosen[chosen["setting"] == SELECTION_SETTING]
    chosen = chosen[chosen.groupby(["backbone", "method"])["fraction"].transform("nunique") > 1]
    if chosen.empty:
        return pd.DataFrame(columns=columns)
    chosen = chosen.assign(updates=updates(chosen))
    fixed_steps = config_column(chosen, "max_steps").notna()
    by_epochs = chosen[~fixed_steps]
    parts = [by_epochs.assign(schedule=[f"{e:g} epochs at every size" for e in by_epochs["config.num_train_epochs"]])]
    for steps in sorted(chosen.loc[fixed_steps, "updates"].unique()):
        same = chosen[(chosen["updates"] == steps) & (fixed_steps | (chosen["fraction"] == 1.0))]
        parts.append(same.assign(schedule=f"{steps} updates at every size"))
    curve = pd.concat(parts)
    return (
        curve.groupby(["backbone", "method", "schedule", "train_examples"])
        .agg(accuracy=("main_metric_value", "mean"), seeds=("seed", "nunique"))
        .reset_index()
    )


def plot_learning_curve(curve: pd.DataFrame):
    if curve.empty:
        return None
    grid = sns.relplot(
        data=curve,
        x="train_examples",
        y="accuracy",
        hue="method",
        col="schedule",
        kind="line",
        marker="o",
        errorbar=("ci", 95),
        seed=0,
        palette=method_palette(curve["method"]),
        height=3.6,
        aspect=1.1,
    )
    grid.set(xscale="log", xlabel="training reviews (log scale)", ylabel="validation accuracy (%)")
    grid.set_titles("{col_name}")
    for ax in grid.axes.flat:
        ax.axhline(50, color="0.6", lw=0.8, ls=":")  # chance: the re-split is balanced
    plt.tight_layout()
    return grid
