"""Where the project, its data and its caches are."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[3]


def cache_root() -> Path:
    """Converted backbones, pretraining artifacts, adapters: `$ADAPTSTUDY_CACHE`, else `~/.cache/adaptstudy`
    (never the repository)."""
    return Path(os.environ.get("ADAPTSTUDY_CACHE") or Path.home() / ".cache" / "adaptstudy")
