"""Whether the IMDb method table's order is decided: per backbone and setting, each method's accuracy with the 95%
interval the protocol gives a verdict (over seeds, widened by the bootstrap over the validation reviews every run
scored), and its difference from the panel's most accurate method with that difference's interval. The spread over
seeds alone (the table's ± sd) leaves out the sampling error of the one validation split every seed is scored on,
which is what most often decides an order of methods a point apart."""

from __future__ import annotations

import pandas as pd

from adaptstudy.claims.baselines import flag_runs
from adaptstudy.claims.evidence import Rule, contrast, judge
from adaptstudy.claims.verdicts import arm
from adaptstudy.reporting.common import reported
from adaptstudy.reporting.peft.tables import at_chosen_rates

BELOW = Rule("below", 0.0)  # a method is below the best when its difference's interval lies below 0
COLUMNS = ["backbone", "setting", "method", "accuracy [95% CI]", "− the best [95% CI]", "order"]


def ranking(runs: pd.DataFrame) -> pd.DataFrame:
    """Every method at its chosen rate (full training cap, reported seeds), most accurate first per panel: its mean
    with the protocol's interval, and its difference from the panel's best, 'below the best' where that interval
    lies below 0 and 'not decided' where it reaches 0."""
    chosen = flag_runs(reported(at_chosen_rates(runs)))
    chosen = chosen[chosen["fraction"] == 1.0]
    rows = []
    for (backbone, setting), panel in chosen.groupby(["backbone", "setting"]):
        arms = {m: arm(cell) for m, cell in panel.groupby("method")}
        means = {m: float(a.scores.mean()) for m, a in arms.items()}
        best = max(means, key=means.get)
        for method in sorted(arms, key=means.get, reverse=True):
            alone = judge([contrast(method, arms[method], 0.0, metric="accuracy")], BELOW)
            gap = judge([contrast(method, arms[method], arms[best], metric="accuracy")], BELOW)
            rows.append(
                {
                    "backbone": backbone,
                    "setting": setting,
                    "method": method,
                    "accuracy [95% CI]": f"{alone.effect:.1f} [{alone.low:.1f}, {alone.high:.1f}]",
                    "− the best [95% CI]": "the best" if method == best else gap.interval(),
                    "order": "–" if method == best else "below the best" if gap.high < 0 else "not decided",
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)
