"""Tasks that the mirror holds in a form that needs building: XML articles, one file to split, vote counts.

A `TaskSpec` with `builder` set names one of these; its `files` say which mirror file each split is
read from (so a missing file is reported like any other), and the builder returns all splits with the
columns `text_a` and `label`. Splits made here use a fixed seed (`splits.SPLIT_SEED`), never the run's
`data_seed`: every run of a task sees the same split, as with a published one.
"""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from adaptstudy.data.errors import DataNotFoundError, MalformedDataError
from adaptstudy.data.readers import read_split
from adaptstudy.data.splits import stratified_split

if TYPE_CHECKING:
    from datasets import Dataset, DatasetDict

HELPFUL_MIN_VOTES = 5
HELPFUL_SHARE = 0.75  # helpful if at least this share of the votes say so: splits the mirror's reviews about evenly


def _dataset(texts: list[str], labels: list[int], rows: np.ndarray) -> Dataset:
    from datasets import Dataset  # here, not on import (the report reads this layer)

    return Dataset.from_dict({"text_a": [texts[i] for i in rows], "label": [labels[i] for i in rows]})


def hyperpartisan(spec, root: Path) -> DatasetDict:
    """SemEval-2019 Task 4 by-article: title and body text of the 645 articles, and a seeded split of the
    paper's sizes (516 / 64 / 65), stratified by label."""
    from datasets import DatasetDict

    articles = root / spec.files["train"]
    truth = articles.with_name(articles.name.replace("articles-", "ground-truth-"))
    if not truth.is_file():
        raise DataNotFoundError(f"task {spec.name!r}: the labels file {truth} is missing beside {articles}")
    gold = {a.get("id"): a.get("hyperpartisan") == "true" for a in _xml_root(truth)}
    texts, labels = [], []
    for article in _xml_root(articles):
        body = " ".join("".join(article.itertext()).split())
        texts.append(f"{article.get('title', '')}. {body}".strip())
        labels.append(spec.labels.index("true" if gold[article.get("id")] else "false"))
    rows = stratified_split(labels, {"train": 516, "dev": 64, "test": 65})
    return DatasetDict({split: _dataset(texts, labels, r) for split, r in rows.items()})


def _xml_root(path: Path) -> ET.Element:
    """The root element of an XML file; a file that does not parse (truncated, damaged) is named in the error."""
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as e:
        raise MalformedDataError(f"{path} is not well-formed XML ({e}): replace it with a whole copy") from None


def first_of_each_text(texts: list[str], exclude: set[str] = frozenset()) -> list[int]:
    """Indices of the first occurrence of each text not in `exclude`: duplicates would leak across splits."""
    seen, keep = set(exclude), []
    for i, text in enumerate(texts):
        if text not in seen:
            seen.add(text)
            keep.append(i)
    return keep


def agnews(spec, root: Path) -> DatasetDict:
    """AG News: train and a held-out dev set (1,000, stratified) from the mirror's `dev.tsv` (drawn from the
    official train set), after removing its repeated articles and those also in the official test set
    (AGNEWS_DROPPED); the official test set as test. Title and description are one text column there."""
    from datasets import DatasetDict

    test = read_split(spec, root / spec.files["test"])
    source = read_split(spec, root / spec.files["train"])
    source = source.select(first_of_each_text(source["text_a"], exclude=set(test["text_a"])))
    rows = stratified_split(source["label"], {"train": None, "dev": 1000})
    out = DatasetDict({split: source.select(r.tolist()) for split, r in rows.items()})
    out["test"] = test
    return out


REVIEW = re.compile(r"<review>(.*?)</review>", re.S)
FIELD = re.compile(r"<(unique_id|helpful|review_text)>\s*(.*?)\s*</\1>", re.S)


@functools.lru_cache(maxsize=4)
def blitzer_reviews(root: Path) -> list[dict[str, str]]:
    """Every review of the Blitzer multi-domain set: domain, unique id, helpful votes and text (read once per
    process: the helpfulness task and the reviews corpus both start from it; do not modify the list)."""
    reviews = []
    for path in sorted((root / "amazon_blitzer").glob("*/*.review")):
        for body in REVIEW.findall(path.read_text(encoding="latin-1")):
            fields = dict(FIELD.findall(body))
            reviews.append({"domain": path.parent.name, "file": path.name, **fields})
    return reviews


def helpfulness_rows(root: Path) -> list[dict]:
    """Reviews with at least HELPFUL_MIN_VOTES votes, labelled helpful when the share of helpful votes is at
    least HELPFUL_SHARE (a stand-in for the Amazon helpfulness task of Don't Stop Pretraining). A review text
    that occurs again (the same review under another product or domain) is kept once."""
    rows, seen = [], set()
    for review in blitzer_reviews(root):
        votes = re.fullmatch(r"(\d+) of (\d+)", review.get("helpful", ""))
        text = review.get("review_text")
        if (
            votes and int(votes[2]) >= HELPFUL_MIN_VOTES and text and text not in seen
        ):  # a review filed under two domains once
            seen.add(text)
            helpful = int(votes[1]) / int(votes[2]) >= HELPFUL_SHARE
            rows.append(
                {
                    "id": f"{review['domain']}/{review['unique_id']}",
                    "text": review["review_text"],
                    "label": int(helpful),
                }
            )
    return rows


def helpfulness_split(root: Path) -> dict[str, list[dict]]:
    """The helpfulness rows per split (70% / 10% / 20%, stratified, fixed seed), with review ids, so the
    reviews corpus can leave out what the task evaluates on."""
    rows = helpfulness_rows(root)
    split = stratified_split([r["label"] for r in rows], {"train": None, "dev": 0.1, "test": 0.2})
    return {name: [rows[i] for i in idx] for name, idx in split.items()}


def helpfulness(spec, root: Path) -> DatasetDict:
    from datasets import Dataset, DatasetDict

    return DatasetDict(
        {
            name: Dataset.from_dict({"text_a": [r["text"] for r in rows], "label": [r["label"] for r in rows]})
            for name, rows in helpfulness_split(root).items()
        }
    )


BUILDERS: dict[str, Callable[..., DatasetDict]] = {
    "hyperpartisan": hyperpartisan,
    "agnews": agnews,
    "helpfulness": helpfulness,
}
