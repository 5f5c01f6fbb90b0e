"""Result records: one JSON file per run, named by its run id, written atomically.

A record is written to a temporary file in the same folder, flushed, fsynced and renamed into
place, so a reader never sees half a record; leftover temporary files are ignored.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from adaptstudy.common.files import write_json_atomic
from adaptstudy.common.paths import PROJECT_ROOT

REQUIRED_FIELDS = (
    "run_id",
    "status",
    "task",
    "method",
    "backbone",
    "seed",
    "config",
    "metrics",
    "main_metric",
    "trainable_params",
    "total_params",
    "train_runtime_s",
    "train_examples_per_s",
    "peak_rss_mb",
    "versions",
    "git_commit",
    "finished_at",
)


def versions() -> dict[str, str]:
    # imported here: reading records (the analysis notebooks) needs none of these libraries
    import adapters
    import datasets
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "adapters": adapters.__version__,
        "datasets": datasets.__version__,
    }


def git_commit() -> str | None:
    """The project's commit, with `-dirty` when the work tree has uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=PROJECT_ROOT, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def peak_rss_mb() -> float:
    """This process's peak resident memory: since `reset_peak_rss()` on Linux, else since it started."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # never reset; Linux KiB, macOS bytes
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def reset_peak_rss() -> str:
    """Start a new peak-memory window, so that one run of many in a process (a sweep) reports its own peak.

    Returns the scope the next `peak_rss_mb()` covers: "run" where Linux lets us reset the high-water
    mark (`/proc/self/clear_refs`), else "process".
    """
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return "run"
    except OSError:
        return "process"


def base_record(config) -> dict[str, Any]:
    """The identity part of a record, shared by successful and failed runs."""
    resolved = config.resolved()
    return {
        "run_id": resolved.run_id,
        "status": None,
        "task": resolved.task_name,
        "method": resolved.method,
        "backbone": resolved.backbone,
        "seed": resolved.seed,
        "config": resolved.model_dump(),
        "versions": versions(),
        "git_commit": git_commit(),
        "finished_at": None,
    }


def resolve_results_dir(results_dir: str | os.PathLike | None, study: str = "finetune") -> Path:
    """The given folder, else `results/<study>` in the project."""
    return Path(results_dir) if results_dir else PROJECT_ROOT / "results" / study


def write_record(record: dict[str, Any], results_dir: str | os.PathLike) -> Path:
    """Write `record` to `results_dir/<run_id>.json` atomically; returns the path."""
    folder = Path(results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    missing = [f for f in REQUIRED_FIELDS if f not in record]
    if missing:
        raise ValueError(f"record {record.get('run_id')!r} lacks {missing}")
    return write_json_atomic(record, folder / f"{record['run_id']}.json")


def read_records(results_dir: str | os.PathLike, status: str | None = "ok") -> list[dict[str, Any]]:
    """Every record under `results_dir` (recursively), optionally only those with `status`.

    Hidden folders (a sweep's `.checkpoints/`) and temporary files are not records.
    """
    root = Path(results_dir)
    records = []
    for path in sorted(root.rglob("*.json")):
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        with open(path) as f:
            record = json.load(f)
        if status is None or record.get("status") == status:
            records.append(record)
    return records


def read_ok_record(path: str | os.PathLike) -> dict[str, Any] | None:
    """The record at `path` if it is readable and finished with status ok, else None (absent, partial or failed)."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return record if record.get("status") == "ok" else None


def records_frame(results_dir: str | os.PathLike, status: str | None = "ok") -> pd.DataFrame:
    """Records as a table: one row per run, metrics flattened to `metric.<name>` columns."""
    return flatten(read_records(results_dir, status))


def paid_seconds(runs: pd.DataFrame, field: str) -> pd.Series:
    """Per run, every second of `field` (`train_runtime_s` or `eval_runtime_s`) it cost: its record's, plus those of
    its other trainings (a prerequisite whose artifact a machine's cache lacked, trained again: the record's
    `retrained` list; rows without records, such as `run_costs`', count their own). Cost tables sum these;
    a speed reads the record's own seconds."""
    own = runs[field].fillna(0.0) if field in runs else pd.Series(0.0, runs.index)
    if "record" not in runs:
        return own
    return own + runs["record"].map(lambda record: sum(r.get(field) or 0.0 for r in record.get("retrained", [])))


def flatten(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per record: its scalar fields, `metric.<name>` and `config.<name>` columns."""
    rows = []
    for record in records:
        row = {k: v for k, v in record.items() if not isinstance(v, (dict, list))}
        row.update({f"metric.{k}": v for k, v in record["metrics"].items()})
        row.update({f"config.{k}": v for k, v in record["config"].items() if not isinstance(v, (dict, list))})
        rows.append(row)
    return pd.DataFrame(rows)
