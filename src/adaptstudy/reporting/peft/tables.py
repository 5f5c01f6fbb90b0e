"""The IMDb chapter's runs and tables: the learning rates chosen, every method's accuracy and costs, the report's
table with ours beside it.

A run's *setting* is its train/validation re-split of IMDb's labelled reviews (the report's 90%/10% and 30%/70%).
Learning rates are chosen per backbone and method on the selection seed in the 90%/10% setting at the full
training cap, then used everywhere else. Every function takes the runs of `load_runs`, labelled by `label_runs`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from adaptstudy.claims.baselines import FLAG_NOTE, flag_runs, flagged
from adaptstudy.reporting.common import SELECTION_SEED, config_column, format_mean_sd, reported
from adaptstudy.reporting.peft.published import (
    PEFT_REPORT,
    PEFT_REPORT_EPOCH_S,
    PEFT_REPORT_METHODS,
    PEFT_REPORT_PARAMS,
    PEFT_REPORT_SETTINGS,
    PEFT_REPORT_STAND_INS,
)
from adaptstudy.reporting.published import published_frame
from adaptstudy.reporting.selection import at_learning_rates, choose_learning_rates, chosen_on, grid_edge_note

SELECTION_SETTING = PEFT_REPORT_SETTINGS[0.9]
CHOOSING_BACKBONE = "minilm-l6"  # the backbone stage 1 chooses rates on; the others run at its rates
KEYS = ["backbone", "method"]
RUN_COLUMNS = [
    "run_id",
    "backbone",
    "method",
    "seed",
    "main_metric",
    "main_metric_value",
    "trainable_params",
    "backbone_params",
    "train_runtime_s",
    "peak_rss_mb",
    "train_examples",
    "config.learning_rate",
    "config.resplit_train_share",
    "config.train_fraction",
    "record",
]
LABELS = ["setting", "fraction", "trained_pct", "epoch_s", "early_accuracy"]
EARLY_EPOCHS = 3  # convergence compares the mean accuracy after epochs 1-3 with the last epoch's


def label_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Adds `setting` (90%/10% or 30%/70%), `fraction` (share of the training cap), `trained_pct`, and from each
    record's history `epoch_s` (mean training seconds per epoch) and `early_accuracy` (the mean of the main metric
    after the first `EARLY_EPOCHS` epochs)."""
    if runs.empty:
        return pd.DataFrame(columns=[*RUN_COLUMNS, *LABELS]).astype({"epoch_s": float, "early_accuracy": float})
    setting = [
        PEFT_REPORT_SETTINGS.get(round(s, 2), f"{s:.0%} train") if pd.notna(s) else "mirror split"
        for s in config_column(runs, "resplit_train_share")
    ]
    histories = [r.get("history") or [] for r in runs["record"]]
    epoch_s = [
        np.mean([h["train_epoch_s"] for h in history if "train_epoch_s" in h] or [np.nan]) for history in histories
    ]
    early = [
        np.mean([e.get(metric, np.nan) for e in h[:EARLY_EPOCHS]]) if h else np.nan
        for h, metric in zip(histories, runs["main_metric"])
    ]
    return runs.assign(
        setting=setting,
        fraction=config_column(runs, "train_fraction", 1.0),
        trained_pct=100 * runs["trainable_params"] / runs["backbone_params"],
        epoch_s=pd.Series(epoch_s, index=runs.index, dtype=float),
        early_accuracy=pd.Series(early, index=runs.index, dtype=float),
    )


def selection_note(runs: pd.DataFrame) -> str:
    """Which split and seed chose the learning rates, and which report."""
    return (
        f"Chosen with seed {SELECTION_SEED} on {chosen_on(selection_grid(runs))}. Tables and verdicts "
        "report the validation split, on the other seeds alone."
    )


def selection_grid(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs learning rates are chosen among: the selection seed, 90%/10%, the full training cap."""
    return runs[(runs["seed"] == SELECTION_SEED) & (runs["setting"] == SELECTION_SETTING) & (runs["fraction"] == 1.0)]


def chosen_learning_rates(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (backbone, method): the rate with the best validation accuracy on the selection grid."""
    return choose_learning_rates(selection_grid(runs), KEYS)


def rate_edge_note(runs: pd.DataFrame) -> str:
    """Which methods chose the larger or the smaller of the rates they tried: an optimum may lie beyond the grid."""
    return grid_edge_note(chosen_learning_rates(runs), lambda row: row.method)


def at_chosen_rates(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs made at the rate chosen for their backbone and method; a backbone the selection seed did not run
    (minilm-l3) at the rates chosen on `CHOOSING_BACKBONE`, as stage 2 ran it."""
    chosen = chosen_learning_rates(runs)
    choosing = chosen[chosen["backbone"] == CHOOSING_BACKBONE]
    borrowed = [choosing.assign(backbone=b) for b in sorted(set(runs["backbone"]) - set(chosen["backbone"]))]
    return at_learning_rates(runs, pd.concat([chosen, *borrowed], ignore_index=True), KEYS)


# method_table's columns as the book heads them: words that wrap, so its fifteen columns fit the page at 1,400 px
METHOD_HEADINGS = {
    "trained_pct": "trained %",
    "train_s": "train s",
    "epoch_s": "epoch s",
    "peak_mb": "peak MB",
    "train_examples": "train examples",
    "learning_rate": "learning rate",
    "learned_nothing": "learned nothing",
}


def method_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Every method at its chosen rate, per backbone and setting (full training cap), over the reported seeds (the
    seed that chose the rate never reports): accuracy and costs. Seconds are the median over seeds: a run slowed by
    other work sharing the machine does not move it."""
    chosen = at_chosen_rates(runs)
    chosen = flag_runs(reported(chosen[chosen["fraction"] == 1.0]))
    if chosen.empty:
        return pd.DataFrame(
            columns=[
                "backbone",
                "setting",
                "method",
                "accuracy",
                "sd",
                "seeds",
                "trainable",
                "trained_pct",
                "train_s",
                "epoch_s",
                "peak_mb",
                "train_examples",
                "learning_rate",
                "learned_nothing",
                "constant",
            ]
        )
    table = chosen.groupby(["backbone", "setting", "method"]).agg(
        accuracy=("main_metric_value", "mean"),
        sd=("main_metric_value", "std"),
        seeds=("seed", "nunique"),
        trainable=("trainable_params", "first"),
        trained_pct=("trained_pct", "first"),
        train_s=("train_runtime_s", "median"),
        epoch_s=("epoch_s", "median"),
        peak_mb=("peak_rss_mb", "max"),
        train_examples=("train_examples", "first"),
        learning_rate=("config.learning_rate", "first"),
        learned_nothing=("learned_nothing", "sum"),
        constant=("constant", "first"),
    )
    return table.reset_index().sort_values(
        ["backbone", "setting", "accuracy"], ascending=[True, True, False], ignore_index=True
    )


def collapsed_note(runs: pd.DataFrame) -> str:
    """Per method, the reported runs at its chosen rate that learned nothing, named by backbone, setting and seed:
    the cells they fall in carry no verdict."""
    chosen = at_chosen_rates(runs)
    chosen = flag_runs(reported(chosen[chosen["fraction"] == 1.0]))
    parts = []
    for method, group in chosen.groupby("method"):
        failed = group[group["learned_nothing"]]
        if failed.empty:
            continue
        where = "; ".join(
            f"{backbone} {setting}: seed{'s' if len(cell) > 1 else ''} {', '.join(map(str, sorted(cell['seed'])))}"
            for (backbone, setting), cell in failed.groupby(["backbone", "setting"])
        )
        parts.append(f"{method}: {len(failed)} of its {len(group)} reported runs ({where})")
    if not parts:
        return "Every reported run learned something (above the constant prediction by more than noise)."
    return "Reported runs that learned nothing (a constant prediction, within noise): " + "; ".join(parts) + "."


def report_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The report's table (final validation accuracy, its five methods) with ours beside it."""
    ours = method_table(runs)
    rows = []
    for backbone, stand_in in sorted(PEFT_REPORT_STAND_INS.items(), key=lambda kv: kv[1]):
        for setting in PEFT_REPORT_SETTINGS.values():
            published = published_frame(PEFT_REPORT)
            published = published[(published["backbone"] == stand_in) & published["split"].str.contains(setting)]
            rows.append(
                {
                    "source": f"published ({stand_in})",
                    "setting": setting,
                    **dict(zip(published["method"], (f"{v:.0f}" for v in published["value"]))),
                }
            )
            mine = ours[(ours["backbone"] == backbone) & (ours["setting"] == setting)].set_index("method")
            rows.append(
                {
                    "source": f"ours ({backbone})",
                    "setting": setting,
                    **{m: _accuracy_cell(mine, m) for m in PEFT_REPORT_METHODS},
                    "constant": f"{mine['constant'].iloc[0]:.1f}" if not mine.empty else "–",
                }
            )
    return pd.DataFrame(rows, columns=["source", "setting", *PEFT_REPORT_METHODS, "constant"]).fillna("–")


def _accuracy_cell(table: pd.DataFrame, method: str) -> str:
    """A method's mean ± sd (seeds) from `method_table` rows indexed by method; '–' where it did not run."""
    if method not in table.index:
        return "–"
    row = table.loc[method]
    return flagged(format_mean_sd(row["accuracy"], row["sd"], row["seeds"]), int(row["learned_nothing"]))


def report_costs() -> pd.DataFrame:
    """The report's trainable parameters and GPU epoch seconds, for the cost columns of the side-by-side."""
    return pd.DataFrame(
        [
            {"backbone": b, "method": m, "trainable (report)": PEFT_REPORT_PARAMS[b].get(m), "epoch s, GPU (report)": s}
            for b, seconds in PEFT_REPORT_EPOCH_S.items()
            for m, s in seconds.items()
        ]
    )


TABLE_NOTE = f"*Constant*: predicting the majority class of the validation split. {FLAG_NOTE}"
