"""What each half of the across chapter cost, against the issue's budget for each (about 6 CPU-hours on an
AVX512-BF16 machine, 2.5x that on an AVX2-only one)."""

from __future__ import annotations

import pandas as pd

from adaptstudy.reporting.costs import study_cost

HALVES = {"AdapterFusion": ("fusion",), "Hyperformer": ("hyperformer search", "hyperformer")}
BUDGET_H = 6


def half_costs(paid: pd.DataFrame) -> str:
    """One sentence per half from the chapter's `spent` rows (the Hyperformer half includes its search)."""
    return "\n\n".join(
        f"**{half}** ({', '.join(studies)}): {study_cost(paid[paid['study'].isin(studies)], BUDGET_H)}"
        for half, studies in HALVES.items()
    )
