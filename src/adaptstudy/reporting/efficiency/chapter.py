"""The efficiency chapter's registration: its page. It judges no claim and reads no run records (its numbers are the
committed benchmarks', `benchmarks/results/`)."""

from adaptstudy.reporting.chapters import Chapter, register

CHAPTER = register(Chapter("efficiency", page="06_analysis_efficiency"))
