"""The task registry and the data layer: local mirror first, then the Hugging Face Hub.

Every task is a `TaskSpec`: where its files are in the mirror, its Hub id for users with network,
its text fields, its labels (or regression), its metrics and its splits. Loading a task gives a
`datasets.DatasetDict` with the columns `text_a`, optionally `text_b`, and `label` (a class id,
or a float for regression), whatever the source format. Custom tasks are a `TaskSpec` written
as a mapping in a params file.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import numpy as np
from datasets import Dataset, DatasetDict
from pydantic import BaseModel, ConfigDict, Field, model_validator

from adaptstudy.metrics import check_metric_names
from adaptstudy.registry import Registry

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DATA_ENV = "ADAPTSTUDY_DATA"


class DataNotFoundError(FileNotFoundError):
    """A task's files are neither in the data directory nor reachable on the Hub."""


class MalformedDataError(ValueError):
    """A row that cannot be read as the task declares: names file and line."""


class TaskSpec(BaseModel):
    """Everything the project needs to know about one labelled task."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    format: Literal["tsv", "csv", "jsonl", "built"] = Field(description="built: only the task's builder reads the files")
    files: dict[str, str] = Field(description="split -> path relative to the data directory")
    text_fields: list[str] = Field(min_length=1, max_length=2)
    label_field: str
    labels: list[str] | None = Field(None, description="raw label values in class-id order; None: regression")
    label_names: list[str] | None = None
    metrics: list[str]
    main_metric: str
    header: bool = True
    columns: list[str] | None = Field(None, description="column names of a file without header")
    quoting: bool = Field(False, description="honour quotes in tsv/csv (GLUE TSVs must be read without)")
    hub_id: str | None = None
    hub_config: str | None = None
    hub_splits: dict[str, str] = {}
    hub_text_fields: list[str] | None = None
    hub_label_field: str = "label"
    builder: str | None = Field(None, description="a function of task_builders.BUILDERS that makes the splits")
    description: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        from adaptstudy.task_builders import BUILDERS

        check_metric_names(self.metrics)
        if self.builder is not None and self.builder not in BUILDERS:
            raise ValueError(f"task {self.name!r}: unknown builder {self.builder!r}; valid: {', '.join(BUILDERS)}")
        if self.format == "built" and self.builder is None:
            raise ValueError(f"task {self.name!r}: format 'built' needs a builder")
        if self.main_metric not in self.metrics:
            raise ValueError(f"main_metric {self.main_metric!r} is not among metrics {self.metrics}")
        if self.format != "jsonl" and not self.header and not self.columns:
            raise ValueError(f"task {self.name!r}: a {self.format} file without header needs `columns`")
        if "train" not in self.files or len(self.files) < 2:
            raise ValueError(
                f"task {self.name!r}: `files` needs a 'train' split and an evaluation split (dev), got {sorted(self.files)}"
            )
        if self.label_names is not None and self.labels is not None and len(self.label_names) != len(self.labels):
            raise ValueError(f"task {self.name!r}: label_names and labels differ in length")
        return self

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def num_labels(self) -> int:
        return 1 if self.labels is None else len(self.labels)

    @property
    def eval_split(self) -> str:
        """`dev` where there is one (GLUE's test labels are not public), else the first other split."""
        return "dev" if "dev" in self.files else next(s for s in self.files if s != "train")


TASKS: Registry[TaskSpec] = Registry("task")


def register_task(spec: TaskSpec | Mapping) -> TaskSpec:
    spec = spec if isinstance(spec, TaskSpec) else TaskSpec.model_validate(spec)
    TASKS.add(spec.name, spec)
    return spec


def resolve_task(task: str | TaskSpec | Mapping) -> TaskSpec:
    """A registered name, a `TaskSpec`, or a mapping declaring a custom task."""
    if isinstance(task, TaskSpec):
        return task
    if isinstance(task, Mapping):
        return TaskSpec.model_validate(task)
    return TASKS.get(task)


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
    paths = {split: root / rel for split, rel in spec.files.items()}
    missing = [p for p in paths.values() if not p.is_file()]
    if not missing and spec.builder:
        from adaptstudy.task_builders import BUILDERS

        splits = BUILDERS[spec.builder](spec, root)
    elif not missing:
        splits = DatasetDict({split: _read_split(spec, path) for split, path in paths.items()})
    else:
        splits = _load_from_hub(spec, root, missing)
    if resplit_train_share is not None:
        splits = resplit(splits, spec, resplit_train_share, data_seed)
    if max_train_examples is not None:
        splits["train"] = subsample(splits["train"], max_train_examples, data_seed)
    if max_eval_examples is not None:
        splits[spec.eval_split] = subsample(splits[spec.eval_split], max_eval_examples, data_seed)
    return splits


def resplit(splits: DatasetDict, spec: TaskSpec, train_share: float, seed: int) -> DatasetDict:
    """All rows of every split pooled, then split `train_share` / rest into train / the evaluation split."""
    from datasets import concatenate_datasets
    from sklearn.model_selection import train_test_split

    pooled = concatenate_datasets([splits[s] for s in splits])
    stratify = None if spec.is_regression else pooled["label"]
    train_idx, eval_idx = train_test_split(np.arange(len(pooled)), train_size=train_share, random_state=seed, stratify=stratify)
    return DatasetDict({"train": pooled.select(np.sort(train_idx).tolist()), spec.eval_split: pooled.select(np.sort(eval_idx).tolist())})


def subsample(dataset: Dataset, n: int, seed: int) -> Dataset:
    """`n` rows chosen by `seed` alone (the same on any machine), kept in file order."""
    if n <= 0:
        raise ValueError(f"max_train_examples must be positive, got {n}")
    if n >= len(dataset):
        return dataset
    idx = np.sort(np.random.default_rng(seed).permutation(len(dataset))[:n])
    return dataset.select(idx.tolist())


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
                raise MalformedDataError(
                    f"{path}:{lineno}: expected {len(names)} columns ({names}), found {len(row)}"
                )
            yield lineno, dict(zip(names, row))


def _load_from_hub(spec: TaskSpec, root: Path, missing: list[Path]) -> DatasetDict:
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
    out = DatasetDict()
    for split in spec.files:
        ds = raw[spec.hub_splits.get(split, split)]
        renames = dict(zip(fields, ("text_a", "text_b")))
        renames[spec.hub_label_field] = "label"
        ds = ds.rename_columns({k: v for k, v in renames.items() if k != v})
        out[split] = ds.select_columns([c for c in ("text_a", "text_b", "label") if c in ds.column_names])
    return out


def _glue(name: str, folder: str, hub_config: str, text_fields, label_field, labels, metrics, **kw) -> TaskSpec:
    return TaskSpec(
        name=name,
        format="tsv",
        files={"train": f"glue/{folder}/train.tsv", "dev": f"glue/{folder}/dev.tsv"},
        text_fields=text_fields,
        label_field=label_field,
        labels=labels,
        metrics=metrics,
        main_metric=metrics[0],
        hub_id="nyu-mll/glue",
        hub_config=hub_config,
        hub_splits={"dev": "validation"},
        hub_text_fields=kw.pop("hub_text_fields", None),
        **kw,
    )


for _spec in (
    _glue("cola", "CoLA", "cola", ["sentence"], "label", ["0", "1"], ["mcc", "accuracy"],
          header=False, columns=["source", "label", "original_label", "sentence"],
          label_names=["unacceptable", "acceptable"], description="grammatical acceptability"),
    _glue("sst2", "SST-2", "sst2", ["sentence"], "label", ["0", "1"], ["accuracy"],
          label_names=["negative", "positive"], description="movie-review sentiment"),
    _glue("mrpc", "MRPC", "mrpc", ["#1 String", "#2 String"], "Quality", ["0", "1"], ["f1", "accuracy"],
          hub_text_fields=["sentence1", "sentence2"], label_names=["not_equivalent", "equivalent"],
          description="paraphrase"),
    _glue("stsb", "STS-B", "stsb", ["sentence1", "sentence2"], "score", None, ["spearman", "pearson"],
          description="semantic similarity, 0-5 (regression)"),
    _glue("rte", "RTE", "rte", ["sentence1", "sentence2"], "label", ["entailment", "not_entailment"],
          ["accuracy"], label_names=["entailment", "not_entailment"], description="entailment"),
    _glue("wnli", "WNLI", "wnli", ["sentence1", "sentence2"], "label", ["0", "1"], ["accuracy"],
          label_names=["not_entailment", "entailment"], description="Winograd entailment"),
    # Not in the local mirror (no training data offline): read from glue/<folder>/ if you have the files,
    # else from the Hub. Houlsby et al.'s Table 1 reports them; the GPU profile runs them.
    _glue("qqp", "QQP", "qqp", ["question1", "question2"], "is_duplicate", ["0", "1"], ["f1", "accuracy"],
          label_names=["not_duplicate", "duplicate"], description="question paraphrase (not offline)"),
    _glue("qnli", "QNLI", "qnli", ["question", "sentence"], "label", ["entailment", "not_entailment"], ["accuracy"],
          description="question-answer entailment (not offline)"),
    *(TaskSpec(name=name, format="tsv", files={"train": "glue/MNLI/train.tsv", "dev": f"glue/MNLI/{dev}.tsv"},
               text_fields=["sentence1", "sentence2"], label_field="gold_label",
               labels=["entailment", "neutral", "contradiction"], metrics=["accuracy"], main_metric="accuracy",
               hub_id="nyu-mll/glue", hub_config="mnli", hub_splits={"dev": f"validation_{kind}"},
               hub_text_fields=["premise", "hypothesis"], description=f"multi-genre entailment, {kind} dev (not offline)")
      for name, dev, kind in (("mnli-m", "dev_matched", "matched"), ("mnli-mm", "dev_mismatched", "mismatched"))),
):
    register_task(_spec)

# Don't Stop Pretraining's classification tasks (as the SciBERT repository ships them), with the paper's
# metrics: macro-F1, except ChemProt micro-F1. Labels sorted; the official dev split is the evaluation split.
_DSP_LABELS = {
    "chemprot": ("chemprot", "micro_f1", "chemical-protein relation (BioMed)",
                 ["ACTIVATOR", "AGONIST", "AGONIST-ACTIVATOR", "AGONIST-INHIBITOR", "ANTAGONIST", "DOWNREGULATOR",
                  "INDIRECT-DOWNREGULATOR", "INDIRECT-UPREGULATOR", "INHIBITOR", "PRODUCT-OF", "SUBSTRATE",
                  "SUBSTRATE_PRODUCT-OF", "UPREGULATOR"]),
    "acl-arc": ("citation_intent", "macro_f1", "citation intent, ACL-ARC (CS)",
                ["Background", "CompareOrContrast", "Extends", "Future", "Motivation", "Uses"]),
    "scierc": ("sciie-relation-extraction", "macro_f1", "relation classification, SciERC (CS)",
               ["COMPARE", "CONJUNCTION", "EVALUATE-FOR", "FEATURE-OF", "HYPONYM-OF", "PART-OF", "USED-FOR"]),
}  # fmt: skip
for _name, (_folder, _metric, _about, _labels) in _DSP_LABELS.items():
    register_task(TaskSpec(
        name=_name, format="jsonl", text_fields=["text"], label_field="label", labels=_labels,
        files={split: f"dsp/{_folder}/{split}.jsonl" for split in ("train", "dev", "test")},
        metrics=[_metric, "accuracy"] + (["macro_f1"] if _metric != "macro_f1" else []), main_metric=_metric,
        description=_about,
    ))  # fmt: skip

register_task(TaskSpec(
    name="hyperpartisan", format="built", builder="hyperpartisan", text_fields=["text"], label_field="hyperpartisan",
    labels=["false", "true"], metrics=["macro_f1", "accuracy"], main_metric="macro_f1",
    files={s: "hyperpartisan/articles-training-byarticle-20181122.xml" for s in ("train", "dev", "test")},
    description="hyperpartisan news, SemEval-2019 Task 4 by-article (645 articles; seeded 516/64/65 split as in the paper)",
))  # fmt: skip
register_task(TaskSpec(
    name="agnews", format="tsv", builder="agnews", header=False, columns=["text", "label"], text_fields=["text"],
    label_field="label", labels=["World", "Sports", "Business", "Sci/Tech"], metrics=["macro_f1", "accuracy"],
    main_metric="macro_f1", files={"train": "agnews/dev.tsv", "dev": "agnews/dev.tsv", "test": "agnews/test.tsv"},
    hub_id="fancyzhx/ag_news", hub_splits={"dev": "test"},
    description="AG News topic (news): train and a 1,000-article dev set from the 10,001 articles of the official "
                "train set in the mirror (less 13 repeats and 8 articles also in the test set), the official test set "
                "(7,600) as test",
))  # fmt: skip
register_task(TaskSpec(
    name="helpfulness", format="built", builder="helpfulness", text_fields=["text"], label_field="label",
    labels=["0", "1"], label_names=["unhelpful", "helpful"], metrics=["macro_f1", "accuracy"], main_metric="macro_f1",
    files={s: "amazon_blitzer/books/positive.review" for s in ("train", "dev", "test")},
    description="review helpfulness (reviews): a stand-in for Don't Stop Pretraining's Amazon helpfulness task, built "
                "from the Blitzer reviews' votes — at least 5 votes, helpful if at least 75% say so (3,523 reviews, 73 repeated "
                "texts kept once); 70/10/20 split",
))  # fmt: skip

register_task(TaskSpec(
    name="imdb", format="jsonl", files={"train": "imdb/train.jsonl", "dev": "imdb/val.jsonl"}, text_fields=["text"],
    label_field="label", labels=["0", "1"], label_names=["negative", "positive"], metrics=["accuracy"],
    main_metric="accuracy", hub_id="stanfordnlp/imdb", hub_splits={"dev": "test"},
    description="IMDb movie-review sentiment (aclImdb). The mirror holds the official 25k training reviews as "
                "20k train / 5k val; from the Hub, dev is the official test set",
))  # fmt: skip

# FewGLUE (Schick & Schütze 2021): SuperGLUE tasks with 32 training examples; evaluated on the full official
# validation set. The mirror's dev32 (32 more labelled examples, for few-shot model selection) is not used.
_FEWGLUE = {
    "cb": ("CB", ["premise", "hypothesis"], ["entailment", "contradiction", "neutral"], ["accuracy", "macro_f1"],
           "CommitmentBank, 3-way entailment, few-shot: 32 training examples, 56 validation"),
    "rte-fewglue": ("RTE", ["premise", "hypothesis"], ["entailment", "not_entailment"], ["accuracy"],
                    "RTE as in FewGLUE, few-shot: 32 training examples, the 277 of RTE's validation set"),
    "wic": ("WiC", ["sentence1", "sentence2"], ["False", "True"], ["accuracy"],
            "Word-in-Context, few-shot: 32 training examples, 638 validation (the sentence pair; the target word is "
            "not marked)"),
}  # fmt: skip
for _name, (_folder, _fields, _labels, _metrics, _about) in _FEWGLUE.items():
    register_task(TaskSpec(
        name=_name, format="jsonl", text_fields=_fields, label_field="label", labels=_labels, metrics=_metrics,
        main_metric="accuracy", files={"train": f"superglue/{_folder}/train.jsonl", "dev": f"superglue/{_folder}/val.jsonl"},
        hub_id="aps/super_glue", hub_config=_folder.lower(), hub_splits={"dev": "validation"}, description=_about,
    ))  # fmt: skip


def describe_task(splits: DatasetDict, tokenizer, spec: TaskSpec, max_seq_length: int) -> dict:
    """Sizes, label balance and token lengths (untruncated) of every split, as tables."""
    import pandas as pd

    sizes, labels, lengths = [], [], []
    for split, ds in splits.items():
        sizes.append({"split": split, "examples": len(ds)})
        if spec.is_regression:
            labels.append({"split": split, "label": "mean (sd)", "share": f"{np.mean(ds['label']):.2f} ({np.std(ds['label']):.2f})"})
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
