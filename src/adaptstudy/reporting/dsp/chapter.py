"""The dsp chapter's registration: its page, its results folder and how its runs are labelled and judged."""

from adaptstudy.claims.protocol import grid
from adaptstudy.reporting.chapters import Chapter, register
from adaptstudy.reporting.dsp import claims, tables

CHAPTER = register(
    Chapter(
        "dsp",
        page="06_analysis_dsp",
        study="dsp",
        label_runs=tables.label_runs,
        verdicts=claims.verdicts,
        selection_seed=None,
        described=claims.described_intervals,
        protocol={
            "grids (settings, seeds, evaluation caps)": (
                grid("cpu/dsp.yaml"),
                grid("cpu/confirm/dsp_confirm.yaml"),
                grid("cpu/confirm/later-wave/dsp_confirm.yaml"),
            ),
            "confirmation grid (the power plan)": (grid("cpu/confirm/power/dsp_power.yaml"),),
        },
    )
)
