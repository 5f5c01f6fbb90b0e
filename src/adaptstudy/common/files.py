"""Files and folders written whole or not at all, and the one marker convention for folders we make.

Every folder the project writes for later runs (a converted backbone, a pretraining artifact, a source adapter,
a multi-task encoder, a training checkpoint) carries `adaptstudy.json`, written last: a folder without it is
incomplete (a killed writer) and is never read. The marker holds what the folder is (its run id, kind, ...).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TMP_PREFIX = ".tmp-"
MARKER = "adaptstudy.json"


def write_json_atomic(data: Any, target: str | os.PathLike) -> Path:
    """`data` as JSON at `target`, whole or not at all (`write_text_atomic`)."""
    return write_text_atomic(json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n", target)


def write_text_atomic(text: str, target: str | os.PathLike) -> Path:
    """`text` at `target` whole or not at all: a temporary file in the same folder, fsynced and renamed into place
    (a declaration's ledger, as a record: a killed or failing writer leaves the file as it was). Keeps the file's
    mode where it exists."""
    target = Path(target)
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=target.suffix, dir=target.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


@contextmanager
def locked_file(path: str | os.PathLike) -> Iterator[Path]:
    """An exclusive lock on the file at `path` itself, held while the block reads, changes and replaces it
    (`write_text_atomic`): two writers of one ledger take turns, and the second reads what the first wrote, so no
    entry is lost. No lock file is made: the lock is the file's own, taken again when a writer replaced the file
    while this one waited (the lock then stood on the replaced file). The kernel frees it when its holder dies.
    Taken again by the process that holds it (a command holding it around a helper that takes it), it is held."""
    import fcntl  # POSIX only: imported where used

    path = Path(path)
    key = path.resolve()
    if key in _HELD:
        yield path
        return
    while True:
        handle = open(path, "rb")  # noqa: SIM115 (closed below, after the block)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            if os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino:
                break
        except FileNotFoundError:
            pass
        handle.close()
    _HELD.add(key)
    try:
        yield path
    finally:
        _HELD.discard(key)
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


_HELD: set[Path] = set()  # the files this process holds `locked_file`'s lock on


@contextmanager
def atomic_folder(folder: str | os.PathLike) -> Iterator[Path]:
    """A scratch folder beside `folder` to fill; it replaces `folder` only when the block ends without error,
    so a killed writer never leaves a half-written model or adapter behind."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=folder.parent))
    try:
        yield scratch
        if folder.exists():
            shutil.rmtree(folder)
        scratch.rename(folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def mark_complete(folder: str | os.PathLike, meta: dict[str, Any]) -> None:
    """Write the folder's marker: the last file, so its presence means the rest is there."""
    (Path(folder) / MARKER).write_text(json.dumps(meta))


def is_complete(folder: str | os.PathLike) -> bool:
    return (Path(folder) / MARKER).is_file()


def read_marker(folder: str | os.PathLike) -> dict[str, Any]:
    return json.loads((Path(folder) / MARKER).read_text())


def remove_folder(folder: str | os.PathLike | None) -> None:
    """Remove a folder and what is in it, if there is one (finished runs' checkpoints)."""
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


LOCKS = ".locks"


class OutsideFolderError(ValueError):
    """A path meant to be inside a folder leads outside it through a symbolic link."""


def contained(folder: str | os.PathLike, path: str | os.PathLike) -> Path:
    """`path` (under `folder`), checked to stay inside `folder` once every symbolic link on the way is followed: a
    link planted in a results folder (a lock, a checkpoint folder) must not redirect a write elsewhere. Raises
    `OutsideFolderError` naming the first link that leaves."""
    folder, path = Path(folder), Path(path)
    root = folder.resolve()
    step = folder
    for part in path.relative_to(folder).parts:
        step = step / part
        if step.is_symlink() and not step.resolve().is_relative_to(root):
            raise OutsideFolderError(
                f"{step} is a symbolic link to {step.resolve()}, outside {folder}: nothing is written through it "
                "(remove the link)"
            )
    return path


@contextmanager
def run_lock(folder: str | os.PathLike, run_id: str, wait: bool = True) -> Iterator[bool]:
    """An exclusive lock on one run under `folder/.locks/`, held while the block runs: two processes (two sweeps on
    one results_dir, two cells needing one prerequisite) never train the same run at once. Yields whether it is held:
    with `wait=False`, False at once when another process holds it. The kernel frees it when its holder dies."""
    import fcntl  # POSIX only: imported where used

    locks = contained(folder, Path(folder) / LOCKS)
    locks.mkdir(parents=True, exist_ok=True)
    lock = contained(folder, locks / f"{run_id}.lock")
    # not truncated on open (that would erase the holder's name), and never through a link
    descriptor = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    with open(descriptor, "r+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        handle.truncate(0)
        handle.write(f"{socket.gethostname()} {os.getpid()}\n")
        handle.flush()
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
