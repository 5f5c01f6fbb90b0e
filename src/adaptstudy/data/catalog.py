"""The registered tasks: GLUE, Don't Stop Pretraining's tasks, Hyperpartisan, AG News, helpfulness, IMDb, FewGLUE.

Importing this module registers them in `spec.TASKS`; `adaptstudy.data.tasks` does so for every reader.
"""

from __future__ import annotations

from adaptstudy.data.spec import TaskSpec, register_task


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


# One task a row reads better as a table than one argument a line.
# fmt: off
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
               hub_text_fields=["premise", "hypothesis"],
               description=f"multi-genre entailment, {kind} dev (not offline)")
      for name, dev, kind in (("mnli-m", "dev_matched", "matched"), ("mnli-mm", "dev_mismatched", "mismatched"))),
):
    register_task(_spec)
# fmt: on

# Don't Stop Pretraining's classification tasks (as the SciBERT repository ships them), with the paper's
# metrics: macro-F1, except ChemProt micro-F1. Labels sorted; the official dev split is the evaluation split.
_DSP_LABELS = {
    "chemprot": (
        "chemprot",
        "micro_f1",
        "chemical-protein relation (BioMed)",
        [
            "ACTIVATOR",
            "AGONIST",
            "AGONIST-ACTIVATOR",
            "AGONIST-INHIBITOR",
            "ANTAGONIST",
            "DOWNREGULATOR",
            "INDIRECT-DOWNREGULATOR",
            "INDIRECT-UPREGULATOR",
            "INHIBITOR",
            "PRODUCT-OF",
            "SUBSTRATE",
            "SUBSTRATE_PRODUCT-OF",
            "UPREGULATOR",
        ],
    ),
    "acl-arc": (
        "citation_intent",
        "macro_f1",
        "citation intent, ACL-ARC (CS)",
        ["Background", "CompareOrContrast", "Extends", "Future", "Motivation", "Uses"],
    ),
    "scierc": (
        "sciie-relation-extraction",
        "macro_f1",
        "relation classification, SciERC (CS)",
        ["COMPARE", "CONJUNCTION", "EVALUATE-FOR", "FEATURE-OF", "HYPONYM-OF", "PART-OF", "USED-FOR"],
    ),
}
for _name, (_folder, _metric, _about, _labels) in _DSP_LABELS.items():
    register_task(
        TaskSpec(
            name=_name,
            format="jsonl",
            text_fields=["text"],
            label_field="label",
            labels=_labels,
            files={split: f"dsp/{_folder}/{split}.jsonl" for split in ("train", "dev", "test")},
            metrics=[_metric, "accuracy"] + (["macro_f1"] if _metric != "macro_f1" else []),
            main_metric=_metric,
            description=_about,
        )
    )

register_task(
    TaskSpec(
        name="hyperpartisan",
        format="built",
        builder="hyperpartisan",
        text_fields=["text"],
        label_field="hyperpartisan",
        labels=["false", "true"],
        metrics=["macro_f1", "accuracy"],
        main_metric="macro_f1",
        files={s: "hyperpartisan/articles-training-byarticle-20181122.xml" for s in ("train", "dev", "test")},
        description="hyperpartisan news, SemEval-2019 Task 4 by-article (645 articles; seeded 516/64/65 split as in "
        "the paper)",
    )
)
register_task(
    TaskSpec(
        name="agnews",
        format="tsv",
        builder="agnews",
        header=False,
        columns=["text", "label"],
        text_fields=["text"],
        label_field="label",
        labels=["World", "Sports", "Business", "Sci/Tech"],
        metrics=["macro_f1", "accuracy"],
        main_metric="macro_f1",
        files={"train": "agnews/dev.tsv", "dev": "agnews/dev.tsv", "test": "agnews/test.tsv"},
        hub_id="fancyzhx/ag_news",
        hub_splits={"dev": "test"},
        description="AG News topic (news): train and a 1,000-article dev set from the 10,001 articles of the official "
        "train set in the mirror (less 13 repeats and 8 articles also in the test set), the official test set "
        "(7,600) as test",
    )
)
register_task(
    TaskSpec(
        name="helpfulness",
        format="built",
        builder="helpfulness",
        text_fields=["text"],
        label_field="label",
        labels=["0", "1"],
        label_names=["unhelpful", "helpful"],
        metrics=["macro_f1", "accuracy"],
        main_metric="macro_f1",
        files={s: "amazon_blitzer/books/positive.review" for s in ("train", "dev", "test")},
        description="review helpfulness (reviews): a stand-in for Don't Stop Pretraining's Amazon helpfulness task, "
        "built from the Blitzer reviews' votes — at least 5 votes, helpful if at least 75% say so (3,523 reviews, "
        "73 repeated "
        "texts kept once); 70/10/20 split",
    )
)

register_task(
    TaskSpec(
        name="imdb",
        format="jsonl",
        files={"train": "imdb/train.jsonl", "dev": "imdb/val.jsonl"},
        text_fields=["text"],
        label_field="label",
        labels=["0", "1"],
        label_names=["negative", "positive"],
        metrics=["accuracy", "macro_f1"],  # macro-F1: as Don't Stop Pretraining reports IMDb
        main_metric="accuracy",
        hub_id="stanfordnlp/imdb",
        hub_splits={"dev": "test"},
        description="IMDb movie-review sentiment (aclImdb). The mirror holds the official 25k training reviews as "
        "20k train / 5k val; from the Hub, dev is the official test set",
    )
)

# FewGLUE (Schick & Schütze 2021): SuperGLUE tasks with 32 training examples; evaluated on the full official
# validation set. The mirror's dev32 (32 more labelled examples, made for few-shot model selection) is their
# selection split: carving one from 32 training examples would leave too few of either.
_FEWGLUE = {
    "cb": (
        "CB",
        ["premise", "hypothesis"],
        ["entailment", "contradiction", "neutral"],
        ["accuracy", "macro_f1"],
        "CommitmentBank, 3-way entailment, few-shot: 32 training examples, 56 validation",
    ),
    "rte-fewglue": (
        "RTE",
        ["premise", "hypothesis"],
        ["entailment", "not_entailment"],
        ["accuracy"],
        "RTE as in FewGLUE, few-shot: 32 training examples, the 277 of RTE's validation set",
    ),
    "wic": (
        "WiC",
        ["sentence1", "sentence2"],
        ["False", "True"],
        ["accuracy"],
        "Word-in-Context, few-shot: 32 training examples, 638 validation (the sentence pair; the target word is "
        "not marked)",
    ),
}
for _name, (_folder, _fields, _labels, _metrics, _about) in _FEWGLUE.items():
    register_task(
        TaskSpec(
            name=_name,
            format="jsonl",
            text_fields=_fields,
            label_field="label",
            labels=_labels,
            metrics=_metrics,
            main_metric="accuracy",
            files={"train": f"superglue/{_folder}/train.jsonl", "dev": f"superglue/{_folder}/val.jsonl"},
            selection_file=f"superglue/{_folder}/dev32.jsonl",
            hub_id="aps/super_glue",
            hub_config=_folder.lower(),
            hub_splits={"dev": "validation"},
            description=_about,
        )
    )
