"""What a user's arm label means, as exactly as a chapter's arms: the runs of a task whose whole configuration
matches. An arm states the settings that define it (`{method: houlsby, adapter_size: 64, learning_rate: 1.0e-3}`),
optionally per task (`per_task: {cola: {learning_rate: 1.0e-3}}`). A setting it leaves unstated takes its plain
value where the runs differ in it (a variant, an initialisation scale, an ablation: off); any other setting in which
the selected runs still differ makes the arm ambiguous, and one error lists the configurations it would pool.

Settings are checked against the records before anything is judged: an unknown name (with a did-you-mean), a value
of the wrong type (`1e-3`, which YAML reads as text, is read as the number it means), a unit no record has, and an
arm that selects no run are each named, all in one error."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from adaptstudy.common.registry import did_you_mean
from adaptstudy.runs.base import RunConfig

PER_TASK = "per_task"
TOP_LEVEL = ("method", "backbone")  # a record's own fields an arm may state besides its config's settings
NOT_SETTINGS = frozenset({"seed", "task", "keep_adapter"}) | RunConfig.LOCATIONS  # what one configuration varies in


def _close(name: str, valid) -> str:
    """A did-you-mean that also finds a name spelt in other case ('MRPC' for 'mrpc')."""
    same = [v for v in valid if str(v).lower() == str(name).lower()]
    return f" (did you mean {same[0]!r}?)" if same else did_you_mean(name, valid)


def _setting(record: dict, name: str) -> Any:
    return record[name] if name in TOP_LEVEL else record.get("config", {}).get(name)


def _plain(value: Any) -> bool:
    """A setting's value that means "not applied": no variant, no ablation, no initialisation scale."""
    return value is None or value is False or (isinstance(value, float) and math.isnan(value))


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def settings_of(runs: pd.DataFrame) -> dict[str, list[Any]]:
    """Every setting an arm may state, with the values the records give it."""
    found: dict[str, list[Any]] = {name: [] for name in TOP_LEVEL}
    for record in runs["record"]:
        for name in TOP_LEVEL:
            found[name].append(record.get(name))
        for name, value in record.get("config", {}).items():
            if name not in NOT_SETTINGS:
                found.setdefault(name, []).append(value)
    return found


def _typed(name: str, value: Any, seen: list[Any]) -> Any:
    """`value` as the type the records hold `name` in: text that spells a number is that number."""
    numeric = [v for v in seen if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if isinstance(value, str) and numeric:
        try:
            number = float(value)
        except ValueError:
            raise ValueError(
                f"{name}: {value!r} is not a number (the records hold numbers, e.g. {numeric[0]!r})"
            ) from None
        return int(number) if all(isinstance(v, int) for v in numeric) and number.is_integer() else number
    return value


def checked_arms(arms: Mapping[str, Mapping[str, Any]], units: set[str], runs: pd.DataFrame) -> dict[str, dict]:
    """The arms with their values typed as the records hold them; one error naming every unknown setting, value of
    the wrong type, task of `per_task` and unit that no record has."""
    known = settings_of(runs)
    tasks = set(runs["task"])
    problems = []
    typed: dict[str, dict] = {}
    for label, settings in arms.items():
        per_task = dict(settings.get(PER_TASK) or {})
        scopes = {None: {k: v for k, v in settings.items() if k != PER_TASK}} | per_task
        typed[label] = {PER_TASK: {}}
        for task, values in scopes.items():
            if task is not None and task not in tasks:
                problems.append(f"arm {label!r}: per_task names {task!r}, a task no record has{_close(task, tasks)}")
            out = typed[label] if task is None else typed[label][PER_TASK].setdefault(task, {})
            for name, value in (values or {}).items():
                if name not in known:
                    problems.append(f"arm {label!r}: unknown setting {name!r}{_close(name, known)}")
                    continue
                try:
                    out[name] = _typed(name, value, known[name])
                except ValueError as error:
                    problems.append(f"arm {label!r}: {error}")
    for unit in sorted(units - tasks):
        problems.append(f"unit {unit!r}: no record has this task{_close(unit, tasks)}")
    if problems:
        valid = ", ".join(sorted(known))
        raise ValueError(
            "; ".join(problems) + f". Settings the records have: {valid}; tasks: {', '.join(sorted(tasks))}"
        )
    return typed


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9)
    if _plain(a) and _plain(b):
        return True
    return _key(a) == _key(b)


def arm_runs(runs: pd.DataFrame, label: str, arm: dict, task: str) -> pd.DataFrame:
    """The runs of `task` the arm means: every stated setting matched, unstated ones at their plain value where the
    runs differ in them; a ValueError when none is left, or when they still span several configurations."""
    stated = {**{k: v for k, v in arm.items() if k != PER_TASK}, **arm.get(PER_TASK, {}).get(task, {})}
    records = [r for r in runs.loc[runs["task"] == task, "record"]]
    chosen = [r for r in records if all(_equal(_setting(r, k), v) for k, v in stated.items())]
    if not chosen:
        raise ValueError(f"arm {label!r} selects no run of {task} ({_described(stated)})")
    free = sorted({n for r in chosen for n in r.get("config", {})} - NOT_SETTINGS - set(stated))
    for name in free:
        values = [_setting(r, name) for r in chosen]
        if len({_key(v) for v in values}) > 1 and any(_plain(v) for v in values):
            chosen = [r for r, v in zip(chosen, values) if _plain(v)]
    configurations: dict[str, int] = {}
    for r in chosen:
        differing = {n: _setting(r, n) for n in free if len({_key(_setting(c, n)) for c in chosen}) > 1}
        described = _described(differing)
        configurations[described] = configurations.get(described, 0) + 1
    if len(configurations) > 1:
        listed = "; ".join(f"{c} ({n} runs)" for c, n in configurations.items())
        raise ValueError(
            f"arm {label!r} on {task} would pool {len(configurations)} configurations: {listed}; state "
            "the setting that tells them apart"
        )
    ids = {r["run_id"] for r in chosen}
    return runs[runs["run_id"].isin(ids) & (runs["task"] == task)]


def _described(settings: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(settings.items())) or "no settings"
