"""The numbers the Houlsby chapter sets beside ours, each with its paper, table, backbone and split."""

from __future__ import annotations

from adaptstudy.reporting.published import HOULSBY_2019, HOULSBY_COURSE, Published

__all__ = ["HOULSBY_2019", "HOULSBY_COURSE", "PUBLISHED"]

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
# Mean validation accuracy over the GLUE classification tasks for a fixed adapter size (BERT-large; Section 3.2).
HOULSBY_SIZE_MEANS = {8: 86.2, 64: 85.8, 256: 85.7}
# An independent course reproduction of Houlsby et al. (BERT-base, GLUE dev sets): accuracy on both tasks, CoLA
# included (not Matthews), for full fine-tuning and adapters.
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
]
