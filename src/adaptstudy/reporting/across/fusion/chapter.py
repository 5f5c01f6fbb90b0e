"""The fusion chapter's registration: its page, its results folder, how its runs are labelled and judged, and what
else decides its verdicts."""

from adaptstudy.claims.protocol import grid
from adaptstudy.reporting.across.fusion import tables
from adaptstudy.reporting.chapters import Chapter, register
from adaptstudy.reporting.selection import CHOOSING

CHAPTER = register(
    Chapter(
        "fusion",
        page="06_analysis_across",
        study="fusion",
        label_runs=tables.label_runs,
        verdicts=tables.verdicts,
        protocol={
            "selection grid (rates)": (grid("cpu/fusion_select.yaml"),),
            "report grids (seeds, evaluation caps)": (
                grid("cpu/fusion_report.yaml"),
                grid("cpu/confirm/fusion_confirm.yaml"),
            ),
            "confirmation grid (the power plan)": (grid("cpu/confirm/power/fusion_power.yaml"),),
            "selection and tie rules": CHOOSING,
        },
    )
)
