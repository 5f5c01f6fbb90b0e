"""Sweeps that survive: validation before training, skipping, failures, kills, resume, determinism."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from adaptstudy.common.files import mark_complete, run_lock
from adaptstudy.launch import sweep as sw
from adaptstudy.launch.cells import CHECKPOINTS
from adaptstudy.reporting.across.hyperformer import tables as hy
from adaptstudy.reporting.common import load_runs
from adaptstudy.runs.base import ConfigError
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.notebook_params import DataPrepParams
from adaptstudy.runs.pretrain_config import PretrainConfig
from adaptstudy.training.checkpoints import last_complete_checkpoint
from adaptstudy.training.finetune import finetune

ROOT = Path(__file__).resolve().parents[1]
TINY = {
    "task": "rte",
    "backbone": "minilm-l6",
    "num_train_epochs": 1,
    "max_train_examples": 32,
    "max_seq_length": 48,
    "batch_size": 16,
    "eval_batch_size": 64,
}


def write_grid(path: Path, axes: dict, fixed: dict | None = None, **extra) -> Path:
    path.write_text(yaml.safe_dump({"study": "t", "fixed": {**TINY, **(fixed or {})}, "axes": axes, **extra}))
    return path


def records(folder: Path) -> dict[str, dict]:
    out = {}
    for p in folder.iterdir():
        assert not p.name.startswith(".tmp-"), f"leftover temporary file {p}"
        if p.suffix == ".json":
            out[p.stem] = json.loads(p.read_text())  # every file parses: none is half-written
    return out


def test_grid_expands_per_method_axes(tmp_path):
    grid = write_grid(
        tmp_path / "g.yaml", {"seed": [0, 1], "method": {"full": {}, "houlsby": {"adapter_size": [8, 64]}}}
    )
    p = sw.plan(grid, tmp_path / "r")
    assert len(p.cells) == 6 and {c.status for c in p.cells} == {"todo"}
    assert sorted((c.config.method, c.config.adapter_size, c.config.seed) for c in p.cells)[:2] == [
        ("full", None, 0),
        ("full", None, 1),
    ]
    assert len({c.run_id for c in p.cells}) == 6


@pytest.mark.parametrize(
    "content, message",
    [
        ({"study": "t", "axes": {"seed": [0]}, "fixd": {}}, r"unknown sweep key .*'fixd' \(did you mean 'fixed'\?\)"),
        ({"study": "t", "axes": {}}, r"axes: .*at least 1 item"),
        ({"study": "t", "axes": {"seed": []}}, r"axis 'seed' is empty"),
        (
            {"study": "t", "fixed": {"lerning_rate": 1e-3}, "axes": {"seed": [0]}},
            r"cell 1 .*unknown setting 'lerning_rate' \(did you mean 'learning_rate'\?\)",
        ),
        (
            {"study": "t", "fixed": {"method": "full"}, "axes": {"adapter_size": [8]}},
            r"adapter_size=8 does not apply to method 'full'",
        ),
        ({"study": "t", "axes": {"seed": ["zero"]}}, r"setting seed: .*\(got 'zero'\)"),
        ({"study": "t", "fixed": {"task": "rtee"}, "axes": {"seed": [0]}}, r"cell 1 .*unknown task 'rtee'"),
        ({"study": "t", "axes": {"seed": [0, 0]}}, r"cells 1 and 2 are the same run"),
        ("- just a list", r"expected a mapping"),
    ],
)
def test_bad_grids_are_one_clear_error_before_anything_runs(tmp_path, content, message):
    path = tmp_path / "g.yaml"
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    with pytest.raises(ConfigError, match=message):
        sw.plan(path, tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_yaml_is_data_not_code(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("study: t\naxes: {seed: !!python/object/apply:os.system ['echo pwned']}\n")
    with pytest.raises(ConfigError, match="is not valid YAML: could not determine a constructor for the tag"):
        sw.plan(path, tmp_path / "r")


def test_a_failing_cell_is_recorded_and_the_others_run_and_a_rerun_retries_it(tmp_path, data_dir):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "train.tsv").write_text("sentence\tlabel\ngood\t0\nno label column\n")
    (bad / "dev.tsv").write_text("sentence\tlabel\nfine\t1\n")
    broken = {
        "name": "broken",
        "format": "tsv",
        "files": {"train": str(bad / "train.tsv"), "dev": str(bad / "dev.tsv")},
        "files_outside_data_dir": True,  # absolute paths: allowed when said
        "text_fields": ["sentence"],
        "label_field": "label",
        "labels": ["0", "1"],
        "metrics": ["accuracy"],
        "main_metric": "accuracy",
    }
    grid = write_grid(tmp_path / "g.yaml", {"task": [broken, "rte"]}, fixed={"method": "houlsby", "adapter_size": 8})
    p = sw.run(sw.plan(grid, tmp_path / "r"), progress=False)
    assert [c.status for c in p.cells] == ["failed", "ok"]
    with pytest.raises(sw.SweepFailed, match=r"1 of 2 cells failed .*MalformedDataError.*train.tsv:3"):
        p.raise_if_failed()
    saved = records(tmp_path / "r")
    failed = saved[p.cells[0].run_id]
    assert failed["status"] == "failed" and "MalformedDataError" in failed["traceback"]
    assert saved[p.cells[1].run_id]["status"] == "ok"
    again = sw.plan(grid, tmp_path / "r")
    assert [c.status for c in again.cells] == ["todo", "done"]  # the failed cell is retried, the ok one skipped


def test_same_config_and_seed_give_the_same_metrics(tmp_path, data_dir):
    config = FinetuneConfig(**TINY, method="houlsby", adapter_size=8, seed=3)
    a, b = finetune(config, write=False), finetune(config, write=False)
    assert a["metrics"]["accuracy"] == pytest.approx(b["metrics"]["accuracy"], abs=1e-6)
    assert a["train_loss"] == pytest.approx(b["train_loss"], abs=1e-6)


def test_max_steps_trains_that_many_updates_whatever_the_data_size(data_dir):
    """Learning curves hold the number of updates fixed: 8 examples in one batch of 16 make 6 epochs of 6 steps."""
    config = FinetuneConfig(**TINY | {"max_train_examples": 8}, method="bitfit", max_steps=6, seed=0)
    record = finetune(config, write=False)
    assert record["train_examples"] == 8
    assert [row["epoch"] for row in record["history"]] == [2.0, 4.0, 6.0]  # the loss logged every max_steps // 3 steps
    assert "accuracy" in record["history"][-1] and all("train_loss" in row for row in record["history"])
    assert record["train_examples_per_s"] == pytest.approx(8 * 6 / record["train_runtime_s"])
    assert FinetuneConfig(**TINY | {"max_train_examples": 8}, method="bitfit", seed=0).run_id != config.run_id


def sweep_process(grid: Path, results: Path, *options: str, stdout=subprocess.DEVNULL) -> subprocess.Popen:
    """`python -m adaptstudy.sweep GRID --results-dir RESULTS [options]` started in the background."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "adaptstudy.sweep", str(grid), "--results-dir", str(results), *options],
        env=env,
        stdout=stdout,
        stderr=subprocess.DEVNULL,
        text=True,
        # as from a terminal: a shell starts background jobs (`make test &`) with Ctrl-C ignored, and Python then
        # never raises KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def wait_for(condition, timeout: float, proc: subprocess.Popen):
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, "the sweep ended before it could be killed"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


@pytest.mark.slow
def test_sigkill_in_a_cell_then_rerun_gives_the_uninterrupted_records(tmp_path, data_dir):
    grid = write_grid(tmp_path / "g.yaml", {"seed": [0, 1, 2]}, fixed={"method": "houlsby", "adapter_size": 8})
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    assert (
        subprocess.run(
            [sys.executable, "-m", "adaptstudy.sweep", str(grid), "--results-dir", str(clean)], capture_output=True
        ).returncode
        == 0
    )

    def in_a_later_cell() -> bool:  # a record written, and a cell without one holds its lock (it has started)
        done = {p.stem for p in killed.glob("*.json")}
        return bool(done) and any(lock.stem not in done for lock in killed.glob(".locks/*.lock"))

    proc = sweep_process(grid, killed)
    wait_for(in_a_later_cell, 300, proc)  # not a fixed sleep: on a fast machine the tiny cells all end within 2 s
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = records(killed)
    assert 1 <= len(partial) < 3 and all(r["status"] == "ok" for r in partial.values())

    assert sweep_process(grid, killed).wait() == 0
    done, reference = records(killed), records(clean)
    assert set(done) == set(reference) and len(done) == 3
    for run_id, record in done.items():
        assert record["status"] == "ok"
        assert record["metrics"] == pytest.approx(reference[run_id]["metrics"], abs=1e-6)


@pytest.mark.slow
def test_a_killed_long_cell_resumes_from_its_checkpoint(tmp_path, data_dir):
    fixed = {"method": "houlsby", "adapter_size": 8, "max_train_examples": 96, "batch_size": 8, "checkpoint_every_s": 0}
    grid = write_grid(tmp_path / "g.yaml", {"seed": [5]}, fixed=fixed)
    results = tmp_path / "r"
    proc = sweep_process(grid, results)
    wait_for(lambda: any(results.glob(".checkpoints/*/checkpoint-*/adaptstudy.json")), 300, proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not list(results.glob("*.json"))
    assert sweep_process(grid, results).wait() == 0
    (record,) = records(results).values()
    assert record["status"] == "ok" and record["resumed_from_step"] >= 1
    assert not (results / ".checkpoints").exists()
    uninterrupted = finetune(FinetuneConfig(**TINY | fixed, seed=5), write=False)
    assert record["metrics"]["accuracy"] == pytest.approx(uninterrupted["metrics"]["accuracy"], abs=1e-6)
    assert record["train_loss"] == pytest.approx(uninterrupted["train_loss"], rel=1e-5)  # all steps, not the last few
    # the epoch's loss too, though it was cut by the kill: the Trainer logs it to 4 decimals
    assert record["history"][0]["train_loss"] == pytest.approx(uninterrupted["history"][0]["train_loss"], abs=1e-4)
    assert " then " not in record["precision_used"]  # resumed on the same machine: one precision, whatever the load
    assert record["precision_used"] == uninterrupted["precision_used"]


def test_a_checkpoint_cut_off_while_saving_is_never_resumed_from(tmp_path):
    for step, complete in ((4, True), (8, True), (12, False)):  # the kill landed while step 12 was being saved
        (tmp_path / f"checkpoint-{step}").mkdir()
        if complete:
            mark_complete(tmp_path / f"checkpoint-{step}", {"kind": "checkpoint", "step": step})
    assert last_complete_checkpoint(tmp_path) == str(tmp_path / "checkpoint-8")
    assert not (tmp_path / "checkpoint-12").exists()
    assert last_complete_checkpoint(tmp_path / "missing") is None


@pytest.mark.slow
def test_a_multitask_grid_runs_each_cell_once_under_its_own_run_id(tmp_path, data_dir):
    """The smoke grid of the Hyperformer chapter: multi-task and single-task cells, then a rerun skips them all."""
    p = sw.run(sw.plan(ROOT / "params/smoke/multitask.yaml", tmp_path), progress=False)
    p.raise_if_failed()
    saved = records(tmp_path)
    assert sorted((r["task"], r["method"]) for r in saved.values()) == [
        ("mrpc", "houlsby"),
        ("rte", "houlsby"),
        ("rte+mrpc", "houlsby"),
        ("rte+mrpc", "hyperformer++"),
    ]
    assert all(r["config"]["tasks"] == r["task"].split("+") for r in saved.values())
    assert [c.status for c in sw.plan(ROOT / "params/smoke/multitask.yaml", tmp_path).cells] == ["done"] * 4
    rows = hy.label_runs(load_runs(tmp_path)).set_index("label")
    assert sorted(rows.index) == ["hyperformer++", "mt-adapters", "st-adapters", "st-adapters"]


def test_a_cell_whose_record_appeared_meanwhile_is_not_run_again(tmp_path, fake_record):
    """An earlier cell can make a later one's run (a fusion cell trains its source adapters, which are ST-A cells)."""
    grid = write_grid(tmp_path / "g.yaml", {"seed": [0]}, fixed={"method": "houlsby", "adapter_size": 8})
    p = sw.plan(grid, tmp_path / "r")
    fake_record(p.cells[0].config, folder=tmp_path / "r")
    assert [c.status for c in sw.run(p, progress=False).cells] == ["skipped"]  # would take seconds to train


def test_checkpoints_are_ignored_by_git():
    """A sweep's in-flight checkpoints hold model and optimizer state (hundreds of MB): never committed."""
    probe = f"results/houlsby/{CHECKPOINTS}/0123456789abcdef/checkpoint-10/optimizer.pt"
    ignored = subprocess.run(["git", "check-ignore", "-q", probe], cwd=ROOT)
    assert ignored.returncode == 0, f"{probe} is not ignored by .gitignore"


@pytest.mark.parametrize("path", sorted((ROOT / "params").glob("*/*.yaml")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_committed_grid_and_profile_validates_offline(path):
    """A user's first command must not fail on a typo in a committed file (Hub backbones' depth is known offline)."""
    raw = yaml.safe_load(path.read_text())
    if "axes" in raw:
        assert sw.plan(path, Path("/nonexistent-results")).cells
    elif "mode" in raw:  # 02_dapt / 03_tapt parameters
        task = raw.pop("task", None)
        PretrainConfig(**raw, **({"corpus": f"task:{task}"} if task else {}))
    elif "method" in raw:
        FinetuneConfig(**raw)
    else:
        DataPrepParams(**raw)


def test_a_results_dir_that_cannot_be_written_is_one_clear_error_when_the_sweep_is_planned(tmp_path):
    grid = write_grid(tmp_path / "g.yaml", {"seed": [0]})
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match=rf"results_dir {blocker}/r: {blocker} is a file"):
        sw.plan(grid, blocker / "r")


def test_a_cell_another_sweep_is_training_is_left_to_it_and_its_fresh_temporary_files_are_kept(tmp_path, data_dir):
    grid = write_grid(tmp_path / "g.yaml", {"seed": [0, 1]}, fixed={"method": "houlsby", "adapter_size": 8})
    results = tmp_path / "r"
    results.mkdir()
    fresh, stale = results / ".tmp-writing.json", results / ".tmp-killed.json"
    fresh.write_text("{")  # another sweep is writing this record right now
    stale.write_text("{")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))  # left by a writer killed an hour ago
    p = sw.plan(grid, results)
    assert fresh.exists() and not stale.exists()
    fresh.unlink()
    with run_lock(results, p.cells[0].run_id) as held:  # the other sweep, training cell 1
        assert held
        sw.run(p, progress=False)
    assert [c.status for c in p.cells] == ["elsewhere", "ok"]
    assert set(records(results)) == {p.cells[1].run_id}  # cell 1 is not trained twice
    assert "1 left to another sweep training them" in p.summary()
