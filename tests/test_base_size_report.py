"""The base-size section's tables, read from the committed base-size records (`results/houlsby_base`)."""

from pathlib import Path

import pandas as pd
import pytest

from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.houlsby_base import claims as hb
from adaptstudy.reporting.houlsby_base import tables as hbt

RECORDS = Path(__file__).parents[1] / "results" / "houlsby_base"


@pytest.fixture(scope="module")
def runs():
    return hbt.label_runs(load_runs(RECORDS))


def test_the_choices_say_which_fell_on_the_grid_edge_and_which_rates_predicted_one_class(runs):
    chosen = hbt.chosen_rates(runs).set_index(["backbone", "task", "label"])
    assert chosen.loc[("mpnet-base", "mrpc", "houlsby-64"), "learning_rate"] == 1e-3  # inside its grid: no edge
    assert chosen.loc[("mpnet-base", "cola", "houlsby-64"), "edge"] == "smallest"
    note = hbt.choices_note(runs)
    assert "the smallest rate tried won for houlsby-64 on COLA (mpnet-base)" in note
    assert "houlsby-64 at 0.003 on COLA (mpnet-base)" in note  # Matthews 0 on the selection split
    assert "houlsby-64 at 0.001 on COLA (mpnet-base)" in note
    assert "full at 5e-5" not in note and "e-05" not in note  # the choices predicted both classes


def test_the_base_size_table_sets_mrpc_beside_the_course_and_the_paper(runs):
    row = hb.base_size_table(runs).set_index("task").loc["mrpc"]
    assert row["metric"] == "f1"
    assert row["ours: full"].startswith("90.6 ± 0.2") and row["ours: houlsby-64"].startswith("90.2 ± 0.8")
    assert row["course (BERT-base, dev accuracy): adapters − full"] == "+0.73"  # 85.78 − 85.05, sources/003
    assert row["paper (BERT-large, GLUE test): size 64 − full"] == "+0.3 (f1)"  # Table 1: 89.6 − 89.3


def test_the_report_grid_adds_fresh_seeds_where_seeds_1_to_3_predate_the_five_task_claims_freeze(runs):
    from adaptstudy.planning import houlsby_base as plan

    assert plan.finished_cells(set(runs["run_id"]))[:2] == [("mpnet-base", "mrpc"), ("mpnet-base", "cola")]
    grid = plan.report_grid(runs, [("mpnet-base", "mrpc")])
    ran, fresh = grid["axes"]  # seeds 1-3 as they ran; the fresh seeds in fp32 on every machine
    assert (ran["backbone"], ran["task"], ran["seed"]) == (
        ["mpnet-base"],
        ["mrpc"],
        [1, 2, 3],
    ) and "precision" not in ran
    assert (fresh["task"], fresh["seed"], fresh["precision"]) == (["mrpc"], [4, 5, 6], ["fp32"])
    for axis in (ran, fresh):
        assert axis["method"]["houlsby"] == {"adapter_size": [64], "learning_rate": [1e-3], "layer_ablation": [True]}
        assert "max_train_examples" not in axis
    assert "backbone" not in grid["fixed"]


def test_the_precision_of_each_task_s_reported_runs_is_said_beside_the_tables(runs):
    """Runs made before the campaign's precision was declared kept the precision their machine picked (bf16 on
    MRPC and CoLA at base size); the fresh seeds train in fp32 everywhere, and the note says which seeds are which."""
    said = "Precision of the reported runs on MPNet, mpnet-base, both arms: CoLA bf16; MRPC bf16."
    assert hbt.precision_note(runs[runs["seed"] <= 3]) == said
    assert hbt.precision_note(runs.iloc[0:0], "minilm-l3") == "No reported runs on minilm-l3 yet."  # no empty output
    mrpc = runs[(runs["task"] == "mrpc") & (runs["seed"].between(1, 3))]
    later = mrpc.assign(seed=mrpc["seed"] + 3, precision_used="fp32", run_id=mrpc["run_id"] + "-fresh")
    note = hbt.precision_note(pd.concat([runs, later], ignore_index=True))
    assert "MRPC bf16 (seeds 1–3), fp32 (seeds 4–6)" in note and "CoLA bf16;" in note


def test_each_parity_claim_is_judged_on_its_own_backbone_and_the_five_task_ones_wait_for_their_runs(runs):
    verdicts = {v.claim.key.split(".")[1]: v for v in hb.verdicts(runs)}
    assert verdicts["parity-64"].used_units() == ["cola", "mrpc"]
    for name in ("parity-64-glue", "parity-64-l3"):
        assert verdicts[name].verdict == "not testable"
    assert "rte, sst2, stsb" in verdicts["parity-64-glue"].reasons()  # MRPC and CoLA have runs; the rest not yet
    assert "cola, mrpc, rte, sst2, stsb" in verdicts["parity-64-l3"].reasons()  # no minilm-l3 run yet


def test_the_scale_axis_takes_the_chapters_small_runs_made_as_the_others_and_marks_the_published_gaps(runs):
    from adaptstudy.reporting.houlsby_base.scale import MEAN, as_other_backbones, scale_points, scale_table

    small = load_runs(RECORDS.parent / "houlsby")
    alike = as_other_backbones(small)
    assert set(alike["label"]) == {"full", "houlsby-64"}
    assert (alike["record"].map(lambda r: r["config"]["num_train_epochs"]) == 3).all()  # no 20-epoch adapters
    points = scale_points(runs, small).set_index(["source", "backbone", "task"]).sort_index()
    ours_small = points.loc[("ours", "minilm-l6")]
    assert ours_small.loc["rte", "note"] == "set aside on selection-stage evidence"  # as the claim's regime does
    assert ours_small.loc[MEAN, "note"] == "over cola, mrpc, sst2, stsb"
    assert ours_small.loc[MEAN, "interval"] == "-1.3 [-2.5, -0.1]"
    assert round(points.loc[("ours", "mpnet-base", "mrpc"), "params (M)"]) == 109
    paper = points.loc[("paper (BERT-large, GLUE test)", "BERT-large")]
    assert round(paper.loc[MEAN, "effect"], 2) == -1.12  # Table 1, size 64 − full over our five tasks
    assert round(points.loc[("course (BERT-base, dev accuracy)", "BERT-base", "cola"), "effect"], 2) == -0.96
    table = scale_table(scale_points(runs, small))
    assert list(table["task"]) == ["cola", "mrpc", "rte", "sst2", "stsb", MEAN]
    assert "minilm-l6 (23M)" in table.columns and "mpnet-base (109M)" in table.columns


def test_table_1_at_base_size_sets_our_rows_beside_the_courses_and_the_papers(runs):
    table = hbt.table_1(runs).set_index(["source", "method"])
    ours = table.loc[("ours", "full")]
    assert ours["mrpc"].startswith("90.6 ± 0.2") and ours["sst2"] == "–"  # not run yet: a dash, not a number
    assert table.loc[("course", "houlsby-64"), "mrpc"] == "85.78"
    paper = table.loc[("paper", "houlsby-64")]
    assert (paper["rte"], paper["Table 1's total (its 9 tasks)"]) == ("68.8", "79.6")
    assert paper["average (tasks run)"] == "73.2"  # CoLA and MRPC, the tasks both our arms ran: (56.9 + 89.6) / 2
