"""A sweep's cells as Ray tasks: on a local Ray started on demand (`--workers N`) or an existing cluster
(`--ray-address`).

Each task does what the in-process runner does with a cell (`cells.attempt`): the same run id, record and
checkpoints under `<results_dir>/.checkpoints/`, the same per-cell lock. So a task Ray retries after its worker died
resumes from the last checkpoint, and two sweeps never train one cell twice. A prerequisite several cells need
(a source adapter, a pretraining artifact) is trained under a lock in the cache, once. Each task asks Ray for one
GPU where the cluster has them, else for `threads` CPUs, and gives torch as many threads. At most `workers` cells
run at once. Ctrl-C cancels the running tasks (their checkpoints stay for the next run) and stops a Ray it started.

A cluster needs the project installed on every node, and `results_dir`, the data and the cache
(`ADAPTSTUDY_CACHE`) on a filesystem every node sees under the same path (the driver's `ADAPTSTUDY_*` and
Hugging Face variables are passed to the workers).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from adaptstudy.launch.cells import NOSPACE, Cell, CellConfig, attempt, describe
from adaptstudy.runs.base import ConfigError

RETRIES = 3  # a task whose worker died (killed, out of memory, node lost) is run again, from its checkpoint
PASSED_ON = ("ADAPTSTUDY_", "HF_", "TRANSFORMERS_", "TOKENIZERS_")  # environment the workers need to see


def default_threads(workers: int) -> int:
    """Threads per cell on this machine: its cores shared among the workers."""
    return max(1, (os.cpu_count() or 1) // workers)


def run_on_ray(
    cells: list[Cell],
    needs: dict[str, set[str]],
    results_dir: Path,
    workers: int,
    threads: int,
    address: str | None = None,
    progress: bool = True,
) -> None:
    """Run `cells` as Ray tasks, at most `workers` at once, each once none of the run ids it `needs` (its pending
    prerequisites, cells of the list) is still to run, first come first; set each one's status (`ok`, `failed`,
    `done` or `elsewhere`); cells interrupted by Ctrl-C stay `todo`."""
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        _start(ray, workers, threads, address)
    try:
        gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0
        task = ray.remote(_cell_task).options(
            num_cpus=threads, num_gpus=gpus, max_retries=RETRIES, retry_exceptions=False, name="adaptstudy-cell"
        )
        _drain(ray, task, cells, needs, results_dir, workers, threads, progress)
    finally:
        if started:
            ray.shutdown()


def next_ready(pending: list[Cell], running: list[Cell], needs: dict[str, set[str]]) -> Cell | None:
    """The first of `pending` that needs none of the cells pending or running; with nothing running, the first
    pending (a prerequisite outside the list trains inside it, as in process)."""
    waiting = {c.run_id for c in (*pending, *running)}
    ready = next((c for c in pending if not needs.get(c.run_id, set()) & waiting), None)
    return ready if ready is not None or running else next(iter(pending), None)


def _drain(
    ray, task, cells: list[Cell], needs: dict[str, set[str]], results_dir: Path, workers: int, threads: int, progress
) -> None:
    pending, running, here = list(cells), {}, os.getcwd()
    try:
        while pending or running:
            while len(running) < workers and (cell := next_ready(pending, list(running.values()), needs)):
                pending.remove(cell)
                if progress:
                    print(f"[{len(cells) - len(pending)}/{len(cells)}] {cell.run_id} {describe(cell)}", flush=True)
                running[task.remote(cell.config, str(results_dir), threads, here, cell.needed_by)] = cell
            ready, _ = ray.wait(list(running), num_returns=1)
            cell = running.pop(ready[0])
            try:
                cell.status, cell.error = ray.get(ready[0])
            except ray.exceptions.RayError as e:  # the task died RETRIES + 1 times: no record could be written
                cell.status, cell.error = "failed", f"{type(e).__name__}: {e}"
            if cell.status == NOSPACE:
                pending.clear()  # the disk is full: start nothing more; what runs finishes or finds it full too
            if progress and cell.status != "ok":
                print(f"  {cell.status}: {cell.run_id}" + (f" ({cell.error})" if cell.error else ""), flush=True)
    except KeyboardInterrupt:
        for ref in running:
            ray.cancel(ref, force=True)  # kills the worker: its checkpoints stay, its lock goes with it
        print(f"interrupted: {len(running)} running cells stopped; rerun to resume them", file=sys.stderr, flush=True)
        raise


def _cell_task(
    config: CellConfig, results_dir: str, threads: int, cwd: str, needed_by: CellConfig | None = None
) -> tuple[str, str | None]:
    """What a Ray worker runs: the cell, exactly as in process, with `threads` torch threads, in the driver's working
    directory (relative results and data paths mean the same there: on a cluster it is on the shared filesystem)."""
    os.chdir(cwd)
    return attempt(config, Path(results_dir), threads, needed_by)


def _start(ray, workers: int, threads: int, address: str | None) -> None:
    """Connect to the cluster at `address` (or at `RAY_ADDRESS`, as Ray's own tools read it), else start a local Ray
    sized for the sweep; a failure is one line saying what to do (`ConfigError`)."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    env = {k: v for k, v in os.environ.items() if k.startswith(PASSED_ON)}
    options = dict(runtime_env={"env_vars": env}, logging_level="ERROR", log_to_driver=True)
    try:
        if address:
            ray.init(address=address, **options)
        else:  # a local Ray sized for the sweep: `workers` cells of `threads` CPUs (GPUs as Ray finds them)
            ray.init(num_cpus=workers * threads, include_dashboard=False, object_store_memory=100 * 2**20, **options)
    except Exception as e:  # Ray raises ConnectionError, TimeoutError, RuntimeError, ... each with a long trace
        raise ConfigError(_why_not_started(e, address)) from None


def _why_not_started(error: Exception, address: str | None) -> str:
    said = f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:200]}"
    if address:
        return (
            f"could not connect to the Ray cluster at {address} ({said}); a cluster started with token "
            "authentication needs RAY_AUTH_MODE=token here too (the token from RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
            "~/.ray/auth_token): set it and rerun the same command"
        )
    return (
        f"the local Ray did not start ({said}); on a busy machine it can take longer than Ray waits: rerun the same "
        "command (cells with records are kept, interrupted ones resume), or run in process with --workers 1"
    )


def _import_ray():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "workers > 1 and ray_address run the sweep on Ray, which is not installed: "
            "pip install 'adaptstudy[cluster]' (or run with workers=1, in process)"
        ) from None
    return ray
