"""The AdapterFusion half's registration: its page (the across chapter), its results folder and how its runs are
labelled and judged."""

from adaptstudy.reporting.across.fusion import tables
from adaptstudy.reporting.chapters import Chapter, register

CHAPTER = register(
    Chapter("fusion", page="06_analysis_across", study="fusion", label_runs=tables.label_runs, verdicts=tables.verdicts)
)
