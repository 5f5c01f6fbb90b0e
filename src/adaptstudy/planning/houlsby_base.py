"""Stage 2 of the claims on other backbones: the reported seeds at the rates stage 1 chose, cell by cell (a backbone
and a task) as stage 1 finishes.

Stage 1 (`params/cpu/houlsby_base_select.yaml`) runs seed 0 over the rate grids: `mpnet-base` on MRPC and CoLA,
then `minilm-l3` on the five GLUE tasks and `mpnet-base` on RTE, STS-B and SST-2. A cell enters stage 2 once every one
of its stage-1 runs has an ok record (its rates are chosen from the whole grid), the cheapest decision first:

    python -m adaptstudy.planning.houlsby_base > params/cpu/houlsby_base_report.yaml

Per cell that finished stage 1: full fine-tuning and size-64 adapters at their chosen rates (`tables.chosen_rates`:
the shared rule and its tie rule), with the cell's stage-1 settings, seeds 1-3; where seeds 1-3 ran before the
claims over all five tasks were frozen, seeds 4-6 too, so those claims' confirmatory verdicts have fresh seeds on
every task. The adapters on the layer ablation's backbone and tasks also evaluate it (each span of layers' adapters
removed after training, no training). Every run not yet made trains in fp32 (`PRECISION`), whatever the machine, so
the arms of a task never differ in precision; seeds 1-3 of MRPC and CoLA keep the bf16 they ran in.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import yaml

from adaptstudy.claims.freeze import frozen_at
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.planning.stage_2 import _PlainDumper
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.houlsby_base.claims import ABLATED, DECLARED, ONE_LAYER
from adaptstudy.reporting.houlsby_base.tables import at_chosen_rates, chosen_rates, label_runs
from adaptstudy.runs.grid import grid_configs
from adaptstudy.runs.records import made_at, read_records, resolve_results_dir

STAGE_1 = PROJECT_ROOT / "params" / "cpu" / "houlsby_base_select.yaml"
SEEDS, FRESH_SEEDS = [1, 2, 3], [4, 5, 6]
PRECISION = "fp32"  # every run made after the precision was declared: both arms of a task in one precision anywhere
FIVE_TASKS = ("parity-64-glue", "parity-64-l3")  # the claims whose confirmatory verdicts need fresh seeds on each task
HEADER = """# The Houlsby chapter's claims on other backbones, stage 2: the reported seeds at the rates stage 1
# (houlsby_base_select.yaml, seed 0) chose on the selection split, for the cells (backbone, task) whose stage 1 has
# finished. Generated; do not edit: python -m adaptstudy.planning.houlsby_base > params/cpu/houlsby_base_report.yaml
"""
BackboneTask = tuple[str, str]  # (backbone, task)


def finished_cells(done: set[str]) -> list[BackboneTask]:
    """The (backbone, task) cells every stage-1 run of which is among the run ids `done`, in the grid's order."""
    _, _, configs = grid_configs(STAGE_1, Path("unused"))
    cells = list(dict.fromkeys((c.backbone, c.task) for c in configs))
    return [cell for cell in cells if all(c.run_id in done for c in configs if (c.backbone, c.task) == cell)]


def seeds(runs: pd.DataFrame, cell: BackboneTask) -> list[int]:
    """Seeds 1-3, and 4-6 where a reported run at the chosen rates was made before the five-task claims' freeze."""
    frozen = [t for t in (frozen_at(DECLARED[name].declared) for name in FIVE_TASKS) if t is not None]
    if not frozen:
        return SEEDS
    backbone, task = cell
    reported = at_chosen_rates(runs, backbone)
    made = pd.to_datetime(made_at(reported[reported["task"] == task]), utc=True, format="ISO8601")
    return SEEDS + FRESH_SEEDS if (made < pd.Timestamp(min(frozen))).any() else SEEDS


def report_grid(runs: pd.DataFrame, cells: list[BackboneTask] | None = None) -> dict:
    """The stage-2 grid (a sweep file's mapping): per cell (default: those whose stage 1 is among `runs`), each arm
    at its chosen rate and the cell's stage-1 settings, at `seeds`."""
    cells = finished_cells(set(runs["run_id"])) if cells is None else cells
    stage_1 = yaml.safe_load(STAGE_1.read_text())
    chosen = chosen_rates(runs).set_index(["backbone", "task", "label"])["learning_rate"]
    caps = {(c.backbone, c.task): c.max_train_examples for c in grid_configs(STAGE_1, Path("unused"))[2] if c.seed == 0}
    axes = []
    for backbone, task in cells:
        full, adapters = (float(chosen[(backbone, task, label)]) for label in ("full", "houlsby-64"))
        houlsby = {"adapter_size": [64], "learning_rate": [adapters]}
        if backbone == ABLATED and task in ONE_LAYER.design.all_units:
            houlsby["layer_ablation"] = [True]
        method = {"full": {"learning_rate": [full]}, "houlsby": houlsby}
        cap = {} if caps[(backbone, task)] is None else {"max_train_examples": [caps[(backbone, task)]]}
        wanted = seeds(runs, (backbone, task))
        if wanted != SEEDS:  # seeds 1-3 ran before the campaign's precision was declared: they stay as they ran
            axes.append({"backbone": [backbone], "task": [task], "seed": SEEDS, **cap, "method": method})
            wanted = FRESH_SEEDS
        axis = {"backbone": [backbone], "task": [task], "seed": wanted, **cap, "precision": [PRECISION]}
        axes.append({**axis, "method": method})
    fixed = {k: v for k, v in stage_1["fixed"].items() if k not in ("seed", "backbone")}
    return {"study": stage_1["study"], "description": "reported seeds", "fixed": fixed, "axes": axes}


def choices(runs: pd.DataFrame, cells: list[BackboneTask]) -> str:
    """Comment lines: each arm's choice and the selection-split score of every rate it tried."""
    rows = chosen_rates(runs)
    lines = [
        f"#   {r.backbone} {r.task} {r.label}: {r.learning_rate:g} (of {r.grid})"
        for r in rows.itertuples()
        if (r.backbone, r.task) in cells
    ]
    return "# Choices (selection-split score per rate):\n" + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The base-size stage-2 grid from stage 1's records, as YAML.")
    parser.add_argument("results_dir", nargs="?", help="stage 1's records (default: results/houlsby_base)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    folder = Path(resolve_results_dir(args.results_dir, "houlsby_base"))
    cells = finished_cells({record["run_id"] for record in read_records(folder)})
    if not cells:
        print(
            f"error: no cell has finished stage 1 in {folder}: run python -m adaptstudy.sweep {STAGE_1}",
            file=sys.stderr,
        )
        return 2
    runs = label_runs(load_runs(folder))
    print(HEADER + choices(runs, cells), end="")
    print(yaml.dump(report_grid(runs, cells), Dumper=_PlainDumper, sort_keys=False, default_flow_style=None), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
