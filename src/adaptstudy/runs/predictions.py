"""What a record keeps of its predictions and labels: one per example of the reported split, in the split's order,
and a fingerprint of the examples, so any metric can be recomputed and the examples resampled from the record alone
(the labels of the selection and validation splits too, for their constant baselines).

Compact for a thousand records: class ids as one character each (0-9, then a-z: up to 36 classes), regression
scores as one space-separated string with four decimals.
"""

from __future__ import annotations

import hashlib
import string
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # only a type here: the report decodes predictions without loading `datasets`
    from datasets import Dataset

DIGITS = string.digits + string.ascii_lowercase
TEXT_COLUMNS = ("text_a", "text_b")


def examples_sha256(dataset: Dataset) -> str:
    """A fingerprint of the examples (texts and labels, in order): equal when a reader scores the same examples."""
    digest = hashlib.sha256()
    columns = [c for c in (*TEXT_COLUMNS, "label") if c in dataset.column_names]
    for row in zip(*(dataset[c] for c in columns)):
        digest.update(("\t".join(map(str, row)) + "\n").encode())
    return digest.hexdigest()


def encode(predictions: np.ndarray, regression: bool) -> str:
    """Predictions as one compact string (see the module docstring)."""
    if regression:
        return " ".join(f"{x:.4f}" for x in np.asarray(predictions, dtype=float))
    ids = np.asarray(predictions, dtype=int)
    if ids.size and (ids.min() < 0 or ids.max() >= len(DIGITS)):
        raise ValueError(f"class ids must lie in 0..{len(DIGITS) - 1} to be stored, got {ids.min()}..{ids.max()}")
    return "".join(DIGITS[i] for i in ids)


_CLASS_ID = np.full(256, -1, dtype=np.int64)  # a stored character's class id (-1: not one)
_CLASS_ID[[ord(c) for c in DIGITS]] = np.arange(len(DIGITS))


def decode(stored: dict[str, Any]) -> np.ndarray:
    """The predictions (or labels) a record stored (`record["predictions"]`, `record["labels"][split]`), as an array
    in the split's order. Vectorised: the report decodes every record's several times."""
    if stored["kind"] == "scores":
        return np.array(stored["values"].split(), dtype=float)
    ids = _CLASS_ID[np.frombuffer(stored["values"].encode("ascii"), dtype=np.uint8)]
    if (ids < 0).any():
        raise ValueError(f"stored class ids must be characters of {DIGITS!r}")
    return ids


def stored_predictions(predictions: np.ndarray, examples: Dataset, split: str, regression: bool) -> dict[str, Any]:
    """The record's `predictions` field: which split and examples, and the predictions in the split's order."""
    return {
        "split": split,
        "examples": len(examples),
        "examples_sha256": examples_sha256(examples),
        "kind": "scores" if regression else "class_ids",
        "values": encode(predictions, regression),
    }


def stored_labels(labels, regression: bool) -> dict[str, Any]:
    """A split's labels as a record keeps them (`record["labels"]`, in the split's order, encoded as predictions are):
    what the report needs of the data (constant baselines, bootstrap resamples) without the data mirror."""
    labels = np.asarray(labels)
    return {
        "examples": len(labels),
        "kind": "scores" if regression else "class_ids",
        "values": encode(labels, regression),
    }


def constant_predictions(predictions: np.ndarray, split: str) -> dict[str, Any] | None:
    """Evidence that a run predicted one value for every example of the split it is scored on (a class id, or one
    regression score), for its record's `constant_predictions`; None when its predictions vary."""
    values = np.unique(np.asarray(predictions))
    if len(predictions) < 2 or len(values) != 1:
        return None
    value = values[0].item()
    return {"value": value, "examples": len(predictions), "split": split}
