"""The scorecard at the front of the book: every declared claim of every paper with its verdict, our effect and 95%
interval, what the verdict rests on and what it left out, whether it is exploratory or confirmatory, its amendments
with the verdict under each design, the smallest effect its design detects, whether the paper's figure lies in our
interval, the runs and their CPU-hours, and a forest plot of them all."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from adaptstudy.claims.catalog import CLAIMS
from adaptstudy.claims.freeze import confirmatory_since
from adaptstudy.claims.verdicts import Verdict
from adaptstudy.claims.what_it_takes import plainly, what_it_takes
from adaptstudy.reporting.chapters import load_chapters
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.costs import machine_label
from adaptstudy.reporting.findings import declared
from adaptstudy.reporting.power_plan import every_plan, why_unconfirmed
from adaptstudy.reporting.verdict_tables import rule_text
from adaptstudy.runs.records import made_at, paid_evaluation, paid_seconds

CHAPTERS = [c for c in load_chapters() if c.study]  # every chapter that judges runs, in the book's order
PAGES = {c.name: c.page for c in CHAPTERS}  # chapter (a claim key's first part) -> the book page that judges it
COLUMNS = [
    "claim",
    "verdict",
    "ours: effect [95% CI]",
    "rules out",
    "interval",
    "rule",
    "rests on",
    "declared",
    "status",
    "on fresh seeds alone",
    "verdict by design",
    "detectable",
    "to decide it",
    "paper reports",
    "paper's figure in our CI",
    "runs",
    "CPU-hours",
    "chapter",
]
UNJUDGED = "no chapter judged it"
COLOURS = {"holds": "#1b7837", "does not hold": "#c51b7d", "inconclusive": "#8c8c8c", "not testable": "#d9a400"}


def chapter_runs(root: str | os.PathLike) -> dict[str, pd.DataFrame]:
    """Per chapter that judges runs: its committed records under `root` (results/), read and labelled once for the
    verdicts and the confirmatory re-judging alike."""
    return {chapter.name: chapter.label_runs(load_runs(Path(root) / chapter.study)) for chapter in CHAPTERS}


def chapter_verdicts(runs: dict[str, pd.DataFrame]) -> tuple[list[Verdict], pd.DataFrame]:
    """Every chapter's verdicts on its runs (`chapter_runs`), and the runs they read (run_id, finished_at and
    seconds), for the costs and for what is exploratory."""
    verdicts, frames = [], []
    for chapter in CHAPTERS:
        mine = runs[chapter.name]
        verdicts += chapter.verdicts(mine)
        if not mine.empty:
            frames.append(
                mine[["run_id"]].assign(
                    finished_at=made_at(mine),  # when each run was first made: a rerun of a seed is not fresh
                    train_runtime_s=paid_seconds(mine, "train_runtime_s"),
                    eval_runtime_s=paid_evaluation(mine),
                    machine=mine["record"].map(machine_label),
                )
            )
    return verdicts, pd.concat(frames)


def confirmatory(runs: dict[str, pd.DataFrame], verdicts: list[Verdict]) -> dict[str, Verdict]:
    """Each claim's verdict on the reported runs made after its design was last set, alone (fresh seeds: a
    confirmatory verdict), for the claims some such run exists for (`fresh_seeds.fresh_verdicts`)."""
    out: dict[str, Verdict] = {}
    for chapter in CHAPTERS:
        mine = runs[chapter.name]
        if mine.empty:
            continue
        judged = [v for v in verdicts if v.run_ids & set(mine["run_id"])]
        out |= {v.claim.key: v for v in chapter.fresh_verdicts(mine, judged)}
    return out


def status(v: Verdict, finished: pd.Series) -> str:
    """Exploratory or confirmatory, computed: confirmatory when every run the verdict rests on finished after the
    claim's freeze (or an amendment that followed it), else exploratory, with how many runs predate it."""
    since = confirmatory_since(v.claim.declared)
    ids = sorted(v.run_ids)
    if not ids:
        return "–"
    if since is None:
        return f"exploratory: not frozen for confirmation ({len(ids)} runs)"
    times = pd.to_datetime(finished.reindex(ids), utc=True, format="ISO8601")
    older = int((times < pd.Timestamp(since)).sum())
    if older:
        return f"exploratory: {older} of {len(ids)} runs predate its freeze of {since:%Y-%m-%d}"
    return f"confirmatory: all {len(ids)} runs after its freeze of {since:%Y-%m-%d}"


def by_design(v: Verdict) -> str:
    """The verdict under each design the claim's ledger names, oldest first: 'declared 2026-11-25: not testable →
    amended 2026-12-03: inconclusive'."""
    return " → ".join(f"{when}: {verdict}" for when, verdict in v.history())


def scorecard(
    verdicts: list[Verdict], seconds: pd.DataFrame, confirmed: dict[str, Verdict] | None = None
) -> pd.DataFrame:
    """One row per declared claim (a claim no chapter judged reads 'not testable', no runs): the verdict and the
    interval, what it rests on and left out (every verdict, not only the untestable), exploratory or confirmatory,
    the verdict under each design of its ledger, the smallest effect it could detect (80% power), whether the
    paper's figure in our units lies in our interval, and the runs' CPU-hours; with `confirmed` (`confirmatory`), the
    verdict and interval on fresh seeds alone."""
    finished = seconds.drop_duplicates("run_id").set_index("run_id")["finished_at"]
    hours, machines = claim_hours(verdicts, seconds), claim_machines(verdicts, seconds)
    plan = every_plan()
    judged = {v.claim.key: v for v in verdicts}
    order = {c: i for i, c in enumerate(PAGES)}
    keys = sorted([*judged, *(k for k in CLAIMS if k not in judged)], key=lambda k: order[CLAIMS.get(k).chapter])
    rows = []
    for key in keys:
        claim, v = CLAIMS.get(key), judged.get(key)
        page = PAGES[claim.chapter]
        ids = sorted(v.run_ids) if v else []
        why = plainly(v.reasons()) if v else UNJUDGED
        rows.append(
            {
                "claim": f"{claim.paper}: {claim.sentence} ({claim.where})",
                "verdict": v.verdict if v else "not testable",
                "ours: effect [95% CI]": v.effects() if v else "–",
                "rules out": v.rules_out() if v else "–",
                "interval": v.interval_basis() if v else "–",
                "rule": rule_text(claim),
                "rests on": "; ".join(filter(None, [f"not testable: {why}" if why else "", v.rests_on() if v else ""])),
                "declared": declared(v, finished) if v else "–",
                "status": status(v, finished) if v else "–",
                "on fresh seeds alone": _fresh(key, (confirmed or {}).get(key), plan),
                "verdict by design": by_design(v) if v else "–",
                "detectable": v.detectable() if v else np.nan,
                "to decide it": (what_it_takes(v, hours.get(key), machines.get(key)) if v else "") or "–",
                "paper reports": claim.published,
                "paper's figure in our CI": v.published_inside() if v else "–",
                "runs": len(ids),
                "CPU-hours": hours.get(key, 0.0),
                "chapter": f'<a href="{page}.html">{page.removeprefix("06_analysis_")}</a>',
                "paper": claim.paper,
                "effect": v.judgements[0].effect
                if v and v.judgements
                else np.nan,  # to sort by: the first comparison's
            }
        )
    return pd.DataFrame(rows, columns=[*COLUMNS, "paper", "effect"])


def run_seconds(seconds: pd.DataFrame) -> pd.Series:
    """Each run's training and evaluation seconds, by run id (`chapter_verdicts`' second value)."""
    per_run = seconds.drop_duplicates("run_id").set_index("run_id")
    return per_run["train_runtime_s"].fillna(0) + per_run["eval_runtime_s"].fillna(0)


def claim_machines(verdicts: list[Verdict], seconds: pd.DataFrame) -> dict[str, str]:
    """The machine kinds (precision and CPU kernels) the runs behind each claim's verdict trained on, most runs
    first ('bf16 on AVX512; fp32 on AVX2'): what 'at its runs' pace' was measured on."""
    if "machine" not in seconds:
        return {}
    kinds = seconds.drop_duplicates("run_id").set_index("run_id")["machine"]
    out = {}
    for v in verdicts:
        counts = kinds.reindex(sorted(v.run_ids)).dropna().value_counts()
        out[v.claim.key] = "; ".join(counts.index)
    return out


def claim_hours(verdicts: list[Verdict], seconds: pd.DataFrame) -> dict[str, float]:
    """The CPU-hours of the reported runs behind each claim's verdict, by claim."""
    total = run_seconds(seconds)
    return {v.claim.key: total.reindex(sorted(v.run_ids)).fillna(0).sum() / 3600 for v in verdicts}


def headline(card: pd.DataFrame, confirmed: dict[str, Verdict]) -> str:
    """The scorecard's first line: how many claims, their verdicts counted twice — on every reported seed
    (exploratory) and on fresh seeds alone (confirmatory), with how many have no fresh-seed verdict yet — and how
    many were declared after some of their runs existed (post hoc)."""
    everything = ", ".join(f"{n} {v}" for v, n in card["verdict"].value_counts().items())
    fresh = pd.Series([v.verdict for v in confirmed.values()], dtype=object).value_counts()
    alone = ", ".join(f"{n} {v}" for v, n in fresh.items()) or "none"
    return (
        f"**{len(card)} claims** from {card['paper'].nunique()} papers and reports. On every reported seed "
        f"(*exploratory*): {everything}. On fresh seeds alone (*confirmatory*): {alone}; "
        f"{len(card) - len(confirmed)} have no fresh-seed verdict yet. Declared after some of their runs existed "
        f"(*post hoc*): {int(card['declared'].str.startswith('post hoc').sum())}."
    )


def _fresh(key: str, v: Verdict | None, plan: dict[str, dict]) -> str:
    """A confirmatory verdict with its interval and seeds, or why there is none (the power plan's reason and cost)."""
    if v is None:
        return why_unconfirmed(key, plan)
    seeds = min((j.seeds for j in v.judgements), default=0)
    return f"{v.verdict}: {v.effects()} ({seeds} seeds)"


def verdict_counts(card: pd.DataFrame) -> pd.DataFrame:
    """How many claims of each paper got each verdict."""
    return card.groupby(["paper", "verdict"]).size().unstack(fill_value=0).reset_index()


def untestable_reasons(verdicts: list[Verdict]) -> pd.DataFrame:
    """How many claims each reason keeps from a verdict (a claim can have several), most common first; claims that
    no chapter judged count under their own reason."""
    judged = {v.claim.key for v in verdicts}
    untestable = [v for v in verdicts if v.verdict == "not testable"]
    kinds = [plainly(k) for v in untestable for k in v.reason_kinds()] + [UNJUDGED for k in CLAIMS if k not in judged]
    counts = pd.Series(kinds, dtype=object).value_counts()
    return pd.DataFrame({"reason": counts.index, "claims": counts.to_numpy()})


def forest_rows(verdicts: list[Verdict]) -> pd.DataFrame:
    """One row per claim and comparison: the effect and its interval, its unit (points, seconds, MB), the rule's
    threshold (a band for a margin), the paper's figure in our units where the design gives one, and the verdict."""
    rows = []
    for v in verdicts:
        for name, j in zip(v.names, v.judgements):
            rows.append(
                {
                    "row": f"{v.claim.key}{f' ({name})' if name else ''}",
                    "unit": effect_unit(v, name),
                    "effect": j.effect,
                    "low": j.low,
                    "high": j.high,
                    "kind": v.claim.rule.kind,
                    "threshold": v.claim.rule.threshold,
                    "published": v.design.published_effect,
                    "verdict": v.verdict,
                }
            )
    columns = ["row", "unit", "effect", "low", "high", "kind", "threshold", "published", "verdict"]
    return pd.DataFrame(rows, columns=columns)


def effect_unit(v: Verdict, comparison: str) -> str:
    """What a comparison's effect is measured in: peak memory (MB), seconds, or points (scores and weights)."""
    if "MB" in comparison or "memory" in comparison:
        return "MB"
    if v.design.quantity == "measured" and "second" in f"{v.claim.effect} {comparison}":
        return "seconds"
    return "points"


def forest_plot(verdicts: list[Verdict]):
    """Every claim's effect and 95% interval (one line per comparison), coloured by verdict, with the rule's
    threshold (a tick) or margin (a band) and the paper's figure (a cross) where it is in our units: one panel per
    unit (points, seconds, MB), each on its own scale, so no interval in one unit flattens the others."""
    rows = forest_rows(verdicts)
    units = [u for u in ("points", "seconds", "MB") if (rows["unit"] == u).any()]
    sizes = [int((rows["unit"] == u).sum()) for u in units]
    fig, axes = plt.subplots(
        len(units), 1, figsize=(9, 0.26 * len(rows) + 1.2 * len(units)), height_ratios=sizes, squeeze=False
    )
    for ax, unit in zip(axes[:, 0], units):
        _panel(ax, rows[rows["unit"] == unit].reset_index(drop=True), unit)
    handles = [plt.Line2D([], [], color=c, marker="o", lw=2, label=k) for k, c in COLOURS.items()]
    handles += [
        plt.Line2D([], [], color="#3a6ea5", lw=1.5, label="rule's threshold"),
        plt.Rectangle((0, 0), 1, 1, color="#cfe3f3", label="rule's margin"),
        plt.Line2D([], [], color="black", marker="x", lw=0, label="paper's figure"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=8)
    plt.tight_layout(rect=(0, 0.04, 1, 1))
    return axes[:, 0]


def _panel(ax, rows: pd.DataFrame, unit: str) -> None:
    """One unit's rows on an axis fitted to their intervals, thresholds and the paper's figures."""
    y = np.arange(len(rows))[::-1]
    for yi, r in zip(y, rows.itertuples()):
        colour = COLOURS[r.verdict]
        if r.kind == "within":
            ax.fill_betweenx([yi - 0.4, yi + 0.4], -r.threshold, r.threshold, color="#cfe3f3", zorder=0)
        else:
            ax.plot([r.threshold] * 2, [yi - 0.4, yi + 0.4], color="#3a6ea5", lw=1.5, zorder=1)
        if not np.isnan(r.low):
            ax.plot([r.low, r.high], [yi, yi], color=colour, lw=2, zorder=2)
        if not np.isnan(r.effect):
            ax.plot(r.effect, yi, "o", color=colour, ms=5, zorder=3)
        if r.published is not None and not pd.isna(r.published):
            ax.plot(r.published, yi, "x", color="black", ms=6, zorder=4)
    ax.set_yticks(y, rows["row"], fontsize=8)
    ax.axvline(0, color="black", lw=0.5)
    ax.set_xlabel(f"effect ({unit}) with 95% CI")
    ax.set_ylim(-1, len(rows))


def paper_against_ours(verdicts: list[Verdict]):
    """The figure replication studies use: each comparison whose paper's effect the declaration gives in our units,
    the paper's effect (x) against ours with its 95% interval (y), coloured by verdict, with the line where they
    agree; one panel per unit. Points on the diagonal reproduce the paper's size, above zero its direction."""
    rows = forest_rows(verdicts).dropna(subset=["published", "effect"])
    units = [u for u in ("points", "seconds", "MB") if (rows["unit"] == u).any()]
    fig, axes = plt.subplots(1, len(units), figsize=(7.5 * len(units), 7.5), squeeze=False)
    for ax, unit in zip(axes[0], units):
        mine = rows[rows["unit"] == unit]
        for r in mine.itertuples():
            below, above = r.effect - r.low, r.high - r.effect
            ax.errorbar(r.published, r.effect, yerr=[[below], [above]], fmt="o", color=COLOURS[r.verdict], ms=5)
        for i, r in enumerate(mine.sort_values("effect").itertuples()):  # labels alternate sides, to overlap less
            side = (6, 0) if i % 2 else (-6, 0)
            ax.annotate(
                r.row,
                (r.published, r.effect),
                fontsize=7,
                xytext=side,
                textcoords="offset points",
                ha="left" if i % 2 else "right",
                va="center",
            )
        edges = [*mine["published"], *mine["low"].dropna(), *mine["high"].dropna(), 0.0]
        pad = 0.08 * (max(edges) - min(edges))
        limits = (min(edges) - pad, max(edges) + pad)  # one scale on both axes: the diagonal at 45 degrees
        ax.plot(limits, limits, color="#3a6ea5", lw=1, ls="--")
        ax.set_xlim(limits)
        ax.set_ylim(limits)
        ax.set_aspect("equal")
        ax.axhline(0, color="black", lw=0.5)
        ax.axvline(0, color="black", lw=0.5)
        ax.set_xlabel(f"paper's effect ({unit})")
        ax.set_ylabel(f"ours ({unit}), 95% CI")
    handles = [plt.Line2D([], [], color=c, marker="o", lw=0, label=k) for k, c in COLOURS.items()]
    handles.append(plt.Line2D([], [], color="#3a6ea5", ls="--", label="ours = paper's"))
    fig.legend(handles=handles, loc="lower center", ncol=5, fontsize=8)
    plt.tight_layout(rect=(0, 0.08, 1, 1))
    return axes[0]
