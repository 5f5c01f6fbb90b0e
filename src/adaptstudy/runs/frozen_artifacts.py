"""Frozen prerequisites travel with the project: the weights a confirmatory run starts from, committed with their hash.

Trained artifacts (a fusion run's source adapters, ...) live in a per-machine cache (`common.paths.cache_root`). On a
new machine a prerequisite is trained again, and a retraining in another precision or on other kernels gives other
weights: it once changed a confirmatory treatment (a transfer source retrained to a test mean of 66.1 against the
frozen 67.3). So the prerequisites a claim freezes are copied here, into `frozen/<run id>/` beside the records, with
the SHA-256 of their files in `frozen/manifest.json` (a source adapter on minilm-l6 is about a megabyte).

Before use, a run's prerequisite with a frozen copy is checked against the manifest: a damaged copy is one clear
error; a cache copy that is missing or differs is replaced by the frozen copy (never trained again). Each run's
record names the hash of every prerequisite it started from (`runner.with_prerequisites`), and a run whose
prerequisite's hash is not the frozen one is another treatment, never a confirmatory run
(`claims.prerequisites.unaccepted`).

    python -m adaptstudy.runs.frozen_artifacts freeze RUN_ID ... --study fusion   # copy from this machine's cache
    python -m adaptstudy.runs.frozen_artifacts check                              # every frozen copy against its hash
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from adaptstudy.common.files import MARKER, atomic_folder, is_complete, read_marker, write_json_atomic
from adaptstudy.common.paths import PROJECT_ROOT, cache_root

FROZEN = PROJECT_ROOT / "frozen"
MANIFEST = "manifest.json"


class FrozenArtifactError(RuntimeError):
    """A frozen copy whose files no longer hash to what the manifest froze: no run may start from it."""


def folder_hash(folder: str | Path) -> str:
    """SHA-256 over the folder's files (their relative names and contents, in name order), the completion marker
    aside (it names the run, not the weights)."""
    folder, digest = Path(folder), hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MARKER):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def manifest(root: Path | None = None) -> dict[str, dict[str, Any]]:
    root = FROZEN if root is None else root
    path = root / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def frozen_hash(run_id: str, root: Path | None = None) -> str | None:
    """The hash the prerequisite `run_id` was frozen with, or None where it has no frozen copy."""
    root = FROZEN if root is None else root
    entry = manifest(root).get(run_id)
    return entry["sha256"] if entry else None


def checked_copy(run_id: str, root: Path | None = None) -> Path:
    """The frozen copy of `run_id`, after checking its files against the manifest's hash."""
    root = FROZEN if root is None else root
    expected, folder = frozen_hash(run_id, root), root / run_id
    if expected is None:
        raise KeyError(run_id)
    found = folder_hash(folder) if folder.is_dir() else "no folder"
    if found != expected:
        raise FrozenArtifactError(
            f"the frozen prerequisite {run_id} at {folder} hashes to {found[:16]}, not the {expected[:16]} it was "
            f"frozen with: restore it from git (git checkout -- {folder.relative_to(root.parent)}) before any run "
            "starts from it"
        )
    return folder


def provide(run_id: str, cache_folder: str | Path, root: Path | None = None) -> bool:
    """Whether `run_id` has a frozen copy; if so, the cache holds exactly it: a cache copy missing, incomplete or
    with another hash is replaced by the frozen one (said in one line). A damaged frozen copy raises."""
    root = FROZEN if root is None else root
    if frozen_hash(run_id, root) is None:
        return False
    frozen, cache_folder = checked_copy(run_id, root), Path(cache_folder)
    if is_complete(cache_folder) and folder_hash(cache_folder) == frozen_hash(run_id, root):
        return True
    if cache_folder.exists():
        print(f"  {run_id}: the cache's copy at {cache_folder} is not the frozen one; replaced by it", flush=True)
    with atomic_folder(cache_folder) as scratch:
        shutil.copytree(frozen, scratch, dirs_exist_ok=True)
    return True


def freeze(run_id: str, cache_folder: str | Path, study: str, what: str, root: Path | None = None) -> str:
    """Copy the prerequisite `run_id` from this machine's cache into the project, with its hash in the manifest;
    a copy frozen already is never replaced (that would change the treatment of the runs made on it)."""
    root = FROZEN if root is None else root
    cache_folder = Path(cache_folder)
    if not is_complete(cache_folder):
        raise FileNotFoundError(f"{run_id}: no complete artifact at {cache_folder} to freeze; train it first")
    entries = manifest(root)
    if run_id in entries:
        raise ValueError(f"{run_id} is frozen already (sha256 {entries[run_id]['sha256'][:16]}); a frozen copy stays")
    with atomic_folder(root / run_id) as scratch:
        shutil.copytree(cache_folder, scratch, dirs_exist_ok=True)
    digest = folder_hash(root / run_id)
    entries[run_id] = {
        "sha256": digest,
        "study": study,
        "what": what,
        "marker": read_marker(cache_folder),
        "frozen_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    write_json_atomic(entries, root / MANIFEST)
    return digest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("freeze", help="copy source adapters from this machine's cache into frozen/")
    f.add_argument("run_ids", nargs="+")
    f.add_argument("--study", required=True, help="the study whose records name them (e.g. fusion)")
    sub.add_parser("check", help="check every frozen copy against its hash")
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            for run_id in manifest():
                checked_copy(run_id)
            print(f"{len(manifest())} frozen prerequisites, each as frozen")
            return 0
        for run_id in args.run_ids:
            digest = freeze(run_id, cache_root() / "adapters" / run_id, args.study, "a source adapter")
            print(f"frozen {run_id}: sha256 {digest}")
    except (FrozenArtifactError, FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
