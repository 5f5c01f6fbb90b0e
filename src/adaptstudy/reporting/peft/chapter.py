"""The peft chapter's registration: its page, its results folder and how its runs are labelled and judged."""

from adaptstudy.claims.protocol import grid
from adaptstudy.reporting.chapters import Chapter, register
from adaptstudy.reporting.peft import claims, tables
from adaptstudy.reporting.selection import CHOOSING

CHAPTER = register(
    Chapter(
        "peft",
        page="06_analysis_peft",
        study="peft_imdb",
        label_runs=tables.label_runs,
        verdicts=claims.verdicts,
        selection_seed=0,
        protocol={
            "selection grid (rates)": (grid("cpu/peft_imdb_select.yaml"),),
            "report grids (seeds, evaluation caps)": (
                grid("cpu/peft_imdb_report.yaml"),
                grid("cpu/confirm/peft_imdb_confirm.yaml"),
            ),
            "confirmation grid (the power plan)": (grid("cpu/confirm/power/peft_imdb_power.yaml"),),
            "selection and tie rules": (
                tables.selection_grid,
                tables.chosen_learning_rates,
                tables.at_chosen_rates,
                *CHOOSING,
            ),
        },
    )
)
