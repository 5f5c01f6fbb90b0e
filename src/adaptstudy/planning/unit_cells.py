"""The cells a plan must buy for a claim's units to form on fresh runs alone, besides the cells its verdict rests on.

A confirmatory verdict judges a claim on the runs made after its freeze, alone (and the seed that chose settings):
a unit set aside on selection-stage evidence, or one another arm's runs name (the Houlsby size claim compares sizes
on the tasks full fine-tuning ran), reads *not run* unless fresh runs of those cells exist, and a declared unit that
is not run makes the claim not testable. The check judges each claim the plan takes on stand-in runs (the committed
runs of the planned cells, and the choosing seed's); for a claim that loses units, the fewest further cells of the
chapter's reported runs on those units' tasks that form them again, at the plan's fresh seeds of their study.

    python -m adaptstudy.planning.unit_cells results --write params/cpu/confirm/power
"""

from __future__ import annotations

import json
import re
import sys
from datetime import date
from pathlib import Path

import pandas as pd
import yaml

from adaptstudy.planning.allocation import PlanCell, grids, record_seconds, write_run_ids
from adaptstudy.reporting.chapters import Chapter, load_chapters
from adaptstudy.reporting.power_plan import UNITS_FILE
from adaptstudy.reporting.scorecard import chapter_runs
from adaptstudy.runs.grid import grid_configs

SUFFIX = "_power_units"
COLUMNS = ["written", "chapter", "units not formed", "cells", "runs", "CPU-hours"]
Key = tuple[str, str]  # (study, settings but the seed and the evaluation cap)


def key_of(study: str, config: dict) -> Key:
    """A cell as the plan and a record both name it: its settings but the seed and the evaluation cap (a fresh run
    of a whole-split chapter differs from its exploratory arm only in that cap)."""
    settings = json.loads(PlanCell.of(study, {"config": config}).settings)
    settings.pop("max_eval_examples", None)
    return study, json.dumps(settings, sort_keys=True)


def planned(folder: str | Path) -> tuple[set[Key], dict[str, list[int]]]:
    """The cells of every sweep file of a plan's folder, and each study's fresh seeds."""
    cells, seeds = set(), {}
    for sweep in sorted(Path(folder).glob("*.yaml")):
        grid, _, configs = grid_configs(sweep, Path(folder) / "unused")
        for config in configs:
            cells.add(key_of(grid.study, config.model_dump(mode="json")))
            seeds.setdefault(grid.study, set()).add(config.seed)
    return cells, {study: sorted(s) for study, s in seeds.items()}


def _stand_in(chapter: Chapter, runs: pd.DataFrame, cells: set[Key]) -> pd.DataFrame:
    """The chapter's runs of `cells`, and every run of its choosing seed: what its fresh runs will look like."""
    ours = pd.Series([key_of(chapter.study, r["config"]) in cells for r in runs["record"]], index=runs.index)
    if chapter.selection_seed is not None:
        ours |= runs["seed"] == chapter.selection_seed
    return runs[ours].reset_index(drop=True)


def lost_units(chapter: Chapter, runs: pd.DataFrame, cells: set[Key], claims: set[str]) -> dict[str, list[str]]:
    """Per claim of `claims` the chapter judges: the declared units its verdict on stand-in runs of `cells` reads as
    not run."""
    lost = {}
    for v in chapter.verdicts(_stand_in(chapter, runs, cells)):
        missing = v.not_testable_because.get("not run", [])
        if v.claim.key in claims and missing:
            lost[v.claim.key] = missing
    return lost


def _cap(record: dict) -> float:
    cap = record["config"].get("max_eval_examples")
    return float("inf") if cap is None else cap


def _tasks_named(units: list[str], tasks: set[str]) -> set[str]:
    return {t for u in units for t in re.split(r"[\s:,]+", u) if t in tasks}


def further_cells(
    chapter: Chapter, runs: pd.DataFrame, cells: set[Key], claims: set[str], lost: dict[str, list[str]]
) -> dict[Key, dict]:
    """The fewest cells of the chapter's reported runs, on the tasks of the units its claims lose, that form every
    unit again (each with a record of it): all such cells first, then each dropped that the units do not need;
    `lost` is `lost_units` on `cells`."""
    if not lost:
        return {}
    tasks = _tasks_named([u for units in lost.values() for u in units], set(runs["task"]))
    reported = runs[runs["task"].isin(tasks)]
    if chapter.selection_seed is not None:
        reported = reported[reported["seed"] != chapter.selection_seed]
    candidates: dict[Key, dict] = {}
    for record in reported["record"]:  # of records differing in their evaluation cap, the one scoring the most
        k, kept = key_of(chapter.study, record["config"]), candidates.get(key_of(chapter.study, record["config"]))
        if kept is None or _cap(record) > _cap(kept):
            candidates[k] = record
    candidates = {k: r for k, r in sorted(candidates.items()) if k not in cells}
    still = lost_units(chapter, runs, cells | set(candidates), claims)
    if still:
        raise ValueError(f"{chapter.name}: no cell of its reported runs forms these units again: {still}")
    for k in list(candidates):
        fewer = cells | (set(candidates) - {k})
        if not lost_units(chapter, runs, fewer, claims):
            del candidates[k]
    return candidates


def addendum(root: str | Path, folder: str | Path) -> tuple[pd.DataFrame, dict[PlanCell, list[int]]]:
    """Per chapter, the further cells (`further_cells`) of the claims the plan in `folder` takes, at its fresh seeds
    of their study: a table (per chapter: the units its claims lost, the cells, runs and estimated CPU-hours at the
    median seconds their committed runs paid) and the cells to buy."""
    plan = pd.read_csv(Path(folder) / "plan.csv")
    taken = set(plan.loc[plan["taken"] == "yes", "claim"])
    cells, seeds = planned(folder)
    runs = chapter_runs(str(root))
    rows, buy = [], {}
    for chapter in load_chapters():
        mine = runs.get(chapter.name, pd.DataFrame())
        if mine.empty:
            continue
        lost = lost_units(chapter, mine, cells, taken)
        further = further_cells(chapter, mine, cells, taken, lost)
        if not further:
            continue
        paid = {k: [] for k in further}
        for record in mine["record"]:
            k = key_of(chapter.study, record["config"])
            if k in paid:
                paid[k].append(record_seconds(record))
        fresh = seeds[chapter.study]
        buy |= {PlanCell.of(chapter.study, record): fresh for record in further.values()}
        rows.append(
            {
                "written": date.today().isoformat(),
                "chapter": chapter.name,
                "units not formed": "; ".join(f"{claim}: {', '.join(units)}" for claim, units in lost.items()),
                "cells": len(further),
                "runs": len(further) * len(fresh),
                "CPU-hours": round(sum(pd.Series(p).median() * len(fresh) for p in paid.values()) / 3600, 2),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS), buy


HEADER = """Addendum to the confirmation plan by power ({today}), written before any of its runs: the cells a claim's
units need on fresh runs alone besides those its verdict rests on (a unit set aside on selection-stage evidence, or
named by another arm's runs, reads 'not run' without them, and the claim not testable). The claims' designs are
unchanged. Generated by `python -m adaptstudy.planning.unit_cells results --write {folder}` (the rule is that
module's docstring; {units} beside this file lists the claims and the cost). Do not edit."""


def command_line():
    """The command's arguments (the docstring's command is one they read)."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", default="results")
    parser.add_argument("--plan", default="params/cpu/confirm/power", help="the plan's folder")
    parser.add_argument(
        "--write",
        nargs="?",
        const="",
        metavar="FOLDER",
        help="write the addendum's sweep files into FOLDER (default: the plan's folder)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = command_line().parse_args(argv)
    table, buy = addendum(args.root, args.plan)
    print(table.to_string(index=False) if not table.empty else "every taken claim forms its units")
    if args.write is not None and buy:
        folder = Path(args.write or args.plan)
        table.to_csv(folder / UNITS_FILE, index=False)
        text = HEADER.format(today=date.today().isoformat(), folder=folder.as_posix(), units=UNITS_FILE)
        header = "".join(f"# {line}\n" for line in text.splitlines())
        for name, grid in grids(buy, SUFFIX, "confirmatory runs by power: units", PlanCell.with_seed).items():
            (folder / f"{name}.yaml").write_text(header + yaml.safe_dump(grid, sort_keys=False, width=120))
            write_run_ids(folder / f"{name}.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
