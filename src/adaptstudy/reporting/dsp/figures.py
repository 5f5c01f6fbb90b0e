"""The Don't Stop Pretraining chapter's figure: the full model's score under each starting point, the matched
control beside DAPT, per task.

Takes the runs labelled by `tables.label_runs`.
"""

from __future__ import annotations

import pandas as pd
import seaborn as sns

from adaptstudy.reporting.dsp.tables import CONDITIONS


def condition_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """The full model's runs on the whole domain corpus, one row per run: task, condition, seed, score, constant."""
    full = runs[
        (runs["adaptation"] == "full model") & runs["condition"].notna() & (runs["corpus_fraction"].fillna(1.0) == 1.0)
    ]
    return full[["task", "condition", "seed", "score", "constant", "learned_nothing"]].reset_index(drop=True)


def plot_conditions(frame: pd.DataFrame):
    """Per task, the mean score of each condition with its 95% bootstrap interval over seeds and every seed as a
    dot; the dashed line is the constant prediction's score. The control is drawn beside DAPT."""
    if frame.empty:
        return None
    order = [c for c in CONDITIONS if c in set(frame["condition"])]
    grid = sns.catplot(
        data=frame,
        x="condition",
        y="score",
        col="task",
        col_wrap=min(4, frame["task"].nunique()),
        kind="point",
        order=order,
        errorbar=("ci", 95),
        seed=0,
        linestyle="none",
        color="black",
        sharey=False,
        height=3,
        aspect=1.2,
    )
    for task, ax in grid.axes_dict.items():
        here = frame[frame["task"] == task]
        sns.stripplot(
            data=here, x="condition", y="score", order=order, ax=ax, color="tab:blue", alpha=0.5, size=4, jitter=0.1
        )
        ax.axhline(here["constant"].iloc[0], color="grey", linestyle="--", linewidth=1)
        ax.tick_params(axis="x", rotation=45)
    grid.set_titles("{col_name}")
    grid.set_axis_labels("", "dev score (the paper's metric)")
    return grid
