"""The documented search that makes the hypernetwork methods train (study `hyperformer_search`): per run,
what it changed, its mean validation score, and whether it learned CoLA and RTE on validation (above the constant
prediction by more than noise), the decision rule's inputs (`params/cpu/hyperformer_search.yaml`, two rounds)."""

from __future__ import annotations

import pandas as pd

from adaptstudy.claims.baselines import validation_learned

WATCHED = ("cola", "rte")  # the tasks the first round never learned
KNOBS = {
    "hypernetwork_init_std": "init std",
    "hypernetwork_learning_rate": "hypernetwork rate",
    "conditional_layer_norm": "conditional LN",
}
SCHEDULE = {"learning_rate": "rate", "num_train_epochs": "epochs"}  # what round 2 changed besides the recipe


def search_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run of the search (labelled by `tables.label_runs`): method and tasks, the settings it changed,
    the mean validation score, and per watched task its validation score and whether it learned. `chosen` marks the
    decision rule's pick: among the hypernetwork runs that learned CoLA, those with the fewest epochs (more epochs
    make every later run dearer), then the best mean validation."""
    columns = ["label", "tasks", "cap", *SCHEDULE.values(), *KNOBS.values(), "validation"]
    columns += [f"{t} {what}" for t in WATCHED for what in ("validation", "learned")] + ["chosen"]
    if runs.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for (_, run), record in zip(runs.iterrows(), runs["record"]):
        row = {
            "label": run["label"],
            "tasks": ", ".join(run["tasks"]),  # a list that wraps in the book's column
            "cap": run["cap"],
            "validation": run["validation"],
        }
        row.update({name: record["config"].get(knob) for knob, name in (SCHEDULE | KNOBS).items()})
        for task in WATCHED:
            score, _, learned = validation_learned(record, task) if task in run["tasks"] else (None, None, None)
            row[f"{task} validation"], row[f"{task} learned"] = score, learned
        rows.append(row)
    table = pd.DataFrame(rows, columns=columns[:-1])
    eligible = table["label"].str.startswith("hyperformer") & table["cola learned"].eq(True)
    table["chosen"] = False
    eligible &= table["epochs"].eq(table.loc[eligible, "epochs"].min())
    if eligible.any():
        table.loc[table.loc[eligible, "validation"].idxmax(), "chosen"] = True
    return table
