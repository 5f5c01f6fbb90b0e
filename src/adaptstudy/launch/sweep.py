"""Resumable sweeps: a YAML grid expanded into runs, each run at most once, failures recorded.

A grid file names a study, the settings every cell shares, and the axes to cross:

    study: houlsby_table1
    fixed: {backbone: minilm-l6, num_train_epochs: 3}
    axes:
      task: [rte, mrpc]
      seed: [0, 1, 2]
      method:                       # a list of names, or per-method axes
        full: {learning_rate: [5.0e-5]}
        houlsby: {adapter_size: [8, 64], learning_rate: [5.0e-4]}

A cell may start from a pretraining run named by its settings (`init_from: {corpus: ..., mode: ...}`, often
written once under `definitions:` with a YAML anchor); a pretraining whose artifact is not in the cache yet runs
first, once, and its record goes to `<results_dir>_pretrain`.

`axes` may also be a list of such mappings (blocks): each block is crossed on its own and the cells
of all blocks are run in order, e.g. a different learning rate per task or per adapter size.

Every cell is validated before anything trains. A cell whose record exists with status `ok` is
skipped, so rerunning the same command continues where it stopped; a cell that raises (or whose
loss is not finite) leaves a `failed` record with the traceback and the sweep goes on. Long cells
checkpoint under `<results_dir>/.checkpoints/<run_id>/` and resume from there after a kill.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from adaptstudy.common.files import TMP_PREFIX
from adaptstudy.common.registry import UnknownNameError
from adaptstudy.data.errors import DataNotFoundError, MalformedDataError
from adaptstudy.launch.allocator import reexec_with_allocator
from adaptstudy.launch.cells import CHECKPOINTS, NOSPACE, Cell, attempt, describe
from adaptstudy.runs.base import ConfigError
from adaptstudy.runs.grid import DESCRIBED, describe_values, grid_configs
from adaptstudy.runs.records import InvalidRecordsError, check_writable, read_ok_record, record_problem
from adaptstudy.training.config_checks import check_config
from adaptstudy.training.device import resolve_precision
from adaptstudy.training.runner import pending_prerequisites, prerequisite_waves


@dataclass
class Plan:
    study: str
    results_dir: Path
    cells: list[Cell] = field(default_factory=list)
    kind: str = "finetune"
    prerequisites: list[Cell] = field(default_factory=list)  # trained first, as cells of their own: see `run`
    stopped: str | None = None  # why the sweep stopped before its last cell (a full disk), if it did

    def table(self) -> pd.DataFrame:
        rows = []
        for c in self.cells:
            cfg = c.config.resolved()
            rows.append(
                {
                    "run_id": c.run_id,
                    "status": c.status,
                    "task": cfg.task_name,
                    "method": cfg.method,
                    **{k: getattr(cfg, k, None) for k in DESCRIBED[2:]},
                    "error": c.error,
                }
            )
        return pd.DataFrame(rows).dropna(axis=1, how="all")

    def counts(self) -> dict[str, int]:
        statuses = [c.status for c in self.cells]
        return {s: statuses.count(s) for s in ("ok", "skipped", "failed", "todo", "done", "elsewhere")}

    def summary(self) -> str:
        n = self.counts()
        return (
            f"study {self.study}: {len(self.cells)} cells; ran {n['ok']} ok, skipped {n['skipped'] + n['done']} "
            f"already done, {n['failed']} failed"
            + (f", {n['todo']} not run" if n["todo"] else "")
            + (f", {n['elsewhere']} left to another sweep training them" if n["elsewhere"] else "")
            + (f"; first {self._prerequisites()}" if self.prerequisites else "")
            + (f". STOPPED: {self.stopped}; free space and rerun to continue" if self.stopped else "")
        )

    def _prerequisites(self) -> str:
        statuses = [c.status for c in self.prerequisites]
        failed = statuses.count("failed")
        return f"{statuses.count('ok')} of {len(statuses)} prerequisites trained" + (
            f" ({failed} failed)" if failed else ""
        )

    def raise_if_failed(self) -> None:
        failed = [c for c in self.cells if c.status == "failed"]
        if failed:
            details = "; ".join(f"{c.run_id}: {c.error}" for c in failed)
            raise SweepFailed(f"{len(failed)} of {len(self.cells)} cells failed ({details})")


class SweepFailed(RuntimeError):
    """At least one cell failed (its record says why); the others ran."""


def plan(sweep: str | Path, results_dir: str | Path | None = None, data_dir: str | None = None) -> Plan:
    """Validate every cell of a sweep file and mark those that already have an ok record."""
    grid, folder, configs = grid_configs(sweep, results_dir, data_dir)
    problems = []
    for i, config in enumerate(configs, start=1):  # every cell's names known before any cell trains
        try:
            check_config(config)
        except ConfigError as e:
            problems.append(f"cell {i} ({describe_values(config.model_dump())}): {e}")
    if problems:
        raise ConfigError(f"sweep {sweep}: " + " | ".join(problems))
    check_writable(folder)
    result = Plan(grid.study, folder, [Cell(config) for config in configs], grid.kind)
    _clean_temporary_files(folder)
    for cell in result.cells:
        path = folder / f"{cell.run_id}.json"
        if read_ok_record(path):
            cell.status = "done"
        elif problem := record_problem(path):
            print(f"invalid record {path} ({problem}): its cell is trained again", file=sys.stderr)
    return result


def run(
    p: Plan, progress: bool = True, workers: int = 1, ray_address: str | None = None, threads: int | None = None
) -> Plan:
    """Run every cell not yet done; failures are recorded and the sweep goes on. A cell another process is training
    (a second sweep on the same results_dir) is left to it: `elsewhere`.

    `workers=1` without `ray_address` runs the cells one after another in this process (torch's threads, or
    `threads`); otherwise they run as Ray tasks, at most `workers` at once, each with `threads` CPU threads (default:
    this machine's cores shared among the workers) or one GPU (`ray_sweep`).

    What the cells start from and is not trained yet (pretrainings, source adapters) trains first, as cells of its
    own (so the workers share it, where inside the cells the first cell to need a prerequisite would train it while
    the other cells needing it wait): in process, in waves (a wave needs only the waves before it); on Ray, each cell
    as soon as what it needs has trained, so a worker never idles while a cell that needs nothing pending waits."""
    if workers < 1 or (threads is not None and threads < 1):
        raise ConfigError(f"workers ({workers}) and threads ({threads}) must be at least 1")
    resolve_precision("auto")  # this machine's bf16 speed measured once, before any cell: every cell reads the same
    todo = [c for c in p.cells if c.status == "todo"]
    waves = [
        [Cell(needed, needed_by=by) for needed, by in wave] for wave in prerequisite_waves([c.config for c in todo])
    ]
    p.prerequisites = [cell for wave in waves for cell in wave]
    ray_address = ray_address or os.environ.get("RAY_ADDRESS") or None  # as Ray's own tools read it
    if workers > 1 or ray_address:
        from adaptstudy.launch.ray_sweep import default_threads, run_on_ray  # Ray is an optional extra

        cells = [*p.prerequisites, *todo]
        needs = {cell.run_id: pending_prerequisites(cell.config) for cell in cells}
        run_on_ray(cells, needs, p.results_dir, workers, threads or default_threads(workers), ray_address, progress)
    else:
        for cell, n, size in ((c, n, len(w)) for w in [*waves, todo] for n, c in enumerate(w, start=1)):
            if progress:
                print(f"[{n}/{size}] {cell.run_id} {describe(cell)}", flush=True)
            cell.status, cell.error = attempt(cell.config, p.results_dir, threads, cell.needed_by)
            if cell.status == NOSPACE:
                break
    stopped = [c for c in [*p.prerequisites, *todo] if c.status == NOSPACE]
    for cell in stopped:
        cell.status = "todo"  # not run: the next sweep trains it
    if stopped:
        p.stopped = f"out of space under {p.results_dir} ({stopped[0].error})"
    for cell in p.cells:
        if cell.status == "done":
            cell.status = "skipped"
    try:
        (p.results_dir / CHECKPOINTS).rmdir()  # only if no interrupted cell left a checkpoint
    except OSError:
        pass
    return p


STALE_S = 600  # a record's temporary file lives well under a second; one this old was left by a killed writer


def _clean_temporary_files(folder: Path) -> None:
    """A temporary file left by a killed writer is never a record: remove it (not one another live sweep is
    writing this moment)."""
    if folder.is_dir():
        for leftover in folder.glob(f"{TMP_PREFIX}*"):
            with contextlib.suppress(FileNotFoundError):
                if time.time() - leftover.stat().st_mtime > STALE_S:
                    leftover.unlink(missing_ok=True)


USER_ERRORS = (ConfigError, UnknownNameError, DataNotFoundError, MalformedDataError, InvalidRecordsError)


def main(argv: list[str] | None = None) -> int:
    """`python -m adaptstudy.sweep GRID [--results-dir DIR] [--data-dir DIR] [--workers N] [--threads T]
    [--ray-address ADDR] [--dry-run] [--debug]`. A configuration, YAML, data or results-folder error is one line
    and exit status 2 (`--debug`: its traceback)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m adaptstudy.sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep")
    parser.add_argument("--results-dir")
    parser.add_argument("--data-dir")
    parser.add_argument("--workers", type=int, default=1, help="cells at once; above 1 they run on a local Ray")
    parser.add_argument("--threads", type=int, help="torch threads per cell (default: the cores over the workers)")
    parser.add_argument("--ray-address", help="an existing Ray cluster to run the cells on (e.g. auto)")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    args = parser.parse_args(argv)
    try:
        return _main(args, from_command_line=argv is None)
    except USER_ERRORS as e:
        if args.debug:
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2


def _main(args, from_command_line: bool) -> int:
    p = plan(args.sweep, args.results_dir, args.data_dir)
    if args.dry_run:
        print(p.table().to_string(index=False))
        return 0
    if from_command_line:  # start over under tcmalloc where the system has it
        reexec_with_allocator("adaptstudy.sweep", sys.argv[1:])
    try:
        run(p, workers=args.workers, ray_address=args.ray_address, threads=args.threads)
    except KeyboardInterrupt:
        print(p.summary(), file=sys.stderr)
        return 130
    print(p.summary())
    return 1 if p.counts()["failed"] or p.stopped else 0


if __name__ == "__main__":
    sys.exit(main())
