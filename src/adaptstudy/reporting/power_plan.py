"""The confirmation plan by power as the report reads it (`params/cpu/confirm/power/plan.csv`, written by
`planning.power` before any of its runs): why a claim has no verdict on fresh seeds alone, and what one would cost."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import yaml

from adaptstudy.claims.catalog import CLAIMS
from adaptstudy.claims.freeze import first_freeze, spent_by_amendment
from adaptstudy.claims.what_it_takes import plainly
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.common import load_runs
from adaptstudy.runs.records import made_at, paid_evaluation, paid_seconds, paid_since

BUDGET_H = 14.0  # the plan's CPU-hours (`planning.power` spends them; the note counts what its runs measured)
# the confirmation plan by power (`planning.power`), once written
POWER_PLAN = PROJECT_ROOT / "params" / "cpu" / "confirm" / "power" / "plan.csv"
UNITS_FILE = "units.csv"  # the plan's addendum for units fresh runs alone would not form (`planning.unit_cells`)
COSTED = "costed.json"  # beside a later plan: the machine kind its costs are in, the ratio, the budget, when written


def later_plans(confirm: Path = POWER_PLAN.parent.parent) -> list[Path]:
    """The folders of the plans written after the first (`planning.power --after`), oldest first."""
    folders = [p for p in confirm.glob("power-*") if (p / "plan.csv").is_file() and (p / COSTED).is_file()]
    return sorted(folders, key=lambda p: json.loads((p / COSTED).read_text(encoding="utf-8"))["written"])


def every_plan(path: Path = POWER_PLAN) -> dict[str, dict]:
    """`power_plan`'s rows, with the claims a later plan bought as that plan has them."""
    rows = power_plan(path)
    for folder in later_plans(Path(path).parent.parent):
        rows |= {k: row for k, row in power_plan(folder / "plan.csv").items() if row["taken"] == "yes"}
    return rows


def later_plan_note(root: str | Path, folder: Path) -> str:
    """What a later plan bought, on which machine kind its costs were measured, and what has landed."""
    costed = json.loads((folder / COSTED).read_text(encoding="utf-8"))
    table = pd.DataFrame(power_plan(folder / "plan.csv").values())
    taken = table[table["taken"] == "yes"]
    ids = {i for run_ids in folder.glob("*.run_ids") for i in run_ids.read_text(encoding="utf-8").split()}
    studies = [load_runs(study) for study in sorted(p for p in Path(root).iterdir() if p.is_dir())]
    fresh = [runs[runs["run_id"].isin(ids)] for runs in studies if not runs.empty]
    landed = sum(len(runs) for runs in fresh)
    hours = sum((paid_seconds(runs, "train_runtime_s") + paid_evaluation(runs)).sum() for runs in fresh) / 3600
    machine = costed["machine"]
    seeds = sorted({int(n) for n in taken["seeds per arm"]})
    precisions = {p for grid in folder.glob("*.yaml") for axis in yaml.safe_load(grid.read_text())["axes"]
                  for p in axis.get("precision", ["auto"])}  # fmt: skip
    trains = (
        f"every one of its runs trains in {precisions.pop()} on every machine"
        if len(precisions) == 1 and "auto" not in precisions
        else "its runs train in the precision each machine picks"
    )
    return (
        f"**A later plan**, written {pd.Timestamp(costed['written']):%-d %B %Y} before any of its runs, bought "
        f"{' or '.join(map(str, seeds))} fresh seeds per arm for {', '.join(taken['claim'])}: "
        f"{len(ids)} runs, {taken['CPU-hours'].sum():.1f} CPU-hours estimated on {costed['kind']} ({machine['cpu']}, "
        f"{machine['cores']} cores; runs measured on other machine kinds scaled by {costed['ratio']:.2f}), within "
        f"{costed['budget_h']:g}; {trains}. Landed so far: {landed} of "
        f"its {len(ids)} runs, {hours:.1f} CPU-hours spent (training and evaluation)."
    )


def power_plan(path: Path = POWER_PLAN) -> dict[str, dict]:
    """The power plan's row per claim (taken, seeds per arm, CPU-hours, why), by claim; {} before one is
    written."""
    if not Path(path).is_file():
        return {}
    return {row["claim"]: row for row in pd.read_csv(path).to_dict("records")}


def why_unconfirmed(key: str, plan: dict[str, dict]) -> str:
    """Why a claim has no verdict on fresh seeds alone: an amendment after its freeze that spent them, or what one
    would cost (the power plan's row)."""
    if key in CLAIMS and (spent := spent_by_amendment(CLAIMS.get(key).declared)):
        return spent
    row = plan.get(key)
    if row is None:
        return f"{NOT_RUN}: not in the confirmation plan" if plan else NOT_RUN
    hours = f", {row['CPU-hours']:.1f} CPU-hours" if pd.notna(row.get("CPU-hours")) else ""
    if row["taken"] == "yes":
        return f"planned, not run yet: {int(row['seeds per arm'])} fresh seeds per arm{hours}"
    return f"{NOT_RUN}: not bought ({plainly(row['why'])}{hours})"


NOT_RUN = "not run on fresh seeds yet"


def plan_note(root: str | Path, folder: Path = POWER_PLAN.parent) -> str:
    """What the power plan bought and what has landed: claims taken, CPU-hours planned against its budget, the fresh
    runs committed so far with the CPU-hours they paid (training and evaluation), and what training again runs made
    before the freeze cost after it (prerequisites a machine's cache lacked), which the plan pays too."""
    plan = power_plan(folder / "plan.csv")
    if not plan:
        return "**The confirmation plan by power** is not written yet."
    table = pd.DataFrame(plan.values())
    taken = table[table["taken"] == "yes"]
    planned = int(taken["why"].str.startswith("decides").sum())
    ids: set[str] = set()
    for run_ids in sorted(folder.glob("*.run_ids")):
        ids |= set(run_ids.read_text(encoding="utf-8").split())
    studies = [load_runs(study) for study in sorted(p for p in Path(root).iterdir() if p.is_dir())]
    fresh = [runs[runs["run_id"].isin(ids)] for runs in studies if not runs.empty]
    landed = sum(len(runs) for runs in fresh)
    hours = sum((paid_seconds(runs, "train_runtime_s") + paid_evaluation(runs)).sum() for runs in fresh) / 3600
    again = retrained_after_freeze(studies)
    return (
        f"**The confirmation plan by power** bought fresh seeds for {len(taken)} of {len(table)} claims "
        f"({planned} powered to decide, {len(taken) - planned} read only), "
        f"{taken['CPU-hours'].sum():.1f} CPU-hours estimated{_addendum(folder)}. "
        f"Landed so far: {landed} of its {len(ids)} fresh runs, "
        f"{hours:.1f} CPU-hours spent (training and evaluation), and {again:.1f} more training again, after the "
        f"freeze, runs made before it (prerequisites a machine's cache lacked): {hours + again:.1f} CPU-hours in all, "
        f"measured, of its budget of {BUDGET_H:g}: {BUDGET_H - hours - again:.1f} left"
        f"{', which go to the next plan' if hours + again < BUDGET_H else ''}."
    ) + "".join(f"\n\n{later_plan_note(root, later)}" for later in later_plans(folder.parent))


def _addendum(folder: Path) -> str:
    path = folder / UNITS_FILE
    if not path.is_file():
        return ""
    units = pd.read_csv(path)
    claims = sum(len(row.split("; ")) for row in units["units not formed"])
    written = pd.Timestamp(units["written"].max())
    return (
        f", and {units['CPU-hours'].sum():.1f} more for its addendum of {written:%-d %B %Y}"
        f" (written before its runs): {units['runs'].sum()} runs of "
        f"{units['cells'].sum()} cells, without which fresh runs alone would leave units of {claims} claims unformed"
    )


def retrained_after_freeze(studies: Iterable[pd.DataFrame]) -> float:
    """CPU-hours (training and evaluation) of the trainings after the first freeze of runs first made before it,
    over the studies' runs (`load_runs`)."""
    since = first_freeze(Path(__file__).parent)  # the chapters' declarations, beside their code
    if since is None:
        return 0.0
    seconds = 0.0
    for runs in studies:
        if runs.empty:
            continue
        older = runs[pd.to_datetime(made_at(runs), utc=True, format="ISO8601") < pd.Timestamp(since)]
        seconds += paid_since(older, since.isoformat()).sum()
    return seconds / 3600
