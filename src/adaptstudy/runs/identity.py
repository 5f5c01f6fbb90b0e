"""Where a record comes from: the run's identity and settings, the code's commit and the libraries' versions, taken
before anything trains (the writing side of records: reading them needs none of these libraries)."""

from __future__ import annotations

import platform
import subprocess
from typing import Any

import adapters
import datasets
import torch
import transformers

from adaptstudy.common.paths import PROJECT_ROOT


def versions() -> dict[str, str]:
    """The versions of the libraries a run trains with."""
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
