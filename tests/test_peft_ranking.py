"""The IMDb method table's order, decided or not: each method's accuracy with the protocol's interval (seeds and the
validation reviews' sampling error) and its paired difference from its panel's best."""

import re

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.peft import tables as pt
from adaptstudy.reporting.peft.ranking import ranking


def test_the_order_is_decided_only_where_the_difference_from_the_best_lies_below_zero(data_dir):
    runs = pt.label_runs(load_runs(PROJECT_ROOT / "results" / "peft_imdb"))
    table = ranking(runs)
    methods = pt.method_table(runs)
    assert len(table) == len(methods) and set(table["method"]) == set(methods["method"])
    interval = r"(-?\d+\.\d) \[(-?\d+\.\d), (-?\d+\.\d)\]"
    for (backbone, setting), panel in table.groupby(["backbone", "setting"], sort=False):
        assert panel["− the best [95% CI]"].iloc[0] == "the best" and (panel["order"].iloc[1:] != "–").all()
        mine = methods[(methods["backbone"] == backbone) & (methods["setting"] == setting)]
        assert panel["method"].iloc[0] == mine.sort_values("accuracy", ascending=False)["method"].iloc[0]
        for row in panel.iloc[1:].itertuples():
            effect, low, high = map(
                float, re.fullmatch(r"([+-]?\d+\.\d) \[([+-]\d+\.\d), ([+-]\d+\.\d)\]", row[5]).groups()
            )
            assert effect <= 0 and (high <= 0 if row.order == "below the best" else high >= 0)  # shown to 0.1
        by_method = mine.set_index("method").loc[panel["method"]]
        for text, row in zip(panel["accuracy [95% CI]"], by_method.itertuples()):
            mean, low, high = map(float, re.fullmatch(interval, text).groups())
            # wider than the seeds' own interval: the protocol's adds the reviews' sampling error
            assert abs(mean - row.accuracy) < 0.05 and high - low > 2 * 1.96 * row.sd / row.seeds**0.5
    # on minilm-l6 at 90%/10%, Pfeiffer's lead over encoder-only and full fine-tuning is not decided
    top = table[(table["backbone"] == "minilm-l6") & (table["setting"] == "90%/10%")].set_index("method")
    assert top.loc[["encoder_only", "full"], "order"].eq("not decided").all()
