"""The peft chapter's registration: its page, its results folder and how its runs are labelled and judged."""

from adaptstudy.reporting.chapters import Chapter, register
from adaptstudy.reporting.peft import claims, tables

CHAPTER = register(
    Chapter(
        "peft",
        page="06_analysis_peft",
        study="peft_imdb",
        label_runs=tables.label_runs,
        verdicts=claims.verdicts,
        chooser=0,
    )
)
