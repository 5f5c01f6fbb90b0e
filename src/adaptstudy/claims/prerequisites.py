"""A confirmatory run's prerequisites are part of what its claim froze: the pretraining, transfer source or source
adapter it starts from, identified by the record (run id, and the training of it that stood at the freeze) and by the
settings the grids fix. A prerequisite trained again after the freeze (a machine's cache lacked it) stands in for
the frozen one only if every metric its record reports agrees with the frozen training's within `TOLERANCE`; a run
that started from one that does not is no fresh seed of the frozen claim: it stays exploratory, and the page says
why (`unaccepted`).

A prerequisite with a frozen copy in the project (`runs.frozen_artifacts`, committed with its hash) is judged by
its weights instead: a run whose record names another hash for it started from another treatment.

The tolerance is relative, on each metric of the prerequisite's record: 0.1%. Retraining the same settings and seed
on another processor changes only the arithmetic (bf16 kernels differ between machines): the committed retrainings
of the DSP pretrainings, on three machine kinds, moved held-out perplexity by at most 0.07%. A retraining beyond it
trained something else (another rule, other data) and is another treatment, whatever the runs on it then score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pandas as pd

from adaptstudy.runs.frozen_artifacts import frozen_hash

TOLERANCE = 1e-3  # relative, on every metric a prerequisite's record reports
NOT_USED = "diverged"  # a retraining whose model was removed (`retrained` entries that carry it)


def trainings(record: Mapping[str, Any]) -> list[tuple[pd.Timestamp, dict[str, float]]]:
    """Each training of a prerequisite that left a model, oldest first, with the metrics it scored: a retraining
    that kept the record scored what the record stood at then; one that replaced it, its own; one that diverged left
    no model."""
    entries = [e for e in record.get("retrained", []) if NOT_USED not in e]
    entries.append({"finished_at": record["finished_at"], "metrics": record.get("metrics", {})})
    entries.sort(key=lambda e: pd.Timestamp(e["finished_at"]))
    # a kept retraining has no metrics of its own: those of the training it matched, which the record then held;
    # the record's metrics are those of the last training that replaced it (or of its first)
    out, standing = [], None
    replacing = [e for e in entries if "metrics" in e]
    for entry in entries:
        if "metrics" in entry:
            standing = entry["metrics"]
        out.append((pd.Timestamp(entry["finished_at"]), dict(standing or replacing[0]["metrics"])))
    return out


def standing(record: Mapping[str, Any], when: datetime | pd.Timestamp) -> tuple[pd.Timestamp, dict] | None:
    """The training of a prerequisite that stood at `when` (the last finished by then), or None before any."""
    done = [t for t in trainings(record) if t[0] <= pd.Timestamp(when)]
    return done[-1] if done else None


def differs(frozen: Mapping[str, float], used: Mapping[str, float]) -> str:
    """'' when every metric of `used` agrees with `frozen`'s within the tolerance; else the metrics that do not,
    as 'rte/accuracy 66.19 → 61.15'."""
    out = [
        f"{name} {frozen.get(name, math.nan):.2f} → {used.get(name, math.nan):.2f}"
        for name in sorted({*frozen, *used})
        if not _close(frozen.get(name), used.get(name))
    ]
    return ", ".join(out)


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return False
    return math.isclose(a, b, rel_tol=TOLERANCE)


def unaccepted(runs: pd.DataFrame, since: datetime) -> dict[str, str]:
    """The runs (by run id) whose prerequisite was trained again after `since` (a claim's freeze) to metrics the
    frozen training's do not match within the tolerance, each with why. A prerequisite first trained after `since`
    has no frozen training to differ from: its settings, which the grids fix, are what was frozen."""
    if runs.empty or "prerequisites" not in runs:
        return {}
    out = {}
    for run_id, finished, needs in zip(runs["run_id"], runs["finished_at"], runs["prerequisites"]):
        for need in needs if isinstance(needs, list) else []:
            if why := not_the_frozen_weights(need):
                out[run_id] = why
                continue
            record = need.get("record")
            if record is None:
                out[run_id] = f"its prerequisite {need['run_id']} has no record here to check against its freeze"
                continue
            frozen, used = standing(record, since), standing(record, finished)
            if frozen is None or used is None or used[0] <= pd.Timestamp(since):
                continue
            if why := differs(frozen[1], used[1]):
                out[run_id] = (
                    f"it started from {need['run_id']} ({need['study']}), trained again on {used[0]:%Y-%m-%d} after "
                    f"the freeze to other metrics than the frozen training of {frozen[0]:%Y-%m-%d} ({why}; "
                    f"tolerance {TOLERANCE:.1%} relative)"
                )
    return out


def not_the_frozen_weights(need: Mapping[str, Any]) -> str:
    """Why a prerequisite is not the frozen one, where it has a frozen copy (`runs.frozen_artifacts`) and the run's
    record names the hash of the weights it used: '' where the hashes agree or either is not known."""
    frozen, used = frozen_hash(need["run_id"]), need.get("sha256")
    if frozen is None or used is None or used == frozen:
        return ""
    return (
        f"it started from {need['run_id']} ({need.get('study')}) with weights of hash {used[:16]}, not the frozen "
        f"copy's {frozen[:16]}: another treatment"
    )
