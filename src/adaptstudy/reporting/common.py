"""What every chapter of the book shares: its runs (`load_runs`), the seed learning rates are chosen on, mean ± sd,
claim rows with a plain verdict, and the foundation chapter's comparison with the published numbers.

Every chapter module takes the frame of `load_runs`, labelled by its own `label_runs(runs) -> DataFrame`.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from adaptstudy.reporting.evidence import Arm, Rule, contrast, judge
from adaptstudy.reporting.published import published_frame
from adaptstudy.runs.records import flatten, read_records

SELECTION_SEED = 0  # learning rates (and Houlsby's best adapter size) are chosen on this seed's runs


def reported(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs a table or verdict may rest on: every seed but the one that chose the settings."""
    return runs[runs["seed"] != SELECTION_SEED]


def load_runs(folder: str | os.PathLike, status: str | None = "ok") -> pd.DataFrame:
    """A study's runs: the flat columns of `records_frame`, plus `record`, each run's whole record, for the nested
    fields a chapter reads (history, fusion attention, the pretraining chain, per-task scores)."""
    records = read_records(folder, status)
    return flatten(records).assign(record=pd.Series(records, dtype=object))


def config_column(runs: pd.DataFrame, name: str, default=np.nan) -> pd.Series:
    """The setting `name` of each run, `default` where no record has it (a frame has a column only for settings
    that some record of it carries)."""
    column = f"config.{name}"
    return runs[column] if column in runs else pd.Series(default, index=runs.index)


def choice_score(grid: pd.DataFrame) -> str:
    """The column settings are chosen on: the selection split's main metric where every run of the grid scored
    one (`selection_split`), else the reported split's (runs made before the protocol; the chapter says so)."""
    column = "selection_metric_value"
    return column if column in grid and not grid.empty and grid[column].notna().all() else "main_metric_value"


def chosen_on(grid: pd.DataFrame) -> str:
    """Which split chose, in the words a chapter prints beside its choices."""
    if choice_score(grid) == "selection_metric_value":
        return "the selection split carved from training (10%, at most 1,000 examples)"
    return "the reported split itself (these runs predate the selection split): the choosing seed never reports"


def choose_learning_rates(grid: pd.DataFrame, keys: list[str], score: str | None = None) -> pd.DataFrame:
    """Per group of `keys`: the learning rate (and, where the group tried several, the number of epochs: the paper
    chose both) with the best `score` (default `choice_score`) among `grid` (runs of the selection seed), with every
    setting tried and its score, so a chapter can show the choice, and whether the rate sits at an edge of the rates
    tried at the chosen epochs. An exact tie goes to the larger rate (the selection split cannot tell them apart;
    the larger goes further in the same updates), then to fewer epochs, not to whichever record loaded first."""
    score = score or choice_score(grid)
    columns = [*keys, "learning_rate", "epochs", "epochs chosen", "grid", "choice score", "edge"]
    if grid.empty:
        return pd.DataFrame(columns=columns)
    grid = grid.assign(_epochs=config_column(grid, "num_train_epochs", np.nan).astype(float))
    rows = []
    for values, group in grid.groupby(keys, sort=False):
        ordered = group.sort_values(["config.learning_rate", "_epochs"], ascending=[False, True], kind="stable")
        best = ordered.loc[ordered[score].idxmax()]
        several = group["_epochs"].nunique() > 1
        tried = sorted(zip(group["config.learning_rate"], group["_epochs"], group[score]))
        rates = ", ".join(f"{lr:g}{f' × {ep:g} ep' if several else ''}: {v:.1f}" for lr, ep, v in tried)
        same_epochs = group[group["_epochs"] == best["_epochs"]] if several else group
        rows.append(
            {
                **dict(zip(keys, values)),
                "learning_rate": best["config.learning_rate"],
                "epochs": best["_epochs"],
                "epochs chosen": several,
                "grid": rates,
                "choice score": best[score],
                "edge": grid_edge(best["config.learning_rate"], same_epochs["config.learning_rate"]),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def grid_edge(rate: float, tried: pd.Series) -> str:
    """'largest' or 'smallest' where `rate` is an end of the two or more rates `tried`, else '': a choice at the
    edge of its grid may have its optimum beyond it."""
    if tried.nunique() < 2:
        return ""
    if np.isclose(rate, tried.max()):
        return "largest"
    return "smallest" if np.isclose(rate, tried.min()) else ""


def at_learning_rates(runs: pd.DataFrame, chosen: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The runs made at the rate (and epochs, where chosen) chosen for their group of `keys` (groups without a
    choice are dropped)."""
    chosen = (
        chosen.assign(_chosen_epochs=chosen["epochs"].where(chosen["epochs chosen"])) if "epochs" in chosen else chosen
    )
    merged = runs.merge(
        chosen[[*keys, "learning_rate", *(["_chosen_epochs"] if "_chosen_epochs" in chosen else [])]], on=keys
    )
    keep = np.isclose(merged["config.learning_rate"].astype(float), merged["learning_rate"].astype(float))
    if "_chosen_epochs" in merged:
        epochs = config_column(merged, "num_train_epochs", np.nan).astype(float)
        wanted = merged["_chosen_epochs"].astype(float)
        keep &= wanted.isna() | np.isclose(epochs, wanted)
    return merged[keep].drop(columns=["_chosen_epochs"], errors="ignore")


def method_label(method: str, adapter_size) -> str:
    """`houlsby-64` for adapter methods, the method's name otherwise (as the published table names them)."""
    return f"{method}-{int(adapter_size)}" if pd.notna(adapter_size) else method


def aggregate_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, method, backbone): mean and std of the main metric over seeds, costs, run count."""
    if runs.empty:
        return pd.DataFrame(
            columns=["task", "method", "backbone", "metric", "ours_mean", "ours_std", "runs", "train_examples"]
        )
    runs = runs.assign(method=[method_label(m, a) for m, a in zip(runs["method"], runs["config.adapter_size"])])
    runs = runs.assign(trainable_pct=100 * runs["trainable_params"] / runs["total_params"])
    grouped = runs.groupby(["task", "method", "backbone", "main_metric"], as_index=False)
    out = grouped.agg(
        ours_mean=("main_metric_value", "mean"),
        ours_std=("main_metric_value", "std"),
        runs=("run_id", "count"),
        train_examples=("train_examples", "max"),
        epochs=("config.num_train_epochs", "max"),
        learning_rate=("config.learning_rate", "first"),
        trainable_pct=("trainable_pct", "mean"),
        train_runtime_s=("train_runtime_s", "mean"),
        train_examples_per_s=("train_examples_per_s", "mean"),
        peak_rss_mb=("peak_rss_mb", "max"),
    )
    return out.rename(columns={"main_metric": "metric"})


def compare_with_published(runs: pd.DataFrame, paper: str, tasks=None, methods=None) -> pd.DataFrame:
    """Our aggregated runs joined with a paper's numbers on (task, method, metric).

    Published cells we have no run for are kept (ours empty), so the table shows what is missing;
    `tasks`/`methods` limit the published side to a chapter's scope.
    """
    ours = aggregate_runs(runs)
    theirs = published_frame(paper)[["task", "method", "metric", "value", "backbone", "split", "source"]]
    if tasks is not None:
        theirs = theirs[theirs["task"].isin(tasks)]
    if methods is not None:
        theirs = theirs[theirs["method"].isin(methods)]
    theirs = theirs.rename(columns={"value": "published", "backbone": "published_backbone", "split": "published_split"})
    table = theirs.merge(ours, on=["task", "method", "metric"], how="outer")
    table["difference"] = table["ours_mean"] - table["published"]
    return table.sort_values(["task", "method"]).reset_index(drop=True)


COST_COLUMNS = ["train_examples", "epochs", "train_runtime_s", "train_examples_per_s", "trainable_pct", "peak_rss_mb"]


def scale_note(runs: pd.DataFrame, scored_on: str = "the dev set") -> str:
    """One sentence saying at which scale the runs in a table were made."""
    if runs.empty:
        return "**No committed records yet** for this table: only the published numbers are shown."
    backbones = ", ".join(sorted(runs["backbone"].unique()))
    # a cell is a configuration up to its seed
    setting = [
        c
        for c in runs.columns
        if c.startswith("config.") and c not in ("config.seed", "config.data_dir", "config.results_dir")
    ]
    seeds = runs.groupby(setting, dropna=False)["seed"].nunique()
    steps = runs["config.max_steps"].dropna() if "config.max_steps" in runs else pd.Series(dtype=float)
    updates = f" (or {span(steps)} updates)" if not steps.empty else ""
    devices = ", ".join(sorted(runs["device"].unique()))
    if "precision_used" in runs:
        devices += " in " + ", ".join(sorted(runs["precision_used"].fillna("fp32").unique()))
    return (
        f"Ours: {len(runs)} runs on {backbones}, {span(seeds)} seed(s) per cell, "
        f"{span(runs['config.num_train_epochs'])} epochs{updates}, "
        f"max_seq_length {runs['config.max_seq_length'].max()}, on {devices}; metrics on {scored_on}."
    )


def method_descriptions(runs: pd.DataFrame, methods) -> pd.DataFrame:
    """What each of `methods` trains, as its runs' records say (`method_description`, the methods registry's words
    when the run was made): the configs a chapter must state."""
    said = {}
    for method, record in zip(runs["method"], runs["record"]):
        said.setdefault(method, record.get("method_description"))
    missing = [m for m in methods if not said.get(m)]
    if missing:
        raise ValueError(f"no record of {missing} says what the method trains (`method_description`)")
    return pd.DataFrame([(m, said[m]) for m in methods], columns=["method", "what trains"])


def sample_sd(values) -> float:
    """The sd over seeds every chapter reports: the sample sd (n − 1), 0 for a single value."""
    values = list(values)
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def mean_sd(values) -> str:
    """'61.0 ± 1.4 (2)': mean ± sample sd (0 for one value) and how many values; '–' for none."""
    values = list(values)
    return format_mean_sd(np.mean(values), sample_sd(values), len(values)) if values else "–"


def format_mean_sd(mean: float, sd: float, count: int) -> str:
    """`mean_sd`'s cell from figures already aggregated: '84.4 ± 0.4 (5)'; one value shows no spread: '54.5 (1)'."""
    if count < 2:
        return f"{mean:.1f} ({count})"
    return f"{mean:.1f} ± {sd:.1f} ({count})"


def span(values: pd.Series) -> str:
    """'3' when every value is 3, '1–3' when they range (for notes on the scale of a table)."""
    low, high = values.min(), values.max()
    return f"{low:g}" if low == high else f"{low:g}–{high:g}"


def display_table(table: pd.DataFrame):
    """The comparison table rounded for reading (a pandas Styler, rendered in the book)."""
    shown = table.rename(columns={"ours_mean": "ours", "ours_std": "ours sd"})
    cols = ["task", "method", "metric", "published", "ours", "ours sd", "runs", "difference", *COST_COLUMNS]
    cols = [c for c in cols if c in shown.columns]
    return (
        shown[cols]
        .style.format(precision=1, na_rep="–")
        .format(
            {"train_examples_per_s": "{:.1f}", "trainable_pct": "{:.2f}", "peak_rss_mb": "{:.0f}", "runs": "{:.0f}"},
            na_rep="–",
        )
        .hide(axis="index")
    )


def plot_comparison(table: pd.DataFrame):
    """Ours (dev) beside published (as the paper reports) per task and method."""
    long = table.melt(
        id_vars=["task", "method"], value_vars=["ours_mean", "published"], var_name="source", value_name="score"
    ).replace({"source": {"ours_mean": "ours", "published": "published"}})
    long["bar"] = long["method"] + " (" + long["source"] + ")"
    ax = sns.barplot(data=long.dropna(subset=["score"]), x="task", y="score", hue="bar")
    ax.set_ylabel("main metric (points)")
    ax.legend(title=None, loc="lower right", fontsize="small")
    plt.tight_layout()
    return ax


def adapter_gap(table: pd.DataFrame, runs: pd.DataFrame, adapter: str = "houlsby-64", margin: float = 1.0):
    """Per task: adapters minus full fine-tuning, ours and published, judged by Houlsby et al.'s claim that adapters
    come within a point or so of full fine-tuning (`margin`: holds if the 95% CI of ours lies above −margin)."""
    rule = Rule("above", -margin)
    labels = [method_label(m, a) for m, a in zip(runs["method"], config_column(runs, "adapter_size"))]
    scores = runs.assign(label=labels)
    rows = []
    for task, group in table.groupby("task"):
        by_method = group.set_index("method")
        if not {"full", adapter} <= set(by_method.index):
            continue
        here = scores[scores["task"] == task]
        a, b = (Arm(here.loc[here["label"] == x, "main_metric_value"].tolist()) for x in (adapter, "full"))
        judged = judge([contrast(task, a, b)], rule)
        rows.append(
            {
                "task": task,
                "metric": by_method.loc["full", "metric"],
                "ours: adapters − full [95% CI]": judged.interval(),
                "published: adapters − full": by_method.loc[adapter, "published"] - by_method.loc["full", "published"],
                "seeds": judged.seeds,
                "verdict": judged.verdict,
                "why": judged.why or str(rule),
            }
        )
    return pd.DataFrame(rows)
