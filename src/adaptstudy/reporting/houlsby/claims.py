"""The Houlsby chapter's claims, each with a plain verdict, and the figures they rest on: the parameter/performance
trade-off against top-k fine-tuning, the layer ablation and the initialisation scale.

Every function takes the runs of `load_runs`, labelled by `tables.label_runs`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from adaptstudy.claims.baselines import flag_runs, selection_failures
from adaptstudy.claims.catalog import declaration_path, declare_chapter
from adaptstudy.claims.evidence import Arm, Unit, contrast, judge
from adaptstudy.claims.verdicts import Verdict, arm, verdict_of
from adaptstudy.reporting.common import SELECTION_SEED, config_column, format_mean_sd, reported
from adaptstudy.reporting.findings import finished_times
from adaptstudy.reporting.houlsby.choices import (
    at_ablation_rates,
    at_chosen_rates,
    best_sizes,
    reported_at_chosen_rates,
)
from adaptstudy.reporting.houlsby.published import HOULSBY_COURSE
from adaptstudy.reporting.layer_ablation import ablation_units
from adaptstudy.reporting.published import published_frame
from adaptstudy.reporting.verdict_tables import verdict_table

FAMILIES = {
    "houlsby": "adapters (sizes 8, 64, 256)",
    "top_k": "top-k layers fine-tuned",
    "layernorm": "layer norm only",
    "full": "full fine-tuning",
}


def tradeoff_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """The reported plain runs of every method family at the rate the selection seed chose for its task and label
    (full, each adapter size, each top-k, layer norm only): trained parameters against the dev metric."""
    runs = reported_at_chosen_rates(runs, labels=None)
    runs = runs[runs["method"].isin(list(FAMILIES))]
    return runs.assign(family=runs["method"].map(FAMILIES))


def plot_tradeoff(frame: pd.DataFrame, tasks: list[str]):
    frame = frame[frame["task"].isin(tasks)]
    if frame.empty:
        return None
    grid = sns.relplot(
        data=frame,
        x="trainable_params",
        y="main_metric_value",
        hue="family",
        style="family",
        col="task",
        kind="line",
        marker="o",
        errorbar="sd",
        facet_kws={"sharey": False},
        height=3.5,
        aspect=1.2,
    )
    grid.set(xscale="log")
    grid.set_axis_labels("trained parameters (log scale)", "dev metric (points)")
    sns.move_legend(
        grid, "upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, title=None
    )  # below the panels, not on them
    plt.tight_layout()
    return grid


def ablations_by_task(runs: pd.DataFrame) -> dict[str, list[dict]]:
    """The records of the reported layer-ablation runs at size 64's chosen rate and epochs, per task: their nested
    `layer_ablation` holds a score per span of layers whose adapters were removed."""
    by_task: dict[str, list[dict]] = {}
    for record in reported_at_chosen_rates(runs, ["houlsby-64"])["record"]:
        if record.get("layer_ablation"):
            by_task.setdefault(record["task"], []).append(record)
    return dict(sorted(by_task.items()))


def init_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of the initialisation-scale study (at the ablations' rate), with their `init_std`."""
    runs = at_ablation_rates(runs)
    std = config_column(runs, "adapter_init_std")
    return runs.loc[std.notna()].assign(init_std=std[std.notna()].astype(float))


def init_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per task and init std: mean and sd over seeds, and how many runs learned nothing (at a large std the adapters
    can swamp the frozen layers' output, which the flags show)."""
    flagged_runs = flag_runs(frame)
    table = flagged_runs.groupby(["task", "init_std"], as_index=False).agg(
        seeds=("seed", "nunique"),
        mean=("main_metric_value", "mean"),
        sd=("main_metric_value", "std"),
        constant=("constant", "first"),
        learned_nothing=("learned_nothing", "sum"),
    )
    return table.rename(columns={"init_std": "init std", "learned_nothing": "learned nothing"})


def plot_init(frame: pd.DataFrame):
    if frame.empty:
        return None
    ax = sns.lineplot(data=frame, x="init_std", y="main_metric_value", hue="task", marker="o")
    ax.set(xscale="log", xlabel="adapter init std (log scale)", ylabel="dev metric (points)")
    return ax


DECLARED = declare_chapter(declaration_path(__file__), "houlsby")
PARITY = DECLARED["parity"]
PARITY_64 = DECLARED["parity-64"]
COURSE_SIZE = "houlsby-64"  # the course reproduction trained adapters of size 64 only (sources/003, lines 386-390)
TOP_K = DECLARED["top-k"]
SIZE = DECLARED["size"]
ONE_LAYER = DECLARED["ablation-one"]
ALL_LAYERS = DECLARED["ablation-all"]
LOWER_LAYERS = DECLARED["ablation-lower"]
INIT_STABLE = DECLARED["init-stable"]
INIT_DEGRADES = DECLARED["init-degrades"]
LAYERNORM_POOR = DECLARED["layernorm-poor"]
VARIANTS_SIMILAR = DECLARED["variants-similar"]


def verdicts(runs: pd.DataFrame) -> list[Verdict]:
    """Every claim of the chapter judged on the runs of the seeds that chose nothing (rates and sizes were chosen
    on the selection seed); runs that learned nothing are flagged."""
    runs = flag_runs(runs)
    table = reported_at_chosen_rates(runs)
    best = best_sizes(runs)
    metric = runs.groupby("task")["main_metric"].first().to_dict() if not runs.empty else {}

    aside = set_aside(runs)

    def cells(task: str, label: str) -> Arm:
        return arm(table[(table["task"] == task) & (table["label"] == label)], set_aside=aside.get((task, label), ""))

    tasks = sorted(set(table.loc[table["label"] == "full", "task"]))
    sized = [t for t in tasks if {"houlsby-8", "houlsby-256"} <= set(table.loc[table["task"] == t, "label"])]
    return [
        verdict_of(
            PARITY, [contrast(t, cells(t, best[t]), cells(t, "full"), metric=metric[t]) for t in tasks if t in best]
        ),
        verdict_of(PARITY_64, [contrast(t, cells(t, "houlsby-64"), cells(t, "full"), metric=metric[t]) for t in tasks]),
        verdict_of(TOP_K, _top_k_units(runs, aside)),
        verdict_of(
            SIZE, [contrast(t, cells(t, "houlsby-8"), cells(t, "houlsby-256"), metric=metric[t]) for t in sized]
        ),
        *_ablation_verdicts(runs, aside),
        *_init_verdicts(runs),
        verdict_of(LAYERNORM_POOR, _layernorm_units(runs, aside, metric)),
        verdict_of(VARIANTS_SIMILAR, _variant_units(runs, aside, metric)),
    ]


def _layernorm_units(runs: pd.DataFrame, aside: dict, metric: dict[str, str]) -> list[Unit]:
    """Per task: full fine-tuning − layer norm only, each at its chosen rate over the reported seeds."""
    frame = reported_at_chosen_rates(runs, labels=None)

    def cells(task: str, label: str) -> Arm:
        return arm(frame[(frame["task"] == task) & (frame["label"] == label)], set_aside=aside.get((task, label), ""))

    tasks = sorted(
        set(frame.loc[frame["label"] == "layernorm", "task"]) & set(frame.loc[frame["label"] == "full", "task"])
    )
    return [contrast(t, cells(t, "full"), cells(t, "layernorm"), metric=metric[t]) for t in tasks]


def _variant_units(runs: pd.DataFrame, aside: dict, metric: dict[str, str]) -> dict[str, list[Unit]]:
    """Per architecture variant and task: the variant − the plain size-64 adapter of the same rate, over the seeds
    both report."""
    runs = reported(at_ablation_rates(runs))
    variant = config_column(runs, "adapter_variant")
    variants = runs[variant.notna()].assign(variant=variant[variant.notna()])
    plain = runs[runs["plain"]]
    out: dict[str, list[Unit]] = {}
    for (name, task), group in variants.groupby(["variant", "task"]):
        base = plain[(plain["task"] == task) & plain["seed"].isin(group["seed"])]
        base = base[base["config.learning_rate"].isin(group["config.learning_rate"])]
        why = aside.get((task, "houlsby-64"), "")
        out.setdefault(f"vs {name}", []).append(
            contrast(task, arm(group, set_aside=why), arm(base, set_aside=why), metric=metric[task])
        )
    return out


def claims(runs: pd.DataFrame) -> pd.DataFrame:
    """The chapter's verdict table."""
    return verdict_table(verdicts(runs), finished_times(runs))


def course_reproduction(runs: pd.DataFrame) -> pd.DataFrame:
    """The independent course reproduction (BERT-base, adapters of size 64 only, 15 epochs, rate 2e-5; dev accuracy)
    beside ours in the same metric on its tasks: full fine-tuning, adapters of size 64 (the course's size) and
    adapters − full, ours with its 95% interval over the reported seeds."""
    course = published_frame(HOULSBY_COURSE).pivot(index="task", columns="method", values="value")
    table = reported_at_chosen_rates(flag_runs(runs))
    rows = []
    for task, published in course.iterrows():
        full = table[(table["task"] == task) & (table["label"] == "full")]
        adapters = table[(table["task"] == task) & (table["label"] == COURSE_SIZE)]
        ours = {"ours: full": "–", "ours: adapters (64)": "–", "ours: adapters − full [95% CI]": "–"}
        if not full.empty and not adapters.empty:
            a, b = (arm(x, score="metric.accuracy") for x in (adapters, full))
            ours = {
                "ours: full": format_mean_sd(b.scores.mean(), b.scores.std(ddof=1), len(b.scores)),
                "ours: adapters (64)": format_mean_sd(a.scores.mean(), a.scores.std(ddof=1), len(a.scores)),
                "ours: adapters − full [95% CI]": judge(
                    [contrast(task, a, b, metric="accuracy")], PARITY_64.rule
                ).interval(),
            }
        rows.append(
            {
                "task": task,
                "course: full": f"{published['full']:.2f}",
                "course: adapters (64)": f"{published['houlsby']:.2f}",
                "course: adapters − full": f"{published['houlsby'] - published['full']:+.2f}",
                **ours,
            }
        )
    return pd.DataFrame(rows)


def set_aside(runs: pd.DataFrame) -> dict[tuple[str, str], str]:
    """Per (task, label) whose selection-seed run at its chosen rate learned nothing on the selection split: the
    evidence (the one ground on which a claim sets a task aside)."""
    chosen = at_chosen_rates(runs, labels=None)
    return selection_failures(chosen[chosen["seed"] == SELECTION_SEED], ["task", "label"])


def _top_k_units(runs: pd.DataFrame, aside: dict[tuple[str, str], str]) -> list[Unit]:
    """Per task and k: the largest adapter within top-k's trained parameters against top-k, each at its chosen
    rate, over the reported seeds."""
    frame = tradeoff_frame(runs)
    units = []
    for task, group in frame.groupby("task"):
        params = group.groupby("label")["trainable_params"].first()
        adapters = params[params.index.str.startswith("houlsby-")]
        for label in sorted(params.index[params.index.str.startswith("top_k-")]):
            cheaper = adapters[adapters <= params[label]]
            if cheaper.empty:
                continue
            a = cheaper.idxmax()
            units.append(
                contrast(
                    f"{task} {label} vs {a}",
                    arm(group[group["label"] == a], set_aside=aside.get((task, a), "")),
                    arm(group[group["label"] == label], set_aside=aside.get((task, label), "")),
                )
            )
    return units


def _ablation_verdicts(runs: pd.DataFrame, aside: dict[tuple[str, str], str]) -> list[Verdict]:
    """The layer ablation on the reported size-64 runs at their chosen rate and epochs (`layer_ablation`); `runs`
    come flagged by `verdicts`."""
    one, everything, lower = ablation_units(runs, ablations_by_task(runs), aside)
    return [verdict_of(ONE_LAYER, one), verdict_of(ALL_LAYERS, everything), verdict_of(LOWER_LAYERS, lower)]


def _init_verdicts(runs: pd.DataFrame) -> list[Verdict]:
    """The initialisation scale, per task: std 1e-2 against the smallest, the smallest against the largest."""
    init = init_frame(runs)  # runs come flagged by `verdicts`
    stable, degrades = [], []
    for task, group in init.groupby("task"):
        stds = sorted(group["init_std"].unique())
        if len(stds) < 3:
            continue
        shown = reported(group)
        at = {s: arm(shown[np.isclose(shown["init_std"], s)]) for s in stds}
        if any(np.isclose(stds, 1e-2)):
            stable.append(contrast(task, at[stds[int(np.argmin(np.abs(np.log10(stds) + 2)))]], at[stds[0]]))
        degrades.append(contrast(task, at[stds[0]], at[stds[-1]]))
    return [verdict_of(INIT_STABLE, stable), verdict_of(INIT_DEGRADES, degrades)]
