"""What every stage-2 planner shares: the settings a stage-2 grid carries over from stage 1, and the command that
writes the grid as YAML once stage 1 has finished."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.common import load_runs
from adaptstudy.runs.base import ConfigError, RunConfig
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.grid import describe_values, grid_configs
from adaptstudy.runs.records import read_records, resolve_results_dir


def shared_settings(records, per_run: set[str], shown: tuple[str, ...] = (), config_class=FinetuneConfig) -> dict:
    """The settings every one of `records` shares, leaving out `per_run` keys and keeping only those that differ
    from `config_class`'s defaults or are `shown`: what a stage-2 grid carries over from stage 1."""
    defaults = {k: f.default for k, f in config_class.model_fields.items()}
    configs = [{k: v for k, v in r["config"].items() if k not in per_run} for r in records]
    shared = {k: v for k, v in configs[0].items() if all(c.get(k) == v for c in configs)}
    return {k: v for k, v in shared.items() if k in shown or v != defaults.get(k)}


def stage_2_main(
    argv, study: str, label_runs, report_grid, header: str, choices, stage_1: str, also: tuple[str, ...] = ()
) -> int:
    """A chapter's stage-2 planner (`python -m adaptstudy.planning.<chapter> [RESULTS_DIR] [--stage-1 GRID]`):
    the grid `report_grid` makes from stage 1's labelled runs, as YAML after `header` and `choices(runs)` (comment
    lines). It refuses while a cell of the stage-1 grid (`stage_1`, relative to the project), or of the grids `also`
    names that exist (stage 1's extensions), has no ok record: a rate would be chosen from part of its grid, and
    stage 2 would report at it."""
    parser = argparse.ArgumentParser(description="The stage-2 grid from stage 1's records, as YAML on stdout.")
    parser.add_argument("results_dir", nargs="?", help=f"stage 1's records (default: results/{study})")
    parser.add_argument("--stage-1", default=str(PROJECT_ROOT / stage_1), help=f"its grid (default: {stage_1})")
    parser.add_argument(
        "--also",
        nargs="*",
        default=[str(PROJECT_ROOT / g) for g in also if (PROJECT_ROOT / g).exists()],
        help=f"stage 1's other grids, its edge extensions (default: {', '.join(also) or 'none'})",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    folder = Path(resolve_results_dir(args.results_dir, study))
    runs = label_runs(load_runs(folder))
    try:
        for grid_file in [args.stage_1, *args.also]:
            missing = unfinished(grid_file, folder)
            if missing:
                raise ValueError(
                    f"stage 1 has not finished: {folder} has no ok record for {len(missing)} cell(s) of {grid_file}, "
                    f"the first {describe_values(missing[0].identity())}; rerun python -m adaptstudy.sweep {grid_file}"
                )
        grid = report_grid(runs, study=folder.name)
    except (ValueError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(header + choices(runs))
    print(yaml.dump(grid, Dumper=_PlainDumper, sort_keys=False, default_flow_style=None, width=120), end="")
    return 0


class _PlainDumper(yaml.SafeDumper):
    """Writes a repeated value out again rather than as an anchor and alias (`&id001`, `*id001`): the generated
    grids are read by people."""

    def ignore_aliases(self, data) -> bool:
        return True


def unfinished(stage_1: str | os.PathLike, folder: Path) -> list[RunConfig]:
    """The cells of the grid `stage_1` that have no ok record in `folder`, in the grid's order."""
    _, _, configs = grid_configs(stage_1, folder)
    done = {record["run_id"] for record in read_records(folder)}
    return [config for config in configs if config.run_id not in done]
