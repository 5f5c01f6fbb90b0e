"""What a chapter's runs cost: one row per run (`run_costs`), each run once across studies (`spent`), and the
sums a chapter prints beside its budget (`study_cost`, `costs`), every training of a run paid (`retrained`)."""

from __future__ import annotations

import pandas as pd

from adaptstudy.runs.records import ablation_estimated, ablation_seconds, paid_evaluation, paid_seconds


def study_cost(runs: pd.DataFrame, budget_h: float) -> str:
    """One sentence: how many runs (`load_runs` or `run_costs` rows), and the training and evaluation hours they took
    (retraining included), against the budget of its chapter (or part)."""
    if runs.empty:
        return "No runs yet."
    train_h, eval_h = paid_seconds(runs, "train_runtime_s").sum() / 3600, paid_evaluation(runs).sum() / 3600
    partial = partly_timed(runs).sum()
    return (
        f"{len(runs)} runs: {train_h:.2f} h of training and {eval_h:.2f} h of evaluation ({train_h + eval_h:.2f} h on "
        f"2 CPU cores against a budget of about {budget_h:g} h; model loading not counted)."
        + (
            f" {partial} of the runs were resumed before records kept the seconds before a resume: their training "
            "time counts only the part after it, so the hours are a lower bound."
            if partial
            else ""
        )
        + ablations(runs)
        + (f" Machines: {machines(runs)}." if {"record", "cpu"} & set(runs) else "")
        + allocators(runs)
    )


def ablations(runs: pd.DataFrame) -> str:
    """What of the evaluation hours the layer ablations took (a dev evaluation per span of layers after training),
    and which of them are estimated: records made before the ablation was timed. '' where no run ablated."""
    seconds = ablation_seconds(runs)
    if not seconds.any():
        return ""
    estimated = ablation_estimated(runs)
    return (
        f" The evaluation includes {seconds.sum() / 3600:.2f} h of layer ablation in {int((seconds > 0).sum())} runs"
        + (
            f", {seconds[estimated].sum() / 3600:.2f} h of it estimated: {int(estimated.sum())} runs' records "
            "predate the ablation's timing, and their spans are counted at the run's own mean evaluation time per "
            "epoch."
            if estimated.any()
            else "."
        )
    )


def allocators(runs: pd.DataFrame) -> str:
    """Where runs measured their peak memory under different allocators (tcmalloc, or the C library's where a
    machine lacked it, which holds more memory for the same run), how many under each; '' where they agree."""
    if "record" not in runs:
        return ""
    kinds = runs["record"].map(lambda r: (r.get("machine") or {}).get("allocator") or "not recorded")
    counts = kinds.value_counts()
    if len(counts) < 2:
        return ""
    named = {"system": "under the C library's allocator", "not recorded": "with the allocator not recorded"}
    said = ", ".join(f"{n} {named.get(kind, f'under {kind}')}" for kind, n in counts.items())
    return f" Peak memory was measured in {said}: the C library's allocator holds more memory for the same run."


def partly_timed(runs: pd.DataFrame) -> pd.Series:
    """Runs whose `train_runtime_s` covers only the steps after a resume: resumed, by a version that did not carry
    the seconds of the earlier sessions over (no `train_runtime_covers`, or not "whole run")."""
    resumed = runs["resumed_from_step"].notna() if "resumed_from_step" in runs else pd.Series(False, runs.index)
    covers = runs["train_runtime_covers"] if "train_runtime_covers" in runs else pd.Series(None, runs.index)
    return resumed & (covers != "whole run")


def cpu_kind(record: dict) -> str | None:
    """The CPU kernels torch picked for a run (AVX2, AVX512, ...); None where the record predates the field."""
    return (record.get("machine") or {}).get("cpu_capability")


def machine_label(record: dict, unknown_cpu: str = "an unrecorded CPU") -> str:
    """The precision a run trained in and the CPU kernels torch picked: 'bf16 on AVX512', 'fp32 on AVX2' (an
    AVX512 machine whose bf16 measured slow trains in fp32: the kernels alone do not say which)."""
    return f"{record.get('precision_used') or 'fp32'} on {cpu_kind(record) or unknown_cpu}"


def machines(runs: pd.DataFrame) -> str:
    """How many runs trained on each kind of machine, from the `machine` of their records (`run_costs` rows: their
    `cpu`): '40 in fp32 on AVX2, 3 in bf16 on AVX512, 2 not recorded'."""
    kinds = runs["cpu"] if "cpu" in runs else runs["record"].map(_recorded_machine)
    counts = kinds.fillna("not recorded").value_counts()
    return ", ".join(f"{n} {'' if kind == 'not recorded' else 'in '}{kind}" for kind, n in counts.items())


def _recorded_machine(record: dict) -> str | None:
    return machine_label(record) if cpu_kind(record) else None


COST_RUN_COLUMNS = ["study", "method", "run_id", "train_runtime_s", "eval_runtime_s", "examples/s", "peak MB", "cpu"]


def run_costs(runs: pd.DataFrame, study: str, method: str = "method") -> pd.DataFrame:
    """One row per run of `study` (named by its column `method`): training and evaluation seconds, examples per
    second, peak memory. The rows of a chapter's studies, concatenated, are what `study_cost` and `costs` sum."""
    if runs.empty:  # typed, so that concatenating it with another study's rows keeps their dtypes
        return pd.DataFrame(columns=COST_RUN_COLUMNS).astype(dict.fromkeys(COST_RUN_COLUMNS[3:-1], float))
    rows = {
        "study": study,
        "method": runs[method],
        "run_id": runs["run_id"],
        "train_runtime_s": paid_seconds(runs, "train_runtime_s"),
        "eval_runtime_s": paid_evaluation(runs),
        "examples/s": runs["train_examples_per_s"].where(~partly_timed(runs)),  # a partial time makes no speed
        "peak MB": runs["peak_rss_mb"],
        "cpu": runs["record"].map(_recorded_machine),
    }
    return pd.DataFrame(rows, columns=COST_RUN_COLUMNS).reset_index(drop=True)


def spent(*studies: pd.DataFrame) -> pd.DataFrame:
    """Several studies' `run_costs` rows, each run once: a run another study reused (same run id, same config) is
    paid by the study whose copy paid most (a copy that replaced another lists that training under `retrained`),
    the one listed first on a tie, and an MT-A run's row per target it reports counts once."""
    rows = pd.concat(studies, ignore_index=True)
    most = rows.sort_values("train_runtime_s", ascending=False, kind="stable").drop_duplicates("run_id")
    return rows.loc[sorted(most.index)].reset_index(drop=True)


def costs(runs: pd.DataFrame) -> pd.DataFrame:
    """Per study and method (rows of `run_costs`): runs, seconds in all, median examples per second, peak memory."""
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
