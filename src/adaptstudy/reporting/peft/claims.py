"""The IMDb chapter's claims: a verdict per conclusion of the report, with the figures it rests on.

Every function takes the runs of `load_runs`, labelled by `tables.label_runs`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from adaptstudy.reporting.common import claim_row, claims_table, not_run
from adaptstudy.reporting.peft.tables import at_chosen_rates, method_table
from adaptstudy.reporting.published import PEFT_REPORT_METHODS, PEFT_REPORT_SETTINGS

CHEAP_SHARE = 5.0  # % of the backbone trained: below this a method counts as cheap
SLOWER_BY = (
    1.0  # points: encoder-only converges slower if it trails full by this much more after epoch 1 than at the end
)


def claims(runs: pd.DataFrame) -> pd.DataFrame:
    """A verdict per conclusion of the report, with the figures it rests on."""
    table = method_table(runs)
    five = table[table["method"].isin(PEFT_REPORT_METHODS)]
    panels = list(five.groupby(["backbone", "setting"]))
    return claims_table(
        [
            _full_is_best(panels),
            _bitfit_claim(table, panels),
            _prompt_tuning_claim(five, panels),
            _convergence_claim(runs),
        ]
    )


def _full_is_best(panels: list) -> dict[str, str]:
    """Full fine-tuning is the most accurate of the report's five methods, in each backbone and setting."""
    best = [(b, s, g.loc[g["accuracy"].idxmax(), "method"], _behind(g, "full")) for (b, s), g in panels]
    wins = sum(m == "full" for _, _, m, _ in best)
    detail = "; ".join(f"{b} {s}: {m}" + (f" (full {gap:.1f} behind)" if m != "full" else "") for b, s, m, gap in best)
    return claim_row(
        "Full fine-tuning is the most accurate of the five",
        detail or "–",
        wins == len(best) if best else None,
        partly=wins > 0,
    )


def _bitfit_claim(table: pd.DataFrame, panels: list) -> dict[str, str]:
    """BitFit: the best cheap method on the larger backbone, and the fastest epoch of the five."""
    claim = "BitFit is the best cheap method on the larger backbone, and the fastest"
    cheap = table[(table["trained_pct"] <= CHEAP_SHARE) & (table["backbone"] == "minilm-l6")]
    cheap_best = [(s, g.loc[g["accuracy"].idxmax(), "method"]) for s, g in cheap.groupby("setting")]
    if not cheap_best:
        return not_run(claim)
    fastest = [(b, s, g.loc[g["epoch_s"].idxmin(), "method"]) for (b, s), g in panels if g["epoch_s"].notna().any()]
    ok_best = sum(m == "bitfit" for _, m in cheap_best)
    ok_fast = sum(m == "bitfit" for *_, m in fastest)
    detail = (
        "best cheap method (≤ 5% of minilm-l6 trained): "
        + ", ".join(f"{s} {m}" for s, m in cheap_best)
        + "; fastest epoch of the five: "
        + ", ".join(f"{b} {s} {m}" for b, s, m in fastest)
    )
    return claim_row(
        claim, detail, ok_best == len(cheap_best) and ok_fast == len(fastest), partly=ok_best + ok_fast > 0
    )


def _prompt_tuning_claim(five: pd.DataFrame, panels: list) -> dict[str, str]:
    """Prompt tuning is the weakest of the five, but loses least going from 90% to 30% of the data."""
    claim = "Prompt tuning (20 tokens) is the weakest but loses least with less data"
    pivot = five.pivot_table(index=["backbone", "method"], columns="setting", values="accuracy")
    if not set(PEFT_REPORT_SETTINGS.values()) <= set(pivot.columns):
        return not_run(claim)
    drop = (pivot[PEFT_REPORT_SETTINGS[0.9]] - pivot[PEFT_REPORT_SETTINGS[0.3]]).dropna()
    weakest = [(b, s, g.loc[g["accuracy"].idxmin(), "method"]) for (b, s), g in panels]
    smallest = {b: d.droplevel(0).idxmin() for b, d in drop.groupby(level="backbone")}
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
    return claim_row(claim, detail, all(holds), partly=any(holds))


def _behind(panel: pd.DataFrame, method: str) -> float:
    """Points by which `method` trails the most accurate method of a panel (nan if it did not run there)."""
    mine = panel.loc[panel["method"] == method, "accuracy"]
    return panel["accuracy"].max() - mine.iloc[0] if not mine.empty else np.nan


def _convergence_claim(runs: pd.DataFrame) -> dict[str, str]:
    """Freezing the bottom (embedding) layer slows convergence: encoder-only trails full more after epoch 1 than
    at the end."""
    claim = "Freezing the bottom layers (encoder-only) slows convergence"
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
        return not_run(claim)
    details.append(f"slower counts when the gap after epoch 1 exceeds the final gap by more than {SLOWER_BY:g} point")
    return claim_row(claim, "; ".join(details), all(slower), partly=any(slower))
