"""The numbers the AdapterFusion half sets beside ours: Pfeiffer et al. 2021's Table 1."""

from __future__ import annotations

from adaptstudy.reporting.published import Published

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

PUBLISHED: list[Published] = [
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
