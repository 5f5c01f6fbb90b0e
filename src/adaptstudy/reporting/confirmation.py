"""What each chapter says of its confirmatory runs: which of its claims the frozen allocation took, by which rule,
at what estimated cost, and how many of the fresh runs have landed and what they paid so far."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from adaptstudy.claims.verdicts import Verdict
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.chapters import load_chapters
from adaptstudy.runs.records import paid_evaluation, paid_seconds, records_frame

PLAN = PROJECT_ROOT / "params" / "cpu" / "confirm"  # the first plan; a later wave is a folder of its own inside it
RULE_FILE = "rule.txt"  # beside a later wave's plan: its rule, as its chapters state it
BUDGET_H = 10.0  # CPU-hours on an AVX512-BF16 machine (`planning.allocation` spends them)
STUDIES = {c.name: c.study for c in load_chapters() if c.study}  # chapter -> its results folder


def rule(budget_h: float = BUDGET_H) -> str:
    """The allocation rule as the chapters state it, at a wave's budget."""
    return (
        "each exploratory claim costs the fresh seeds of the cells it rests on (5 where a run took under 2 minutes, "
        "else 3) at the median seconds their committed runs paid, prerequisites once; the cheapest claim is taken "
        f"first, within {budget_h:g} CPU-hours (`src/adaptstudy/planning/allocation.py`, written before any of them "
        "ran)"
    )


RULE = rule()


def confirmation_note(
    chapter: str, root: str | Path, confirmed: list[Verdict] | None = None, *, plan: Path = PLAN
) -> str:
    """One paragraph for `chapter` (a claim key's prefix: houlsby, peft, dsp, fusion, hyperformer): for the plan and
    each later wave in it, the rule, the claims taken and left out with their estimated CPU-hours and the fresh runs
    committed so far with their cost; and with `confirmed` (`fresh_seeds.fresh_verdicts`) which claims have a verdict
    on fresh seeds alone."""
    waves = [plan, *sorted(p.parent for p in plan.glob(f"*/{RULE_FILE}"))]
    parts = [part for wave in waves for part in _wave(chapter, root, wave, first=wave == plan)]
    if not parts:
        return ""
    if confirmed is not None:
        parts.append(_on_fresh_seeds([v for v in confirmed if v.claim.key.startswith(f"{chapter}.")]))
    return " ".join(parts)


def _wave(chapter: str, root: str | Path, plan: Path, first: bool) -> list[str]:
    """What one plan (the first, or a later wave with its own rule) says of `chapter`."""
    allocation = pd.read_csv(plan / "allocation.csv")
    mine = allocation[allocation["claim"].str.startswith(f"{chapter}.")]
    if mine.empty:
        return []
    taken, left = mine[mine["taken"] == "yes"], mine[mine["taken"] != "yes"]
    if first:
        parts = [f"**Confirmatory runs** (fresh reported seeds). The rule: {RULE}."]
    else:
        rule = (plan / RULE_FILE).read_text(encoding="utf-8").strip()
        parts = [f"**A later wave** (`{plan.name}`). The rule: {rule}."]
    if not taken.empty:
        parts.append(
            f"It took {len(taken)} of this chapter's claims ({', '.join(taken['claim'])}), estimated at "
            f"{taken['CPU-hours'].sum():.1f} CPU-hours."
        )
    if not left.empty:
        reasons = "; ".join(f"{w}: {', '.join(g['claim'])}" for w, g in left.groupby("why", sort=False))
        parts.append(f"Left out: {reasons}.")
    sweep = plan / f"{STUDIES[chapter]}_confirm.yaml"
    if not taken.empty and sweep.is_file():
        cells = sweep.with_suffix(".run_ids").read_text(encoding="utf-8").split()
        runs = records_frame(Path(root) / yaml.safe_load(sweep.read_text(encoding="utf-8"))["study"])
        fresh = runs[runs["run_id"].isin(set(cells))] if not runs.empty else runs
        hours = (paid_seconds(fresh, "train_runtime_s") + paid_evaluation(fresh)).sum() / 3600
        shown = sweep.relative_to(PROJECT_ROOT) if sweep.is_relative_to(PROJECT_ROOT) else sweep
        parts.append(
            f"Landed so far: {len(fresh)} of the {len(cells)} fresh runs of `{shown}` "
            f"({len(cells) - len(fresh)} still to run), {hours:.1f} CPU-hours paid (training and evaluation)."
        )
    return parts


def _on_fresh_seeds(confirmed: list[Verdict]) -> str:
    """Which claims have a verdict on fresh seeds alone, and what it is."""
    if not confirmed:
        return "No claim of this chapter has a verdict on fresh seeds alone yet."
    said = "; ".join(f"{v.claim.key}: {v.verdict}" for v in confirmed)
    return f"On fresh seeds alone (the table below, confirmatory): {said}."
