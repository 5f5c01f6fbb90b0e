"""A plan buys what a claim's units need on fresh runs alone: judged on stand-ins for its fresh runs, no claim the
plan takes reads a declared unit as not run."""

import re

import pandas as pd

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.planning.unit_cells import SUFFIX, key_of, lost_units, planned
from adaptstudy.reporting.chapters import load_chapters
from adaptstudy.reporting.power_plan import POWER_PLAN
from adaptstudy.reporting.scorecard import chapter_runs
from adaptstudy.runs.grid import grid_configs


def test_every_claim_the_plan_takes_forms_its_units_and_without_the_addendum_two_did_not(data_dir):
    """The plan's cells give each claim's verdict the runs it rests on; the Houlsby size claim also needs full
    fine-tuning's runs (they name the tasks it compares sizes on) and RTE's set-aside sizes, and top-k MRPC's
    set-aside arms: the addendum buys those."""
    plan = pd.read_csv(POWER_PLAN)
    taken = set(plan.loc[plan["taken"] == "yes", "claim"])
    cells, seeds = planned(POWER_PLAN.parent)
    runs = chapter_runs(PROJECT_ROOT / "results")
    for chapter in load_chapters():
        if chapter.name in runs and not runs[chapter.name].empty:
            assert lost_units(chapter, runs[chapter.name], cells, taken) == {}, chapter.name
    (sweep,) = POWER_PLAN.parent.glob(f"houlsby{SUFFIX}.yaml")
    grid, _, configs = grid_configs(sweep, PROJECT_ROOT / "unused")
    addendum = {key_of(grid.study, c.model_dump(mode="json")) for c in configs}
    assert addendum and {c.seed for c in configs} == set(seeds["houlsby"])
    houlsby = next(c for c in load_chapters() if c.name == "houlsby")
    lost = lost_units(houlsby, runs["houlsby"], cells - addendum, taken)
    assert lost == {
        "houlsby.top-k": ["mrpc top_k-1 vs houlsby-64", "mrpc top_k-2 vs houlsby-256"],
        "houlsby.size": ["rte", "sst2", "stsb"],
    }


def test_the_command_the_docstring_and_the_addendum_give_is_one_the_module_reads():
    from adaptstudy.common.paths import PROJECT_ROOT
    from adaptstudy.planning import unit_cells

    written = [
        unit_cells.__doc__,
        (PROJECT_ROOT / "params/cpu/confirm/power/houlsby_power_units.yaml").read_text().replace("\n# ", " "),
    ]
    for text in written:
        command = re.search(r"python -m adaptstudy\.planning\.unit_cells ([^`\n]+)", text)[1].split()
        args = unit_cells.command_line().parse_args(command)
        assert (args.root, args.write) == ("results", "params/cpu/confirm/power")
