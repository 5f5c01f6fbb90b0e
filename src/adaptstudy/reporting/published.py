"""Published numbers, each with the paper, table, backbone and evaluation split it comes from.

Only numbers read from the papers go here; the book prints them beside ours and never mixes them
with our records.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd


@dataclass(frozen=True)
class Published:
    paper: str
    source: str
    backbone: str
    split: str
    task: str
    method: str
    metric: str
    value: float
    sem: float | None = None  # standard error over seeds, where the paper gives it


HOULSBY_2019 = "Houlsby et al. 2019, Parameter-Efficient Transfer Learning for NLP (ICML)"
_HOULSBY_TABLE1 = dict(paper=HOULSBY_2019, source="Table 1", backbone="BERT-large", split="GLUE test server")

# Table 1 rows: task -> (metric, full fine-tuning, adapters of the best size from 8-256, adapters 64).
# Test-server scores; MRPC and QQP F1, STS-B Spearman, CoLA Matthews, the others accuracy.
_HOULSBY_TABLE1_ROWS = {
    "cola": ("mcc", 60.5, 59.5, 56.9),
    "sst2": ("accuracy", 94.9, 94.0, 94.2),
    "mrpc": ("f1", 89.3, 89.5, 89.6),
    "stsb": ("spearman", 87.6, 86.9, 87.3),
    "qqp": ("f1", 72.1, 71.8, 71.8),
    "mnli-m": ("accuracy", 86.7, 84.9, 85.3),
    "mnli-mm": ("accuracy", 85.9, 85.1, 84.6),
    "qnli": ("accuracy", 91.1, 90.7, 91.4),
    "rte": ("accuracy", 70.1, 71.5, 68.8),
}
# Table 1's parameter columns: total parameters as a multiple of one BERT-large, and trained per task.
HOULSBY_TABLE1_PARAMS = {
    "full": {"total_params_x": 9.0, "trained_pct": 100.0},
    "houlsby-best": {"total_params_x": 1.3, "trained_pct": 3.6},
    "houlsby-64": {"total_params_x": 1.2, "trained_pct": 2.1},
}
# Mean validation accuracy over the GLUE classification tasks for a fixed adapter size (BERT-large; Section 3.2).
HOULSBY_SIZE_MEANS = {8: 86.2, 64: 85.8, 256: 85.7}
# An independent course reproduction of Houlsby et al. (BERT-base, GLUE dev sets): accuracy on both tasks, CoLA
# included (not Matthews), for full fine-tuning and adapters.
HOULSBY_COURSE = "independent course reproduction of Houlsby et al. 2019"
_HOULSBY_COURSE = dict(
    paper=HOULSBY_COURSE, source="reported accuracy", backbone="BERT-base", split="dev", metric="accuracy"
)
_HOULSBY_COURSE_ROWS = {"mrpc": (85.05, 85.78), "cola": (82.74, 81.78)}  # task -> (full, adapters)
HOULSBY_NOT_OFFLINE = ("qqp", "mnli-m", "mnli-mm", "qnli")  # no training data in the local mirror

_HOULSBY_TABLE2 = dict(paper=HOULSBY_2019, source="Table 2", backbone="BERT-base", split="test", metric="accuracy")
# Table 2, the 17 additional classification tasks: no-BERT baseline, then (mean, s.e.m.) for full
# fine-tuning, variable fine-tuning (top k layers, best k) and adapters (best size); test accuracy.
_HOULSBY_TABLE2_ROWS = {
    "20 newsgroups": (91.1, (92.8, 0.1), (92.8, 0.1), (91.7, 0.2)),
    "Crowdflower airline": (84.5, (83.6, 0.3), (84.0, 0.1), (84.5, 0.2)),
    "Crowdflower corporate messaging": (91.9, (92.5, 0.5), (92.4, 0.6), (92.9, 0.3)),
    "Crowdflower disasters": (84.9, (85.3, 0.4), (85.3, 0.4), (84.1, 0.2)),
    "Crowdflower economic news relevance": (81.1, (82.1, 0.0), (78.9, 2.8), (82.5, 0.3)),
    "Crowdflower emotion": (36.3, (38.4, 0.1), (37.6, 0.2), (38.7, 0.1)),
    "Crowdflower global warming": (82.7, (84.2, 0.4), (81.9, 0.2), (82.7, 0.3)),
    "Crowdflower political audience": (81.0, (80.9, 0.3), (80.7, 0.8), (79.0, 0.5)),
    "Crowdflower political bias": (76.8, (75.2, 0.9), (76.5, 0.4), (75.9, 0.3)),
    "Crowdflower political message": (43.8, (38.9, 0.6), (44.9, 0.6), (44.1, 0.2)),
    "Crowdflower primary emotions": (33.5, (36.9, 1.6), (38.2, 1.0), (33.9, 1.4)),
    "Crowdflower progressive opinion": (70.6, (71.6, 0.5), (75.9, 1.3), (71.7, 1.1)),
    "Crowdflower progressive stance": (54.3, (63.8, 1.0), (61.5, 1.3), (60.6, 1.4)),
    "Crowdflower US economic performance": (75.6, (75.3, 0.1), (76.5, 0.4), (77.3, 0.1)),
    "Customer complaint database": (54.5, (55.9, 0.1), (56.4, 0.1), (55.4, 0.1)),
    "News aggregator dataset": (95.2, (96.3, 0.0), (96.5, 0.0), (96.2, 0.0)),
    "SMS spam collection": (98.5, (99.3, 0.2), (99.3, 0.2), (95.1, 2.2)),
}
HOULSBY_TABLE2_METHODS = ("no-bert-baseline", "full", "top_k-best", "houlsby-best")
HOULSBY_TABLE2_AVERAGE = dict(zip(HOULSBY_TABLE2_METHODS, (72.7, 73.7, 74.0, 73.3)))  # as printed
# Table 2's last rows: total parameters as a multiple of BERT-base over the 17 tasks, and trained per task.
HOULSBY_TABLE2_PARAMS = {
    "full": {"total_params_x": 17.0, "trained_pct": 100.0},
    "top_k-best": {"total_params_x": 9.9, "trained_pct": 52.9},
    "houlsby-best": {"total_params_x": 1.19, "trained_pct": 1.14},
}
# Section 3.5: SQuAD v1.1 validation F1, BERT-base.
_HOULSBY_SQUAD = dict(
    paper=HOULSBY_2019,
    source="Section 3.5, Figure 5",
    backbone="BERT-base",
    split="SQuAD v1.1 validation",
    task="squad-v1.1",
    metric="f1",
)
_HOULSBY_SQUAD_ROWS = {"full": 90.7, "houlsby-64": 90.4, "houlsby-2": 89.9}
# Hub copies a GPU user can start from (none is in the local mirror).
HOULSBY_HUB_COPIES = {
    "20 newsgroups": "SetFit/20_newsgroups",
    "Crowdflower airline": "tasksource/crowdflower (config airline-sentiment)",
    "SMS spam collection": "ucirvine/sms_spam",
    "squad-v1.1": "rajpurkar/squad",
}

PEFT_REPORT = 'the "Efficient Adaption of Large Pre-Trained Models" report'
PEFT_REPORT_METHODS = (
    "full",
    "embeddings_only",
    "encoder_only",
    "prompt_tuning",
    "bitfit",
)  # its All/Embedding/Encoder/Prompt/BitFit
PEFT_REPORT_SETTINGS = {0.9: "90%/10%", 0.3: "30%/70%"}  # train/validation shares of IMDb's 25k training reviews
# Final validation accuracy (points), per backbone and setting, in PEFT_REPORT_METHODS order.
_PEFT_REPORT_ROWS = {
    ("TinyBERT", 0.9): (84.0, 82.0, 80.0, 77.0, 76.0),
    ("TinyBERT", 0.3): (80.0, 74.0, 78.0, 75.0, 65.0),
    ("TinyRoBERTa", 0.9): (83.0, 80.0, 74.0, 70.0, 82.0),
    ("TinyRoBERTa", 0.3): (82.0, 73.0, 69.0, 66.0, 77.0),
}
# Trainable parameters and epoch runtimes (GPU seconds) as the report gives them (prompt tuning and BitFit: no count
# given).
PEFT_REPORT_PARAMS = {
    "TinyBERT": {"full": 4_385_920, "embeddings_only": 3_972_864, "encoder_only": 396_544},
    "TinyRoBERTa": {"full": 16_979_776, "embeddings_only": 12_999_936, "encoder_only": 3_979_840},
}
PEFT_REPORT_EPOCH_S = {
    "TinyBERT": {"full": "5", "embeddings_only": "3", "encoder_only": "4", "prompt_tuning": "5–6", "bitfit": "1"},
    "TinyRoBERTa": {
        "full": "12–13",
        "embeddings_only": "9",
        "encoder_only": "10–11",
        "prompt_tuning": "12",
        "bitfit": "2",
    },
}
# Which of our backbones stands in for which of the report's.
PEFT_REPORT_STAND_INS = {"minilm-l6": "TinyRoBERTa", "minilm-l3": "TinyBERT"}

GURURANGAN_2020 = "Gururangan et al. 2020, Don't Stop Pretraining: Adapt Language Models to Domains and Tasks (ACL)"
DSP_CONDITIONS = ("baseline", "dapt", "tapt", "dapt+tapt", "not-dapt")
# Table 5 (RoBERTa-base, test, mean and std over 5 seeds; macro-F1, ChemProt and RCT micro-F1) and ¬DAPT from Table 3.
_DSP_ROWS = {
    "chemprot": ("BioMed", "micro_f1", (81.9, 1.0), (84.2, 0.2), (82.6, 0.4), (84.4, 0.4), (79.4, None)),
    "rct": ("BioMed", "micro_f1", (87.2, 0.1), (87.6, 0.1), (87.7, 0.1), (87.8, 0.1), (86.9, None)),
    "acl-arc": ("CS", "macro_f1", (63.0, 5.8), (75.4, 2.5), (67.4, 1.8), (75.6, 3.8), (66.4, None)),
    "scierc": ("CS", "macro_f1", (77.3, 1.9), (80.8, 1.5), (79.3, 1.5), (81.3, 1.8), (79.2, None)),
    "hyperpartisan": ("News", "macro_f1", (86.6, 0.9), (88.2, 5.9), (90.4, 5.2), (90.0, 6.6), (76.4, None)),
    "agnews": ("News", "macro_f1", (93.9, 0.2), (93.9, 0.2), (94.5, 0.1), (94.6, 0.1), (93.5, None)),
    "helpfulness": ("Reviews", "macro_f1", (65.1, 3.4), (66.5, 1.4), (68.5, 1.9), (68.7, 1.8), (65.1, None)),
    "imdb": ("Reviews", "macro_f1", (95.0, 0.2), (95.4, 0.1), (95.5, 0.1), (95.6, 0.1), (94.1, None)),
}
DSP_DOMAINS = {task: row[0] for task, row in _DSP_ROWS.items()}
DSP_METRICS = {task: row[1] for task, row in _DSP_ROWS.items()}
DSP_NOT_OFFLINE = ("rct",)  # no copy in the local mirror


PFEIFFER_2021 = "Pfeiffer et al. 2021, AdapterFusion: Non-Destructive Task Composition for Transfer Learning (EACL)"
FUSION_COLUMNS = (
    "head_only",
    "full",
    "st-a",
    "mt-a",
    "fusion-st-a",
    "fusion-mt-a",
    "st-a-houlsby",
)  # Head, Full, ST-A, MT-A, F. w/ ST-A, F. w/ MT-A, ST-A^Houlsby
# Table 1 (BERT-base, dev, accuracy; sources/002 lines 232-249), the rows of our targets, and the mean over the paper's
# 16 tasks.
_FUSION_ROWS = {
    "rte": (61.37, 65.41, 71.04, 77.61, 76.82, 79.96, 69.67),
    "mrpc": (71.91, 85.14, 85.16, 81.86, 90.29, 84.68, 86.66),
    "sst2": (85.17, 92.39, 91.85, 92.27, 92.20, 93.00, 92.75),
    "imdb": (85.05, 94.05, 93.85, 92.56, 93.82, 92.66, 93.96),
    "cb": (68.93, 82.49, 86.07, 89.09, 92.14, 89.81, 87.50),
    "boolq": (63.07, 74.84, 75.66, 78.76, 76.25, 79.18, 76.02),
    "mean (16 tasks)": (64.17, 75.51, 76.05, 75.80, 77.33, 77.06, 76.32),
}
FUSION_NOT_OFFLINE = ("boolq",)

MAHABADI_2021 = (
    "Mahabadi et al. 2021, Parameter-efficient Multi-task Fine-tuning for Transformers via Shared Hypernetworks (ACL)"
)
HYPER_COLUMNS = ("cola", "sst2", "mrpc", "stsb", "rte", "average (8 tasks)")
# Table 1 (T5-base, GLUE, the paper's test split); MRPC and STS-B as the paper's two numbers, in its order (accuracy/F1,
# Pearson/Spearman).
# Per method: total parameters as a multiple of T5-base, trained parameters per task (%), then the columns above.
HYPER_TABLE1 = {
    "st-full": ("8.0×", 100.0, (54.85, 92.19, "88.18/91.61", "89.55/89.41", 67.39, 84.67)),
    "st-adapters": (None, 0.87, (59.49, 93.46, "88.18/91.55", "87.44/87.18", 68.84, 84.88)),
    "mt-adapters": ("1.07×", 0.82, (61.53, 93.00, "90.15/92.91", "89.86/89.44", 70.29, 85.83)),
    "hyperformer": ("1.54×", 6.86, (61.32, 93.80, "90.64/93.33", "89.55/89.03", 78.26, 86.58)),
    "hyperformer++": ("1.02×", 0.29, (63.73, 94.03, "89.66/92.63", "90.00/89.66", 75.36, 86.48)),
}
# Table 4 (sources/004, lines 272-279), T5-small, GLUE average: Hyperformer-small (82.47; not Hyperformer++-small,
# whose Table 1 average is 82.51) and without each component. Our ablation removes components from Hyperformer++ and
# runs no T5 layer norm (our backbones are BERTs), so the chapter compares directions only.
HYPER_ABLATED = "hyperformer"
HYPER_ABLATION = {
    "hyperformer": 82.47,
    "no adapter blocks": 68.37,
    "no conditional layer norm": 79.83,
    "no task projector": 81.56,
    "no T5 layer norm": 81.29,
    "no conditional layer norm, T5 layer norm": 78.92,
}
# Table 3 (T5-base; sources/004, lines 232-266): few-shot transfer of Hyperformer++ against the paper's "Adapters†",
# which carries Table 1's dagger: adapters trained multi-task on GLUE, then transferred. Our baseline is a fresh
# adapter trained on the k examples alone, a weaker one, so the chapter shows the paper's columns beside ours and
# compares no gap.
HYPER_FEW_SHOT = {
    "imdb": {
        "k": (4, 16, 32, 100, 500, 1000),
        "hyperformer++": (81.77, 84.06, 84.64, 84.74, 86.00, 86.37),
        "st-adapters": (81.55, 82.54, 83.39, 83.35, 85.37, 86.27),
    },
    "cb": {
        "k": (4, 16, 32, 100),
        "hyperformer++": (60.74, 76.29, 81.48, 87.41),
        "st-adapters": (51.11, 74.81, 74.81, 80.74),
    },
}

PUBLISHED: list[Published] = [
    *(
        Published(**_HOULSBY_TABLE1, task=task, method=method, metric=metric, value=value)
        for task, (metric, *values) in _HOULSBY_TABLE1_ROWS.items()
        for method, value in zip(("full", "houlsby-best", "houlsby-64"), values)
    ),
    *(
        Published(**_HOULSBY_TABLE2, task=task, method=method, value=score[0], sem=score[1])
        for task, (baseline, *scores) in _HOULSBY_TABLE2_ROWS.items()
        for method, score in zip(HOULSBY_TABLE2_METHODS, [(baseline, None), *scores])
    ),
    *(Published(**_HOULSBY_SQUAD, method=method, value=value) for method, value in _HOULSBY_SQUAD_ROWS.items()),
    *(
        Published(**_HOULSBY_COURSE, task=task, method=method, value=value)
        for task, values in _HOULSBY_COURSE_ROWS.items()
        for method, value in zip(("full", "houlsby"), values)
    ),
    *(
        Published(
            paper=PEFT_REPORT,
            source="final validation accuracy",
            backbone=backbone,
            split=f"IMDb validation ({PEFT_REPORT_SETTINGS[share]} split)",
            task="imdb",
            method=method,
            metric="accuracy",
            value=value,
        )
        for (backbone, share), values in _PEFT_REPORT_ROWS.items()
        for method, value in zip(PEFT_REPORT_METHODS, values)
    ),
    *(
        Published(
            paper=GURURANGAN_2020,
            source="Table 3" if condition == "not-dapt" else "Table 5",
            backbone="RoBERTa-base",
            split="test",
            task=task,
            method=condition,
            metric=metric,
            value=value,
            sem=None,
        )
        for task, (_, metric, *cells) in _DSP_ROWS.items()
        for condition, (value, _sd) in zip(DSP_CONDITIONS, cells)
    ),
    *(
        Published(
            paper=PFEIFFER_2021,
            source="Table 1",
            backbone="BERT-base",
            split="dev",
            task=task,
            method=method,
            metric="accuracy",
            value=value,
        )
        for task, values in _FUSION_ROWS.items()
        for method, value in zip(FUSION_COLUMNS, values)
    ),
]
# Standard deviations over seeds of Table 5 (not standard errors: kept apart from `sem`).
DSP_STD = {
    (task, c): sd
    for task, (_, _, *cells) in _DSP_ROWS.items()
    for c, (_, sd) in zip(DSP_CONDITIONS, cells)
    if sd is not None
}


def published_frame(paper: str | None = None, source: str | None = None) -> pd.DataFrame:
    """The published numbers, optionally of one paper and one of its tables (`source`)."""
    rows = [asdict(p) for p in PUBLISHED if paper in (None, p.paper) and source in (None, p.source)]
    return pd.DataFrame(rows)
