"""Choosing on the selection split, and what a chapter says beside its choices: the rate (and epochs) each group of
runs chose, which choices sit on the edge of their grid, and in which precision the choosing and the reported seeds
trained."""

from __future__ import annotations

import numpy as np
import pandas as pd

from adaptstudy.reporting.common import SELECTION_SEED, config_column
from adaptstudy.reporting.costs import machine_label
from adaptstudy.reporting.folding import short_number


def grid_edge_note(chosen: pd.DataFrame, name, listed: int = 8) -> str:
    """One sentence on the choices of `chosen` (from `choose_learning_rates`) that fell on the edge of their grid,
    each named by `name(row)`; counted rather than named where more than `listed` did."""
    sides = {side: [name(row) for row in chosen.itertuples() if row.edge == side] for side in ("largest", "smallest")}
    edges = sum(len(names) for names in sides.values())
    if not edges:
        return ""
    if edges <= listed:
        won = "; ".join(f"the {side} rate tried won for {', '.join(names)}" for side, names in sides.items() if names)
    else:
        won = (
            f"{edges} of {len(chosen)} choices fell on the edge of their grid (the column *edge*: "
            f"{len(sides['largest'])} on the largest rate tried, {len(sides['smallest'])} on the smallest)"
        )
    return (
        f"With only a few rates per setting, {won}: their best rate may lie beyond the grid, so their scores are "
        "lower bounds of what tuning would give."
    )


def machine_kind(runs: pd.DataFrame) -> pd.Series:
    """Per run, the precision it trained in and the CPU kernels torch picked: 'bf16 on AVX512', 'fp32 on AVX2'."""
    return runs["record"].map(machine_label)


def precision_by(runs: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """How many runs of each group (e.g. task and condition) trained in each precision and machine kind: where a
    chapter's sessions landed on both kinds, a comparison may straddle them, and the reader sees which does."""
    if runs.empty:
        return pd.DataFrame(columns=columns)
    return pd.crosstab([runs[c] for c in columns], machine_kind(runs)).reset_index().rename_axis(columns=None)


def arm_precisions(runs: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """`precision_by` over the reported runs (the seed that chose never reports): the precision every arm's
    verdict-bearing runs trained in, which each chapter states (a verdict whose runs mix precisions says so too)."""
    return precision_by(runs[runs["seed"] != SELECTION_SEED], columns)


def precision_by_stage(runs: pd.DataFrame) -> str:
    """One sentence: the precision and CPU kernels the choosing seed's runs and the reported seeds' runs trained
    in. Sessions land on machines with and without bf16, so a rate may be chosen in one precision and reported in
    another; the reader sees where."""

    def kinds(part: pd.DataFrame) -> str:
        return ", ".join(f"{n} in {k}" for k, n in machine_kind(part).value_counts().items()) or "none yet"

    choosing = runs["seed"] == SELECTION_SEED
    return (
        f"Runs of the choosing seed {SELECTION_SEED}: {kinds(runs[choosing])}. Runs of the reported seeds: "
        f"{kinds(runs[~choosing])}."
    )


def choice_score(grid: pd.DataFrame) -> str:
    """The column settings are chosen on: the selection split's main metric where every run of the grid scored
    one (`selection_split`), else the reported split's (runs made before the protocol; the chapter says so)."""
    column = "selection_metric_value"
    return column if column in grid and not grid.empty and grid[column].notna().all() else "main_metric_value"


def chosen_on(grid: pd.DataFrame) -> str:
    """Which split chose, in the words a chapter prints beside its choices."""
    if choice_score(grid) == "selection_metric_value":
        return "the selection split carved from training (10%, at most 1,000 examples)"
    return "the reported split itself (these runs predate the selection split): the choosing seed never reports"


RATE_TIE_RULE = "an exact tie goes to the larger rate (it goes further in the same updates), then to fewer epochs"


def choose_learning_rates(grid: pd.DataFrame, keys: list[str], score: str | None = None) -> pd.DataFrame:
    """Per group of `keys`: the learning rate (and, where the group tried several, the number of epochs: the paper
    chose both) with the best `score` (default `choice_score`) among `grid` (runs of the selection seed), with every
    setting tried and its score, so a chapter can show the choice, and whether the rate sits at an edge of the rates
    tried at the chosen epochs. An exact tie goes to the larger rate, then to fewer epochs (`RATE_TIE_RULE`), not
    to whichever record loaded first."""
    score = score or choice_score(grid)
    columns = [*keys, "learning_rate", "epochs", "epochs chosen", "grid", "choice score", "edge"]
    if grid.empty:
        return pd.DataFrame(columns=columns)
    grid = grid.assign(_epochs=config_column(grid, "num_train_epochs", np.nan).astype(float))
    rows = []
    for values, group in grid.groupby(keys, sort=False):
        ordered = group.sort_values(["config.learning_rate", "_epochs"], ascending=[False, True], kind="stable")
        best = ordered.loc[ordered[score].idxmax()]
        several = group["_epochs"].nunique() > 1
        tried = sorted(zip(group["config.learning_rate"], group["_epochs"], group[score]))
        rates = ", ".join(f"{short_number(lr)}{f' × {ep:g} ep' if several else ''}: {v:.1f}" for lr, ep, v in tried)
        same_epochs = group[group["_epochs"] == best["_epochs"]] if several else group
        rows.append(
            {
                **dict(zip(keys, values)),
                "learning_rate": best["config.learning_rate"],
                "epochs": best["_epochs"],
                "epochs chosen": several,
                "grid": rates,
                "choice score": best[score],
                "edge": grid_edge(best["config.learning_rate"], same_epochs["config.learning_rate"]),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def grid_edge(rate: float, tried: pd.Series) -> str:
    """'largest' or 'smallest' where `rate` is an end of the two or more rates `tried`, else '': a choice at the
    edge of its grid may have its optimum beyond it."""
    if tried.nunique() < 2:
        return ""
    if np.isclose(rate, tried.max()):
        return "largest"
    return "smallest" if np.isclose(rate, tried.min()) else ""


def at_learning_rates(runs: pd.DataFrame, chosen: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The runs made at the rate (and epochs, where chosen) chosen for their group of `keys` (groups without a
    choice are dropped)."""
    chosen = (
        chosen.assign(_chosen_epochs=chosen["epochs"].where(chosen["epochs chosen"])) if "epochs" in chosen else chosen
    )
    merged = runs.merge(
        chosen[[*keys, "learning_rate", *(["_chosen_epochs"] if "_chosen_epochs" in chosen else [])]], on=keys
    )
    keep = np.isclose(merged["config.learning_rate"].astype(float), merged["learning_rate"].astype(float))
    if "_chosen_epochs" in merged:
        epochs = config_column(merged, "num_train_epochs", np.nan).astype(float)
        wanted = merged["_chosen_epochs"].astype(float)
        keep &= wanted.isna() | np.isclose(epochs, wanted)
    return merged[keep].drop(columns=["_chosen_epochs"], errors="ignore")


CHOOSING = (choose_learning_rates, at_learning_rates)  # the rate (and epoch) rule and its tie rule: a protocol part
