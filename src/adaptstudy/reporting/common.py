"""What every chapter of the book shares: its runs (`load_runs`), the seed settings are chosen on, the runs that
report, mean ± sd, and the scale a chapter ran at.

Every chapter module takes the frame of `load_runs`, labelled by its own `label_runs(runs) -> DataFrame`. Choosing
on the selection split is `selection`; the foundation chapter's comparison with the papers is `foundation`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from adaptstudy.runs.records import flatten, read_records

SELECTION_SEED = 0  # learning rates (and Houlsby's best adapter size) are chosen on this seed's runs


def reported(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs a table or verdict may rest on: every seed but the one that chose the settings."""
    return runs[runs["seed"] != SELECTION_SEED]


def load_runs(folder: str | os.PathLike, status: str | None = "ok") -> pd.DataFrame:
    """A study's runs: the flat columns of `records_frame`, plus `record`, each run's whole record, for the nested
    fields a chapter reads (history, fusion attention, the pretraining chain, per-task scores), and `prerequisites`:
    what each run started from (its record's `prerequisites`), each with that run's record as committed beside the
    study (`record`; None where there is none), for the check against a claim's freeze (`reporting.prerequisites`)."""
    records = read_records(folder, status)
    read: dict[Path, dict | None] = {}

    def needs(record: dict) -> list[dict]:
        out = []
        for need in record.get("prerequisites", []):
            path = Path(folder).parent / need["study"] / f"{need['run_id']}.json"
            if path not in read:
                read[path] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
            out.append({**need, "record": read[path]})
        return out

    return flatten(records).assign(
        record=pd.Series(records, dtype=object), prerequisites=pd.Series([needs(r) for r in records], dtype=object)
    )


def config_column(runs: pd.DataFrame, name: str, default=np.nan) -> pd.Series:
    """The setting `name` of each run, `default` where no record has it (a frame has a column only for settings
    that some record of it carries)."""
    column = f"config.{name}"
    return runs[column] if column in runs else pd.Series(default, index=runs.index)


def method_label(method: str, adapter_size) -> str:
    """`houlsby-64` for adapter methods, the method's name otherwise (as the published table names them)."""
    return f"{method}-{int(adapter_size)}" if pd.notna(adapter_size) else method


def scale_note(runs: pd.DataFrame, scored_on: str = "the dev set") -> str:
    """One sentence saying at which scale the runs in a table were made."""
    if runs.empty:
        return "**No committed records yet** for this table: only the published numbers are shown."
    backbones = ", ".join(sorted(runs["backbone"].unique()))
    # a cell is a configuration up to its seed
    setting = [
        c
        for c in runs.columns
        if c.startswith("config.") and c not in ("config.seed", "config.data_dir", "config.results_dir")
    ]
    seeds = runs.groupby(setting, dropna=False)["seed"].nunique()
    steps = runs["config.max_steps"].dropna() if "config.max_steps" in runs else pd.Series(dtype=float)
    updates = f" (or {span(steps)} updates)" if not steps.empty else ""
    devices = ", ".join(sorted(runs["device"].unique()))
    if "precision_used" in runs:
        devices += " in " + ", ".join(sorted(runs["precision_used"].fillna("fp32").unique()))
    return (
        f"Ours: {len(runs)} runs on {backbones}, {span(seeds)} seed(s) per cell, "
        f"{span(runs['config.num_train_epochs'])} epochs{updates}, "
        f"max_seq_length {runs['config.max_seq_length'].max()}, on {devices}; metrics on {scored_on}."
    )


def method_descriptions(runs: pd.DataFrame, methods) -> pd.DataFrame:
    """What each of `methods` trains, as its runs' records say (`method_description`, the methods registry's words
    when the run was made): the configs a chapter must state."""
    said = {}
    for method, record in zip(runs["method"], runs["record"]):
        said.setdefault(method, record.get("method_description"))
    missing = [m for m in methods if not said.get(m)]
    if missing:
        raise ValueError(f"no record of {missing} says what the method trains (`method_description`)")
    return pd.DataFrame([(m, said[m]) for m in methods], columns=["method", "what trains"])


def sample_sd(values) -> float:
    """The sd over seeds every chapter reports: the sample sd (n − 1), 0 for a single value."""
    values = list(values)
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def mean_sd(values) -> str:
    """'61.0 ± 1.4 (2)': mean ± sample sd (0 for one value) and how many values; '–' for none."""
    values = list(values)
    return format_mean_sd(np.mean(values), sample_sd(values), len(values)) if values else "–"


def format_mean_sd(mean: float, sd: float, count: int) -> str:
    """`mean_sd`'s cell from figures already aggregated: '84.4 ± 0.4 (5)'; one value shows no spread: '54.5 (1)'."""
    if count < 2:
        return f"{mean:.1f} ({count})"
    return f"{mean:.1f} ± {sd:.1f} ({count})"


def span(values: pd.Series) -> str:
    """'3' when every value is 3, '1–3' when they range (for notes on the scale of a table)."""
    low, high = values.min(), values.max()
    return f"{low:g}" if low == high else f"{low:g}–{high:g}"
