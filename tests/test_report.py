"""Shared report sentences: the scale a table's runs were made at."""

from adaptstudy.reporting.common import scale_note
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.records import base_record, records_frame, write_record


def _run(folder, seed, learning_rate):
    record = base_record(
        FinetuneConfig(task="rte", method="full", seed=seed, learning_rate=learning_rate, num_train_epochs=3)
    )
    record.update(
        status="ok",
        metrics={"accuracy": 60.0},
        main_metric="accuracy",
        main_metric_value=60.0,
        trainable_params=1,
        total_params=1,
        train_runtime_s=1.0,
        train_examples_per_s=1.0,
        peak_rss_mb=1.0,
        device="cpu",
        precision_used="bf16",
        finished_at="2026-11-25T00:00:00+00:00",
    )
    write_record(record, folder)


def test_the_scale_note_counts_seeds_per_configuration_and_says_where_it_scored(tmp_path):
    for seed in (0, 1, 2):
        _run(tmp_path, seed, 1e-4)
    _run(tmp_path, 0, 1e-3)  # another rate, one seed
    runs = records_frame(tmp_path)
    assert scale_note(runs) == (
        "Ours: 4 runs on minilm-l6, 1–3 seed(s) per cell, 3 epochs, max_seq_length 128, on cpu in bf16; "
        "metrics on the dev set."
    )
    assert scale_note(runs, scored_on="the test half of dev").endswith("metrics on the test half of dev.")
