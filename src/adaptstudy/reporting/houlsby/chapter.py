"""The houlsby chapter's registration: its page, its results folder and how its runs are labelled and judged."""

from adaptstudy.claims.protocol import grid
from adaptstudy.reporting.chapters import Chapter, register
from adaptstudy.reporting.houlsby import choices, claims, tables
from adaptstudy.reporting.selection import CHOOSING

CHAPTER = register(
    Chapter(
        "houlsby",
        page="06_analysis_houlsby",
        study="houlsby",
        label_runs=tables.label_runs,
        verdicts=claims.verdicts,
        selection_seed=0,
        protocol={
            "selection grids (rates, epochs)": (grid("cpu/houlsby_select.yaml"), grid("cpu/houlsby_extend.yaml")),
            "report grid (seeds, evaluation caps)": (grid("cpu/houlsby_report.yaml"),),
            "confirmation grids (the power plan, its addendum and the later plan for the headlines)": (
                grid("cpu/confirm/power/houlsby_power.yaml"),
                grid("cpu/confirm/power/houlsby_power_units.yaml"),
                grid("cpu/confirm/power-houlsby/houlsby_power.yaml"),
            ),
            "selection and tie rules (houlsby/choices.py)": (choices, *CHOOSING),
            "the extended selection's budget (claims.yaml budgets)": (choices.EXTENDED.model_dump(mode="json"),),
        },
    )
)
