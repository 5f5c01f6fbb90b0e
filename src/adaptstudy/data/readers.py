"""Reading a task's files as it declares them (TSV, CSV, JSON lines), or its Hub copy, into `datasets`.

Whatever the source, a split has the columns `text_a`, optionally `text_b`, and `label` (a class id,
or a float for regression). A row that does not fit is one error naming its file and line.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from adaptstudy.data.errors import DataNotFoundError, MalformedDataError

if TYPE_CHECKING:
    from datasets import Dataset, DatasetDict

    from adaptstudy.data.spec import TaskSpec

DATA_ENV = "ADAPTSTUDY_DATA"


def read_split(spec: TaskSpec, path: Path) -> Dataset:
    try:
        return _read_split(spec, path)
    except UnicodeDecodeError as e:
        raise MalformedDataError(f"{path}:{_line_of_bad_byte(path)}: not UTF-8 text ({e.reason})") from None


def _line_of_bad_byte(path: Path) -> int:
    """The line holding a file's first byte that is not UTF-8 (located only once decoding failed)."""
    data = path.read_bytes()
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return data[: e.start].count(b"\n") + 1
    return 1


def _read_split(spec: TaskSpec, path: Path) -> Dataset:
    rows = _read_jsonl(path) if spec.format == "jsonl" else _read_delimited(spec, path)
    columns: dict[str, list] = {"text_a": [], "label": []}
    if len(spec.text_fields) == 2:
        columns["text_b"] = []
    for lineno, row in rows:
        for key, field in zip(("text_a", "text_b"), spec.text_fields):
            if field not in row:
                raise MalformedDataError(f"{path}:{lineno}: no field {field!r} (has {sorted(row)})")
            text = row[field]
            if not isinstance(text, str) or not text.strip():
                raise MalformedDataError(f"{path}:{lineno}: empty text in field {field!r}")
            columns[key].append(text)
        if spec.label_field not in row:
            raise MalformedDataError(f"{path}:{lineno}: no label field {spec.label_field!r}")
        columns["label"].append(_parse_label(spec, row[spec.label_field], path, lineno))
    if not columns["label"]:
        raise MalformedDataError(f"{path}: no rows")
    from datasets import Dataset  # here, not on import: the report reads this layer without `datasets`

    return Dataset.from_dict(columns)


def _parse_label(spec: TaskSpec, raw, path: Path, lineno: int) -> int | float:
    if spec.labels is None:
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise MalformedDataError(f"{path}:{lineno}: regression label {raw!r} is not a number") from None
        if not np.isfinite(value):
            raise MalformedDataError(f"{path}:{lineno}: regression label {raw!r} is not finite")
        return value
    key = str(raw).strip()
    if key not in spec.labels:
        raise MalformedDataError(f"{path}:{lineno}: label {raw!r} is not one of {spec.labels}")
    return spec.labels.index(key)


def _read_jsonl(path: Path):
    with open(path, encoding="utf-8-sig") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                raise MalformedDataError(f"{path}:{lineno}: empty line")
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise MalformedDataError(f"{path}:{lineno}: not JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise MalformedDataError(f"{path}:{lineno}: expected a JSON object")
            yield lineno, row


def _read_delimited(spec: TaskSpec, path: Path):
    delimiter = "\t" if spec.format == "tsv" else ","
    quoting = csv.QUOTE_MINIMAL if spec.quoting else csv.QUOTE_NONE
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, delimiter=delimiter, quoting=quoting)
        names = spec.columns
        if spec.header:
            header = next(reader, None)
            if header is None:
                raise MalformedDataError(f"{path}:1: empty file, expected a header")
            names = names or header
        for row in reader:
            lineno = reader.line_num
            if len(row) != len(names):
                raise MalformedDataError(f"{path}:{lineno}: expected {len(names)} columns ({names}), found {len(row)}")
            yield lineno, dict(zip(names, row))


def load_from_hub(spec: TaskSpec, root: Path, missing: list[Path]) -> DatasetDict:
    where = (
        f"task {spec.name!r}: not found in the data directory {root} (missing {', '.join(map(str, missing))}). "
        f"Set the `data_dir` parameter or the environment variable {DATA_ENV} to the local mirror"
    )
    if spec.hub_id is None:
        raise DataNotFoundError(where + "; this task has no Hub id to fall back to.")
    try:
        from datasets import load_dataset

        raw = load_dataset(spec.hub_id, spec.hub_config)
    except Exception as e:  # offline, gated, renamed: one clear error instead
        raise DataNotFoundError(
            where + f", or give the machine network access to the Hub ({spec.hub_id}: {type(e).__name__}: {e})."
        ) from e
    fields = spec.hub_text_fields or spec.text_fields
    from datasets import DatasetDict

    out = DatasetDict()
    for split in spec.files:
        ds = raw[spec.hub_splits.get(split, split)]
        renames = dict(zip(fields, ("text_a", "text_b")))
        renames[spec.hub_label_field] = "label"
        ds = ds.rename_columns({k: v for k, v in renames.items() if k != v})
        out[split] = ds.select_columns([c for c in ("text_a", "text_b", "label") if c in ds.column_names])
    return out
