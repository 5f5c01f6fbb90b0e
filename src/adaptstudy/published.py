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

PUBLISHED: list[Published] = [
    Published(**_HOULSBY_TABLE1, task="mrpc", method="full", metric="f1", value=89.3),
    Published(**_HOULSBY_TABLE1, task="mrpc", method="houlsby-64", metric="f1", value=89.6),
    Published(**_HOULSBY_TABLE1, task="rte", method="full", metric="accuracy", value=70.1),
    Published(**_HOULSBY_TABLE1, task="rte", method="houlsby-64", metric="accuracy", value=68.8),
]


def published_frame(paper: str | None = None) -> pd.DataFrame:
    rows = [asdict(p) for p in PUBLISHED if paper is None or p.paper == paper]
    return pd.DataFrame(rows)
