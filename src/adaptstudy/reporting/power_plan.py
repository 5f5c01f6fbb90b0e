"""The confirmation plan by power as the report reads it (`params/cpu/confirm/power/plan.csv`, written by
`planning.power` before any of its runs): why a claim has no verdict on fresh seeds alone, and what one would cost."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from adaptstudy.common.paths import PROJECT_ROOT

# the confirmation plan by power (`planning.power`), once written
POWER_PLAN = PROJECT_ROOT / "params" / "cpu" / "confirm" / "power" / "plan.csv"


def power_plan(path: Path = POWER_PLAN) -> dict[str, dict]:
    """The power plan's row per claim (taken, stage, seeds per arm, CPU-hours, why), by claim; {} before one is
    written."""
    if not Path(path).is_file():
        return {}
    return {row["claim"]: row for row in pd.read_csv(path).to_dict("records")}


def why_unconfirmed(key: str, plan: dict[str, dict]) -> str:
    """Why a claim has no verdict on fresh seeds alone, with what one would cost (the power plan's row)."""
    row = plan.get(key)
    if row is None:
        return "none: not in the confirmation plan" if plan else "none yet"
    hours = f", {row['CPU-hours']:.1f} CPU-hours" if pd.notna(row.get("CPU-hours")) else ""
    if row["taken"] == "yes":
        return f"planned, not run yet: {int(row['seeds per arm'])} fresh seeds per arm{hours}"
    return f"none: not bought ({row['why']}{hours})"
