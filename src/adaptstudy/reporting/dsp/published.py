"""The numbers the Don't Stop Pretraining chapter sets beside ours: Gururangan et al. 2020's Tables 3 and 5."""

from __future__ import annotations

from adaptstudy.reporting.published import Published

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

PUBLISHED: list[Published] = [
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
]
# Standard deviations over seeds of Table 5 (not standard errors: kept apart from `sem`).
DSP_STD = {
    (task, c): sd
    for task, (_, _, *cells) in _DSP_ROWS.items()
    for c, (_, sd) in zip(DSP_CONDITIONS, cells)
    if sd is not None
}
