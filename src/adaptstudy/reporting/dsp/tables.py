"""The Don't Stop Pretraining chapter's tables: domain- and task-adaptive pretraining, for the full model and for
adapters.

Fine-tuning records (study `dsp`) name their starting point by the settings of the pretraining run that
made it (`init_from`, nested for chains), so each run's condition is read off that chain:
the warmed MLM head alone is the baseline; a domain corpus on top is DAPT (the task's own domain) or
¬DAPT (another domain); the task's training texts on top are TAPT, and on top of DAPT, DAPT+TAPT; the `neutral`
corpus (general text of neither domain) on top, for as many steps as the domain's DAPT, is DAPT's matched control.
Pretraining records (study `dsp_pretrain`) give the perplexities and the costs. Every function takes the runs of
`load_runs`: fine-tuning runs labelled by `label_runs`, pretraining runs by `label_pretraining`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from adaptstudy.claims.baselines import FLAG_NOTE, flagged, learned_nothing, record_baseline
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.common import mean_sd, span
from adaptstudy.reporting.costs import study_cost
from adaptstudy.reporting.dsp.published import (
    DSP_CONDITIONS,
    DSP_DOMAINS,
    DSP_METRICS,
    DSP_NOT_OFFLINE,
    DSP_STD,
    GURURANGAN_2020,
)
from adaptstudy.reporting.published import published_frame
from adaptstudy.runs.records import paid_seconds

CORPUS_DOMAIN = {"reviews": "Reviews", "news": "News"}  # our DAPT corpora and the paper's domain names
CONTROL_CORPUS = "neutral"
# the paper's, its Transfer-TAPT (TAPT on another task of the same domain), and DAPT's matched control (ours only)
CONDITIONS = ("baseline", "control", *DSP_CONDITIONS[1:], "transfer-tapt")
WARM_UP = ("general", "head")
COST_COLUMNS = {  # a pretraining record's column -> the cost table's
    "corpus": "corpus",
    "method": "mode",
    "starts from": "starts from",
    "config.corpus_fraction": "corpus_fraction",
    "steps": "steps",
    "train_runtime_s": "train s",
    "train_tokens_per_s": "tokens/s",
    "peak_rss_mb": "peak MB",
    "trainable_params": "trainable",
}


def pretraining_settings(init_from: Any) -> list[dict]:
    """The settings of each pretraining run behind a starting point, latest first; [] for a plain backbone or a
    starting point given as a folder (its chain is not in the record)."""
    out = []
    while isinstance(init_from, dict):
        out.append(init_from)
        init_from = init_from.get("init_from")
    return out


def chain(init_from: Any) -> list[tuple[str, str]]:
    """(corpus, mode) of each pretraining run behind a starting point, latest first."""
    return [(s["corpus"], s.get("mode", "full")) for s in pretraining_settings(init_from)]


def condition(task: str, steps: list[tuple[str, str]]) -> str | None:
    """baseline / control / dapt / not-dapt / tapt / dapt+tapt / transfer-tapt (TAPT on another task's texts) for a
    chain that starts from the warmed head, else None."""
    if not steps or steps[-1] != WARM_UP:
        return None
    adaptive = [corpus for corpus, _ in steps[:-1]][::-1]  # oldest first
    names = []
    for corpus in adaptive:
        if corpus.startswith("task:"):
            names.append("tapt" if corpus.removeprefix("task:") == task else "transfer-tapt")
        elif corpus == CONTROL_CORPUS:
            names.append("control")
        else:
            names.append("dapt" if CORPUS_DOMAIN.get(corpus) == DSP_DOMAINS.get(task) else "not-dapt")
    label = "+".join(names) or "baseline"
    return label if label in CONDITIONS else None


def adaptation(method: str, steps: list[tuple[str, str]], adapter_use: str | None) -> tuple[str, str]:
    """(family, adaptation): what is fine-tuned (the full model, or a task adapter of `method`), and which of its
    parts adaptive pretraining reached (the full model, or an adapter: continued or stacked under the task's)."""
    family = "full model" if method == "full" else f"{method} adapter"
    adapter_modes = sorted({mode for _, mode in steps[:-1]} - {"full"})
    if not adapter_modes:
        return family, family
    return family, f"{family}, {'/'.join(adapter_modes)} pretrained ({adapter_use})"


def label_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Adds `condition`, `family`, `adaptation` and `corpus_fraction` (of the domain corpus) to fine-tuning runs,
    read off each record's pretraining chain; `score`: the metric the paper reports for the task (macro-F1;
    micro-F1 for ChemProt), or the run's main metric where its record lacks it (`scored_as` says which); `constant`:
    the constant prediction's score in that metric, and `learned_nothing` (`baselines`)."""
    columns = [
        "condition",
        "family",
        "adaptation",
        "corpus_fraction",
        "score",
        "scored_as",
        "constant",
        "learned_nothing",
    ]
    if runs.empty:
        return pd.DataFrame(
            columns=["run_id", "task", "method", "seed", "main_metric_value", "record", *columns]
        ).astype({"main_metric_value": float, "corpus_fraction": float, "score": float, "learned_nothing": bool})
    labels = pd.DataFrame([_labels(r) for r in runs["record"]], columns=columns, index=runs.index)
    return pd.concat([runs, labels], axis=1)


def _labels(record: dict) -> tuple:
    """(condition, family, adaptation, corpus_fraction, score, scored_as, constant, learned_nothing) of one
    fine-tuning record."""
    init_from = record["config"].get("init_from")
    steps = chain(init_from)
    domain_runs = [s for s in pretraining_settings(init_from) if s["corpus"] in CORPUS_DOMAIN]
    fraction = domain_runs[0].get("corpus_fraction", 1.0) if domain_runs else np.nan
    metric = DSP_METRICS.get(record["task"], record["main_metric"])
    scored_as = metric if metric in record["metrics"] else record["main_metric"]
    return (
        condition(record["task"], steps),
        *adaptation(record["method"], steps, record["config"].get("adapter_use")),
        fraction,
        record["metrics"][scored_as],
        scored_as,
        record_baseline(record).constants[scored_as],
        learned_nothing(record),
    )


def main_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table 5 with ours beside it: per task a row of the paper's mean (sd), then one row per fine-tuned
    family and adaptation of ours (mean ± sd (seeds)); an adapter variant's baseline is its family's baseline."""
    ours = runs[runs["condition"].notna() & (runs["corpus_fraction"].fillna(1.0) == 1.0)]
    published = published_frame(GURURANGAN_2020).set_index(["task", "method"])["value"]
    rows = []
    for task in DSP_DOMAINS:
        paper = {
            c: f"{published[(task, c)]:.1f}" + (f" ({DSP_STD[(task, c)]:.1f})" if (task, c) in DSP_STD else "")
            for c in DSP_CONDITIONS
        }  # the paper has no control: its cell reads '–'
        rows.append({"task": task, "domain": DSP_DOMAINS[task], "model": "paper: RoBERTa-base", **paper})
        if task in DSP_NOT_OFFLINE:  # the paper's row alone (`TABLE_NOTE`)
            continue
        mine = ours[ours["task"] == task]
        for family in sorted(mine["family"].unique(), key=lambda f: (f != "full model", f)):
            in_family = mine[mine["family"] == family]
            base = in_family[(in_family["adaptation"] == family) & (in_family["condition"] == "baseline")]
            for variant in sorted(set(in_family["adaptation"]) - {family}) or [family]:
                # a pretrained adapter variant is shown beside its family's plain baseline
                cells = in_family[in_family["adaptation"] == variant]
                if variant != family:
                    cells = pd.concat([base, cells])
                row = {
                    c: flagged(mean_sd(here["score"]), int(here["learned_nothing"].sum()))
                    for c in CONDITIONS
                    for here in [cells[cells["condition"] == c]]
                }
                row["constant"] = f"{cells['constant'].iloc[0]:.1f}"
                scored = "/".join(sorted(set(cells["scored_as"]) - {DSP_METRICS[task]}))
                note = f" [{scored}]" if scored else ""
                rows.append({"task": task, "domain": DSP_DOMAINS[task], "model": f"ours: {variant}{note}", **row})
    return pd.DataFrame(rows, columns=["task", "domain", "model", *CONDITIONS, "constant"]).fillna("–")


TABLE_NOTE = (
    f"{', '.join(t.upper() for t in DSP_NOT_OFFLINE)}: not in the mirror (the paper's row only). DAPT and DAPT+TAPT "
    "of the BioMed and CS tasks read '–': no domain corpus offline. *Control* (ours only; the paper has none): "
    "continued masked-LM training on neutral text (Brown without its press categories) with the steps, rate and "
    "batch of the task's DAPT. *Constant*: the constant prediction's score on "
    f"our dev split, in the metric of the row. {FLAG_NOTE}"
)


def gains(runs: pd.DataFrame) -> pd.DataFrame:
    """Per task, adaptation and condition: mean metric minus the baseline of the same family (what is fine-tuned,
    from the warmed head without adaptive pretraining)."""
    full = runs[runs["corpus_fraction"].fillna(1.0) == 1.0]
    means = full.groupby(["task", "family", "adaptation", "condition"])["score"].mean().reset_index()
    base = means[means["condition"] == "baseline"].set_index(["task", "family"])["score"]
    means["baseline"] = [base.get((t, f), np.nan) for t, f in zip(means["task"], means["family"])]
    means["gain"] = means["score"] - means["baseline"]
    return means[means["condition"] != "baseline"]


def starting_point(init_from: Any) -> str:
    """Where a pretraining run started, latest run first: 'news (full) ← warmed head'; the backbone for none."""
    steps = chain(init_from)
    return " ← ".join("warmed head" if s == WARM_UP else f"{s[0]} ({s[1]})" for s in steps) or "backbone"


def label_pretraining(pretrain_runs: pd.DataFrame) -> pd.DataFrame:
    """Adds `starts from` to pretraining runs, so that TAPT from the warmed head and TAPT after DAPT (DAPT+TAPT)
    are told apart in the perplexity and cost tables."""
    if pretrain_runs.empty:
        return pretrain_runs
    start = [starting_point(r["config"].get("init_from")) for r in pretrain_runs["record"]]
    return pretrain_runs.assign(**{"starts from": start})


def perplexity_table(pretrain_runs: pd.DataFrame) -> pd.DataFrame:
    """Held-out masked-LM perplexity of the warmed head (general text, and each corpus before its DAPT) and after;
    the runs come labelled by `label_pretraining`."""
    if pretrain_runs.empty:
        return pd.DataFrame(
            columns=["corpus", "mode", "starts from", "corpus_fraction", "perplexity before", "perplexity after"]
        )
    runs = pretrain_runs.assign(corpus=pretrain_runs["task"].str.removeprefix("mlm:"))
    table = runs[
        ["corpus", "method", "starts from", "config.corpus_fraction", "perplexity_before", "main_metric_value"]
    ]
    return table.rename(
        columns={
            "method": "mode",
            "config.corpus_fraction": "corpus_fraction",
            "perplexity_before": "perplexity before",
            "main_metric_value": "perplexity after",
        }
    ).sort_values(["corpus", "mode", "starts from"], ignore_index=True)


def cost_table(pretrain_runs: pd.DataFrame) -> pd.DataFrame:
    """What each pretraining run cost: steps, tokens/s, seconds, peak memory, trained parameters."""
    if pretrain_runs.empty:
        return pd.DataFrame(columns=list(COST_COLUMNS.values()))
    runs = pretrain_runs.assign(corpus=pretrain_runs["task"].str.removeprefix("mlm:"))
    return runs[list(COST_COLUMNS)].rename(columns=COST_COLUMNS)


def data_size_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """DAPT runs at several corpus fractions: the fine-tuning gain over the baseline against the fraction, for each
    task and adaptation that ran more than one fraction (the others are the main table's, not a size series)."""
    dapt = runs[runs["condition"] == "dapt"]
    series = dapt.groupby(["task", "adaptation"])["corpus_fraction"].transform("nunique") > 1
    means = dapt[series].groupby(["task", "family", "adaptation", "corpus_fraction"])["score"].mean().reset_index()
    base = runs[runs["condition"] == "baseline"].groupby(["task", "family"])["score"].mean()
    means["gain"] = [v - base.get((t, f), np.nan) for t, f, v in zip(means["task"], means["family"], means["score"])]
    return means


def whole_corpus_dapt(pretrain_runs: pd.DataFrame) -> pd.DataFrame:
    """The pretraining runs on a whole domain corpus (not TAPT, not the warm-up, not a corpus share)."""
    corpus = pretrain_runs["task"].str.removeprefix("mlm:")
    return pretrain_runs[corpus.isin(list(CORPUS_DOMAIN)) & (pretrain_runs["config.corpus_fraction"] == 1.0)]


def pretraining_cost(pretrain_runs: pd.DataFrame) -> str:
    """What DAPT on a whole domain corpus cost per mode: mean seconds, trained parameters, peak memory."""
    if pretrain_runs.empty:
        return ""
    dapt = whole_corpus_dapt(pretrain_runs)
    per_mode = dapt.groupby("method").agg(
        seconds=("train_runtime_s", "mean"), trained=("trainable_params", "first"), peak=("peak_rss_mb", "max")
    )
    return "; ".join(
        f"{mode} {row.seconds / 60:.1f} min, {row.trained / 1e6:.2f}M trained, peak {row.peak / 1024:.1f} GB"
        for mode, row in per_mode.iterrows()
    )


BUDGET_H = 5  # the plan on an AVX512-BF16 machine (about 2.5x that on an AVX2-only one)


def chapter_cost(runs: pd.DataFrame, pretrain_runs: pd.DataFrame) -> str:
    """What the chapter cost: its fine-tuning and its pretraining runs together, against the planned CPU-hours, and
    the pretraining's share."""
    cost = study_cost(pd.concat([runs, pretrain_runs], ignore_index=True), BUDGET_H)
    if pretrain_runs.empty:
        return cost
    pretraining_h = paid_seconds(pretrain_runs, "train_runtime_s").sum() / 3600
    return cost + f" Of the training, {pretraining_h:.2f} h were masked-LM pretraining."


def recipe_note(runs: pd.DataFrame, pretrain_runs: pd.DataFrame) -> str:
    """Our scaled-down recipe, read off the records, beside the paper's."""
    if runs.empty or pretrain_runs.empty:
        return ""
    rates = runs.groupby(runs["method"] == "full")["config.learning_rate"].agg(span)
    schedules = runs.groupby(["config.num_train_epochs", "config.max_train_examples"], dropna=False)["task"].unique()
    schedule = "; ".join(
        f"{epochs:g} epochs on {'the whole training set' if pd.isna(cap) else f'at most {cap:g} examples'}"
        f" ({', '.join(sorted(tasks))})"
        for (epochs, cap), tasks in schedules.items()
    )
    fine = (
        f"Fine-tuning: {schedule}; batch {span(runs['config.batch_size'])}, "
        f"learning rate {rates.get(True, '–')} (full model) and {rates.get(False, '–')} (adapters), warmup "
        f"{span(100 * runs['config.warmup_ratio'])}%, weight decay {span(runs['config.weight_decay'])}, Adam β2 "
        f"{span(runs['config.adam_beta2'])}, ε {span(runs['config.adam_epsilon'])}, evaluation capped at "
        f"{span(runs['config.max_eval_examples'])} examples, "
        f"{span(runs['config.max_seq_length'])} tokens (the paper: learning rate 2e-5, batch 16, 3–10 epochs, whole "
        "training sets)."
    )
    corpus = pretrain_runs["task"].str.removeprefix("mlm:")
    head, tapt = pretrain_runs[pretrain_runs["method"] == "head"], pretrain_runs[corpus.str.startswith("task:")]
    dapt = whole_corpus_dapt(pretrain_runs)
    parts = [
        f"Masked-LM pretraining: batch {span(pretrain_runs['config.batch_size'])} × "
        f"{span(pretrain_runs['config.max_seq_length'])}"
        f" tokens, mask {span(pretrain_runs['config.mlm_probability'])}"
    ]
    if not head.empty:
        parts.append(
            f"the head's warm-up {span(head['steps'])} steps at learning rate {span(head['config.learning_rate'])}"
        )
    if not dapt.empty:
        steps = ", ".join(f"{c} {span(g['steps'])}" for c, g in dapt.groupby(dapt["task"].str.removeprefix("mlm:")))
        parts.append(
            f"DAPT one pass over the corpus ({steps} steps) at learning rate {span(dapt['config.learning_rate'])} "
            "(the paper: 12.5k steps at batch 2048)"
        )
    if not tapt.empty:
        parts.append(
            f"TAPT {span(tapt['steps'])} steps at learning rate {span(tapt['config.learning_rate'])} (the paper: 100 "
            "epochs at 1e-4)"
        )
    return fine + " " + "; ".join(parts) + "."


COMPILE_BENCHMARKS = {  # benchmark file -> what its compiled variant compiles
    "mlm_candidates.json": "masked-LM step (our pretraining path), each encoder layer but the last",
    "fp32_candidates.json": "fine-tuning step, the whole model",
}


def compile_speedups(folder: str | Path = PROJECT_ROOT / "benchmarks" / "results") -> pd.DataFrame:
    """`torch.compile` against the same path uncompiled, from our committed benchmarks (steps interleaved on one
    machine, compile time apart), beside the draft's "almost doubled performance": the machine each ran on too."""
    rows = []
    for name, what in COMPILE_BENCHMARKS.items():
        result = json.loads((Path(folder) / name).read_text(encoding="utf-8"))
        machine = result["machine"]
        for row in result["rows"]:
            if "compile" in row["variant"]:
                rows.append(
                    {
                        "benchmark": name.removesuffix(".json"),
                        "what is compiled": what + (f" ({row['task']})" if row.get("task") else ""),
                        "speed-up": row["speedup_vs_first"],
                        "warm-up, compile included (s)": row.get("warmup_s"),
                        "machine": f"{machine['cpu']}, {machine['cpu_capability']}, {machine['precision']}, "
                        f"{machine.get('torch_threads', '?')} threads",
                    }
                )
    return pd.DataFrame(rows)
