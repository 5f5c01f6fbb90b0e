"""The splits a run trains and is scored on, loaded from its settings: its configuration is data (it names the task,
the caps and the seeds), and loading is the training layer's work."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adaptstudy.data.spec import resolve_task
from adaptstudy.data.splits import selection_splits, subsample
from adaptstudy.data.tasks import load_task, with_selection

if TYPE_CHECKING:
    from datasets import DatasetDict

    from adaptstudy.runs.finetune_config import FinetuneConfig
    from adaptstudy.runs.multitask_config import MultiTaskConfig


def train_examples_cap(config: FinetuneConfig) -> int | None:
    """How many training examples to keep: `train_fraction` of `max_train_examples` (or of the whole set)."""
    if config.train_fraction == 1.0:
        return config.max_train_examples
    total = config.max_train_examples or len(finetune_splits(config, cap=False)["train"])
    return max(1, round(config.train_fraction * total))


def finetune_splits(config: FinetuneConfig, cap: bool = True) -> DatasetDict:
    """The task's splits as this run uses them: re-split, then the selection split carved from train (with
    `selection_split`), then train capped and subsampled."""
    limit = train_examples_cap(config) if cap else None
    splits = load_task(
        config.task,
        config.data_dir,
        None if config.selection_split else limit,
        config.data_seed,
        resplit_train_share=config.resplit_train_share,
        max_eval_examples=config.max_eval_examples,
    )
    if config.selection_split:
        splits = with_selection(splits, config.task, config.data_dir)
        if limit is not None:
            splits["train"] = subsample(splits["train"], limit, config.data_seed)
    return splits


def multitask_splits(config: MultiTaskConfig) -> dict[str, DatasetDict]:
    """Per task: train (capped), validation and test, by the paper's rule."""
    return {
        task: task_splits(
            task,
            config.data_dir,
            config.data_seed,
            config.max_train_examples,
            config.max_eval_examples,
            config.selection_split,
        )
        for task in config.tasks
    }


def task_splits(
    task: str,
    data_dir,
    data_seed: int,
    max_train_examples: int | None,
    max_eval_examples: int | None,
    selection_split: bool = False,
) -> DatasetDict:
    """One task's train (capped), validation and test as a multi-task run sees them (`MultiTaskConfig.selection_split`):
    by the Hyperformer paper's rule (validation and test capped), or validation the selection split and test the dev
    set (capped), exactly as a single-task run with `selection_split` sees them."""
    from datasets import DatasetDict

    spec = resolve_task(task)
    if selection_split:
        splits = with_selection(
            load_task(task, data_dir, None, data_seed, max_eval_examples=max_eval_examples), spec, data_dir
        )
        splits = DatasetDict(validation=splits["selection"], test=splits[spec.eval_split], train=splits["train"])
    else:
        splits = selection_splits(load_task(task, data_dir), spec, data_seed)
        if max_eval_examples is not None:
            for split in ("validation", "test"):
                splits[split] = subsample(splits[split], max_eval_examples, data_seed)
    if max_train_examples is not None:
        splits["train"] = subsample(splits["train"], max_train_examples, data_seed)
    return splits
