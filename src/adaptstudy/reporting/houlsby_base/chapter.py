"""The base-size claims' registration: their page (the Houlsby chapter's), their results folder, and how their runs
are labelled and judged."""

from adaptstudy.claims.protocol import grid
from adaptstudy.reporting.chapters import Chapter, register
from adaptstudy.reporting.houlsby_base import claims, tables
from adaptstudy.reporting.selection import CHOOSING

CHAPTER = register(
    Chapter(
        "houlsby_base",
        page="06_analysis_houlsby",
        study="houlsby_base",
        label_runs=tables.label_runs,
        verdicts=claims.verdicts,
        selection_seed=0,
        protocol={
            "selection grid (rates)": (grid("cpu/houlsby_base_select.yaml"),),
            "report grid (seeds, evaluation caps)": (grid("cpu/houlsby_base_report.yaml"),),
            "selection and tie rules": CHOOSING,
        },
    )
)
