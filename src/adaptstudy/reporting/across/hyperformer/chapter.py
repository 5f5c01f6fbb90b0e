"""The Hyperformer half's registration: its page (the across chapter), its results folder and how its runs are
labelled and judged."""

from adaptstudy.reporting.across.hyperformer import claims, tables
from adaptstudy.reporting.chapters import Chapter, register

CHAPTER = register(
    Chapter(
        "hyperformer",
        page="06_analysis_across",
        study="hyperformer",
        label_runs=tables.label_runs,
        verdicts=claims.verdicts,
    )
)
