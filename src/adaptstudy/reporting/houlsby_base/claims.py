"""The verdicts on other backbones than the chapter's and their table: size-64 adapters against full fine-tuning on
`mpnet-base` (base size) and `minilm-l3` (3 layers), each arm at the rate its selection-seed run chose on the
selection split (3 epochs, the shared tie rule), over the reported seeds, beside the course reproduction's BERT-base
figures and the paper's; and the layer ablation on `mpnet-base`'s 12 layers."""

from __future__ import annotations

import pandas as pd

from adaptstudy.claims.baselines import flag_runs, selection_failures
from adaptstudy.claims.catalog import declaration_path, declare_chapter
from adaptstudy.claims.evidence import Unit, contrast, judge
from adaptstudy.claims.verdicts import Verdict, arm, verdict_of
from adaptstudy.reporting.common import SELECTION_SEED, format_mean_sd
from adaptstudy.reporting.findings import finished_times
from adaptstudy.reporting.houlsby_base.tables import ARMS, KEYS, ablation_records, at_chosen_rates, chosen_rates
from adaptstudy.reporting.layer_ablation import ablation_units
from adaptstudy.reporting.published import HOULSBY_2019, HOULSBY_COURSE, published_frame
from adaptstudy.reporting.selection import at_learning_rates
from adaptstudy.reporting.verdict_tables import verdict_table

DECLARED = declare_chapter(declaration_path(__file__), "houlsby_base")
PARITY_64 = DECLARED["parity-64"]
BACKBONE_OF = {"parity-64": "mpnet-base", "parity-64-glue": "mpnet-base", "parity-64-l3": "minilm-l3"}
ABLATED = "mpnet-base"  # the layer ablation's backbone: 12 layers, as the paper's Figure 6
ONE_LAYER, ALL_LAYERS, LOWER_LAYERS = (DECLARED[f"ablation-{part}"] for part in ("one", "all", "lower"))


def set_aside(runs: pd.DataFrame, backbone: str) -> dict[tuple[str, str], str]:
    """Per task and arm on one backbone, the selection-stage evidence that sets it aside (`selection_failures`)."""
    mine = runs[runs["backbone"] == backbone]
    chosen = at_learning_rates(mine, chosen_rates(mine), KEYS)
    return selection_failures(chosen[chosen["seed"] == SELECTION_SEED], ["task", "label"])


def parity_units(runs: pd.DataFrame, backbone: str) -> list[Unit]:
    """Per task both arms ran on the backbone: adapters − full fine-tuning over its reported seeds at the chosen
    rates, in the task's main metric."""
    table, aside = at_chosen_rates(runs, backbone), set_aside(runs, backbone)

    def cells(task: str, label: str):
        return arm(table[(table["task"] == task) & (table["label"] == label)], set_aside=aside.get((task, label), ""))

    tasks = sorted(set.intersection(*(set(table.loc[table["label"] == label, "task"]) for label in ARMS)))
    metric = runs.groupby("task")["main_metric"].first().to_dict()
    return [contrast(t, cells(t, "houlsby-64"), cells(t, "full"), metric=metric[t]) for t in tasks]


def verdicts(runs: pd.DataFrame) -> list[Verdict]:
    """Each parity claim on its backbone's tasks (`BACKBONE_OF`), then the layer ablation on `mpnet-base`."""
    ablations = (ONE_LAYER, ALL_LAYERS, LOWER_LAYERS)
    if runs.empty:
        return [verdict_of(DECLARED[name], []) for name in BACKBONE_OF] + [verdict_of(c, []) for c in ablations]
    runs = flag_runs(runs)
    parity = [verdict_of(DECLARED[name], parity_units(runs, b)) for name, b in BACKBONE_OF.items()]
    one, everything, lower = ablation_units(runs, ablation_records(runs, ABLATED), set_aside(runs, ABLATED))
    return parity + [verdict_of(c, units) for c, units in zip(ablations, (one, everything, lower))]


def claims(runs: pd.DataFrame) -> pd.DataFrame:
    """The base-size verdict table."""
    return verdict_table(verdicts(runs), finished_times(runs))


def base_size_table(runs: pd.DataFrame, backbone: str = "mpnet-base") -> pd.DataFrame:
    """Per task: ours on the backbone (full fine-tuning, size-64 adapters, adapters − full with its 95% interval, in
    the task's main metric and in accuracy), the course reproduction's BERT-base accuracies and the paper's
    BERT-large test scores (Table 1)."""
    if runs.empty or backbone not in set(runs["backbone"]):
        return pd.DataFrame()
    table = at_chosen_rates(flag_runs(runs), backbone)
    course = published_frame(HOULSBY_COURSE).pivot(index="task", columns="method", values="value")
    table_1 = published_frame(HOULSBY_2019, "Table 1")
    paper = table_1.pivot(index="task", columns="method", values="value")
    paper_metric = dict(zip(table_1["task"], table_1["metric"])).get
    rows = []
    for task in sorted(set(table["task"])):
        cells = {label: table[(table["task"] == task) & (table["label"] == label)] for label in ARMS}
        if any(c.empty for c in cells.values()):
            continue
        row = {"task": task, "metric": cells["full"]["main_metric"].iloc[0]}
        for label, score in (("full", "main_metric_value"), ("houlsby-64", "main_metric_value")):
            values = cells[label][score].astype(float)
            row[f"ours: {label}"] = format_mean_sd(values.mean(), values.std(ddof=1), len(values))
        for what, score, name in (("metric", "main_metric_value", None), ("accuracy", "metric.accuracy", "accuracy")):
            a, b = (arm(cells[label], score=score) for label in ARMS)
            row[f"ours: adapters − full, {what} [95% CI]"] = judge(
                [contrast(task, a, b, metric=name or row["metric"])], PARITY_64.rule
            ).interval()
        if task in course.index:
            gap = course.loc[task, "houlsby"] - course.loc[task, "full"]
            row["course (BERT-base, dev accuracy): adapters − full"] = f"{gap:+.2f}"
        if task in paper.index:
            gap = paper.loc[task, "houlsby-64"] - paper.loc[task, "full"]
            row["paper (BERT-large, GLUE test): size 64 − full"] = f"{gap:+.1f} ({paper_metric(task)})"
        rows.append(row)
    return pd.DataFrame(rows)
