"""The token lengths the chapters describe their data by, from `benchmarks/results/token_lengths.json` (made by
`benchmarks/token_lengths.py` from the data mirror): the book needs no mirror."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from adaptstudy.common.paths import PROJECT_ROOT

TOKEN_LENGTHS_FILE = PROJECT_ROOT / "benchmarks" / "results" / "token_lengths.json"


def token_lengths(name: str, path: Path = TOKEN_LENGTHS_FILE) -> np.ndarray:
    """The lengths of set `name`, one per text in increasing order, from the kept histogram."""
    kept = json.loads(Path(path).read_text(encoding="utf-8"))
    if name not in kept["sets"]:
        raise KeyError(
            f"{path} keeps no set {name!r}; it has {sorted(kept['sets'])} (rerun benchmarks/token_lengths.py)"
        )
    histogram = kept["sets"][name]["histogram"]
    return np.repeat(np.array([int(k) for k in histogram]), list(histogram.values()))
