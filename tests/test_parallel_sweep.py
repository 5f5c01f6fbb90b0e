"""Sweeps beyond one process: Ray workers write what the in-process runner writes, a killed worker's cell resumes
from its checkpoint, Ctrl-C stops the workers, and two sweeps at once never train a cell twice."""

import os
import re
import secrets
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_sweep import records, sweep_process, wait_for, write_grid

from adaptstudy.common.files import LOCKS
from adaptstudy.launch import sweep as sw
from adaptstudy.launch.allocator import tcmalloc_library
from adaptstudy.runs.base import ConfigError

ROOT = Path(__file__).resolve().parents[1]
ALLOCATOR = "tcmalloc" if tcmalloc_library() and os.environ.get("ADAPTSTUDY_ALLOCATOR") != "system" else "system"
LONG_CELLS = {"method": "houlsby", "adapter_size": 8, "max_train_examples": 96, "batch_size": 8}
LONG_CELLS |= {"checkpoint_every_s": 0}  # 12 steps, a checkpoint after each


def sweep_command(grid: Path, results: Path, *options: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "adaptstudy.sweep", str(grid), "--results-dir", str(results), *options]
    return subprocess.run(command, capture_output=True, text=True, timeout=900)


def holder_pid(results: Path, run_id: str) -> int:
    """The pid of the process training `run_id` (its lock file names it)."""
    return int((results / LOCKS / f"{run_id}.lock").read_text().split()[1])


def checkpointed(results: Path, run_id: str, after_step: int = 0) -> bool:
    """A whole checkpoint of `run_id` past `after_step` exists."""
    done = (results / sw.CHECKPOINTS / run_id).glob("checkpoint-*/adaptstudy.json")
    return any(int(marker.parent.name.split("-")[-1]) > after_step for marker in done)


def test_workers_and_threads_below_one_are_one_clear_error_before_anything_runs(tmp_path):
    p = sw.plan(write_grid(tmp_path / "g.yaml", {"seed": [0]}), tmp_path / "r")
    for bad in ({"workers": 0}, {"threads": 0}):
        with pytest.raises(ConfigError, match="must be at least 1"):
            sw.run(p, progress=False, **bad)
    assert [c.status for c in p.cells] == ["todo"]


def test_without_ray_the_error_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    p = sw.plan(write_grid(tmp_path / "g.yaml", {"seed": [0]}), tmp_path / "r")
    with pytest.raises(ConfigError, match=r"pip install 'adaptstudy\[cluster\]'"):
        sw.run(p, progress=False, workers=2)


@pytest.mark.slow
def test_two_ray_workers_write_the_records_the_in_process_run_writes(tmp_path, data_dir):
    """The smoke grid (4 cells) in process and on a local Ray with 2 workers, one thread per cell both times."""
    grid = ROOT / "params/smoke/sweep.yaml"
    here, there = tmp_path / "in-process", tmp_path / "ray"
    assert sweep_command(grid, here, "--threads", "1").returncode == 0
    finished = sweep_command(grid, there, "--workers", "2", "--threads", "1")
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert "4 cells; ran 4 ok" in finished.stdout
    reference, done = records(here), records(there)
    assert set(done) == set(reference) == {c.run_id for c in sw.plan(grid, there).cells}
    for run_id, record in done.items():
        assert record["status"] == "ok" and record["torch_threads"] == reference[run_id]["torch_threads"] == 1
        # the command restarted itself under tcmalloc where installed, and Ray's workers inherited it
        assert record["machine"]["allocator"] == reference[run_id]["machine"]["allocator"] == ALLOCATOR
        assert record["metrics"] == reference[run_id]["metrics"]
        assert record["train_loss"] == pytest.approx(reference[run_id]["train_loss"], rel=1e-6)
        assert record["predictions"] == reference[run_id]["predictions"]
    assert not (there / sw.CHECKPOINTS).exists()


@pytest.mark.slow
def test_a_ray_worker_killed_in_its_last_epoch_is_retried_and_resumes_to_the_uninterrupted_record(tmp_path, data_dir):
    """Killed in the second (last) epoch, the retried cell resumes from its checkpoint and ends with the record an
    uninterrupted run writes: the same training loss, per-epoch losses and predictions."""
    grid = write_grid(tmp_path / "g.yaml", {"seed": [5, 6]}, fixed={**LONG_CELLS, "num_train_epochs": 2})
    results, clean = tmp_path / "r", tmp_path / "clean"
    killed, other = (c.run_id for c in sw.plan(grid, results).cells)
    proc = sweep_process(grid, results, "--workers", "2", "--threads", "1", stdout=subprocess.PIPE)
    wait_for(lambda: checkpointed(results, killed, after_step=12), 600, proc)  # 12 steps an epoch
    os.kill(holder_pid(results, killed), signal.SIGKILL)  # the worker process, not the sweep
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out[-2000:]
    done = records(results)  # every file parses: none is half-written
    assert set(done) == {killed, other} and all(r["status"] == "ok" for r in done.values())
    assert done[killed]["resumed_from_step"] > 12 and done[other]["resumed_from_step"] is None
    assert done[killed]["resumed_order"] == "kept"
    assert "2 cells; ran 2 ok" in out
    assert not (results / sw.CHECKPOINTS).exists()
    assert sweep_command(grid, clean, "--threads", "1").returncode == 0
    reference = records(clean)[killed]
    assert done[killed]["train_loss"] == pytest.approx(reference["train_loss"], rel=1e-12, abs=0)
    assert [row["train_loss"] for row in done[killed]["history"]] == [r["train_loss"] for r in reference["history"]]
    assert done[killed]["predictions"] == reference["predictions"]


@pytest.mark.slow
def test_ctrl_c_stops_the_ray_workers_and_a_rerun_resumes_the_interrupted_cell(tmp_path, data_dir):
    grid = write_grid(tmp_path / "g.yaml", {"seed": [5]}, fixed=LONG_CELLS)
    results = tmp_path / "r"
    (cell,) = (c.run_id for c in sw.plan(grid, results).cells)
    proc = sweep_process(grid, results, "--workers", "2", "--threads", "1")
    wait_for(lambda: checkpointed(results, cell), 600, proc)
    worker = holder_pid(results, cell)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) == 130
    assert not _alive(worker), "the worker outlived the sweep"
    assert not list(results.glob("*.json")) and checkpointed(results, cell)
    assert sweep_command(grid, results, "--workers", "2", "--threads", "1").returncode == 0
    (record,) = records(results).values()
    assert record["status"] == "ok" and record["resumed_from_step"] >= 1


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "zombie" in status.read_text())


@pytest.mark.slow
def test_two_sweeps_started_together_train_each_cell_once(tmp_path, data_dir):
    grid = write_grid(tmp_path / "g.yaml", {"seed": [0, 1, 2]}, fixed={"method": "houlsby", "adapter_size": 8})
    results = tmp_path / "r"
    first, second = (sweep_process(grid, results, "--threads", "1", stdout=subprocess.PIPE) for _ in range(2))
    outputs = [p.communicate(timeout=900)[0] for p in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0]
    trained = [int(re.search(r"ran (\d+) ok", out).group(1)) for out in outputs]
    assert sum(trained) == 3, outputs  # a cell the other sweep held was left to it, or skipped once it was done
    done = records(results)
    assert len(done) == 3 and all(r["status"] == "ok" for r in done.values())


@pytest.mark.slow
def test_a_prerequisite_two_ray_cells_start_from_together_is_trained_once(tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))  # the workers see it: no artifact there yet
    warmup = {"corpus": "task:rte", "mode": "head", "max_steps": 2, "learning_rate": 3e-3, "batch_size": 8}
    warmup |= {"corpus_fraction": 0.01, "held_out_fraction": 0.01, "max_seq_length": 48}
    grid = write_grid(tmp_path / "g.yaml", {"seed": [0, 1]}, fixed={"method": "bitfit", "init_from": warmup})
    results = tmp_path / "r"
    finished = sweep_command(grid, results, "--workers", "2", "--threads", "1")
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert len(records(results)) == 2 and all(r["status"] == "ok" for r in records(results).values())
    (pretraining,) = records(tmp_path / "r_pretrain").values()
    assert pretraining["status"] == "ok" and pretraining["steps"] == 2
    # trained once, as a cell of its own before the two (the runner says so; Ray passes the workers' output on)
    assert finished.stdout.count(f"training pretraining (task:rte, head) first: {pretraining['run_id']}") == 1
    assert "first 1 of 1 prerequisites trained" in finished.stdout


def test_a_ray_that_cannot_start_or_connect_is_one_line_saying_what_to_do(tmp_path, monkeypatch, capsys):
    """Token auth on the cluster (ConnectionError after 20 s of retries) and a local start that timed out were
    tracebacks; `RAY_ADDRESS` with --workers 2 crashed ("num_cpus and num_gpus must not be provided")."""
    import ray

    seen = []

    def init(**kwargs):
        seen.append(kwargs)
        raise ConnectionError("Failed to connect to GCS at address 10.0.0.1:6379 within 20 seconds.\nmore")

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    grid = write_grid(tmp_path / "g.yaml", {"seed": [0]})
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert sw.main([str(grid), "--results-dir", str(tmp_path / "r"), "--workers", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "could not connect to the Ray cluster at 10.0.0.1:6379" in err
    assert "RAY_AUTH_MODE=token" in err and seen[-1]["address"] == "10.0.0.1:6379" and "num_cpus" not in seen[-1]
    monkeypatch.delenv("RAY_ADDRESS")
    assert sw.main([str(grid), "--results-dir", str(tmp_path / "r"), "--workers", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the local Ray did not start" in err and "rerun the same command" in err


@pytest.mark.slow
def test_ray_address_in_the_environment_runs_the_sweep_on_that_cluster(tmp_path, data_dir):
    ray_bin = Path(sys.executable).with_name("ray")
    port = "6391"
    token = tmp_path / "auth_token"  # a cluster with token authentication, as Ray starts them by default
    token.write_text(secrets.token_hex(32))
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    started = subprocess.run(
        [str(ray_bin), "start", "--head", "--port", port, "--num-cpus", "2", "--include-dashboard", "false"],
        capture_output=True, text=True, env=env, timeout=180,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr[-2000:]
    try:
        grid = write_grid(tmp_path / "g.yaml", {"seed": [0, 1]})
        command = [sys.executable, "-m", "adaptstudy.sweep", str(grid), "--results-dir", str(tmp_path / "r")]
        done = subprocess.run(
            [*command, "--workers", "2", "--threads", "1"],
            capture_output=True, text=True, timeout=900,
            env={**env, "RAY_ADDRESS": f"127.0.0.1:{port}"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert "2 cells; ran 2 ok" in done.stdout
    finally:
        subprocess.run([str(ray_bin), "stop", "--force"], capture_output=True, env=env, timeout=120)
