"""Text to token ids for training: a task's splits (one example per row), or a corpus packed into full rows."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from datasets import Dataset, DatasetDict


def tokenize_task(splits: DatasetDict, tokenizer, max_seq_length: int) -> DatasetDict:
    """Token ids for every split; pairs are encoded as one sequence with segment ids."""

    def encode(batch):
        pair = batch["text_b"] if "text_b" in batch else None
        return tokenizer(batch["text_a"], pair, truncation=True, max_length=max_seq_length)

    text_columns = [c for c in ("text_a", "text_b") if c in splits["train"].column_names]
    return splits.map(encode, batched=True, remove_columns=text_columns, desc="tokenize")


def length_order(dataset) -> np.ndarray:
    """Row indices by length (stable), so each evaluation batch pads only to its own longest."""
    return np.argsort([len(ids) for ids in dataset["input_ids"]], kind="stable")


def sort_by_length(dataset):
    """Evaluation order by length, so each batch pads only to its own longest (metrics ignore order)."""
    return dataset.select(length_order(dataset).tolist())


def pack_texts(texts: Iterable[str], tokenizer, max_seq_length: int, drop_last: bool = False) -> Dataset:
    """Token rows of exactly `max_seq_length`: [CLS] text [SEP] text [SEP] ... with texts split across rows.

    The last, shorter row is kept unless `drop_last` (nothing is silently dropped by default).
    """
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    body = max_seq_length - 1
    rows, current = [], []
    for ids in tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]:
        current.extend(ids + [sep])
        while len(current) >= body:
            rows.append([cls] + current[:body])
            current = current[body:]
    if current and not drop_last:
        rows.append([cls] + current)
    return Dataset.from_dict({"input_ids": rows})
