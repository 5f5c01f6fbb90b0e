"""The Hyperformer half of the "across tasks" chapter's tables (study `hyperformer`): the paper's Table 1 on our five
tasks, the learning rates chosen, the ablation, the low-resource curve and few-shot transfer.

Hyperformer records are multi-task records (`tasks`, per-task test scores under `task/metric`); a single-task
baseline is a multi-task record with one task. A method's learning rate is chosen on the selection seed by
validation score where a grid tried several; every table then reports mean ± sd over seeds at that rate. Every
function takes the runs of `load_runs`, labelled by `label_runs`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from adaptstudy.claims.baselines import flagged, learned_nothing, record_baseline, validation_learned
from adaptstudy.data.spec import resolve_task
from adaptstudy.reporting.across.hyperformer.published import (
    HYPER_ABLATED,
    HYPER_ABLATION,
    HYPER_COLUMNS,
    HYPER_FEW_SHOT,
    HYPER_TABLE1,
)
from adaptstudy.reporting.common import SELECTION_SEED, mean_sd, reported
from adaptstudy.reporting.selection import at_learning_rates, choose_learning_rates

GLUE5 = ("cola", "sst2", "mrpc", "stsb", "rte")
AVERAGE_5, AVERAGE_8 = "average (these 5)", HYPER_COLUMNS[-1]
HYPER_ROWS = ("st-full", "st-adapters", "mt-full", "mt-adapters", "hyperformer", "hyperformer++")
FEW_SHOT_GRID = {  # the few-shot cells run (planning.hyperformer): task -> k -> (epochs, score every)
    # CB has 32 training examples offline
    "imdb": {4: (40, 10), 16: (40, 10), 32: (40, 10), 100: (20, 5)},
    "cb": {4: (40, 10), 16: (40, 10), 32: (40, 10)},
}
FEW_SHOT_LABELS = ("hyperformer++ transfer", "st-adapters")
FEW_SHOT_PUBLISHED = ("hyperformer++", "adapters† (multi-task, transferred)")  # the paper's columns beside ours
ABLATED = "hyperformer++"  # the model our ablation removes components from (the paper's Table 4: Hyperformer-small)
ABLATIONS = ("no adapter blocks", "no conditional layer norm", "no task projector")  # the paper's rows we run
KEYS = ["label", "tasks", "cap"]  # a learning rate is chosen per method, task set and training size
RUN_COLUMNS = [
    "run_id",
    "seed",
    "main_metric_value",
    "trainable_params",
    "total_params",
    "backbone_params",
    "train_runtime_s",
    "config.learning_rate",
    "record",
]


def hyper_label(record: dict) -> str:
    """The row a multi-task record belongs to: st-full, st-adapters, mt-full, mt-adapters, hyperformer(++),
    an ablation, or few-shot transfer."""
    config, method = record["config"], record["method"]
    if config.get("transfer_from"):
        return f"{method} transfer"
    if len(config["tasks"]) == 1:
        return {"full": "st-full", "houlsby": "st-adapters"}.get(method, f"st-{method}")
    if method == "layernorm":
        return "no adapter blocks"
    if not config.get("conditional_layer_norm", True):
        return "no conditional layer norm"
    if not config.get("task_projector", True):
        return "no task projector"
    return {"full": "mt-full", "houlsby": "mt-adapters"}.get(method, method)


def label_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The multi-task runs, with `label` (their row), `tasks` (a tuple), `cap` (training examples per task),
    `validation` (the mean validation score rates are chosen on) and `scores` (per-task test scores)."""
    labels = ["label", "tasks", "cap", "validation", "scores"]
    if runs.empty:
        return pd.DataFrame(columns=[*RUN_COLUMNS, *labels])
    runs = runs[np.array(["tasks" in r for r in runs["record"]], dtype=bool)]
    records = runs["record"]
    return runs.assign(
        label=[hyper_label(r) for r in records],
        tasks=pd.Series([tuple(r["tasks"]) for r in records], index=runs.index, dtype=object),
        cap=[r["config"]["max_train_examples"] for r in records],
        validation=[r.get("validation_mean", np.nan) for r in records],
        scores=pd.Series([r["metrics"] for r in records], index=runs.index, dtype=object),
    )


def learned_tasks(record: dict) -> int:
    """How many of a multi-task run's tasks it learned on validation (above the constant prediction by more than
    noise); 0 for a record without validation scores."""
    if "validation_metrics" not in record:
        return 0
    return sum(validation_learned(record, t)[2] for t in record["tasks"])


def at_chosen_rates(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (label, tasks, cap): the runs at the rate whose run of the selection seed scored best on validation among
    the rates that learned the most of its tasks (the stage-1 rule, fixed before its runs: a rate that leaves
    a task at its constant prediction is chosen only where every rate does). A group the selection seed did not run
    keeps its one rate, fixed before any run (the baselines' and few-shot's); one with several rates and no choice is
    dropped."""
    seed_0 = runs[runs["seed"] == SELECTION_SEED]
    seed_0 = seed_0.assign(learned=[learned_tasks(r) for r in seed_0["record"]])
    if not seed_0.empty:
        seed_0 = seed_0[seed_0["learned"] == seed_0.groupby(KEYS)["learned"].transform("max")]
    chosen = choose_learning_rates(seed_0, KEYS, score="validation")
    unchosen = runs[~runs.set_index(KEYS).index.isin(chosen.set_index(KEYS).index)]
    rates = unchosen.groupby(KEYS)["config.learning_rate"]
    fixed = rates.first()[rates.nunique() == 1].reset_index().rename(columns={"config.learning_rate": "learning_rate"})
    return at_learning_rates(runs, pd.concat([chosen[[*KEYS, "learning_rate"]], fixed]), KEYS)


def main_cap(runs: pd.DataFrame) -> int | None:
    """The main table's training examples per task: the largest cap of the runs on our GLUE tasks (the smaller are
    the low-resource curve's)."""
    glue = runs[[set(t) <= set(GLUE5) for t in runs["tasks"]]] if not runs.empty else runs
    return int(glue["cap"].max()) if not glue.empty else None


def rate_selection(runs: pd.DataFrame) -> pd.DataFrame:
    """Each method tried at several learning rates: the selection seed's mean validation score and tasks learned
    per rate, and the rate chosen."""
    runs = runs[(runs["seed"] == SELECTION_SEED) & (runs["cap"] == main_cap(runs))]
    several = runs.groupby("label")["config.learning_rate"].nunique()
    runs = runs[runs["label"].isin(several[several > 1].index)]
    runs = runs.assign(
        chosen=runs["run_id"].isin(at_chosen_rates(runs)["run_id"]),
        learned=[f"{learned_tasks(r)} of {len(r['tasks'])}" for r in runs["record"]],
    )
    table = runs[["label", "config.learning_rate", "validation", "learned", "chosen"]]
    return table.sort_values(["label", "config.learning_rate"], ignore_index=True).rename(
        columns={
            "label": "method",
            "config.learning_rate": "learning_rate",
            "validation": "validation mean (seed 0)",
            "learned": "tasks learned (seed 0)",
        }
    )


def _task_scores(runs: pd.DataFrame) -> dict[str, dict[str, list[float]]]:
    """label -> task -> test scores (the task's main metric) over seeds."""
    frame = task_runs(runs, flags=False)
    return {label: g.groupby("task")["score"].agg(list).to_dict() for label, g in frame.groupby("label")}


def _params(runs: pd.DataFrame, label: str, n_tasks: int) -> tuple[str, str]:
    """(total parameters for all the tasks as a multiple of the backbone, trained parameters per task in %)."""
    group = runs[runs["label"] == label]
    if group.empty:
        return "–", "–"
    backbone = group["backbone_params"].iloc[0]
    if label.startswith("st-"):
        per_task = group.groupby("tasks")["trainable_params"].mean()
        extra = per_task.sum() if label != "st-full" else n_tasks * backbone
        total = (backbone + extra) if label != "st-full" else extra
        return f"{total / backbone:.2f}×", f"{100 * per_task.mean() / backbone:.2f}%"
    run = group.iloc[0]
    return (
        f"{run['total_params'] / backbone:.2f}×",
        f"{100 * run['trainable_params'] / len(run['tasks']) / backbone:.2f}%",
    )


def main_table_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of the main table: the main training size, each method at its chosen rate, the reported seeds."""
    return reported(at_chosen_rates(runs[runs["cap"] == main_cap(runs)])) if not runs.empty else runs


def hyper_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table 1 on our five tasks: ours (test half of dev, mean ± sd over seeds, flagged where runs learned
    nothing) beside the published row, and the constant prediction's score on each test split. Both get the average
    over these five tasks (the paper's MRPC F1 and STS-B Spearman: our main metrics); the paper's own average, over
    its 8 tasks, stands apart."""
    runs = main_table_runs(runs)
    scores = _task_scores(runs)
    per_task = task_runs(runs)
    collapsed = per_task.groupby(["label", "task"])["learned_nothing"].sum()
    rows = []
    for label in HYPER_ROWS:
        total, trained = _params(runs, label, len(GLUE5))
        cells = {
            task: flagged(mean_sd(scores.get(label, {}).get(task, [])), int(collapsed.get((label, task), 0)))
            for task in GLUE5
        }
        means = [np.mean(v) for t, v in scores.get(label, {}).items() if t in GLUE5]
        complete = len(means) == len(GLUE5)
        rows.append(
            {
                "source": "ours",
                "method": label,
                "total params": total,
                "trained/task": trained,
                **cells,
                AVERAGE_5: f"{np.mean(means):.1f}" if complete else "–",
                AVERAGE_8: "–",
            }
        )
    constants = _constants(runs)
    rows.append(
        {
            "source": "ours",
            "method": "constant prediction",
            "total params": "–",
            "trained/task": "–",
            **{t: f"{constants[t]:.1f}" if t in constants else "–" for t in GLUE5},
            AVERAGE_5: f"{np.mean([constants[t] for t in GLUE5]):.1f}" if set(GLUE5) <= set(constants) else "–",
            AVERAGE_8: "–",
        }
    )
    for label, (total, trained, values) in HYPER_TABLE1.items():
        # "accuracy/F1", "Pearson/Spearman": the second
        five = np.mean([float(str(v).split("/")[-1]) for v in values[:5]])
        rows.append(
            {
                "source": "published",
                "method": label,
                "total params": total or "–",
                "trained/task": f"{trained:.2f}%",
                **dict(zip(GLUE5, values[:5])),
                AVERAGE_5: f"{five:.1f}",
                AVERAGE_8: f"{values[5]:.2f}",
            }
        )
    return pd.DataFrame(rows)


def _constants(runs: pd.DataFrame) -> dict[str, float]:
    """Per task: the constant prediction's main metric on the test split of the first run that has the task."""
    out: dict[str, float] = {}
    for record in runs["record"]:
        for task in record["tasks"]:
            if task not in out:
                out[task] = record_baseline(record, task).constant
    return out


def ablation_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Hyperformer++ against itself without each component, each at the rate its own selection-seed runs chose: our
    mean test score over the five tasks, mean ± sd over the reported seeds, beside the paper's GLUE average (T5-small),
    which ablates Hyperformer-small, not Hyperformer++: every row of its Table 4, "–" where we run none (its T5 layer
    norms: our backbones are BERTs)."""
    if not runs.empty:
        runs = reported(at_chosen_rates(runs[(runs["cap"] == main_cap(runs)) & (runs["tasks"].apply(len) > 1)]))
    per_seed = task_runs(runs, flags=False)
    rows = []
    for label, published in HYPER_ABLATION.items():
        ours = ABLATED if label == HYPER_ABLATED else label
        mine = per_seed[per_seed["label"] == ours].pivot_table(index="seed", columns="task", values="score")
        means = mine.mean(axis=1).tolist() if set(GLUE5) <= set(mine.columns) else []
        rows.append(
            {
                "paper's model": label,
                "published: GLUE average (T5-small)": published,
                "ours": ours if ours == ABLATED or ours in ABLATIONS else "not run",
                "ours: mean test score": mean_sd(means),
            }
        )
    return pd.DataFrame(rows)


def low_resource(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean test score over the tasks per training cap (the reported seeds), for each method run at several caps (the
    paper's Figure 2)."""
    if runs.empty:
        return pd.DataFrame(columns=["label", "cap", "mean test score"])
    runs = reported(at_chosen_rates(runs[runs["tasks"].apply(len) > 1]))
    rows = []
    for (label, cap), group in runs.groupby(["label", "cap"]):
        scores = _task_scores(group)[label]
        if set(scores) >= set(GLUE5):
            rows.append({"label": label, "cap": cap, "mean test score": np.mean([np.mean(scores[t]) for t in GLUE5])})
    frame = pd.DataFrame(rows, columns=["label", "cap", "mean test score"])
    several = frame.groupby("label")["cap"].nunique()
    return frame[frame["label"].isin(several[several > 1].index)]


def plot_low_resource(frame: pd.DataFrame):
    if frame.empty:
        return None
    ax = sns.lineplot(data=frame, x="cap", y="mean test score", hue="label", marker="o")
    ax.set(xscale="log", xlabel="training examples per task (log scale)", ylabel="mean test score over the 5 tasks")
    plt.tight_layout()
    return ax


def few_shot_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per few-shot run (Hyperformer++ transfer or a single-task adapter on a few-shot task): task, k, score,
    whether it learned nothing (at chance with k examples: flagged, and counted), and its record."""
    one = runs[np.array([len(t) == 1 and t[0] in HYPER_FEW_SHOT for t in runs["tasks"]], dtype=bool)]
    one = one[one["label"].isin(FEW_SHOT_LABELS)]
    tasks = [t[0] for t in one["tasks"]]
    frame = one.assign(
        task=tasks,
        learned_nothing=np.array([learned_nothing(r, t) for r, t in zip(one["record"], tasks)], dtype=bool),
    )[["run_id", "task", "cap", "label", "main_metric_value", "learned_nothing", "record"]]
    return frame.rename(columns={"cap": "k", "main_metric_value": "score"})  # a record says why it cannot be paired


def few_shot(runs: pd.DataFrame) -> pd.DataFrame:
    """Few-shot transfer to a new task: ours (Hyperformer++ task embedding, a fresh single-task adapter) per k beside
    the paper's Table 3 (the reported seeds), whose baseline transfers from multi-task adapters (its dagger)."""
    ours = few_shot_runs(reported(runs)) if not runs.empty else few_shot_runs(runs)
    out = []
    for task, published in HYPER_FEW_SHOT.items():
        for i, k in enumerate(published["k"]):
            row = {"task": task, "k": k}
            for label, column, theirs in zip(FEW_SHOT_LABELS, ("hyperformer++", "st-adapters"), FEW_SHOT_PUBLISHED):
                hits = ours[(ours["task"] == task) & (ours["k"] == k) & (ours["label"] == label)]
                row[f"ours {column}"] = flagged(mean_sd(hits["score"].tolist()), int(hits["learned_nothing"].sum()))
                row[f"published {theirs}"] = published[column][i]
            out.append(row)
    return pd.DataFrame(out)


def task_runs(runs: pd.DataFrame, flags: bool = True) -> pd.DataFrame:
    """One row per run and task it scores: label, seed, cap, task, score (the task's main metric on test) and, with
    `flags`, whether the run learned nothing on that task."""
    rows = [
        {
            "run_id": run["run_id"],
            "label": run["label"],
            "seed": run["seed"],
            "cap": run["cap"],
            "task": task,
            "score": run["scores"][key],
            "learned_nothing": flags and learned_nothing(run["record"], task),
        }
        for _, run in runs.iterrows()
        for task in run["tasks"]
        if (key := f"{task}/{resolve_task(task).main_metric}") in run["scores"]
    ]
    return pd.DataFrame(rows, columns=["run_id", "label", "seed", "cap", "task", "score", "learned_nothing"])
