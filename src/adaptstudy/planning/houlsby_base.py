"""Stage 2 of the base-size claims: the reported seeds at the rates stage 1 chose, task by task as stage 1 finishes.

Stage 1 (`params/cpu/houlsby_base_select.yaml`) runs seed 0 over the rate grids on `mpnet-base`, MRPC first. A task
enters stage 2 once every one of its stage-1 cells has an ok record (its rates are chosen from the whole grid), so
MRPC's reported seeds can train before CoLA's selection, the cheapest decision first:

    python -m adaptstudy.planning.houlsby_base > params/cpu/houlsby_base_report.yaml

Per task that finished stage 1: full fine-tuning and size-64 adapters, seeds `tables.REPORTED_SEEDS`, each at its
chosen rate (`tables.chosen_rates`: the shared rule and its tie rule), with its task's stage-1 settings; the
adapters also evaluate the layer ablation (each span of layers' adapters removed after training, no training).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import yaml

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.planning.stage_2 import _PlainDumper
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.houlsby_base.tables import REPORTED_SEEDS, chosen_rates, label_runs
from adaptstudy.runs.grid import grid_configs
from adaptstudy.runs.records import read_records, resolve_results_dir

STAGE_1 = PROJECT_ROOT / "params" / "cpu" / "houlsby_base_select.yaml"
HEADER = """# Houlsby et al. 2019's headline claim at base size, stage 2: the reported seeds at the rates stage 1
# (houlsby_base_select.yaml, seed 0) chose on the selection split, for the tasks whose stage 1 has finished.
# Generated; do not edit: python -m adaptstudy.planning.houlsby_base > params/cpu/houlsby_base_report.yaml
"""


def finished_tasks(done: set[str]) -> list[str]:
    """The tasks every stage-1 cell of which is among the run ids `done`, in the grid's order."""
    _, _, configs = grid_configs(STAGE_1, Path("unused"))
    tasks = list(dict.fromkeys(c.task for c in configs))
    return [t for t in tasks if all(c.run_id in done for c in configs if c.task == t)]


def report_grid(runs: pd.DataFrame, tasks: list[str] | None = None) -> dict:
    """The stage-2 grid (a sweep file's mapping): per task (default: those whose stage 1 is among `runs`), each arm
    at its chosen rate, seeds `REPORTED_SEEDS`."""
    tasks = finished_tasks(set(runs["run_id"])) if tasks is None else tasks
    stage_1 = yaml.safe_load(STAGE_1.read_text())
    chosen = chosen_rates(runs).set_index(["task", "label"])["learning_rate"]
    axes = []
    for task in tasks:
        full, adapters = (float(chosen[(task, label)]) for label in ("full", "houlsby-64"))
        axes.append(
            {
                "task": [task],
                "seed": list(REPORTED_SEEDS),
                "method": {
                    "full": {"learning_rate": [full]},
                    "houlsby": {"adapter_size": [64], "learning_rate": [adapters], "layer_ablation": [True]},
                },
            }
        )
    fixed = {k: v for k, v in stage_1["fixed"].items() if k != "seed"}
    return {"study": stage_1["study"], "description": "base-size reported seeds", "fixed": fixed, "axes": axes}


def choices(runs: pd.DataFrame, tasks: list[str]) -> str:
    """Comment lines: each arm's choice and the selection-split score of every rate it tried."""
    rows = chosen_rates(runs)
    lines = [f"#   {r.task} {r.label}: {r.learning_rate:g} (of {r.grid})" for r in rows.itertuples() if r.task in tasks]
    return "# Choices (selection-split score per rate):\n" + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The base-size stage-2 grid from stage 1's records, as YAML.")
    parser.add_argument("results_dir", nargs="?", help="stage 1's records (default: results/houlsby_base)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    folder = Path(resolve_results_dir(args.results_dir, "houlsby_base"))
    tasks = finished_tasks({record["run_id"] for record in read_records(folder)})
    if not tasks:
        print(
            f"error: no task has finished stage 1 in {folder}: run python -m adaptstudy.sweep {STAGE_1}",
            file=sys.stderr,
        )
        return 2
    runs = label_runs(load_runs(folder))
    print(HEADER + choices(runs, tasks), end="")
    print(yaml.dump(report_grid(runs, tasks), Dumper=_PlainDumper, sort_keys=False, default_flow_style=None), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
