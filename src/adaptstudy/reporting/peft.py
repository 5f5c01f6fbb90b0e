"""The IMDb chapter: which parameter-efficient method, by accuracy, runtime, memory, parameters and data.

Records of study `peft_imdb`. A run's *setting* is its train/validation re-split of IMDb's labelled
reviews (the report's 90%/10% and 30%/70%). Learning rates are chosen per backbone and method on
seed 0 in the 90%/10% setting at the full training cap, then used everywhere else.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from adaptstudy.reporting.common import at_learning_rates, choose_learning_rates, verdict
from adaptstudy.reporting.published import (
    PEFT_REPORT,
    PEFT_REPORT_EPOCH_S,
    PEFT_REPORT_METHODS,
    PEFT_REPORT_PARAMS,
    PEFT_REPORT_SETTINGS,
    PEFT_REPORT_STAND_INS,
    published_frame,
)
from adaptstudy.runs.records import read_records, records_frame

SELECTION_SEED = 0
SELECTION_SETTING = PEFT_REPORT_SETTINGS[0.9]
KEYS = ["backbone", "method"]
CHEAP_SHARE = 5.0  # % of the backbone trained: below this a method counts as cheap
SLOWER_BY = (
    1.0  # points: encoder-only converges slower if it trails full by this much more after epoch 1 than at the end
)


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
]


def label_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Adds `setting` (90%/10% or 30%/70%), `fraction` (share of the training cap) and `trained_pct`."""
    if runs.empty:
        return pd.DataFrame(columns=[*RUN_COLUMNS, "setting", "fraction", "trained_pct"])
    share = (
        runs["config.resplit_train_share"]
        if "config.resplit_train_share" in runs
        else pd.Series(np.nan, index=runs.index)
    )
    setting = [
        PEFT_REPORT_SETTINGS.get(round(s, 2), f"{s:.0%} train") if pd.notna(s) else "mirror split" for s in share
    ]
    fraction = runs["config.train_fraction"] if "config.train_fraction" in runs else 1.0
    return runs.assign(
        setting=setting, fraction=fraction, trained_pct=100 * runs["trainable_params"] / runs["backbone_params"]
    )


def chosen_learning_rates(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (backbone, method): the seed-0 rate with the best validation accuracy (90%/10%, full cap)."""
    grid = runs[(runs["seed"] == SELECTION_SEED) & (runs["setting"] == SELECTION_SETTING) & (runs["fraction"] == 1.0)]
    return choose_learning_rates(grid, KEYS)


def rate_edge_note(runs: pd.DataFrame) -> str:
    """Which methods chose the larger or the smaller of the rates they tried: an optimum may lie beyond the grid."""
    grid = runs[(runs["seed"] == SELECTION_SEED) & (runs["setting"] == SELECTION_SETTING) & (runs["fraction"] == 1.0)]
    chosen = chosen_learning_rates(runs)
    sides: dict[str, list[str]] = {"largest": [], "smallest": []}
    for row in chosen.itertuples():
        tried = grid[(grid["backbone"] == row.backbone) & (grid["method"] == row.method)]["config.learning_rate"]
        if tried.nunique() > 1:
            side = (
                "largest"
                if np.isclose(row.learning_rate, tried.max())
                else "smallest"
                if np.isclose(row.learning_rate, tried.min())
                else None
            )
            if side:
                sides[side].append(row.method)
    if not any(sides.values()):
        return ""
    parts = [f"the {side} rate tried won for {', '.join(methods)}" for side, methods in sides.items() if methods]
    return (
        "With only a few rates per method, " + "; ".join(parts) + ": their best rate may lie beyond the grid, so "
        "their scores are lower bounds of what tuning would give."
    )


def at_chosen_rates(runs: pd.DataFrame) -> pd.DataFrame:
    return at_learning_rates(runs, chosen_learning_rates(runs), KEYS)


def method_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Every method at its chosen rate, per backbone and setting (full training cap): accuracy and costs. Seconds
    are the median over seeds: a run slowed by other work sharing the machine does not move it."""
    chosen = at_chosen_rates(runs)
    chosen = chosen[chosen["fraction"] == 1.0]
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
    )
    return table.reset_index().sort_values(
        ["backbone", "setting", "accuracy"], ascending=[True, True, False], ignore_index=True
    )


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
                    **{m: _mean_sd(mine.loc[m]) if m in mine.index else "–" for m in PEFT_REPORT_METHODS},
                }
            )
    return pd.DataFrame(rows, columns=["source", "setting", *PEFT_REPORT_METHODS])


def _mean_sd(row) -> str:
    sd = 0.0 if pd.isna(row["sd"]) else row["sd"]
    return f"{row['accuracy']:.1f} ± {sd:.1f} ({row['seeds']})"


def report_costs() -> pd.DataFrame:
    """The report's trainable parameters and GPU epoch seconds, for the cost columns of the side-by-side."""
    return pd.DataFrame(
        [
            {"backbone": b, "method": m, "trainable (report)": PEFT_REPORT_PARAMS[b].get(m), "epoch s, GPU (report)": s}
            for b, seconds in PEFT_REPORT_EPOCH_S.items()
            for m, s in seconds.items()
        ]
    )


def epoch_frame(records: list[dict], runs: pd.DataFrame) -> pd.DataFrame:
    """Per-epoch training loss, validation accuracy and epoch seconds of the seed-0 runs at the chosen rates."""
    chosen = at_chosen_rates(runs)
    chosen = chosen[(chosen["seed"] == SELECTION_SEED) & (chosen["fraction"] == 1.0)].set_index("run_id")
    rows = []
    for record in records:
        if record["run_id"] in chosen.index:
            r = chosen.loc[record["run_id"]]
            rows += [
                {"backbone": r["backbone"], "setting": r["setting"], "method": r["method"], **row}
                for row in record["history"]
            ]
    return pd.DataFrame(rows)


def with_epoch_seconds(runs: pd.DataFrame, records: list[dict]) -> pd.DataFrame:
    """Adds `epoch_s`: mean training seconds per epoch, from each record's history."""
    seconds = {
        r["run_id"]: np.mean([h["train_epoch_s"] for h in r["history"] if "train_epoch_s" in h] or [np.nan])
        for r in records
    }
    return runs.assign(epoch_s=runs["run_id"].map(seconds).astype(float))


def method_palette(methods) -> dict[str, tuple]:
    """One clearly distinct colour per method, the same in every figure: the report's five first."""
    present = set(methods)
    order = [m for m in PEFT_REPORT_METHODS if m in present] + sorted(present - set(PEFT_REPORT_METHODS))
    colours = sns.color_palette("tab10") + [(0.0, 0.0, 0.0), (0.6, 0.6, 0.0), (0.0, 0.75, 0.75), (0.75, 0.0, 0.75)]
    return dict(zip(order, colours))


def plot_epochs(frame: pd.DataFrame):
    """Training loss and validation accuracy per epoch, one line per method, a column per backbone and setting."""
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
    steps = runs["config.max_steps"] if "config.max_steps" in runs else pd.Series(np.nan, index=runs.index)
    by_epochs = np.ceil(runs["train_examples"] / runs["config.batch_size"]) * runs["config.num_train_epochs"]
    return steps.fillna(by_epochs).astype(int)


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
    fixed_steps = (
        chosen["config.max_steps"].notna() if "config.max_steps" in chosen else pd.Series(False, index=chosen.index)
    )
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


def claims(runs: pd.DataFrame) -> pd.DataFrame:
    """A verdict per conclusion of the report, with the figures it rests on."""
    table = method_table(runs)
    out = []
    five = table[table["method"].isin(PEFT_REPORT_METHODS)]
    panels = list(five.groupby(["backbone", "setting"]))

    # 1. Full fine-tuning is best.
    best = [(b, s, g.loc[g["accuracy"].idxmax(), "method"], _behind(g, "full")) for (b, s), g in panels]
    wins = sum(m == "full" for _, _, m, _ in best)
    detail = "; ".join(f"{b} {s}: {m}" + (f" (full {gap:.1f} behind)" if m != "full" else "") for b, s, m, gap in best)
    out.append(
        (
            "Full fine-tuning is the most accurate of the five",
            detail or "–",
            verdict(wins == len(best), partly=wins > 0) if best else verdict(None),
        )
    )

    # 2. BitFit: best cheap method on the larger backbone, and the fastest.
    cheap = table[(table["trained_pct"] <= CHEAP_SHARE) & (table["backbone"] == "minilm-l6")]
    cheap_best = [(s, g.loc[g["accuracy"].idxmax(), "method"]) for s, g in cheap.groupby("setting")]
    fastest = [(b, s, g.loc[g["epoch_s"].idxmin(), "method"]) for (b, s), g in panels if g["epoch_s"].notna().any()]
    if cheap_best:
        ok_best = sum(m == "bitfit" for _, m in cheap_best)
        ok_fast = sum(m == "bitfit" for *_, m in fastest)
        detail = (
            "best cheap method (≤ 5% of minilm-l6 trained): "
            + ", ".join(f"{s} {m}" for s, m in cheap_best)
            + "; fastest epoch of the five: "
            + ", ".join(f"{b} {s} {m}" for b, s, m in fastest)
        )
        out.append(
            (
                "BitFit is the best cheap method on the larger backbone, and the fastest",
                detail,
                verdict(ok_best == len(cheap_best) and ok_fast == len(fastest), partly=ok_best + ok_fast > 0),
            )
        )
    else:
        out.append(("BitFit is the best cheap method on the larger backbone, and the fastest", "–", verdict(None)))

    # 3. Prompt tuning is weakest but loses little with less data.
    pivot = five.pivot_table(index=["backbone", "method"], columns="setting", values="accuracy")
    if set(PEFT_REPORT_SETTINGS.values()) <= set(pivot.columns):
        drop = (pivot[PEFT_REPORT_SETTINGS[0.9]] - pivot[PEFT_REPORT_SETTINGS[0.3]]).dropna()
        weakest = [(b, s, g.loc[g["accuracy"].idxmin(), "method"]) for (b, s), g in panels]
        per_backbone = drop.groupby(level="backbone")
        smallest = {b: d.droplevel(0).idxmin() for b, d in per_backbone}
        holds = [m == "prompt_tuning" for *_, m in weakest] + [m == "prompt_tuning" for m in smallest.values()]
        prompt = {b: drop[(b, "prompt_tuning")] for b in smallest if (b, "prompt_tuning") in drop}
        detail = (
            "weakest: "
            + ", ".join(f"{b} {s} {m}" for b, s, m in weakest)
            + "; smallest drop from 90% to 30% data: "
            + ", ".join(f"{b} {m} ({drop[(b, m)]:.1f} points)" for b, m in smallest.items())
            + "; prompt tuning's drop: "
            + ", ".join(f"{b} {d:.1f} points" for b, d in prompt.items())
        )
        out.append(
            (
                "Prompt tuning (20 tokens) is the weakest but loses least with less data",
                detail,
                verdict(all(holds), partly=any(holds)),
            )
        )
    else:
        out.append(("Prompt tuning (20 tokens) is the weakest but loses least with less data", "–", verdict(None)))

    # 4. Freezing the bottom (embedding) layer slows convergence: encoder-only trails full more after epoch 1
    #    than at the end.
    out.append(_convergence_claim(runs))
    return pd.DataFrame(out, columns=["claim", "ours", "verdict"])


def _behind(panel: pd.DataFrame, method: str) -> float:
    """Points by which `method` trails the most accurate method of a panel (nan if it did not run there)."""
    mine = panel.loc[panel["method"] == method, "accuracy"]
    return panel["accuracy"].max() - mine.iloc[0] if not mine.empty else np.nan


def _convergence_claim(runs: pd.DataFrame) -> tuple[str, str, str]:
    claim = "Freezing the bottom layers (encoder-only) slows convergence"
    if "first_epoch_accuracy" not in runs:
        return claim, "–", verdict(None)
    chosen = at_chosen_rates(runs)
    chosen = chosen[(chosen["fraction"] == 1.0) & chosen["method"].isin(["full", "encoder_only"])]
    means = chosen.groupby(["backbone", "setting", "method"])[["first_epoch_accuracy", "main_metric_value"]].mean()
    details, slower = [], []
    for (backbone, setting), group in means.groupby(level=["backbone", "setting"]):
        group = group.droplevel(["backbone", "setting"])
        if {"full", "encoder_only"} <= set(group.index):
            gap_first = group.loc["full", "first_epoch_accuracy"] - group.loc["encoder_only", "first_epoch_accuracy"]
            gap_last = group.loc["full", "main_metric_value"] - group.loc["encoder_only", "main_metric_value"]
            slower.append(gap_first - gap_last > SLOWER_BY)
            details.append(
                f"{backbone} {setting}: full − encoder-only {gap_first:+.1f} after epoch 1, {gap_last:+.1f} at the end"
            )
    if not details:
        return claim, "–", verdict(None)
    details.append(f"slower counts when the gap after epoch 1 exceeds the final gap by more than {SLOWER_BY:g} point")
    return claim, "; ".join(details), verdict(all(slower), partly=any(slower))


def with_first_epoch(runs: pd.DataFrame, records: list[dict]) -> pd.DataFrame:
    """Adds `first_epoch_accuracy` from each record's history."""
    first = {r["run_id"]: r["history"][0].get(r["main_metric"], np.nan) for r in records if r.get("history")}
    return runs.assign(first_epoch_accuracy=runs["run_id"].map(first).astype(float))


def chapter_runs(folder) -> tuple[pd.DataFrame, list[dict]]:
    """The chapter's runs, labelled, with per-epoch seconds and first-epoch accuracy, and their records."""
    records = read_records(folder)
    runs = label_runs(records_frame(folder))
    return with_first_epoch(with_epoch_seconds(runs, records), records), records
