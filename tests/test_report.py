"""What every chapter shares: its runs as one frame (`load_runs`), the scale a table's runs were made at, mean ± sd,
the claim rows."""

import pandas as pd

from adaptstudy.reporting.common import claim_row, claims_table, format_mean_sd, load_runs, mean_sd, not_run, scale_note
from adaptstudy.runs.finetune_config import FinetuneConfig


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


def test_mean_sd_is_the_sample_sd_over_seeds_and_zero_for_one():
    assert mean_sd([60.0, 62.0]) == "61.0 ± 1.4 (2)"
    assert mean_sd([60.0]) == "60.0 ± 0.0 (1)" and mean_sd([]) == "–"
    assert format_mean_sd(61.0, float("nan"), 1) == "61.0 ± 0.0 (1)"  # pandas' sd of one value


def test_claim_rows_read_as_the_chapters_show_them():
    table = claims_table([claim_row("a", "+1.0", True), claim_row("b", "-1.0", False, partly=True), not_run("c")])
    assert table.equals(
        pd.DataFrame(
            {"claim": ["a", "b", "c"], "ours": ["+1.0", "-1.0", "–"], "verdict": ["holds", "partly", "not run yet"]}
        )
    )
