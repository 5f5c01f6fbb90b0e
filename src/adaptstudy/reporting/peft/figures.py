"""The IMDb chapter's figures: per-epoch loss and accuracy, and accuracy against costs.

Every function takes the runs of `load_runs`, labelled by `tables.label_runs` (or a table made from them).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from adaptstudy.reporting.common import reported
from adaptstudy.reporting.peft.published import PEFT_REPORT_METHODS
from adaptstudy.reporting.peft.tables import at_chosen_rates


def method_palette(methods) -> dict[str, tuple]:
    """One clearly distinct colour per method, the same in every figure: the report's five first."""
    present = set(methods)
    order = [m for m in PEFT_REPORT_METHODS if m in present] + sorted(present - set(PEFT_REPORT_METHODS))
    colours = sns.color_palette("tab10") + [(0.0, 0.0, 0.0), (0.6, 0.6, 0.0), (0.0, 0.75, 0.75), (0.75, 0.0, 0.75)]
    return dict(zip(order, colours))


def epoch_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Per-epoch training loss, validation accuracy and epoch seconds of the reported seeds' runs at the chosen
    rates (the full training cap), from each record's history."""
    chosen = reported(at_chosen_rates(runs))
    chosen = chosen[chosen["fraction"] == 1.0]
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
    for ax, x in zip(axes, ("trainable", "train_s")):
        sns.scatterplot(
            data=table,
            x=x,
            y="accuracy",
            hue="method",
            hue_order=list(palette),
            style="panel",
            palette=palette,
            s=70,
            ax=ax,
        )
    axes[0].set(xscale="log", xlabel="trained parameters, head included (log scale)", ylabel="validation accuracy (%)")
    axes[1].set(xlabel="training seconds, median over seeds (2 CPU cores)")
    axes[1].get_legend().remove()
    handles, labels = axes[0].get_legend_handles_labels()
    axes[0].get_legend().remove()
    fig.tight_layout()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small", frameon=False)
    return fig
