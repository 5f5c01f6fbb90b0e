"""The "across tasks" chapter: AdapterFusion (study `fusion`) and Hyperformer (study `hyperformer`).

Fusion records are single-task fine-tuning records (methods head_only, full, pfeiffer = ST-A, fusion). Hyperformer
records are multi-task records (`tasks`, per-task test scores under `task/metric`); a single-task baseline is a
multi-task record with one task. In both, a method's learning rate is chosen on seed 0 by validation score where a
grid tried several; every table then reports mean ± sd over seeds at that rate.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from adaptstudy.data.tasks import resolve_task
from adaptstudy.reporting.common import mean_sd, scale_note, verdict
from adaptstudy.reporting.published import (
    FUSION_COLUMNS,
    FUSION_NOT_OFFLINE,
    HYPER_ABLATION,
    HYPER_COLUMNS,
    HYPER_FEW_SHOT,
    HYPER_TABLE1,
    PFEIFFER_2021,
    published_frame,
)

FUSION_TARGETS = ("rte", "mrpc", "sst2", "imdb", "cb")
FUSION_LABEL = {"head_only": "head_only", "full": "full", "pfeiffer": "st-a", "fusion": "fusion-st-a"}
GLUE5 = ("cola", "sst2", "mrpc", "stsb", "rte")
AVERAGE_5, AVERAGE_8 = "average (these 5)", HYPER_COLUMNS[-1]
MAIN_CAP = 1000  # training examples per task in the Hyperformer main table (other caps: the low-resource plot)


# ---------------------------------------------------------------- AdapterFusion


def is_target_cell(task: str, method: str, epochs: float) -> bool:
    """Whether a fusion-study run is a cell of the table (a target task's column). CB's source adapter (trained
    like every source, 3 epochs) is not its ST-A cell (20 epochs, as CB's other columns)."""
    return task in FUSION_TARGETS and method in FUSION_LABEL and (task != "cb" or epochs > 3 or method == "fusion")


def fusion_runs(records: list[dict]) -> pd.DataFrame:
    """One row per fusion-study run on a target task: column label, seed, dev accuracy (the paper's Table 1 reports
    accuracy for every task, MRPC included, whose main metric here is F1)."""
    rows = [
        {
            "task": r["task"],
            "label": FUSION_LABEL[r["method"]],
            "seed": r["seed"],
            "score": r["metrics"]["accuracy"],
            "trainable_params": r["trainable_params"],
            "backbone_params": r["backbone_params"],
        }
        for r in records
        if is_target_cell(r["task"], r["method"], r["config"].get("num_train_epochs", 0))
    ]
    return pd.DataFrame(rows, columns=["task", "label", "seed", "score", "trainable_params", "backbone_params"])


def fusion_table(records: list[dict]) -> pd.DataFrame:
    """The paper's Table 1 for our targets: ours (mean ± sd over seeds) beside the published row."""
    runs = fusion_runs(records)
    published = published_frame(PFEIFFER_2021).pivot(index="task", columns="method", values="value")
    rows = []
    for task in (*FUSION_TARGETS, *FUSION_NOT_OFFLINE):
        ours = runs[runs["task"] == task]
        row = {"task": task, "source": "ours (minilm-l6, dev)"}
        for label in FUSION_COLUMNS:
            scores = ours.loc[ours["label"] == label, "score"].tolist()
            row[label] = (
                "not run offline"
                if task in FUSION_NOT_OFFLINE
                else ("not run (budget)" if label.endswith("mt-a") else mean_sd(scores))
            )
        rows.append(row)
        rows.append(
            {
                "task": task,
                "source": "published (BERT-base, dev)",
                **{c: f"{published.loc[task, c]:.2f}" for c in FUSION_COLUMNS},
            }
        )
    rows.append(
        {"task": "trained / target", "source": "ours: % of the backbone (mean over targets)", **_fusion_params(runs)}
    )
    return pd.DataFrame(rows)


def fusion_scale_note(frame: pd.DataFrame) -> str:
    """The scale note of the fusion table (its cells, from `records_frame`), and how many source adapters ran:
    the study's other records, besides the seed-0 ST-A cells that double as sources."""
    if frame.empty:
        return scale_note(frame)
    cells = frame.apply(lambda r: is_target_cell(r["task"], r["method"], r["config.num_train_epochs"]), axis=1)
    sources = frame[(frame["method"] == "pfeiffer") & (frame["config.num_train_epochs"] == 3) & (frame["seed"] == 0)]
    shared = sorted(sources.loc[cells[sources.index], "task"])
    return (
        scale_note(frame[cells]) + f" Source adapters: {len(sources)} single-task runs, 3 epochs each "
        f"({', '.join(sorted(sources['task']))}); those of {', '.join(shared) or 'no target'} are also their targets' "
        "ST-A cells of seed 0."
    )


def seed_spread(hyper_records: list[dict]) -> str:
    """How far one seed can move a score here: the sd over seeds of our single-task runs of the fusion targets in
    the Hyperformer study (same backbone, 1,000 training examples), against which a one-seed fusion margin is read."""
    scores = _task_scores(_main_table_runs(hyper_records))
    parts = [
        f"{task.upper()} {label.removeprefix('st-')} {np.std(values, ddof=1):.1f}"
        for task in FUSION_TARGETS
        for label in ("st-full", "st-adapters")
        if len(values := scores.get(label, {}).get(task, [])) > 1
    ]
    return (
        (
            "Seed to seed, our single-task scores on these targets move by (sd over seeds, Hyperformer study): "
            + ", ".join(parts)
            + " points."
        )
        if parts
        else ""
    )


def _fusion_params(runs: pd.DataFrame) -> dict[str, str]:
    """Per column: trained parameters per target as a share of the backbone (fusion: its fusion layers and head;
    the frozen source adapters it reads are counted apart, in the chapter's text)."""
    share = (100 * runs["trainable_params"] / runs["backbone_params"]).groupby(runs["label"]).mean()
    return {label: f"{share[label]:.2f}%" if label in share else "–" for label in FUSION_COLUMNS}


def fusion_attention(records: list[dict]) -> pd.DataFrame:
    """Rows target tasks, columns source adapters: the mean softmax weight in the last layer over the dev set,
    averaged over seeds (the paper's Figure 4)."""
    rows = {}
    for task in FUSION_TARGETS:
        weights = [r["fusion_attention"] for r in records if r["task"] == task and r.get("fusion_attention")]
        if weights:
            rows[task] = pd.DataFrame(weights).mean()
    return pd.DataFrame(rows).T


def plot_fusion_attention(matrix: pd.DataFrame):
    if matrix.empty:
        return None
    fig, ax = plt.subplots(figsize=(1 + 0.6 * matrix.shape[1], 1 + 0.5 * matrix.shape[0]))
    sns.heatmap(matrix, annot=True, fmt=".2f", cmap="viridis", ax=ax, cbar_kws={"label": "mean attention"})
    ax.set(xlabel="source adapter", ylabel="target task")
    plt.tight_layout()
    return ax


# ---------------------------------------------------------------- Hyperformer


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


def hyper_runs(records: list[dict]) -> pd.DataFrame:
    rows = []
    for r in records:
        if "tasks" not in r:
            continue
        rows.append(
            {
                "label": hyper_label(r),
                "tasks": tuple(r["tasks"]),
                "seed": r["seed"],
                "cap": r["config"]["max_train_examples"],
                "learning_rate": r["config"]["learning_rate"],
                "validation": r.get("validation_mean", np.nan),
                "scores": r["metrics"],
                "trainable_params": r["trainable_params"],
                "total_params": r["total_params"],
                "backbone_params": r["backbone_params"],
                "train_runtime_s": r["train_runtime_s"],
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "label",
            "tasks",
            "seed",
            "cap",
            "learning_rate",
            "validation",
            "scores",
            "trainable_params",
            "total_params",
            "backbone_params",
            "train_runtime_s",
        ],
    )


def _at_chosen_rates(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (label, tasks, cap): the runs at the rate whose seed-0 run scored best on validation."""
    keep = []
    for _, group in runs.groupby(["label", "tasks", "cap"], sort=False):
        selection = group[group["seed"] == 0]
        rate = (
            (selection if not selection.empty else group)
            .sort_values("validation", ascending=False)["learning_rate"]
            .iloc[0]
        )
        keep.append(group[np.isclose(group["learning_rate"], rate)])
    return pd.concat(keep) if keep else runs


def rate_selection(records: list[dict]) -> pd.DataFrame:
    """Each method tried at several learning rates: seed 0's mean validation score per rate, and the rate chosen."""
    runs = hyper_runs(records)
    runs = runs[(runs["seed"] == 0) & (runs["cap"] == MAIN_CAP)]
    several = runs.groupby("label")["learning_rate"].nunique()
    runs = runs[runs["label"].isin(several[several > 1].index)]
    chosen = _at_chosen_rates(runs)
    table = runs.assign(chosen=runs.index.isin(chosen.index))[["label", "learning_rate", "validation", "chosen"]]
    return table.sort_values(["label", "learning_rate"], ignore_index=True).rename(
        columns={"label": "method", "validation": "validation mean (seed 0)"}
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


def _main_table_runs(records: list[dict]) -> pd.DataFrame:
    """The runs of the main table: the main training size, each method at its chosen rate."""
    runs = hyper_runs(records)
    return _at_chosen_rates(runs[runs["cap"] == MAIN_CAP]) if not runs.empty else runs


HYPER_ROWS = ("st-full", "st-adapters", "mt-full", "mt-adapters", "hyperformer", "hyperformer++")


def hyper_table(records: list[dict]) -> pd.DataFrame:
    """The paper's Table 1 on our five tasks: ours (test half of dev, mean ± sd over seeds) beside the published row.
    Both get the average over these five tasks (the paper's MRPC F1 and STS-B Spearman: our main metrics); the
    paper's own average, over its 8 tasks, stands apart."""
    runs = _main_table_runs(records)
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
        five = np.mean(
            [float(str(v).split("/")[-1]) for v in values[:5]]
        )  # "accuracy/F1", "Pearson/Spearman": the second
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


def constant_cola(records: list[dict]) -> str:
    """Which rows of the main table predicted one class for every CoLA sentence (Matthews correlation exactly 0),
    in how many of their runs: a row's CoLA mean mixes such runs with learning ones."""
    runs = _main_table_runs(records)
    counts = []
    for label in HYPER_ROWS:
        mcc = [
            run["scores"]["cola/mcc"]
            for _, run in runs[runs["label"] == label].iterrows()
            if "cola/mcc" in run["scores"]
        ]
        if mcc:
            counts.append(f"{label} {sum(v == 0 for v in mcc)} of {len(mcc)}")
    return (
        "CoLA runs at Matthews correlation 0 (one class for every sentence): " + "; ".join(counts) + "."
        if counts
        else ""
    )


def ablation_table(records: list[dict]) -> pd.DataFrame:
    """Hyperformer++ against itself without each component: our mean test score over the five tasks, seed 0 for
    every row (the ablations ran with seed 0 alone: a paired comparison), beside the paper's GLUE average (T5-small)."""
    runs = hyper_runs(records)
    if not runs.empty:
        runs = _at_chosen_rates(runs[(runs["cap"] == MAIN_CAP) & (runs["tasks"].apply(len) > 1)])
        runs = runs[runs["seed"] == 0]
    scores = _task_scores(runs)
    rows = []
    for label, published in HYPER_ABLATION.items():
        per_task = scores.get(label, {})
        mean = np.mean([np.mean(v) for v in per_task.values()]) if len(per_task) == len(GLUE5) else np.nan
        rows.append({"model": label, "ours: mean test score": mean, "published: GLUE average (T5-small)": published})
    return pd.DataFrame(rows)


def low_resource(records: list[dict]) -> pd.DataFrame:
    """Mean test score over the tasks per training cap, for each method run at several caps (the paper's Figure 2)."""
    runs = hyper_runs(records)
    if runs.empty:
        return pd.DataFrame(columns=["label", "cap", "mean test score"])
    runs = _at_chosen_rates(runs[runs["tasks"].apply(len) > 1])
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


FEW_SHOT_LABELS = ("hyperformer++ transfer", "st-adapters")


def _few_shot_runs(records: list[dict]) -> pd.DataFrame:
    """One row per few-shot run (Hyperformer++ transfer or a single-task adapter on a few-shot task): task, k, score."""
    rows = [
        {
            "task": r["tasks"][0],
            "k": r["config"]["max_train_examples"],
            "label": hyper_label(r),
            "score": r["main_metric_value"],
        }
        for r in records
        if "tasks" in r and len(r["tasks"]) == 1 and r["tasks"][0] in HYPER_FEW_SHOT
    ]
    frame = pd.DataFrame(rows, columns=["task", "k", "label", "score"])
    return frame[frame["label"].isin(FEW_SHOT_LABELS)]


def few_shot(records: list[dict]) -> pd.DataFrame:
    """Few-shot transfer to a new task: ours (Hyperformer++ task embedding, single-task adapters) per k beside
    the paper's Table 3."""
    ours = _few_shot_runs(records)
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


def cost_runs(fusion_records: list[dict], hyper_records: list[dict]) -> pd.DataFrame:
    """One row per run of either study: its label, training and evaluation seconds, examples per second, peak memory."""
    rows = []
    for study, records in (("fusion", fusion_records), ("hyperformer", hyper_records)):
        for r in records:
            rows.append(
                {
                    "study": study,
                    "method": hyper_label(r) if "tasks" in r else r["method"],
                    "train_runtime_s": r["train_runtime_s"],
                    "eval_runtime_s": r.get("eval_runtime_s", 0.0),
                    "examples/s": r["train_examples_per_s"],
                    "peak MB": r["peak_rss_mb"],
                }
            )
    return pd.DataFrame(rows, columns=["study", "method", "train_runtime_s", "eval_runtime_s", "examples/s", "peak MB"])


def costs(runs: pd.DataFrame) -> pd.DataFrame:
    """Per study and method (rows of `cost_runs`): runs, seconds in all, median examples per second, peak memory."""
    return (
        runs.groupby(["study", "method"])
        .agg(
            runs=("train_runtime_s", "size"),
            train_s=("train_runtime_s", "sum"),
            eval_s=("eval_runtime_s", "sum"),
            examples_per_s=("examples/s", "median"),
            peak_mb=("peak MB", "max"),
        )
        .reset_index()
    )


def claims(fusion_records: list[dict], hyper_records: list[dict]) -> pd.DataFrame:
    """The chapter's claims, each with our numbers and a verdict (records of studies fusion and hyperformer)."""
    fusion = fusion_runs(fusion_records)
    means = fusion.groupby(["task", "label"])["score"].mean().unstack() if not fusion.empty else pd.DataFrame()
    rows: list[dict[str, Any]] = []

    def gain(a: str, b: str) -> dict[str, float]:
        if means.empty or a not in means or b not in means:
            return {}
        return (means[a] - means[b]).dropna().to_dict()

    over_sta = gain("fusion-st-a", "st-a")
    small = [t for t in ("rte", "mrpc", "cb") if t in over_sta]
    rows.append(
        {
            "claim": "Fusion with single-task adapters beats the single-task adapter, most on small targets "
            "(RTE, MRPC, CB)",
            "ours": "; ".join(f"{t}: {v:+.1f}" for t, v in over_sta.items()) + _seeds_per_cell(fusion)
            if over_sta
            else "–",
            "verdict": verdict(
                None if not over_sta else all(v > 0 for v in over_sta.values()),
                partly=any(over_sta[t] > 0 for t in small),
            ),  # it helps on some small target
        }
    )
    table = hyper_table(hyper_records).set_index("method")
    ours = table[table["source"] == "ours (minilm-l6)"]

    def number(label: str, column: str) -> float | None:
        value = ours[column].get(label, "–")
        return None if value in ("–", None) else float(value.rstrip("%"))

    a, b = number("hyperformer++", AVERAGE_5), number("st-adapters", AVERAGE_5)
    pa, pb = number("hyperformer++", "trained/task"), number("st-adapters", "trained/task")
    rows.append(
        {
            "claim": "Hyperformer++ beats single-task adapters while training fewer parameters per task",
            "ours": "–"
            if None in (a, b, pa, pb)
            else f"hyperformer++ {a:.1f} with {pa:.2f}% per task vs st-adapters {b:.1f} with {pb:.2f}%",
            "verdict": verdict(
                None if None in (a, b, pa, pb) else a > b and pa < pb, partly=a is not None and b is not None and a > b
            ),
        }
    )
    a, b = number("hyperformer", AVERAGE_5), number("mt-adapters", AVERAGE_5)
    rows.append(
        {
            "claim": "Hyperformer beats one adapter shared by the tasks",
            "ours": "–" if a is None or b is None else f"hyperformer {a:.1f} vs mt-adapters {b:.1f}",
            "verdict": verdict(None if a is None or b is None else a > b),
        }
    )
    rows.append(
        _claim(
            "Each component of Hyperformer++ helps (removing it lowers the mean test score)",
            _ablation_drops(hyper_records),
        )
    )
    rows.append(
        _claim(
            "Hyperformer++ beats multi-task fine-tuning at every training size per task",
            _low_resource_margins(hyper_records),
        )
    )
    rows.append(
        _claim(
            "Few-shot: a new task embedding for a trained Hyperformer++ beats a single-task adapter on the same k",
            _few_shot_margins(hyper_records),
        )
    )
    return pd.DataFrame(rows)


def _seeds_per_cell(runs: pd.DataFrame) -> str:
    """' (1 seed per cell)', ' (2-3 seeds per cell)': how many runs stand behind each mean compared."""
    seeds = runs.groupby(["task", "label"])["seed"].nunique()
    low, high = seeds.min(), seeds.max()
    return f" ({low if low == high else f'{low}–{high}'} seed{'s' if high > 1 else ''} per cell)"


def _claim(claim: str, margins: dict[str, float]) -> dict[str, str]:
    """A claim that each margin is positive: holds if all are, partly if some are."""
    return {
        "claim": claim,
        "ours": "; ".join(f"{k}: {v:+.1f}" for k, v in margins.items()) or "–",
        "verdict": verdict(
            None if not margins else all(v > 0 for v in margins.values()), partly=any(v > 0 for v in margins.values())
        ),
    }


def _ablation_drops(records: list[dict]) -> dict[str, float]:
    """Hyperformer++'s mean test score minus each ablation's."""
    table = ablation_table(records).set_index("model")["ours: mean test score"]
    full = table.get("hyperformer++", np.nan)
    return {
        f"without {m.removeprefix('no ')}": full - v
        for m, v in table.drop("hyperformer++", errors="ignore").items()
        if not np.isnan(full) and not np.isnan(v)
    }


def _low_resource_margins(records: list[dict]) -> dict[str, float]:
    """Per training cap: Hyperformer++ minus multi-task fine-tuning (mean test score over the five tasks)."""
    curve = low_resource(records).pivot(index="cap", columns="label", values="mean test score")
    if not {"hyperformer++", "mt-full"} <= set(curve.columns):
        return {}
    margin = (curve["hyperformer++"] - curve["mt-full"]).dropna()
    return {f"{cap:g} per task": v for cap, v in margin.items()}


def _few_shot_margins(records: list[dict]) -> dict[str, float]:
    """Per task and k: our Hyperformer++ transfer minus the single-task adapter (means over seeds)."""
    means = _few_shot_runs(records).groupby(["task", "k", "label"])["score"].mean().unstack()
    if not set(FEW_SHOT_LABELS) <= set(means.columns):
        return {}
    transfer, adapters = FEW_SHOT_LABELS
    margin = (means[transfer] - means[adapters]).dropna()
    return {f"{task} k={k}": v for (task, k), v in margin.items()}
