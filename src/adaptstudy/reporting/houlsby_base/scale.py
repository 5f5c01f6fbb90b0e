"""The scale axis: size-64 adapters − full fine-tuning against backbone size, per task and on the mean over the five
GLUE tasks, under one protocol at every size (3 epochs, the same two rate grids chosen on the selection seed, no edge
extension): `minilm-l3` and `mpnet-base` from this study's runs, `minilm-l6` from the chapter's own runs made the
same way. The published gaps sit at their own backbones' sizes: the paper's on BERT-large (GLUE test, Table 1) and
the course reproduction's on BERT-base (dev accuracy, MRPC and CoLA only)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from adaptstudy.claims.baselines import flag_runs
from adaptstudy.claims.evidence import judge
from adaptstudy.claims.verdicts import verdict_of
from adaptstudy.reporting.common import config_column
from adaptstudy.reporting.houlsby_base.claims import DECLARED, parity_units
from adaptstudy.reporting.houlsby_base.tables import label_runs
from adaptstudy.reporting.published import HOULSBY_2019, HOULSBY_COURSE, published_frame

GRIDS = {"full": (2e-5, 5e-5, 1e-4), "houlsby-64": (3e-4, 1e-3, 3e-3)}  # every size's (houlsby_base_select.yaml)
TASKS = ("cola", "mrpc", "rte", "sst2", "stsb")
MEAN = "mean"
PUBLISHED_SIZES = {"BERT-large": 335.0, "BERT-base": 110.0}  # millions of parameters


def as_other_backbones(runs: pd.DataFrame) -> pd.DataFrame:
    """The chapter's own `minilm-l6` runs made as the other backbones' are: full fine-tuning or plain size-64
    adapters, 3 epochs, rates from the same two grids (the chapter's edge extensions and 20-epoch runs left out),
    labelled as this study labels its runs."""
    if runs.empty:
        return label_runs(runs)
    labelled = label_runs(runs)
    plain = np.ones(len(labelled), dtype=bool)
    for name in ("adapter_variant", "adapter_init_std", "top_k_layers"):
        plain &= config_column(labelled, name, None).isna().to_numpy()
    rates = config_column(labelled, "learning_rate").to_numpy()
    in_grid = [any(np.isclose(r, g) for g in GRIDS.get(label, ())) for r, label in zip(rates, labelled["label"])]
    epochs = config_column(labelled, "num_train_epochs").to_numpy() == 3
    return labelled[plain & epochs & np.array(in_grid, dtype=bool)]


def scale_points(runs: pd.DataFrame, small: pd.DataFrame) -> pd.DataFrame:
    """One row per backbone and task, then the mean the five-task claim's rule takes (its regime: a task set aside
    on selection-stage evidence is left out of the mean, and named): our effect with its 95% interval and seeds, the
    backbone's parameters (millions, without head or adapters, from the records); then the published gaps. `runs`
    are this study's (labelled), `small` the chapter's own `minilm-l6` runs."""
    rows = []
    for backbone, frame in (("minilm-l3", runs), ("minilm-l6", as_other_backbones(small)), ("mpnet-base", runs)):
        mine = frame[frame["backbone"] == backbone] if not frame.empty else frame
        units = parity_units(flag_runs(mine), backbone) if not mine.empty else []
        if not units:
            continue
        claim = DECLARED["parity-64-l3" if backbone == "minilm-l3" else "parity-64-glue"]
        verdict = verdict_of(claim, units)
        size = float(mine["record"].map(lambda r: r["backbone_params"]).median()) / 1e6
        used = verdict.used_units()
        used_note = f"over {', '.join(used)}"
        judged = [(u.name, judge([u], claim.rule), u.name not in used) for u in units]
        if verdict.verdict != "not testable":
            judged.append((MEAN, verdict.judgements[0], False))
        for task, j, aside in judged:
            rows.append(
                {
                    "source": "ours",
                    "backbone": backbone,
                    "params (M)": round(size, 1),
                    "task": task,
                    "effect": j.effect,
                    "low": j.low,
                    "high": j.high,
                    "seeds": j.seeds,
                    "interval": j.interval(),
                    "note": "set aside on selection-stage evidence" if aside else (used_note if task == MEAN else ""),
                }
            )
    return pd.DataFrame([*rows, *_published()])


def _published() -> list[dict]:
    """The paper's Table 1 gaps (size 64 − full, BERT-large, GLUE test) on our five tasks and their mean, and the
    course's (adapters − full, BERT-base, dev accuracy)."""
    table = published_frame(HOULSBY_2019, "Table 1").pivot(index="task", columns="method", values="value")
    gaps = {t: table.loc[t, "houlsby-64"] - table.loc[t, "full"] for t in TASKS}
    course = published_frame(HOULSBY_COURSE).pivot(index="task", columns="method", values="value")
    rows = [
        {"source": "paper (BERT-large, GLUE test)", "backbone": "BERT-large", "task": task, "effect": gap}
        for task, gap in [*gaps.items(), (MEAN, float(np.mean(list(gaps.values()))))]
    ]
    rows += [
        {
            "source": "course (BERT-base, dev accuracy)",
            "backbone": "BERT-base",
            "task": task,
            "effect": course.loc[task, "houlsby"] - course.loc[task, "full"],
        }
        for task in course.index
    ]
    for row in rows:
        row["params (M)"] = PUBLISHED_SIZES[row["backbone"]]
    return rows


def plot_scale(points: pd.DataFrame):
    """Per task and on the mean: each source's effect against backbone size (log scale), ours with its 95%
    interval; the dashed line is the claims' margin, one point below parity."""
    if points.empty or not (points["source"] == "ours").any():
        return None
    panels = [t for t in (*TASKS, MEAN) if t in set(points.loc[points["source"] == "ours", "task"])]
    grid = sns.FacetGrid(points[points["task"].isin(panels)], col="task", col_order=panels, col_wrap=3, height=2.6)
    style = {
        "paper (BERT-large, GLUE test)": {"marker": "s", "color": "tab:red"},
        "course (BERT-base, dev accuracy)": {"marker": "D", "facecolors": "none", "edgecolors": "tab:green"},
    }
    for ax, task in zip(grid.axes.flat, panels):
        for source, frame in points[points["task"] == task].groupby("source", sort=False):
            frame = frame.sort_values("params (M)")
            if source == "ours":
                ax.errorbar(
                    frame["params (M)"],
                    frame["effect"],
                    yerr=[frame["effect"] - frame["low"], frame["high"] - frame["effect"]],
                    fmt="o-",
                    color="tab:blue",
                    capsize=3,
                    label="ours (95% interval)",
                )
            else:
                ax.scatter(frame["params (M)"], frame["effect"], s=36, label=source, zorder=3, **style[source])
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.axhline(-1, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_xticks([20, 50, 100, 300], labels=["20", "50", "100", "300"])
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_title(task)
    grid.set_axis_labels("parameters (millions)", "adapters − full (points)")
    handles, labels = grid.axes.flat[0].get_legend_handles_labels()
    grid.figure.legend(handles, labels, loc="lower center", ncol=3, bbox_to_anchor=(0.5, -0.06), frameon=False)
    plt.tight_layout()
    return grid


def scale_table(points: pd.DataFrame) -> pd.DataFrame:
    """The figure's numbers: per task (rows), ours on each backbone with its 95% interval and seeds, then the
    published gaps."""
    if points.empty or not (points["source"] == "ours").any():
        return pd.DataFrame()
    ours = points[points["source"] == "ours"]
    cells = ours.assign(
        column=ours["backbone"] + " (" + ours["params (M)"].map("{:.0f}M".format) + ")",
        cell=ours["interval"]
        + ", "
        + ours["seeds"].map("{:.0f} seeds".format)
        + ours["note"].map(lambda n: f"; {n}" if n else ""),
    )
    table = cells.pivot(index="task", columns="column", values="cell")
    for source, frame in points[points["source"] != "ours"].groupby("source", sort=False):
        table[source] = frame.set_index("task")["effect"].map("{:+.1f}".format)
    order = [t for t in (*TASKS, MEAN) if t in table.index]
    return table.loc[order].fillna("–").reset_index()
