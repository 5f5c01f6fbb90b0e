"""Where AdapterFusion puts its weight (the paper's Figure 4 and §6): the mean last-layer attention of each target on
each source adapter, averaged over the reported seeds, and the two claims read from it (their declarations, every
earlier wording with them, are in claims.yaml): a target that gains nothing from fusion in the paper's Table 1 weighs
its own adapter most, and targets that gain weigh it less than one that does not."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from adaptstudy.claims.evidence import Arm, Unit, contrast
from adaptstudy.claims.verdicts import Verdict, out_of_order, verdict_of
from adaptstudy.reporting.across.fusion.claims import DECLARED

FUSED = "fusion-st-a"  # the column whose attention the figure shows (the N = 1 control's is trivially 1)
RELATED = {  # fixed before the runs: each target's nearest sources in kind (the paper's MNLI and SICK are not offline)
    "rte": ("cb", "wnli"),  # entailment
    "mrpc": ("stsb",),  # paraphrase and similarity
    "sst2": ("imdb",),  # sentiment
    "imdb": ("sst2",),
    "cb": ("rte", "wnli"),
}


def fusion_attention(runs: pd.DataFrame) -> pd.DataFrame:
    """Rows target tasks, columns source adapters: the mean softmax weight in the last layer over the dev set,
    averaged over the table's runs (the reported seeds)."""
    rows = {}
    for task in RELATED:
        mine = runs[(runs["task"] == task) & (runs["label"] == FUSED) & runs["target_cell"]]
        weights = [r["fusion_attention"] for r in mine["record"] if r.get("fusion_attention")]
        if weights:
            rows[task] = pd.DataFrame(weights).mean()
    return pd.DataFrame(rows).T


def plot_fusion_attention(matrix: pd.DataFrame):
    if matrix.empty:
        return None
    fig, ax = plt.subplots(figsize=(1 + 0.6 * matrix.shape[1], 1 + 0.5 * matrix.shape[0]))
    sns.heatmap(matrix, annot=True, fmt=".2f", cmap="viridis", ax=ax, cbar_kws={"label": "mean attention"})
    ax.set(xlabel="source adapter", ylabel="target task")
    plt.tight_layout()
    return ax


FUSION_OWN = DECLARED["attends-own"]
FUSION_RELATED = DECLARED["attends-related"]


def _fused(scores: list[float], at_chance: int, runs: pd.DataFrame, aside: str) -> Arm:
    return Arm(
        scores,
        at_chance,
        run_ids=tuple(runs["run_id"]),
        name=FUSED,
        set_aside=aside,
        out_of_order=out_of_order(list(runs["record"])),
    )


def _unit(task: str, runs: pd.DataFrame, sources: tuple[str, ...], aside: str) -> Unit | None:
    """The target's weight on `sources` (their mean, in points, per run) against an even share; None where no run
    fused any of them."""
    weights = [r["fusion_attention"] for r in runs["record"]]
    shares = [[w[s] for s in sources if s in w] for w in weights]
    if not weights or not all(shares):
        return None
    scores = [100 * np.mean(s) for s in shares]
    even = 100 * np.mean([1 / len(w) for w in weights])
    at_chance = int(runs["learned_nothing"].sum())
    return contrast(task, _fused(scores, at_chance, runs, aside), even)


def _own_against_others(task: str, runs: pd.DataFrame, aside: str) -> Unit | None:
    """The target's weight on its own adapter − on the most weighted other adapter (points, per run): above 0 where
    it weighs its own most; None where no run recorded its attention."""
    weights = [r["fusion_attention"] for r in runs["record"]]
    if not weights or not all(task in w and len(w) > 1 for w in weights):
        return None
    scores = [100 * (w[task] - max(v for s, v in w.items() if s != task)) for w in weights]
    at_chance = int(runs["learned_nothing"].sum())
    return contrast(task, _fused(scores, at_chance, runs, aside), 0.0)


def _own_weight(task: str, runs: pd.DataFrame, aside: str) -> Unit | None:
    """The target's weight on its own adapter (points, per run), for a comparison between groups of targets."""
    weights = [r["fusion_attention"] for r in runs["record"]]
    if not weights or not all(task in w for w in weights):
        return None
    scores = [100 * w[task] for w in weights]
    at_chance = int(runs["learned_nothing"].sum())
    return contrast(task, _fused(scores, at_chance, runs, aside), 0.0)


OWN_AGAINST_LARGEST = (
    "own − largest other"  # the comparisons of the restated claims (2026-12-03); '' keeps the earlier ones
)
OWN_WEIGHT = "own weight"


def attention_verdicts(cells: pd.DataFrame, aside: dict[str, str]) -> list[Verdict]:
    """The two attention claims on the table's Fusion w/ ST-A cells, under their declarations. Each effect the
    declarations have named is built (the earlier designs' against an even share too, for their ledger's verdicts)."""
    built: dict[str, dict[str, list[Unit]]] = {"own": {}, "related": {}}
    for task, sources in RELATED.items():
        mine = cells[(cells["task"] == task) & (cells["label"] == FUSED)]
        mine = mine.loc[[bool(r.get("fusion_attention")) for r in mine["record"]]]
        why = aside.get(task, "")
        for claim, name, unit in (
            ("own", "", _unit(task, mine, (task,), why)),
            ("own", OWN_AGAINST_LARGEST, _own_against_others(task, mine, why)),
            ("related", "", _unit(task, mine, sources, why)),
            ("related", OWN_WEIGHT, _own_weight(task, mine, why)),
        ):
            if unit is None and why:  # set aside on stage 1's evidence whether or not its fusion ran
                unit = contrast(task, Arm([], 0, name=FUSED, set_aside=why), 0.0)
            if unit is not None:
                built[claim].setdefault(name, []).append(unit)
    return [verdict_of(FUSION_OWN, built["own"]), verdict_of(FUSION_RELATED, built["related"])]
