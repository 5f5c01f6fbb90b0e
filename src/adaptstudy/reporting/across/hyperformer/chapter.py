"""The Hyperformer half's registration: its page (the across chapter), its results folder, how its runs are
labelled and judged, and what else decides its verdicts."""

from adaptstudy.claims.protocol import grid
from adaptstudy.reporting.across.hyperformer import claims, tables
from adaptstudy.reporting.chapters import Chapter, register
from adaptstudy.reporting.selection import CHOOSING

CHAPTER = register(
    Chapter(
        "hyperformer",
        page="06_analysis_across",
        study="hyperformer",
        label_runs=tables.label_runs,
        verdicts=claims.verdicts,
        protocol={
            "selection grids (search, rates)": (
                grid("cpu/hyperformer_search.yaml"),
                grid("cpu/hyperformer_select.yaml"),
            ),
            "report grid (seeds, evaluation caps)": (grid("cpu/hyperformer_report.yaml"),),
            "confirmation grid (the power plan)": (grid("cpu/confirm/power/hyperformer_power_multitask.yaml"),),
            "selection and tie rules": (tables.at_chosen_rates, *CHOOSING),
        },
    )
)
