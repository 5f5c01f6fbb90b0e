"""Every committed stage-2 grid is what its planner makes of the committed stage-1 records: a grid edited by hand, or
records added or removed after it was generated, fail here."""

from importlib import import_module
from pathlib import Path

import pytest
import yaml

from adaptstudy.planning.stage_2 import unfinished
from adaptstudy.reporting.common import load_runs

ROOT = Path(__file__).resolve().parents[1]
STAGE_1 = {
    "houlsby_report.yaml": "houlsby_select.yaml",
    "houlsby_base_report.yaml": "houlsby_base_select.yaml",
}  # stage 1 grids that run over several sessions
PLANNED = {  # stage-2 grid: (results folder, the chapter package with its `tables`, its planner)
    "houlsby_report.yaml": ("houlsby", "adaptstudy.reporting.houlsby", "adaptstudy.planning.houlsby"),
    "houlsby_base_report.yaml": (
        "houlsby_base",
        "adaptstudy.reporting.houlsby_base",
        "adaptstudy.planning.houlsby_base",
    ),
    "peft_imdb_report.yaml": ("peft_imdb", "adaptstudy.reporting.peft", "adaptstudy.planning.peft"),
    "fusion_report.yaml": ("fusion", "adaptstudy.reporting.across.fusion", "adaptstudy.planning.fusion"),
    "hyperformer_report.yaml": (
        "hyperformer",
        "adaptstudy.reporting.across.hyperformer",
        "adaptstudy.planning.hyperformer",
    ),
}


def test_every_committed_stage_2_grid_has_a_planner():
    assert {p.name for p in (ROOT / "params" / "cpu").glob("*_report.yaml")} == set(PLANNED)


@pytest.mark.parametrize("grid", sorted(PLANNED))
def test_the_committed_stage_2_grid_is_the_one_the_committed_stage_1_records_choose(grid):
    folder, package, planner = PLANNED[grid]
    plan, tables = import_module(planner), import_module(f"{package}.tables")
    runs = tables.label_runs(load_runs(ROOT / "results" / folder))
    committed, expected = yaml.safe_load((ROOT / "params" / "cpu" / grid).read_text()), plan.report_grid(runs)
    if committed != expected and grid in STAGE_1:
        if unfinished(ROOT / "params" / "cpu" / STAGE_1[grid], ROOT / "results" / folder):
            pytest.skip(f"{STAGE_1[grid]} is still running: its planner refuses, so the committed {grid} stands")
    assert committed == expected
