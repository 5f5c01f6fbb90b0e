"""A task's splits, from the local mirror first, then the Hugging Face Hub.

Loading a task gives a `datasets.DatasetDict` with the columns `text_a`, optionally `text_b`, and `label`
(a class id, or a float for regression), whatever the source format.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from datasets import Dataset, DatasetDict

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.data import catalog  # noqa: F401  (registers the tasks)
from adaptstudy.data.builders import BUILDERS
from adaptstudy.data.errors import DataNotFoundError
from adaptstudy.data.readers import DATA_ENV, load_from_hub, read_split
from adaptstudy.data.spec import TASKS, TaskSpec, resolve_task
from adaptstudy.data.splits import carve_selection, resplit, subsample

__all__ = [
    "TASKS",
    "TaskSpec",
    "load_selection_file",
    "load_task",
    "resolve_data_dir",
    "resolve_task",
    "with_selection",
]


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The parameter, else $ADAPTSTUDY_DATA, else `data/` in the project."""
    if data_dir:
        return Path(data_dir)
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    return PROJECT_ROOT / "data"


def load_task(
    task: str | TaskSpec | Mapping,
    data_dir: str | os.PathLike | None = None,
    max_train_examples: int | None = None,
    data_seed: int = 0,
    resplit_train_share: float | None = None,
    max_eval_examples: int | None = None,
) -> DatasetDict:
    """All splits of a task, from the data directory or else the Hub.

    With `resplit_train_share`, every labelled split is pooled and split again (stratified, seeded by
    `data_seed`) into train and the evaluation split, as papers that make their own split do. Then
    train is optionally capped to `max_train_examples` and the evaluation split to `max_eval_examples`
    (seeded subsamples; a smaller cap keeps a subset of a larger one's rows).
    """
    spec = resolve_task(task)
    root = resolve_data_dir(data_dir)
    if root.is_file():
        raise DataNotFoundError(f"data_dir {root} is a file, not a folder: give the folder of the data mirror")
    paths = {split: root / rel for split, rel in spec.files.items()}
    missing = [p for p in paths.values() if not p.is_file()]
    if not missing and spec.builder:
        splits = BUILDERS[spec.builder](spec, root)
    elif not missing:
        splits = DatasetDict({split: read_split(spec, path) for split, path in paths.items()})
    else:
        splits = load_from_hub(spec, root, missing)
    if resplit_train_share is not None:
        splits = resplit(splits, spec, resplit_train_share, data_seed)
    if max_train_examples is not None:
        splits["train"] = subsample(splits["train"], max_train_examples, data_seed)
    if max_eval_examples is not None:
        splits[spec.eval_split] = subsample(splits[spec.eval_split], max_eval_examples, data_seed)
    return splits


def load_selection_file(task: str | TaskSpec | Mapping, data_dir: str | os.PathLike | None = None) -> Dataset:
    """A task's own selection split (`TaskSpec.selection_file`, FewGLUE's dev32), from the mirror: the Hub copies of
    these tasks do not have it."""
    spec = resolve_task(task)
    path = resolve_data_dir(data_dir) / spec.selection_file
    if not path.is_file():
        raise DataNotFoundError(
            f"{path} not found: the selection split of task {spec.name!r} ({spec.selection_file}) comes from the data "
            f"mirror only (set {DATA_ENV} or data_dir to it)"
        )
    return read_split(spec, path)


def with_selection(splits: DatasetDict, task: str | TaskSpec | Mapping, data_dir=None) -> DatasetDict:
    """`splits` with a `selection` split, on which settings are chosen: the task's own (`selection_file`, its
    training data kept whole), else carved from train (`splits.carve_selection`: the same for every run)."""
    spec = resolve_task(task)
    splits = DatasetDict(splits)
    if spec.selection_file:
        splits["selection"] = load_selection_file(spec, data_dir)
    else:
        splits["train"], splits["selection"] = carve_selection(splits["train"], spec)
    return splits
