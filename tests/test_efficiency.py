"""The Efficiency page's sweep comparison: the committed measurement, read as the page shows it."""

import copy
import json
from pathlib import Path

import pytest

from adaptstudy.reporting.efficiency import PARALLEL_GAIN, load_benchmark, parallel_note, parallel_table

COMMITTED = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "parallel_sweep.json"


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(COMMITTED.read_text())


def test_the_committed_comparison_ran_the_same_cells_both_ways_on_a_described_machine(committed):
    here, ray = committed["engines"]["in process"], committed["engines"]["ray"]
    assert here["cells"] == ray["cells"] == 6 and set(here["metrics"]) == set(ray["metrics"])
    assert here["torch_threads"] == [committed["machine"]["cores"]] and ray["torch_threads"] == [1]
    assert committed["speedup"] == pytest.approx(ray["cells_per_hour"] / here["cells_per_hour"])
    assert {"cpu", "cores", "cpu_capability", "precision"} <= set(committed["machine"])


def test_the_table_has_a_row_per_engine_with_cells_per_hour(committed):
    table = parallel_table(committed).set_index("engine")
    assert list(table.index) == ["in process", "ray"]
    assert table.loc["ray", "cells per hour"] == pytest.approx(committed["engines"]["ray"]["cells_per_hour"])
    minutes = (
        table["training and evaluation, over the cells at once (min)"] + table["the rest: start-up, loading (min)"]
    )
    assert minutes.tolist() == pytest.approx(table["wall (min)"].tolist())


@pytest.mark.parametrize("gain", [0.96, 1.2])
def test_the_note_gives_the_ratio_and_keeps_one_worker_the_default_unless_two_beat_it(committed, gain):
    benchmark = copy.deepcopy(committed)
    benchmark["speedup"] = gain
    note = parallel_note(benchmark)
    assert f"**{gain:.2f}×**" in note and committed["machine"]["cpu"] in note
    if gain >= PARALLEL_GAIN:
        assert "worth running with `--workers 2 --threads 1`" in note
    else:
        assert "Two workers did not beat one process here, so on a CPU the default stays one worker" in note


def test_a_missing_measurement_says_how_to_make_it(tmp_path):
    assert "benchmarks/parallel_sweep.py" in parallel_note(load_benchmark(tmp_path / "none.json"))
    assert parallel_table(load_benchmark(tmp_path / "none.json")).empty
