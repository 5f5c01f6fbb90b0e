"""What the Houlsby chapter's extended selection (the parity arms' epochs chosen with the rate, their edge rates
extended) spent against its budget, and the rule and cuts that kept it there."""

from __future__ import annotations

import pandas as pd

from adaptstudy.reporting.common import SELECTION_SEED
from adaptstudy.reporting.houlsby.choices import EXTENDED, MOVED_SEEDS, extended_selection_runs
from adaptstudy.runs.records import paid_seconds


def budget_note(runs: pd.DataFrame) -> str:
    """The extended selection's spending (its 20-epoch and extension runs of stage 1, and the stage 2 they chose)
    against its budget, whether it stayed within it, and the rule and cuts that were to keep it there (what each run
    cost when it was made: an uninterrupted rerun of a resumed run is paid from the reruns' budget)."""
    paid = (paid_seconds(runs, "train_runtime_s", False) + paid_seconds(runs, "eval_runtime_s", False)) / 3600
    mine = extended_selection_runs(runs)
    selection = mine & (runs["seed"] == SELECTION_SEED)
    total = paid[mine].sum()
    standing = (
        f"{total - EXTENDED.cpu_hours:.1f} h over it"
        if total > EXTENDED.cpu_hours
        else f"{EXTENDED.cpu_hours - total:.1f} h of it left"
    )
    return (
        f"The extended selection (epochs chosen with the rate, edge rates extended) has paid {total:.1f} CPU-hours in "
        f"{int(mine.sum())} runs made from {EXTENDED.since} on: {paid[selection].sum():.1f} in {int(selection.sum())} "
        f"selection runs (stage 1's 20-epoch runs and the edge extensions) and {paid[mine & ~selection].sum():.1f} in "
        f"{int((mine & ~selection).sum())} reported runs (stage 2), against its budget of {EXTENDED.cpu_hours:g} "
        f"({standing}). "
        "The rule written to stay within it: only size 64 and each task's best size chose from 3 or 20 epochs; the "
        "other sizes, top-k and layer norm kept 3, and the ablations trained at size 64's 3-epoch choice (the stage-2 "
        "planner refuses a grid whose estimate is above the budget). Cut once the 20-epoch runs had cost about 1.45 "
        "times their estimate: size 256's 20-epoch selection runs (it enters the best size at 3 epochs only), the "
        "edge extensions of every arm but the parity arms, and Table 1's seeds 4–5 of every choice the extended "
        f"selection moved (it reports seeds {MOVED_SEEDS[0]}–{MOVED_SEEDS[-1]}; a choice that stands keeps its seeds)."
    )
