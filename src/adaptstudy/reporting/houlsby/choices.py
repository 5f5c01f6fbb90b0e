"""What the Houlsby chapter's selection seed chose: per task and arm, the learning rate, the epochs, and the best
adapter size; and the runs that report at those choices.

The paper chose adapters' training length from {3, 20} epochs with the rate. In the extended selection (its budget: 12
CPU-hours for both stages on two cores; rule written 2026-12-04, before any 20-epoch run), the epochs are chosen for the
parity arms only: full fine-tuning (3 epochs, the paper's baseline recipe), size 64, and each task's best size (the
best of 8/64/256, each at its rate and epochs chosen over every run). Every other arm (the other sizes, top-k, layer
norm) chooses its rate among its 3-epoch runs, and the ablations run at size 64's 3-epoch choice
(`ablation_choices`): 20 epochs for every arm would cost nearly twice the budget (stage 2 about 17 hours).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from adaptstudy.claims.declarations import load_declaration
from adaptstudy.reporting.common import SELECTION_SEED, config_column
from adaptstudy.reporting.folding import short_number
from adaptstudy.reporting.resumed import as_resumed
from adaptstudy.reporting.selection import at_learning_rates, choose_learning_rates
from adaptstudy.runs.records import made_at

SIZES = (8, 64, 256)
SELECTED_LABELS = ["full", *(f"houlsby-{s}" for s in SIZES)]
SIZE_LABELS = [f"houlsby-{s}" for s in SIZES]
BASE_EPOCHS = 3  # what every arm tried; the only epochs outside the parity arms
KEYS = ["task", "label"]
EXTENDED = load_declaration(Path(__file__).with_name("claims.yaml")).budgets["extended selection"]  # declared
# Stage 2's cut (2026-12-04, before any stage-2 run of a moved choice): a choice the extended selection moved reports
# seeds 1-3, not Table 1's 1-5. Size 64 at 20 epochs on four tasks costs about 60 minutes a seed; at 5 seeds stage 2
# would pass the budget (about 12.3 h with the extensions and RTE's best size) before any other moved choice.
MOVED_SEEDS = [1, 2, 3]


RATE_STEPS = (1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)  # "one step": the next of these
RATE_LIMITS = {  # the rates an edge extension may reach, per method family, stated before it runs
    "full": (1e-6, 3e-4),  # above 3e-4 full fine-tuning of a BERT diverges in the field's experience
    "houlsby": (1e-5, 3e-2),
    "top_k": (1e-6, 3e-3),
    "layernorm": (1e-4, 1e-1),
}
EXTEND_ORDER = ("full", "houlsby-64", "houlsby-8", "houlsby-256", "top_k", "layernorm")  # parity arms first


def limits_hit(runs: pd.DataFrame) -> list[str]:
    """The parity arms' edge choices that a rate limit keeps from extending further ('cola full: 1e-6 (smallest
    tried, at the limit)'), in order."""
    return [
        f"{r.task} {r.label}: {short_number(r.learning_rate)} ({r.edge} tried, at the limit)"
        for r in _edges(runs, True)
    ]


def not_extended(runs: pd.DataFrame) -> list[str]:
    """The other arms' edge choices, which the extended selection's budget leaves unextended (it spends on the parity
    arms first): lower bounds of what a wider grid would choose."""
    return [f"{r.task} {r.label}: {short_number(r.learning_rate)} ({r.edge} tried)" for r in _edges(runs, False)]


def _edges(runs: pd.DataFrame, parity: bool) -> list:
    """The edge choices of the parity arms (at their limit) or of the other arms (any), in `EXTEND_ORDER`."""
    chosen = chosen_learning_rates(runs, labels=None)
    arms = parity_labels(runs)
    rows = sorted(chosen.itertuples(), key=lambda r: (order_of(r.label), r.task))
    if parity:
        return [r for r in rows if (r.task, r.label) in arms and r.edge and step_beyond(r) is None]
    return [r for r in rows if (r.task, r.label) not in arms and r.edge]


def order_of(label: str) -> int:
    """Where an arm comes in `EXTEND_ORDER` (the parity arms first)."""
    return next((i for i, prefix in enumerate(EXTEND_ORDER) if label.startswith(prefix)), len(EXTEND_ORDER))


def step_beyond(row) -> float | None:
    """The rate a step beyond an edge choice, or None (interior, or the next step passes the family's limit)."""
    if not row.edge:
        return None
    low, high = RATE_LIMITS[row.label.partition("-")[0]]
    at = min(range(len(RATE_STEPS)), key=lambda i: abs(RATE_STEPS[i] - row.learning_rate))
    nxt = at + (1 if row.edge == "largest" else -1)
    if not 0 <= nxt < len(RATE_STEPS) or not low <= RATE_STEPS[nxt] <= high:
        return None
    return RATE_STEPS[nxt]


def extended_selection_runs(runs: pd.DataFrame) -> pd.Series:
    """Per run, whether the extended selection paid for it (first made on the days its budget declares)."""
    if "finished_at" not in runs:
        return runs["seed"] < 0
    made = made_at(runs).astype(str)
    return (made >= str(EXTENDED.since)) & (made < str(EXTENDED.until))


def selection_grid(runs: pd.DataFrame, labels: list[str] | None = SELECTED_LABELS) -> pd.DataFrame:
    """The plain runs of the selection seed (those of `labels`; None: every label): the grid that chose. An arm's runs
    at more epochs than 3 enter once they cover every rate it tried at 3 (stage 1 runs over several sessions: a half
    run grid would choose from part of it)."""
    grid = runs[runs["plain"] & (runs["seed"] == SELECTION_SEED)]
    grid = grid if labels is None else grid[grid["label"].isin(labels)]
    return grid[_complete(grid)] if not grid.empty else grid


def _complete(grid: pd.DataFrame) -> list[bool]:
    """Per run: at 3 epochs, or its arm's runs at its epochs cover the rates the arm tried at 3."""
    epochs = config_column(grid, "num_train_epochs", BASE_EPOCHS).fillna(BASE_EPOCHS).astype(float)
    rates = grid["config.learning_rate"].astype(float).round(12)
    keys = list(zip(grid["task"], grid["label"], epochs))
    tried: dict[tuple, set[float]] = {}
    for key, rate in zip(keys, rates):
        tried.setdefault(key, set()).add(rate)
    return [e == BASE_EPOCHS or tried.get((t, a, float(BASE_EPOCHS)), set()) <= tried[(t, a, e)] for t, a, e in keys]


def best_sizes(runs: pd.DataFrame) -> dict[str, str]:
    """Per task, the adapter size (label) with the best selection score at its chosen rate and epochs (chosen over
    every run of the size): Table 1's "Adapters (8-256)" row, chosen as the learning rates are. An exact tie goes to
    the smallest size (`SIZE_TIE_RULE`), not to whichever record loaded first."""
    return {task: group.loc[group["choice score"].idxmax(), "label"] for task, group in _sizes(runs).groupby("task")}


def size_ties(runs: pd.DataFrame) -> dict[str, tuple[list[str], float]]:
    """The tasks whose best size the tie rule decided: the sizes that tied, and their selection score."""
    ties = {}
    for task, group in _sizes(runs).groupby("task"):
        best = group["choice score"].max()
        if (group["choice score"] == best).sum() > 1:
            ties[task] = (list(group.loc[group["choice score"] == best, "label"]), float(best))
    return ties


def size_tie_note(runs: pd.DataFrame) -> str:
    """The tasks whose best size the tie rule decided, with the sizes that tied, as a sentence ('' where none)."""
    tied = [f"{task} ({', '.join(labels)} at {score:.1f})" for task, (labels, score) in size_ties(runs).items()]
    return f" The size tie rule decided {'; '.join(tied)}." if tied else ""


def _sizes(runs: pd.DataFrame) -> pd.DataFrame:
    """Each size's choice per task, smallest size first."""
    chosen = choose_learning_rates(selection_grid(runs, SIZE_LABELS), KEYS)
    return chosen.assign(_size=chosen["label"].map(SIZE_LABELS.index)).sort_values(["task", "_size"], kind="stable")


SIZE_TIE_RULE = (
    "an exact tie on the selection split goes to the smallest size: it trains the fewest parameters, the paper's aim"
)


def parity_labels(runs: pd.DataFrame) -> set[tuple[str, str]]:
    """The (task, label) arms that choose their epochs: full, size 64 and the task's best size."""
    tasks = selection_grid(runs, None)["task"].unique()
    best = best_sizes(runs)
    return {(t, label) for t in tasks for label in ("full", "houlsby-64", best.get(t))}


def chosen_learning_rates(runs: pd.DataFrame, labels: list[str] | None = SELECTED_LABELS) -> pd.DataFrame:
    """Per (task, label) of full fine-tuning and each Table 1 adapter size (`labels`; None: every label the
    selection seed ran, the trade-off's top-k and layer norm too): the rate (and epochs) with the best choice score,
    over every run for the parity arms and over the 3-epoch runs for the others (the module's rule)."""
    grid = selection_grid(runs, labels)
    arms = list(zip(grid["task"], grid["label"]))
    parity = parity_labels(runs)
    epochs = config_column(grid, "num_train_epochs", np.nan).astype(float)
    in_parity = np.array([arm in parity for arm in arms], dtype=bool)
    chosen = choose_learning_rates(grid[in_parity | np.isclose(epochs, BASE_EPOCHS)], KEYS)
    several = {arm for arm, n in epochs.groupby([grid["task"], grid["label"]]).nunique().items() if n > 1}
    pinned = [arm in several for arm in zip(chosen["task"], chosen["label"])]
    chosen.loc[pinned, "epochs chosen"] = True  # a 3-epoch choice where 20 were tried too: report its 3-epoch runs
    order = {label: i for i, label in enumerate(SELECTED_LABELS)}
    return chosen.sort_values(
        KEYS, key=lambda c: c.map(order).fillna(len(order)) if c.name == "label" else c, ignore_index=True
    )


def moved_choices(runs: pd.DataFrame) -> set[tuple[str, str]]:
    """The (task, label) arms whose chosen setting an extended-selection run found (20 epochs, or a rate an edge
    extension added): stage 2 reruns them, at `MOVED_SEEDS`; the arms whose choice stands keep their records."""
    chosen = at_learning_rates(selection_grid(runs, None), chosen_learning_rates(runs, None), KEYS)
    epochs = config_column(chosen, "num_train_epochs", BASE_EPOCHS).fillna(BASE_EPOCHS).astype(float)
    longer = ~np.isclose(epochs, BASE_EPOCHS)
    moved = chosen[extended_selection_runs(chosen) | longer]
    return set(zip(moved["task"], moved["label"]))


def ablation_choices(runs: pd.DataFrame) -> pd.DataFrame:
    """Size 64's choice among its 3-epoch runs, per task: the rate the ablations (init scale, variants) train at."""
    grid = selection_grid(runs, ["houlsby-64"])
    epochs = config_column(grid, "num_train_epochs", np.nan).astype(float)
    return choose_learning_rates(grid[np.isclose(epochs, BASE_EPOCHS)], KEYS).assign(**{"epochs chosen": True})


def at_ablation_rates(runs: pd.DataFrame) -> pd.DataFrame:
    """The size-64 runs, plain or not (init scale, variants), at the ablations' rate and 3 epochs, every seed."""
    return at_learning_rates(runs, ablation_choices(runs), KEYS)


def at_chosen_rates(runs: pd.DataFrame, labels: list[str] | None = SELECTED_LABELS) -> pd.DataFrame:
    """The plain runs made at the learning rate (and epochs) chosen for their task and label, every seed."""
    return at_learning_rates(runs.loc[runs["plain"]], chosen_learning_rates(runs, labels), KEYS)


def reported_at_chosen_rates(runs: pd.DataFrame, labels: list[str] | None = SELECTED_LABELS) -> pd.DataFrame:
    """The runs the tables report: at the chosen rates, of every seed but the one that chose."""
    chosen = at_chosen_rates(runs, labels)
    return chosen[chosen["seed"] != SELECTION_SEED]


def choices_the_reruns_moved(runs: pd.DataFrame) -> pd.DataFrame:
    """The (task, label) arms whose choice differs between the stage-1 records as they stood (runs resumed out of
    order in their place) and as uninterrupted reruns corrected them: the choice each way, with the grid it chose
    from."""
    now, before = (chosen_learning_rates(r, None).set_index(KEYS) for r in (runs, as_resumed(runs)))

    def setting(chosen: pd.DataFrame) -> pd.Series:
        return chosen["learning_rate"].map("{:g}".format) + " × " + chosen["epochs"].map("{:g}".format) + " ep"

    moved = (setting(before) != setting(now)).reindex(now.index, fill_value=False)
    return pd.DataFrame(
        {
            "on the resumed runs": setting(before)[moved],
            "grid then": before["grid"][moved],
            "on the uninterrupted reruns": setting(now)[moved],
            "grid now": now["grid"][moved],
        }
    ).reset_index()
