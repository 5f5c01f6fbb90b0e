"""How splits are cut: capped subsamples, re-splits of pooled data, fixed stratified splits, and the
Hyperformer paper's rule for model-selection splits.

Every split here is seeded and the same on any machine; a smaller cap keeps a subset of a larger one's rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from datasets import Dataset, DatasetDict

    from adaptstudy.data.spec import TaskSpec

SPLIT_SEED = 0  # splits a builder makes use it, never a run's data_seed: every run sees the same split
LARGE_TASK = 10_000  # training examples from which a task holds out training data for model selection
HELD_OUT = 1_000
SELECTION_SHARE, SELECTION_CAP = 0.1, 1_000  # the selection split carved from training data (`carve_selection`)


def resplit(splits: DatasetDict, spec: TaskSpec, train_share: float, seed: int) -> DatasetDict:
    """All rows of every split pooled, then split `train_share` / rest into train / the evaluation split."""
    from datasets import DatasetDict, concatenate_datasets  # here, not on import (the report reads this layer)
    from sklearn.model_selection import train_test_split

    pooled = concatenate_datasets([splits[s] for s in splits])
    stratify = None if spec.is_regression else pooled["label"]
    train_idx, eval_idx = train_test_split(
        np.arange(len(pooled)), train_size=train_share, random_state=seed, stratify=stratify
    )
    return DatasetDict(
        {
            "train": pooled.select(np.sort(train_idx).tolist()),
            spec.eval_split: pooled.select(np.sort(eval_idx).tolist()),
        }
    )


def subsample(dataset: Dataset, n: int, seed: int) -> Dataset:
    """`n` rows chosen by `seed` alone (the same on any machine), kept in file order."""
    if n <= 0:
        raise ValueError(f"max_train_examples must be positive, got {n}")
    if n >= len(dataset):
        return dataset
    return dataset.select(subsample_indices(len(dataset), n, seed).tolist())


def subsample_indices(size: int, n: int, seed: int) -> np.ndarray:
    """The rows `subsample` keeps of `size` (all of them when `n` ≥ `size`), in file order: a report finds a capped
    run's examples inside a run's whole split from them."""
    if n >= size:
        return np.arange(size)
    return np.sort(np.random.default_rng(seed).permutation(size)[:n])


def stratified_split(labels: list[int], sizes: dict[str, int | float], seed: int = SPLIT_SEED) -> dict[str, np.ndarray]:
    """Row indices per split: sizes are counts, or shares of the rows; the first split takes the rest."""
    from sklearn.model_selection import train_test_split

    names = list(sizes)
    idx, out = np.arange(len(labels)), {}
    labels = np.asarray(labels)
    for name in reversed(names[1:]):
        size = sizes[name] if isinstance(sizes[name], int) else round(sizes[name] * len(labels))
        idx, taken = train_test_split(idx, test_size=size, random_state=seed, stratify=labels[idx])
        out[name] = np.sort(taken)
    out[names[0]] = np.sort(idx)
    return {name: out[name] for name in names}


def carve_selection(train: Dataset, spec: TaskSpec) -> tuple[Dataset, Dataset]:
    """(the rest of train, a selection split): SELECTION_SHARE of the training rows, at most SELECTION_CAP,
    stratified by label and seeded by SPLIT_SEED, so it is the same for every run of a task whatever its seed or
    training cap. Learning rates, sizes and epochs are chosen on it; the reported split never chooses anything."""
    from sklearn.model_selection import train_test_split

    size = min(SELECTION_CAP, max(1, round(SELECTION_SHARE * len(train))))
    stratify = None if spec.is_regression else train["label"]
    rest, selection = train_test_split(
        np.arange(len(train)), test_size=size, random_state=SPLIT_SEED, stratify=stratify
    )
    return train.select(np.sort(rest).tolist()), train.select(np.sort(selection).tolist())


def selection_splits(splits: DatasetDict, spec: TaskSpec, seed: int) -> DatasetDict:
    """train / validation (model selection) / test by the Hyperformer paper's rule: a task with fewer than
    LARGE_TASK training examples gives half its validation set for model selection and half as the test set; a
    larger one holds out HELD_OUT training examples for model selection and uses its validation set as the test set."""
    from datasets import DatasetDict

    train, dev = splits["train"], splits[spec.eval_split]
    order = np.random.default_rng(seed)
    if len(train) < LARGE_TASK:
        idx = order.permutation(len(dev))
        half = len(dev) // 2
        return DatasetDict(
            {
                "train": train,
                "validation": dev.select(np.sort(idx[:half]).tolist()),
                "test": dev.select(np.sort(idx[half:]).tolist()),
            }
        )
    idx = order.permutation(len(train))
    return DatasetDict(
        {
            "train": train.select(np.sort(idx[HELD_OUT:]).tolist()),
            "validation": train.select(np.sort(idx[:HELD_OUT]).tolist()),
            "test": dev,
        }
    )
