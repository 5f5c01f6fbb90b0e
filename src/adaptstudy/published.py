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
HOULSBY_NOT_OFFLINE = ("qqp", "mnli-m", "mnli-mm", "qnli")  # no training data in the local mirror

PUBLISHED: list[Published] = [
    Published(**_HOULSBY_TABLE1, task=task, method=method, metric=metric, value=value)
    for task, (metric, *values) in _HOULSBY_TABLE1_ROWS.items()
    for method, value in zip(("full", "houlsby-best", "houlsby-64"), values)
]


def published_frame(paper: str | None = None) -> pd.DataFrame:
    rows = [asdict(p) for p in PUBLISHED if paper is None or p.paper == paper]
    return pd.DataFrame(rows)
