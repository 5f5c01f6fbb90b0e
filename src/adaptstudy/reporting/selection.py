"""What a chapter says beside its chosen settings: which choices sit on the edge of their grid, and in which
precision the choosing and the reported seeds trained."""

from __future__ import annotations

import pandas as pd

from adaptstudy.reporting.common import SELECTION_SEED
from adaptstudy.reporting.costs import machine_label


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
