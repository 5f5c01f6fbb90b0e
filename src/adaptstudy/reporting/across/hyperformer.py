"""The Hyperformer half of the "across tasks" chapter (study `hyperformer`): the paper's Table 1 on our five tasks,
the learning rates chosen, the ablation, the low-resource curve, few-shot transfer, and their claims.

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

from adaptstudy.data.tasks import resolve_task
from adaptstudy.reporting.common import (
    SELECTION_SEED,
    at_learning_rates,
    choose_learning_rates,
    claim_row,
    claims_table,
    mean_sd,
    sample_sd,
)
from adaptstudy.reporting.published import HYPER_ABLATION, HYPER_COLUMNS, HYPER_FEW_SHOT, HYPER_TABLE1

GLUE5 = ("cola", "sst2", "mrpc", "stsb", "rte")
AVERAGE_5, AVERAGE_8 = "average (these 5)", HYPER_COLUMNS[-1]
MAIN_CAP = 1000  # training examples per task in the main table (other caps: the low-resource plot)
HYPER_ROWS = ("st-full", "st-adapters", "mt-full", "mt-adapters", "hyperformer", "hyperformer++")
FEW_SHOT_LABELS = ("hyperformer++ transfer", "st-adapters")
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


def at_chosen_rates(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (label, tasks, cap): the runs at the rate whose run of the selection seed scored best on validation."""
    chosen = choose_learning_rates(runs[runs["seed"] == SELECTION_SEED], KEYS, score="validation")
    return at_learning_rates(runs, chosen, KEYS)


def rate_selection(runs: pd.DataFrame) -> pd.DataFrame:
    """Each method tried at several learning rates: the selection seed's mean validation score per rate, and the
    rate chosen."""
    runs = runs[(runs["seed"] == SELECTION_SEED) & (runs["cap"] == MAIN_CAP)]
    several = runs.groupby("label")["config.learning_rate"].nunique()
    runs = runs[runs["label"].isin(several[several > 1].index)]
    runs = runs.assign(chosen=runs["run_id"].isin(at_chosen_rates(runs)["run_id"]))
    table = runs[["label", "config.learning_rate", "validation", "chosen"]]
    return table.sort_values(["label", "config.learning_rate"], ignore_index=True).rename(
        columns={"label": "method", "config.learning_rate": "learning_rate", "validation": "validation mean (seed 0)"}
    )


def _task_scores(runs: pd.DataFrame) -> dict[str, dict[str, list[float]]]:
    """label -> task -> test scores (the task's main metric) over seeds."""
    out: dict[str, dict[str, list[float]]] = {}
    for _, run in runs.iterrows():
        for task in run["tasks"]:
            value = run["scores"].get(f"{task}/{resolve_task(task).main_metric}")
            if value is not None:
                out.setdefault(run["label"], {}).setdefault(task, []).append(value)
    return out


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


def _main_table_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of the main table: the main training size, each method at its chosen rate."""
    return at_chosen_rates(runs[runs["cap"] == MAIN_CAP]) if not runs.empty else runs


def seed_spread(runs: pd.DataFrame, tasks) -> str:
    """How far one seed can move a score on `tasks` (the fusion targets): the sd over seeds of our single-task runs
    (same backbone, 1,000 training examples), against which a one-seed fusion margin is read."""
    scores = _task_scores(_main_table_runs(runs))
    parts = [
        f"{task.upper()} {label.removeprefix('st-')} {sample_sd(values):.1f}"
        for task in tasks
        for label in ("st-full", "st-adapters")
        if len(values := scores.get(label, {}).get(task, [])) > 1
    ]
    if not parts:
        return ""
    return (
        "Seed to seed, our single-task scores on these targets move by (sd over seeds, Hyperformer study): "
        + ", ".join(parts)
        + " points."
    )


def hyper_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table 1 on our five tasks: ours (test half of dev, mean ± sd over seeds) beside the published row.
    Both get the average over these five tasks (the paper's MRPC F1 and STS-B Spearman: our main metrics); the
    paper's own average, over its 8 tasks, stands apart."""
    runs = _main_table_runs(runs)
    scores = _task_scores(runs)
    rows = []
    for label in HYPER_ROWS:
        total, per_task = _params(runs, label, len(GLUE5))
        cells = {task: mean_sd(scores.get(label, {}).get(task, [])) for task in GLUE5}
        means = [np.mean(v) for t, v in scores.get(label, {}).items() if t in GLUE5]
        complete = len(means) == len(GLUE5)
        rows.append(
            {
                "source": "ours (minilm-l6)",
                "method": label,
                "total params": total,
                "trained/task": per_task,
                **cells,
                AVERAGE_5: f"{np.mean(means):.1f}" if complete else "–",
                AVERAGE_8: "–",
            }
        )
    for label, (total, per_task, values) in HYPER_TABLE1.items():
        # "accuracy/F1", "Pearson/Spearman": the second
        five = np.mean([float(str(v).split("/")[-1]) for v in values[:5]])
        rows.append(
            {
                "source": "published (T5-base)",
                "method": label,
                "total params": total or "–",
                "trained/task": f"{per_task:.2f}%",
                **dict(zip(GLUE5, values[:5])),
                AVERAGE_5: f"{five:.1f}",
                AVERAGE_8: f"{values[5]:.2f}",
            }
        )
    return pd.DataFrame(rows)


def constant_cola(runs: pd.DataFrame) -> str:
    """Which rows of the main table predicted one class for every CoLA sentence (Matthews correlation exactly 0),
    in how many of their runs: a row's CoLA mean mixes such runs with learning ones."""
    runs = _main_table_runs(runs)
    counts = []
    for label in HYPER_ROWS:
        mcc = [scores["cola/mcc"] for scores in runs.loc[runs["label"] == label, "scores"] if "cola/mcc" in scores]
        if mcc:
            counts.append(f"{label} {sum(v == 0 for v in mcc)} of {len(mcc)}")
    if not counts:
        return ""
    return "CoLA runs at Matthews correlation 0 (one class for every sentence): " + "; ".join(counts) + "."


def ablation_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Hyperformer++ against itself without each component: our mean test score over the five tasks, seed 0 for
    every row (the ablations ran with seed 0 alone: a paired comparison), beside the paper's GLUE average (T5-small)."""
    if not runs.empty:
        runs = at_chosen_rates(runs[(runs["cap"] == MAIN_CAP) & (runs["tasks"].apply(len) > 1)])
        runs = runs[runs["seed"] == 0]
    scores = _task_scores(runs)
    rows = []
    for label, published in HYPER_ABLATION.items():
        per_task = scores.get(label, {})
        mean = np.mean([np.mean(v) for v in per_task.values()]) if len(per_task) == len(GLUE5) else np.nan
        rows.append({"model": label, "ours: mean test score": mean, "published: GLUE average (T5-small)": published})
    return pd.DataFrame(rows)


def low_resource(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean test score over the tasks per training cap, for each method run at several caps (the paper's Figure 2)."""
    if runs.empty:
        return pd.DataFrame(columns=["label", "cap", "mean test score"])
    runs = at_chosen_rates(runs[runs["tasks"].apply(len) > 1])
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


def _few_shot_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per few-shot run (Hyperformer++ transfer or a single-task adapter on a few-shot task): task, k, score."""
    one = runs[np.array([len(t) == 1 and t[0] in HYPER_FEW_SHOT for t in runs["tasks"]], dtype=bool)]
    frame = one.assign(task=[t[0] for t in one["tasks"]])[["task", "cap", "label", "main_metric_value"]]
    frame = frame.rename(columns={"cap": "k", "main_metric_value": "score"})
    return frame[frame["label"].isin(FEW_SHOT_LABELS)]


def few_shot(runs: pd.DataFrame) -> pd.DataFrame:
    """Few-shot transfer to a new task: ours (Hyperformer++ task embedding, single-task adapters) per k beside
    the paper's Table 3."""
    ours = _few_shot_runs(runs)
    out = []
    for task, published in HYPER_FEW_SHOT.items():
        for i, k in enumerate(published["k"]):
            row = {"task": task, "k": k}
            for label, column in zip(FEW_SHOT_LABELS, ("hyperformer++", "st-adapters")):
                hits = ours[(ours["task"] == task) & (ours["k"] == k) & (ours["label"] == label)]["score"].tolist()
                row[f"ours {column}"] = mean_sd(hits)
                row[f"published {column}"] = published[column][i]
            out.append(row)
    return pd.DataFrame(out)


def claims(runs: pd.DataFrame) -> pd.DataFrame:
    """The Hyperformer half's claims, each with our numbers and a verdict."""
    table = hyper_table(runs).set_index("method")
    ours = table[table["source"] == "ours (minilm-l6)"]
    a, b = _number(ours, "hyperformer++", AVERAGE_5), _number(ours, "st-adapters", AVERAGE_5)
    pa, pb = _number(ours, "hyperformer++", "trained/task"), _number(ours, "st-adapters", "trained/task")
    missing = None in (a, b, pa, pb)
    rows = [
        claim_row(
            "Hyperformer++ beats single-task adapters while training fewer parameters per task",
            "–" if missing else f"hyperformer++ {a:.1f} with {pa:.2f}% per task vs st-adapters {b:.1f} with {pb:.2f}%",
            None if missing else a > b and pa < pb,
            partly=a is not None and b is not None and a > b,
        )
    ]
    a, b = _number(ours, "hyperformer", AVERAGE_5), _number(ours, "mt-adapters", AVERAGE_5)
    rows.append(
        claim_row(
            "Hyperformer beats one adapter shared by the tasks",
            "–" if a is None or b is None else f"hyperformer {a:.1f} vs mt-adapters {b:.1f}",
            None if a is None or b is None else a > b,
        )
    )
    rows += [
        _margin_claim(
            "Each component of Hyperformer++ helps (removing it lowers the mean test score)", _ablation_drops(runs)
        ),
        _margin_claim(
            "Hyperformer++ beats multi-task fine-tuning at every training size per task", _low_resource_margins(runs)
        ),
        _margin_claim(
            "Few-shot: a new task embedding for a trained Hyperformer++ beats a single-task adapter on the same k",
            _few_shot_margins(runs),
        ),
    ]
    return claims_table(rows)


def _number(ours: pd.DataFrame, label: str, column: str) -> float | None:
    """A figure of our rows of `hyper_table` (indexed by method), None where it is missing."""
    value = ours[column].get(label, "–")
    return None if value in ("–", None) else float(value.rstrip("%"))


def _margin_claim(claim: str, margins: dict[str, float]) -> dict[str, str]:
    """A claim that each margin is positive: holds if all are, partly if some are."""
    return claim_row(
        claim,
        "; ".join(f"{k}: {v:+.1f}" for k, v in margins.items()) or "–",
        all(v > 0 for v in margins.values()) if margins else None,
        partly=any(v > 0 for v in margins.values()),
    )


def _ablation_drops(runs: pd.DataFrame) -> dict[str, float]:
    """Hyperformer++'s mean test score minus each ablation's."""
    table = ablation_table(runs).set_index("model")["ours: mean test score"]
    full = table.get("hyperformer++", np.nan)
    return {
        f"without {m.removeprefix('no ')}": full - v
        for m, v in table.drop("hyperformer++", errors="ignore").items()
        if not np.isnan(full) and not np.isnan(v)
    }


def _low_resource_margins(runs: pd.DataFrame) -> dict[str, float]:
    """Per training cap: Hyperformer++ minus multi-task fine-tuning (mean test score over the five tasks)."""
    curve = low_resource(runs).pivot(index="cap", columns="label", values="mean test score")
    if not {"hyperformer++", "mt-full"} <= set(curve.columns):
        return {}
    margin = (curve["hyperformer++"] - curve["mt-full"]).dropna()
    return {f"{cap:g} per task": v for cap, v in margin.items()}


def _few_shot_margins(runs: pd.DataFrame) -> dict[str, float]:
    """Per task and k: our Hyperformer++ transfer minus the single-task adapter (means over seeds)."""
    means = _few_shot_runs(runs).groupby(["task", "k", "label"])["score"].mean().unstack()
    if not set(FEW_SHOT_LABELS) <= set(means.columns):
        return {}
    transfer, adapters = FEW_SHOT_LABELS
    margin = (means[transfer] - means[adapters]).dropna()
    return {f"{task} k={k}": v for (task, k), v in margin.items()}
