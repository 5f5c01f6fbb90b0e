"""What every chapter shares: its runs as one frame (`load_runs`), the scale a table's runs were made at, mean ± sd,
and the foundation chapter's verdict per task."""

import json
import shutil
from pathlib import Path

import pandas as pd

from adaptstudy.claims.evidence import VERDICTS
from adaptstudy.reporting.common import format_mean_sd, load_runs, mean_sd, scale_note
from adaptstudy.reporting.costs import partly_timed, run_costs, study_cost
from adaptstudy.reporting.foundation import adapter_gap, compare_with_published
from adaptstudy.reporting.houlsby.published import HOULSBY_2019
from adaptstudy.reporting.selection import (
    choose_learning_rates,
    grid_edge,
    grid_edge_note,
    precision_by,
    precision_by_stage,
)
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.records import ablation_estimated, ablation_seconds


def _run(fake_record, seed, learning_rate):
    config = FinetuneConfig(task="rte", method="full", seed=seed, learning_rate=learning_rate, num_train_epochs=3)
    return fake_record(config, precision_used="bf16", history=[{"epoch": 1.0, "accuracy": 55.0}])


def test_the_scale_note_counts_seeds_per_configuration_and_says_where_it_scored(tmp_path, fake_record):
    for seed in (0, 1, 2):
        _run(fake_record, seed, 1e-4)
    _run(fake_record, 0, 1e-3)  # another rate, one seed
    runs = load_runs(tmp_path)
    assert scale_note(runs) == (
        "Ours: 4 runs on minilm-l6, 1–3 seed(s) per cell, 3 epochs, max_seq_length 128, on cpu in bf16; "
        "metrics on the dev set."
    )
    assert scale_note(runs, scored_on="the test half of dev").endswith("metrics on the test half of dev.")


def test_runs_carry_the_flat_columns_and_each_whole_record(tmp_path, fake_record):
    written = {_run(fake_record, seed, 1e-4)["run_id"]: seed for seed in (0, 1)}
    runs = load_runs(tmp_path)
    assert runs["metric.accuracy"].tolist() == [60.0, 60.0] and set(runs["config.seed"]) == {0, 1}
    for _, run in runs.iterrows():  # row by row, the record is the run's own
        assert run["record"]["run_id"] == run["run_id"] and run["record"]["seed"] == written[run["run_id"]]
        assert run["record"]["history"] == [{"epoch": 1.0, "accuracy": 55.0}]
    assert load_runs(tmp_path / "none").empty


def test_mean_sd_is_the_sample_sd_over_seeds_and_one_value_shows_no_spread():
    assert mean_sd([60.0, 62.0]) == "61.0 ± 1.4 (2)"
    assert mean_sd([60.0]) == "60.0 (1)" and mean_sd([]) == "–"
    assert format_mean_sd(61.0, float("nan"), 1) == "61.0 (1)"  # pandas' sd of one value
    assert format_mean_sd(54.5, 0.0, 1) == "54.5 (1)"  # the fusion table's cells of one seed


def test_the_foundation_gap_is_not_testable_on_one_seed_and_judged_on_three(tmp_path, fake_record):
    costs = dict(train_examples=100, train_runtime_s=1.0, train_examples_per_s=1.0, peak_rss_mb=1.0)
    for seed, (full, adapters) in enumerate([(60.0, 60.5), (60.2, 60.7), (60.1, 60.6)]):
        fake_record(FinetuneConfig(task="rte", method="full", seed=seed), full, **costs)
        if seed == 0:
            one = adapter_gap(compare_with_published(load_runs(tmp_path), HOULSBY_2019), load_runs(tmp_path))
        fake_record(FinetuneConfig(task="rte", method="houlsby", adapter_size=64, seed=seed), adapters, **costs)
    runs = load_runs(tmp_path)
    gap = adapter_gap(compare_with_published(runs, HOULSBY_2019), runs).set_index("task")
    assert set(gap.drop(index="rte")["verdict"]) == {"not testable"}  # no runs
    assert one.set_index("task").loc["rte", "verdict"] == "not testable"  # one seed of adapters, one of full
    gap = gap.loc[["rte"]]
    assert gap["verdict"].tolist() == ["holds"] and gap["seeds"].tolist() == [3]
    assert gap["ours: adapters − full [95% CI]"].iloc[0].startswith("+0.5 [")
    assert set(gap["verdict"]) | set(one["verdict"]) <= set(VERDICTS)


def test_the_cost_says_how_many_runs_trained_on_each_kind_of_machine(tmp_path, fake_record):
    _run(fake_record, 0, 1e-4)  # a record from before machines were recorded
    for seed in (1, 2):
        config = FinetuneConfig(task="rte", method="full", seed=seed)
        fake_record(config, machine={"cpu": "AMD EPYC", "cpu_capability": "AVX2"}, train_runtime_s=1800.0)
    cost = study_cost(load_runs(tmp_path), budget_h=2)
    assert cost.startswith("3 runs: 1.00 h of training")
    assert cost.endswith("Machines: 2 in fp32 on AVX2, 1 not recorded.")  # no precision recorded: fp32


def test_the_precision_note_says_how_the_choosing_and_the_reported_seeds_trained(tmp_path, fake_record):
    _run(fake_record, 0, 1e-4)  # bf16, machine not recorded
    fake_record(
        FinetuneConfig(task="rte", method="full", seed=0, learning_rate=5e-5),
        precision_used="fp32",
        machine={"cpu_capability": "AVX2"},
    )
    for seed in (1, 2):
        _run(fake_record, seed, 1e-4)
    runs = load_runs(tmp_path)
    assert precision_by_stage(runs) == (
        "Runs of the choosing seed 0: 1 in bf16 on an unrecorded CPU, 1 in fp32 on AVX2. "
        "Runs of the reported seeds: 2 in bf16 on an unrecorded CPU."
    )
    assert precision_by_stage(runs[runs["seed"] == 0]).endswith("Runs of the reported seeds: none yet.")
    table = precision_by(runs, ["seed"]).set_index("seed")
    assert table.to_dict("index") == {
        0: {"bf16 on an unrecorded CPU": 1, "fp32 on AVX2": 1},
        1: {"bf16 on an unrecorded CPU": 1, "fp32 on AVX2": 0},
        2: {"bf16 on an unrecorded CPU": 1, "fp32 on AVX2": 0},
    }


def test_an_exact_tie_on_the_selection_split_goes_to_the_larger_rate_whatever_the_load_order():
    """AdapterFusion's stage 1 tied exactly on RTE and SST-2 head only (the same count of examples right)."""
    for rates in ([1e-3, 3e-3, 1e-4], [3e-3, 1e-4, 1e-3]):
        scores = {1e-3: 77.8, 3e-3: 77.8, 1e-4: 70.0}
        grid = pd.DataFrame({"task": "sst2", "config.learning_rate": rates, "score": [scores[r] for r in rates]})
        chosen = choose_learning_rates(grid, ["task"], score="score").iloc[0]
        assert chosen["learning_rate"] == 3e-3 and chosen["choice score"] == 77.8
    grid = pd.DataFrame({"task": "sst2", "config.learning_rate": [1e-3, 3e-3], "score": [77.9, 77.8]})
    assert choose_learning_rates(grid, ["task"], score="score").iloc[0]["learning_rate"] == 1e-3


def test_a_choice_at_either_end_of_its_grid_is_an_edge_and_a_middle_one_or_a_single_rate_is_not():
    tried = pd.Series([1e-4, 3e-4, 1e-3])
    assert [grid_edge(rate, tried) for rate in tried] == ["smallest", "", "largest"]
    assert grid_edge(1e-3, pd.Series([1e-3, 1e-3])) == ""


def test_the_edge_note_names_few_choices_and_counts_many():
    chosen = pd.DataFrame({"method": ["full", "bitfit", "lora"], "edge": ["largest", "", "smallest"]})
    note = grid_edge_note(chosen, lambda row: row.method)
    assert note.startswith("With only a few rates per setting, the largest rate tried won for full; the smallest")
    counted = grid_edge_note(chosen, lambda row: row.method, listed=1)
    assert "2 of 3 choices fell on the edge of their grid (the column *edge*: 1 on the largest" in counted
    assert grid_edge_note(chosen[chosen["edge"] == ""], lambda row: row.method) == ""


def test_runs_resumed_before_the_time_ledger_make_the_hours_a_lower_bound_and_carry_no_speed(tmp_path, fake_record):
    """A run resumed by a version that dropped the seconds before the resume once costed 1 s for a 400 s run, and its
    examples/s (thousands) swamped the chapter's speed column."""
    config = FinetuneConfig(task="rte", method="full")
    fake_record(config, resumed_from_step=648, train_runtime_s=1.0, train_examples_per_s=20000.0)
    fake_record(
        FinetuneConfig(task="rte", method="full", seed=1), resumed_from_step=100, train_runtime_covers="whole run"
    )
    fake_record(FinetuneConfig(task="rte", method="full", seed=2))
    runs = load_runs(tmp_path)
    assert partly_timed(runs).tolist() == [r == 648 for r in runs["resumed_from_step"]]
    assert "1 of the runs were resumed before records kept the seconds" in study_cost(runs, budget_h=2)
    speeds = run_costs(runs, "houlsby")["examples/s"]
    assert speeds.isna().sum() == 1 and speeds.max() < 20000.0


BASE_ABLATION = (
    Path(__file__).parents[1] / "results" / "houlsby_base" / "e1feb7f4df9c8bdb.json"  # MRPC, size 64, seed 1
)


def test_the_cost_counts_the_layer_ablation_timed_or_estimated_from_the_runs_own_evaluations(tmp_path):
    shutil.copy(BASE_ABLATION, tmp_path)  # made before the ablation was timed: 78 spans of 12 layers
    record = json.loads(BASE_ABLATION.read_text())
    per_epoch = [row["eval_runtime_s"] for row in record["history"]]
    runs = load_runs(tmp_path)
    assert ablation_seconds(runs).iloc[0] == 78 * sum(per_epoch) / len(per_epoch)  # about 16.6 minutes
    assert ablation_estimated(runs).tolist() == [True]
    hours = (record["eval_runtime_s"] + 78 * sum(per_epoch) / len(per_epoch)) / 3600
    cost = study_cost(runs, budget_h=10)
    assert f"h of training and {hours:.2f} h of evaluation" in cost
    assert "0.28 h of layer ablation in 1 runs, 0.28 h of it estimated" in cost
    assert run_costs(runs, "houlsby_base")["eval_runtime_s"].iloc[0] == hours * 3600  # the cost tables count it too

    timed = tmp_path / "timed"
    timed.mkdir()
    (timed / BASE_ABLATION.name).write_text(json.dumps({**record, "ablation_runtime_s": 900.0}))
    runs = load_runs(timed)
    assert ablation_seconds(runs).tolist() == [900.0] and not ablation_estimated(runs).any()
    assert "0.25 h of layer ablation in 1 runs." in study_cost(runs, budget_h=10)
