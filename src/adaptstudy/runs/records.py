"""Result records: one JSON file per run, named by its run id, written atomically.

A record is written to a temporary file in the same folder, flushed, fsynced and renamed into
place, so a reader never sees half a record; leftover temporary files are ignored.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from adaptstudy.common.files import write_json_atomic
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.runs.base import ConfigError
from adaptstudy.runs.resumption import RERUN


class Record(BaseModel):
    """The record every run writes and every reader checks (the report, the sweep planner): the fields the design
    promises with their types; chapters add their own fields beside them. An ok record holds its scores: one without
    (a hollow record) is no result, and a sweep trains its cell again."""

    model_config = ConfigDict(extra="allow", strict=False)

    run_id: str = Field(min_length=1)
    status: Literal["ok", "failed"]
    task: str
    method: str
    backbone: str
    seed: int
    config: dict[str, Any]
    metrics: dict[str, float]
    main_metric: str | None
    trainable_params: int | None
    total_params: int | None
    train_runtime_s: float | None
    train_examples_per_s: float | None
    peak_rss_mb: float | None
    versions: dict[str, str]
    git_commit: str | None
    finished_at: str | None
    # the study that wrote it: the name of the results folder its run wrote to (`write_record`), so a copy of the
    # records elsewhere still says whose they are; records written before it was kept lack it (None)
    study: str | None = None

    @model_validator(mode="after")
    def _ok_has_results(self) -> Record:
        if self.status != "ok":
            return self
        scored = ("metrics", "main_metric")
        if self.main_metric is None and not self.metrics and getattr(self, "artifact", None):
            scored = ()  # a pretraining with no held-out text to score: its result is its artifact
        needed = (*scored, "trainable_params", "train_runtime_s", "finished_at")
        empty = [name for name in needed if getattr(self, name) in (None, {})]
        if empty:
            raise ValueError(f"status ok but no {', '.join(empty)}: a hollow record, not a result")
        return self


REQUIRED_FIELDS = tuple(Record.model_fields)


class InvalidRecordsError(ValueError):
    """Records that are not records (truncated, not an object, missing fields, hollow): one line per file."""

    def __init__(self, problems: dict[Path, str]):
        self.problems = problems
        lines = "\n".join(f"  {path}: {problem}" for path, problem in problems.items())
        super().__init__(
            f"{len(problems)} invalid record(s); a report leaves out no result, so fix or remove each "
            f"(`python -m adaptstudy.launch.cli check-records FOLDER` lists them):\n{lines}"
        )


def load_record(path: str | os.PathLike) -> dict[str, Any]:
    """The record at `path`, checked against `Record`; `InvalidRecordsError` names the file and what is wrong."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InvalidRecordsError({path: f"cannot be read ({e.strerror})"}) from None
    except ValueError as e:
        raise InvalidRecordsError({path: f"not valid JSON, truncated or edited by hand ({e})"}) from None
    if not isinstance(record, dict):
        raise InvalidRecordsError({path: f"a JSON {type(record).__name__}, where a record is an object"})
    try:
        Record.model_validate(record)
    except ValidationError as e:
        problems = [
            f"{'.'.join(str(p) for p in err['loc']) or 'record'}: {err['msg'].removeprefix('Value error, ')}"
            for err in e.errors()
        ]
        raise InvalidRecordsError({path: "; ".join(problems)}) from None
    if record["run_id"] != path.stem:
        raise InvalidRecordsError({path: f"run_id {record['run_id']!r} is not its file's name"})
    record["config"] = current_spelling(record["config"])
    return record


def current_spelling(config: dict[str, Any]) -> dict[str, Any]:
    """A record's settings as today's configs spell them, so readers know one name per idea: multi-task runs made
    before the selection split had one name said `split_rule: selection | hyperformer` (`selection_split` now)."""
    if "split_rule" not in config:
        return config
    config = dict(config)
    config["selection_split"] = config.pop("split_rule") == "selection"
    return config


def record_problem(path: str | os.PathLike) -> str | None:
    """What is wrong with the record at `path` (None: nothing, or no file there)."""
    if not Path(path).exists():
        return None
    try:
        load_record(path)
    except InvalidRecordsError as e:
        return next(iter(e.problems.values()))
    return None


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


def resolve_results_dir(results_dir: str | os.PathLike | None, study: str = "finetune") -> Path:
    """The given folder, else `results/<study>` in the project (study "": `results/` itself, whose studies the
    across-chapter pages read); a study name that would leave `results/` (`..`, `../x`, an absolute path) is
    refused."""
    if results_dir:
        return Path(results_dir)
    root = PROJECT_ROOT / "results"
    if study == "":
        return root
    folder = root / study
    if folder.is_symlink():
        raise ConfigError(
            f"results/{study} is a symbolic link (to {folder.resolve()}): a study's records are kept in results/ "
            "itself; remove the link, or give the folder it points to as results_dir"
        )
    if folder.resolve().parent != root.resolve():
        raise ConfigError(f"study {study!r} is not a folder name under results/ (no '/', '.' or '..')")
    return folder


def check_writable(folder: str | os.PathLike) -> None:
    """One clear error before any data or model is loaded when records cannot be written under `folder` (its
    nearest existing ancestor is a file, or is not writable: read-only filesystem, permissions)."""
    folder = Path(folder)
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"results_dir {folder}: {existing} is a file, so no record can be written there")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"results_dir {folder}: {existing} is not writable, so no record can be written there")


def write_record(record: dict[str, Any], results_dir: str | os.PathLike) -> Path:
    """Write `record` to `results_dir/<run_id>.json` atomically, after checking it against `Record`; returns the
    path. A record that names no study gets the folder's name as its `study` (one rewritten keeps its own)."""
    folder = Path(results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    record = {**record, "study": record.get("study") or folder.resolve().name}
    try:
        Record.model_validate(record)
    except ValidationError as e:
        raise ValueError(f"record {record.get('run_id')!r} is not a valid record: {e}") from None
    return write_json_atomic(record, folder / f"{record['run_id']}.json")


def record_paths(results_dir: str | os.PathLike) -> list[Path]:
    """Every record file under `results_dir` (recursively); hidden folders (a sweep's `.checkpoints/`, `.locks/`)
    and temporary files hold none."""
    root = Path(results_dir)
    return [
        path
        for path in sorted(root.rglob("*.json"))
        if not any(part.startswith(".") for part in path.relative_to(root).parts)
    ]


def read_records(results_dir: str | os.PathLike, status: str | None = "ok") -> list[dict[str, Any]]:
    """Every record under `results_dir` (recursively), optionally only those with `status`.

    Raises `InvalidRecordsError` naming every file that is not a valid record: a report must not drop a result."""
    records, problems = [], {}
    for path in record_paths(results_dir):
        try:
            record = load_record(path)
        except InvalidRecordsError as e:
            problems.update(e.problems)
            continue
        if status is None or record["status"] == status:
            records.append(record)
    if problems:
        raise InvalidRecordsError(problems)
    return records


def invalid_records(results_dir: str | os.PathLike) -> dict[Path, str]:
    """Every invalid record file under `results_dir`, with what is wrong with it."""
    return {path: problem for path in record_paths(results_dir) if (problem := record_problem(path))}


def read_ok_record(path: str | os.PathLike) -> dict[str, Any] | None:
    """The record at `path` if it is a valid record that finished with status ok, else None (absent, invalid,
    hollow or failed: the run is to be trained)."""
    try:
        record = load_record(path)
    except InvalidRecordsError:
        return None
    return record if record["status"] == "ok" else None


def records_frame(results_dir: str | os.PathLike, status: str | None = "ok") -> pd.DataFrame:
    """Records as a table: one row per run, metrics flattened to `metric.<name>` columns."""
    return flatten(read_records(results_dir, status))


def paid_seconds(runs: pd.DataFrame, field: str, reruns: bool = True) -> pd.Series:
    """Per run, every second of `field` (`train_runtime_s` or `eval_runtime_s`) it cost: its record's, plus those of
    its other trainings (a prerequisite whose artifact a machine's cache lacked, trained again; a run resumed out of
    order, rerun: the record's `retrained` list; rows without records, such as `run_costs`', count their own). Cost
    tables sum these; a speed reads the record's own seconds. `reruns=False`: what the run cost when it was first made,
    for a budget that paid for it then (a record that replaced a resumed run counts that run's seconds, and neither
    counts the rerun)."""
    own = runs[field].fillna(0.0) if field in runs else pd.Series(0.0, runs.index)
    if "record" not in runs:
        return own
    if reruns:
        return own + runs["record"].map(lambda record: sum(r.get(field) or 0.0 for r in record.get("retrained", [])))
    return runs["record"].map(lambda record: _first_paid(record, field))


def paid_evaluation(runs: pd.DataFrame) -> pd.Series:
    """Per run, every second of evaluation it cost: its epochs' (`paid_seconds` of `eval_runtime_s`) and its layer
    ablation's (`ablation_seconds`), which evaluates the dev set once per span of layers after training."""
    return paid_seconds(runs, "eval_runtime_s") + ablation_seconds(runs)


def ablation_seconds(runs: pd.DataFrame) -> pd.Series:
    """Per run, the seconds its layer ablation's evaluations took (`ablation_runtime_s`); for a record made before
    they were timed, an estimate (`ablation_estimated`): its spans × its own mean evaluation time per epoch, on the
    same set. 0 for a run without an ablation, and for rows without records (`run_costs`' count it in evaluation)."""
    if "record" not in runs:
        return pd.Series(0.0, runs.index)
    return runs["record"].map(_ablation_seconds).astype(float)


def ablation_estimated(runs: pd.DataFrame) -> pd.Series:
    """Per run, whether `ablation_seconds` is an estimate: an ablation whose record has no `ablation_runtime_s`."""
    if "record" not in runs:
        return pd.Series(False, runs.index)
    return runs["record"].map(lambda r: bool(r.get("layer_ablation")) and r.get("ablation_runtime_s") is None)


def _ablation_seconds(record: dict[str, Any]) -> float:
    spans = record.get("layer_ablation") or []
    if not spans:
        return 0.0
    if record.get("ablation_runtime_s") is not None:
        return record["ablation_runtime_s"]
    per_epoch = [row["eval_runtime_s"] for row in record.get("history", []) if row.get("eval_runtime_s") is not None]
    if not per_epoch:
        raise ValueError(f"{record['run_id']}: a layer ablation with no evaluation time to estimate its seconds from")
    return len(spans) * sum(per_epoch) / len(per_epoch)


def _first_paid(record: dict[str, Any], field: str) -> float:
    entries = record.get("retrained", [])
    first = next((r for r in entries if r.get("why") == RERUN and "metrics" in r), record)  # the replaced run
    others = [r for r in entries if r.get("why") != RERUN]
    return (first.get(field) or 0.0) + sum(r.get(field) or 0.0 for r in others)


def made_at(runs: pd.DataFrame) -> pd.Series:
    """Per run, when it was first made: the earliest of its record's `finished_at` and its other trainings' (the
    `retrained` list: a run resumed out of order and rerun, a prerequisite trained again where a cache lacked it,
    whose new record replaced the old). A seed trained again is no fresh seed: what is exploratory or
    confirmatory, and which budget paid, read this."""
    if "record" not in runs:
        return runs["finished_at"]
    return runs["record"].map(lambda r: min([r["finished_at"], *(e["finished_at"] for e in r.get("retrained", []))]))


def paid_since(runs: pd.DataFrame, since: str) -> pd.Series:
    """Per run, the training and evaluation seconds of its trainings (the record's own, with its layer ablation's,
    and its `retrained` list's) that finished at or after `since` (ISO 8601): what a machine paid from then on for a
    run made before, such as a prerequisite trained again because its cache lacked the artifact."""
    if "record" not in runs:
        return pd.Series(0.0, runs.index)
    when = pd.Timestamp(since)

    def paid(record: dict[str, Any]) -> float:
        trainings = [record, *record.get("retrained", [])]
        seconds = sum(
            (t.get("train_runtime_s") or 0.0) + (t.get("eval_runtime_s") or 0.0)
            for t in trainings
            if pd.Timestamp(t["finished_at"]) >= when
        )
        return seconds + (_ablation_seconds(record) if pd.Timestamp(record["finished_at"]) >= when else 0.0)

    return runs["record"].map(paid).astype(float)


def flatten(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per record: its scalar fields, `metric.<name>` and `config.<name>` columns."""
    rows = []
    for record in records:
        row = {k: v for k, v in record.items() if not isinstance(v, (dict, list))}
        row.update({f"metric.{k}": v for k, v in record["metrics"].items()})
        row.update({f"config.{k}": v for k, v in record["config"].items() if not isinstance(v, (dict, list))})
        rows.append(row)
    return pd.DataFrame(rows)
