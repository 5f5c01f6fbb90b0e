"""The confirmatory runs' allocation: a rule written before the runs (cheapest decision first, within the budget),
applied to the committed records, and the frozen plan committed beside the sweep files it generated."""

from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from adaptstudy.claims.catalog import CLAIMS
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.planning.allocation import allocate, grids, write_run_ids
from adaptstudy.reporting.confirmation import BUDGET_H, STUDIES, confirmation_note
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.grid import Grid
from adaptstudy.runs.records import read_records

PLAN = PROJECT_ROOT / "params" / "cpu" / "confirm"


@pytest.fixture(scope="module")
def allocated(committed_verdicts, data_dir):
    return allocate(committed_verdicts[0], PROJECT_ROOT / "results", data_dir=str(data_dir))


def test_every_claim_is_taken_in_order_of_cost_or_left_out_with_why(allocated):
    table, _ = allocated
    assert sorted(table["claim"]) == sorted(CLAIMS.names())
    taken = table[table["taken"] == "yes"]
    assert taken["cumulative"].is_monotonic_increasing and taken["cumulative"].iloc[-1] <= BUDGET_H
    # each figure is rounded to 0.01 h: the sum of the rounded ones may drift by half of that per claim
    assert taken["CPU-hours"].sum() == pytest.approx(taken["cumulative"].iloc[-1], abs=0.005 * len(taken) + 1e-9)
    left = table[table["taken"] == "no"]
    assert left["why"].str.len().gt(0).all()
    houlsby = left[left["claim"].str.startswith("houlsby.")]
    assert len(houlsby) == len([k for k in CLAIMS.names() if k.startswith("houlsby.")])
    assert houlsby["why"].str.contains("extended selection").all()


def test_fresh_seeds_are_new_and_the_dsp_runs_evaluate_the_whole_split(allocated):
    _, taken = allocated
    used = {s: {r["config"]["seed"] for r in read_records(PROJECT_ROOT / "results" / s)} for s in STUDIES.values()}
    for cell, seeds in taken.items():
        assert not set(seeds) & used[cell.study], cell.study
        assert len(seeds) in (3, 5)
        if cell.study == "dsp":
            assert cell.config(seeds[0])["max_eval_examples"] is None
    for grid in grids(taken).values():
        Grid.model_validate(grid)


def test_a_later_wave_takes_only_the_claims_it_names_and_leaves_out_the_slow_ones(committed_verdicts, data_dir):
    """A later wave: claims declared after the first plan, confirmed where a run costs under its limit."""
    wave = ["dsp.seqbn-vs-unipelt", "dsp.adapter-small-corpus"]
    root = PROJECT_ROOT / "results"
    table, taken = allocate(committed_verdicts[0], root, data_dir=str(data_dir), claims=wave, longest_run_s=300)
    assert sorted(table["claim"]) == sorted(wave) and (table["taken"] == "yes").all()
    assert {cell.study for cell in taken} == {"dsp"}
    table, taken = allocate(committed_verdicts[0], root, data_dir=str(data_dir), claims=wave, longest_run_s=30)
    assert not taken and table["why"].str.contains(r"over the 0.5 this wave allows").all()
    with pytest.raises(ValueError, match="no judged claim dsp.nothing"):
        allocate(committed_verdicts[0], root, claims=["dsp.nothing"])


def test_the_committed_plan_names_declared_claims_once_and_keeps_to_the_budget():
    """The plan is frozen when written: later claims are not in it, but every claim it names is declared."""
    plan = pd.read_csv(PLAN / "allocation.csv")
    assert plan["claim"].is_unique and set(plan["claim"]) <= set(CLAIMS.names())
    assert plan.loc[plan["taken"] == "yes", "CPU-hours"].sum() <= BUDGET_H
    assert {p.stem for p in PLAN.glob("*.yaml")} == {"dsp_confirm", "fusion_confirm", "peft_imdb_confirm"}


def test_each_committed_plan_lists_the_run_ids_of_its_cells(tmp_path):
    """The report counts the fresh runs landed from the run ids beside each sweep file: they must be its cells'."""
    for sweep in PLAN.rglob("*.yaml"):  # the first plan and each later wave's
        committed = sweep.with_suffix(".run_ids").read_text(encoding="utf-8")
        copy = tmp_path / sweep.name
        copy.write_text(sweep.read_text(encoding="utf-8"), encoding="utf-8")
        assert write_run_ids(copy).read_text(encoding="utf-8") == committed, sweep.name
        assert len(committed.split()) == len(set(committed.split())) > 0


def test_each_chapter_states_its_confirmatory_claims_their_cost_and_what_landed(tmp_path, fake_record):
    plan = tmp_path / "confirm"
    plan.mkdir()
    (plan / "allocation.csv").write_text(
        "claim,taken,CPU-hours,cumulative,why\n"
        'peft.a,yes,0.5,0.5,"2 cells"\npeft.b,no,,,"over the budget"\ndsp.c,yes,1.0,1.5,"1 cell"\n'
    )
    cell = {"task": "rte", "method": "bitfit", "max_train_examples": 32}
    (plan / "peft_imdb_confirm.yaml").write_text(
        yaml.safe_dump({"study": "peft_imdb", "fixed": cell, "axes": {"seed": [4, 5]}})
    )
    write_run_ids(plan / "peft_imdb_confirm.yaml")
    fake_record(FinetuneConfig(**cell, seed=4), folder=tmp_path / "results" / "peft_imdb", train_runtime_s=1800.0)
    note = confirmation_note("peft", tmp_path / "results", plan=plan)
    assert "It took 1 of this chapter's claims (peft.a), estimated at 0.5 CPU-hours." in note
    assert "Left out: over the budget: peft.b." in note
    assert "Landed so far: 1 of the 2 fresh runs" in note and "(1 still to run), 0.5 CPU-hours paid" in note
    assert confirmation_note("houlsby", tmp_path / "results", plan=plan) == ""
    assert (
        "no claim of this chapter has a verdict on fresh seeds alone yet"
        in confirmation_note("peft", tmp_path / "results", [], plan=plan).lower()
    )
    wave = plan / "later-wave"
    wave.mkdir()
    (wave / "allocation.csv").write_text('claim,taken,CPU-hours,cumulative,why\npeft.d,yes,0.2,0.2,"1 cell"\n')
    (wave / "rule.txt").write_text("the same rule, applied to a later wave (peft.d)\n")
    note = confirmation_note("peft", tmp_path / "results", plan=plan)
    assert "(1 still to run), 0.5 CPU-hours paid (training and evaluation). **A later wave** (`later-wave`)." in note
    assert note.endswith(
        "The rule: the same rule, applied to a later wave (peft.d). It took 1 of this chapter's claims "
        "(peft.d), estimated at 0.2 CPU-hours."
    )
    judged = [SimpleNamespace(claim=SimpleNamespace(key=k), verdict="holds") for k in ("peft.a", "dsp.c")]
    note = confirmation_note("peft", tmp_path / "results", judged, plan=plan)
    assert note.endswith("On fresh seeds alone (the table below, confirmatory): peft.a: holds.")
