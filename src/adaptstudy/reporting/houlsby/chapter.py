"""The houlsby chapter's registration: its page, its results folder and how its runs are labelled and judged."""

from adaptstudy.reporting.chapters import Chapter, register
from adaptstudy.reporting.houlsby import claims, tables

CHAPTER = register(
    Chapter(
        "houlsby",
        page="06_analysis_houlsby",
        study="houlsby",
        label_runs=tables.label_runs,
        verdicts=claims.verdicts,
        chooser=0,
    )
)
