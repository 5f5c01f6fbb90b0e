"""A claim's confirmatory verdict: judged again on the runs made after its freeze (and after any amendment that
follows it), alone; a claim never frozen has none."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pandas as pd

from adaptstudy.claims.freeze import confirmatory_since
from adaptstudy.claims.prerequisites import unaccepted
from adaptstudy.claims.verdicts import Verdict
from adaptstudy.runs.records import made_at


def fresh_runs(runs: pd.DataFrame, since: datetime, selection_seed: int | None) -> pd.DataFrame:
    """The reported runs first made at or after `since` (`made_at`: a rerun of a seed is not fresh) on the
    prerequisites that were frozen (`prerequisites.unaccepted`: one trained again after `since` to other metrics
    makes a run no fresh seed), with every run of the seed that chose settings (never reported: its runs choose,
    whenever they ran)."""
    if runs.empty:
        return runs
    fresh = pd.to_datetime(made_at(runs), utc=True, format="ISO8601") >= pd.Timestamp(since)
    fresh &= ~runs["run_id"].isin(list(unaccepted(runs, since)))
    keep = fresh | (runs["seed"] == selection_seed) if selection_seed is not None else fresh
    return runs[keep].reset_index(drop=True)


def fresh_verdicts(
    runs: pd.DataFrame,
    verdicts: list[Verdict],
    judge: Callable[[pd.DataFrame], list[Verdict]],
    selection_seed: int | None,
) -> list[Verdict]:
    """Each of `verdicts`' claims judged again on the runs made after its freeze (or an amendment that followed it),
    alone: its confirmatory verdict, for the frozen claims some such run exists for. `runs` are the
    chapter's labelled runs, `judge` its verdicts function, `selection_seed` the seed that chose settings."""
    out = []
    since_of = {v.claim.key: confirmatory_since(v.claim.declared) for v in verdicts}
    for since in sorted({s for s in since_of.values() if s is not None}):
        fresh = fresh_runs(runs, since, selection_seed)
        if fresh.empty or (selection_seed is not None and (fresh["seed"] == selection_seed).all()):
            continue
        keys = {key for key, s in since_of.items() if s == since}
        out += [v for v in judge(fresh) if v.claim.key in keys and v.run_ids]
    return out
