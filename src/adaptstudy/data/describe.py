"""A task at a glance: sizes, label balance and token lengths of every split (the `01_data_prep` notebook)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from adaptstudy.data.spec import TaskSpec

if TYPE_CHECKING:  # a type only: the book's pages describe data from committed files without `datasets`
    from datasets import DatasetDict


def describe_task(splits: DatasetDict, tokenizer, spec: TaskSpec, max_seq_length: int) -> dict:
    """Sizes, label balance and token lengths (untruncated) of every split, as tables."""
    sizes, labels, lengths = [], [], []
    for split, ds in splits.items():
        sizes.append({"split": split, "examples": len(ds)})
        if spec.is_regression:
            labels.append(
                {
                    "split": split,
                    "label": "mean (sd)",
                    "share": f"{np.mean(ds['label']):.2f} ({np.std(ds['label']):.2f})",
                }
            )
        else:
            counts = np.bincount(list(ds["label"]), minlength=spec.num_labels)
            names = spec.label_names or spec.labels
            labels += [{"split": split, "label": n, "share": c / len(ds)} for n, c in zip(names, counts)]
        pair = list(ds["text_b"]) if "text_b" in ds.column_names else None
        ids = tokenizer(list(ds["text_a"]), pair)["input_ids"]
        lengths += [{"split": split, "tokens": len(x)} for x in ids]
    lengths = pd.DataFrame(lengths)
    summary = lengths.groupby("split")["tokens"].describe(percentiles=[0.5, 0.95])
    summary["truncated_share"] = lengths.groupby("split")["tokens"].apply(lambda s: (s > max_seq_length).mean())
    return {
        "sizes": pd.DataFrame(sizes),
        "labels": pd.DataFrame(labels),
        "lengths": lengths,
        "length_summary": summary.reset_index(),
    }


def token_lengths(texts: list[str], tokenizer) -> np.ndarray:
    """Each text's length in tokens, untruncated, [CLS] and [SEP] included."""
    return np.array([len(ids) for ids in tokenizer(list(texts), verbose=False)["input_ids"]])


def truncation(counts, lengths: list[int]) -> pd.DataFrame:
    """What cutting texts of these token `counts` (`token_lengths`) at each `max_seq_length` keeps: the share of
    texts cut, the share of their tokens kept, and the mean tokens per example after the cut, which a step's cost
    grows with (batches pad to their longest example)."""
    counts = np.asarray(counts)
    rows = []
    for length in lengths:
        kept = np.minimum(counts, length)
        rows.append(
            {
                "max_seq_length": length,
                "texts cut (%)": 100 * (counts > length).mean(),
                "tokens kept (%)": 100 * kept.sum() / counts.sum(),
                "tokens per example": kept.mean(),
            }
        )
    table = pd.DataFrame(rows)
    return table.assign(**{"cost vs shortest": table["tokens per example"] / table["tokens per example"].iloc[0]})


def packing(counts, lengths: list[int]) -> pd.DataFrame:
    """What packing texts of these token `counts` (`token_lengths`: [CLS] and [SEP] in) into rows of each length
    buys a masked-LM step over one text per row (padded, cut at the row): texts per packed row, the share of an
    unpacked row that is text rather than padding, and the text tokens a packed row carries per unpacked row's (the
    gain in tokens seen per step at the same row count)."""
    counts = np.asarray(counts)
    rows = []
    for length in lengths:
        unpacked = np.minimum(counts, length).mean()
        rows.append(
            {
                "row length": length,
                "mean text tokens": counts.mean() - 2,
                "texts per packed row": length / (counts.mean() - 1),  # a packed row shares one [CLS]
                "text in an unpacked row (%)": 100 * unpacked / length,
                "gain in tokens per row": length / unpacked,
            }
        )
    return pd.DataFrame(rows)
