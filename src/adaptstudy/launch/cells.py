"""One sweep cell, trained at most once: what the in-process runner and a Ray worker both do with a cell.

A cell is locked before anything else (`common.files.run_lock`, non-blocking): a cell another process is training
(a second sweep on the same results_dir, a retried Ray task whose first copy still runs) is left to it. A record
that appeared meanwhile is not trained again. A failure is written as a `failed` record, never raised, so one cell
cannot stop the others (if even that record cannot be written, the cell says so in one line); a kill leaves the
cell's checkpoints for the next attempt to resume from. A full disk is no cell's failure: the cell comes back as
`nospace`, with no record and no checkpoint folder left empty, and the sweep stops starting cells.
"""

from __future__ import annotations

import errno
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import torch

from adaptstudy.common.files import LOCKS, OutsideFolderError, contained, is_complete, remove_folder, run_lock
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.grid import describe_values
from adaptstudy.runs.identity import base_record
from adaptstudy.runs.multitask_config import MultiTaskConfig
from adaptstudy.runs.pretrain_config import PretrainConfig
from adaptstudy.runs.records import read_ok_record, resolve_results_dir, write_record
from adaptstudy.training.runner import ensure
from adaptstudy.training.runner import run as run_cell

CHECKPOINTS = ".checkpoints"
NOSPACE = "nospace"  # a cell's status when the disk is full: not its failure; the sweep stops starting cells

CellConfig = FinetuneConfig | PretrainConfig | MultiTaskConfig


@dataclass
class Cell:
    config: CellConfig
    status: str = "todo"  # todo / done (an ok record exists) / ok / skipped / failed / elsewhere (another sweep) /
    # nospace (the disk is full: not run)
    error: str | None = None
    needed_by: CellConfig | None = None  # a prerequisite cell: what `config` is trained for (its artifact, not a cell)

    @property
    def run_id(self) -> str:
        return self.config.run_id


def attempt(
    config: CellConfig, results_dir: Path, threads: int | None = None, needed_by: CellConfig | None = None
) -> tuple[str, str | None]:
    """Train one cell unless it is done or being trained elsewhere; `(status, error)` with status one of `ok`,
    `failed`, `done` (an ok record exists), `elsewhere` or `nospace` (the disk is full). `threads`: torch's intra-op
    threads for this cell. With `needed_by`, the cell is a prerequisite of that run, trained as the run would train it
    (`runner.ensure`)."""
    try:
        if needed_by is not None:
            with torch_threads(threads):
                try:
                    ensure(needed_by, results_dir / CHECKPOINTS, only=config.run_id)
                except Exception as e:
                    return _failed(config, e)
            return "ok", None
        return _attempt_run(config, results_dir, threads)
    except OSError as e:  # the lock itself, on a completely full disk
        if out_of_space(e):
            return NOSPACE, f"{type(e).__name__}: {e}"
        raise


def _attempt_run(config: CellConfig, results_dir: Path, threads: int | None) -> tuple[str, str | None]:
    try:  # the cell writes its lock, checkpoints and record inside the results folder, or nothing
        for path in (LOCKS, f"{LOCKS}/{config.run_id}.lock", CHECKPOINTS, f"{CHECKPOINTS}/{config.run_id}"):
            contained(results_dir, results_dir / path)
    except OutsideFolderError as e:
        print(f"  failed: {config.run_id}: {e}", file=sys.stderr, flush=True)
        return "failed", str(e)
    with run_lock(results_dir, config.run_id, wait=False) as held:
        if not held:
            return "elsewhere", None
        if read_ok_record(results_dir / f"{config.run_id}.json"):
            return "done", None
        checkpoints = results_dir / CHECKPOINTS / config.run_id
        with torch_threads(threads):
            try:
                run_cell(config, checkpoint_dir=checkpoints)  # what it starts from is trained first, once
            except Exception as e:  # one cell's failure must not stop the others
                drop_if_incomplete(checkpoints)
                return _failed(config, e)
        remove_folder(checkpoints)
        return "ok", None


def drop_if_incomplete(checkpoints: Path) -> None:
    """Remove a cell's checkpoint folder when it holds no complete checkpoint to resume from (a save cut short)."""
    if checkpoints.is_dir() and not any(is_complete(c) for c in checkpoints.iterdir() if c.is_dir()):
        remove_folder(checkpoints)


def out_of_space(error: BaseException) -> bool:
    """The error, or one it was raised from, is a full disk, wherever it surfaced (a record, a checkpoint: torch's
    writer wraps it in a RuntimeError that names it)."""
    seen: BaseException | None = error
    while seen is not None:
        if (isinstance(seen, OSError) and seen.errno == errno.ENOSPC) or "No space left on device" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _failed(config: CellConfig, error: Exception) -> tuple[str, str]:
    message = f"{type(error).__name__}: {error}"
    if out_of_space(error):
        return NOSPACE, message
    try:
        write_failure(config, error)
    except Exception as e:  # the guard holds: one line, and the sweep goes on (or stops, if the disk is full)
        if out_of_space(e):
            return NOSPACE, f"{type(e).__name__}: {e}"
        print(f"  {config.run_id}: its failure record could not be written either ({type(e).__name__}: {e})",
              file=sys.stderr, flush=True)  # fmt: skip
    print(f"  failed: {config.run_id}: {message}", file=sys.stderr, flush=True)
    return "failed", message


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op thread count set for a block (`None`: left as it is)."""
    if threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def write_failure(config: CellConfig, error: BaseException) -> None:
    """A failed record in place of the cell's, unless an ok one is there (a prerequisite that failed to train again
    keeps the record it reported)."""
    folder = resolve_results_dir(config.results_dir, config.STUDY)
    if read_ok_record(folder / f"{config.run_id}.json"):
        return
    record = base_record(config)
    record.update(
        status="failed",
        error=f"{type(error).__name__}: {error}",
        traceback="".join(traceback.format_exception(error)),
        metrics={},
        main_metric=None,
        trainable_params=None,
        total_params=None,
        train_runtime_s=None,
        train_examples_per_s=None,
        peak_rss_mb=None,
        finished_at=datetime.now(timezone.utc).isoformat(),
    )
    write_record(record, folder)


def describe(cell: Cell) -> str:
    return ("prerequisite: " if cell.needed_by is not None else "") + describe_values(cell.config.identity())
