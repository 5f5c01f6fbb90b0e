"""The Efficiency page's "what was tried" section: each fp32 candidate measured (`benchmarks/fp32_candidates.py`,
`mlm_candidates.py`, `attention_kernels.py`, `allocator.py`), and whether it was kept or dropped, with its figures."""

from __future__ import annotations

import pandas as pd


def _task_label(task: str) -> str:
    return {"sst2": "SST-2"}.get(task, task.upper())


def candidates_table(candidates: dict) -> pd.DataFrame:
    """Each measured fp32 candidate (`benchmarks/fp32_candidates.py`): step time, the speed-up over the path before
    it (variants add up in order), the padding left, and the one-off compile time where compiled."""
    rows = pd.DataFrame(candidates.get("rows", []))
    if rows.empty:
        return rows
    return pd.DataFrame(
        {
            "task": rows["task"].map(_task_label),
            "variant": rows["variant"],
            "step (ms)": 1000 * rows["mean_step_s"],
            "× before": rows["speedup_vs_first"],
            "padding (% of tokens)": 100 * (1 - rows["useful_tokens_per_step"] / rows["tokens_per_step_with_padding"]),
            "warm-up incl. compilation (s)": rows["warmup_s"].where(rows["variant"].str.contains("compile")),
        }
    )


def candidates_note(
    candidates: dict, allocator: dict | None = None, mlm: dict | None = None, attention: dict | None = None
) -> str:
    """What was kept and what was dropped, with the figures of `candidates_table` (and those of `mlm_candidates_note`,
    `attention_note` and `allocator_note`)."""
    if not candidates.get("rows"):
        return "**Not measured yet**: run `python benchmarks/fp32_candidates.py --compile`."
    rows = pd.DataFrame(candidates["rows"]).set_index(["task", "variant"])
    padding = 1 - rows["useful_tokens_per_step"] / rows["tokens_per_step_with_padding"]
    m = candidates["machine"]
    lines = [
        f"Measured on {m['cpu']} ({m['cores']} cores, CPU capability {m['cpu_capability']}, {m['precision']}), "
        f"steps of the variants interleaved, {candidates['protocol']['batches']} length-grouped batches of "
        f"{candidates['protocol']['batch_size']} examples, {candidates['protocol']['passes']} passes.",
        "",
        "- **Kept**: fast dropout masks, no length rounding on a CPU, the last layer at [CLS] (and, for the masked "
        "LM, at the masked positions); each row above adds one to the one before.",
    ]
    compiled = [t for t, v in rows.index if "compile" in v]
    if compiled:
        gains = ", ".join(
            f"{_task_label(t)} {rows.loc[(t, v), 'speedup_vs_first']:.2f}×" for t, v in rows.index if "compile" in v
        )
        warm = max(rows.loc[(t, v), "warmup_s"] for t, v in rows.index if "compile" in v)
        lines.append(
            f"- **Dropped: `torch.compile`** (inductor, dynamic shapes) of the model as it was before: {gains} against "
            f"eager, after up to {warm:.0f} s of compilation per run. Its generated dropout draws random numbers more "
            "slowly than torch's own, and the matmuls, most of the step, are the same library calls."
        )
    left = ", ".join(
        f"{_task_label(t)} {100 * padding[(t, '+ no length rounding')]:.0f}%" for t in dict(rows.index).keys()
    )
    lines.append(
        "- **Not built: packing several examples into one row** (block-diagonal attention). Without length rounding, "
        f"length-grouped batches leave this share of padded tokens: {left}. That bounds what packing could save on "
        "the linear layers, and packed rows would make attention longer and need a mask per row."
    )
    lines.append(
        "- **Threads**: one run already uses both cores (torch's two threads); for sweeps, several runs of one thread "
        "each against one run of two are measured in the last section."
    )
    lines.append(mlm_candidates_note(mlm or {}))
    lines.append(attention_note(attention or {}))
    lines.append(allocator_note(allocator or {}))
    return "\n".join(lines)


def mlm_candidates_note(mlm: dict) -> str:
    """The masked-LM line of what was tried (`benchmarks/mlm_candidates.py`): `torch.compile` of our pretraining
    path's encoder layers, where the shapes are static (packed rows), kept only if faster."""
    if not mlm.get("rows"):
        return "- **Masked LM, `torch.compile`: not measured yet**: run `python benchmarks/mlm_candidates.py`."
    rows = {r["variant"]: r for r in mlm["rows"]}
    eager, compiled = rows["ours"], rows["+ compiled layers"]
    p, m = mlm["protocol"], mlm["machine"]
    verdict = "Kept" if compiled["speedup_vs_first"] > 1 else "Dropped"
    return (
        f"- **{verdict} for the masked LM: `torch.compile`** (inductor, static shapes) of every encoder layer but the "
        f"last, on our pretraining path (packed rows of {p['length']} tokens, batch {p['batch_size']}): "
        f"{1000 * compiled['median_step_s']:.0f} ms per step against {1000 * eager['median_step_s']:.0f} eager "
        f"(×{compiled['speedup_vs_first']:.2f}, {compiled['timed_steps']} interleaved steps each, on {m['cpu']}, "
        f"{m['cpu_capability']}, {m['precision']}), after {compiled['warmup_s']:.0f} s of warm-up. Fast dropout's "
        "masks come from numpy, which breaks the graph at every dropout, so little is left to fuse."
    )


def attention_note(kernels: dict) -> str:
    """The attention line of what was tried (`benchmarks/attention_kernels.py`): at each of our paths' shapes, the
    kernel in use against the others; kept where none is faster."""
    if not kernels.get("workloads"):
        return "- **Attention kernel: not measured yet**: run `python benchmarks/attention_kernels.py`."
    parts, switch = [], []
    for workload, w in kernels["workloads"].items():
        used = next(r for r in w["rows"] if r["in_use"])
        others = [r for r in w["rows"] if not r["in_use"]]
        switch += [f"{r['kernel']} for the {workload}" for r in others if r["speedup_vs_in_use"] > 1]
        parts.append(
            f"{workload} ({w['batch']} rows of {w['tokens']} tokens, attention dropout {w['attention_dropout']:g}): "
            f"{used['kernel']} {used['median_ms']:.1f} ms, against "
            + ", ".join(f"{r['kernel']} {r['median_ms']:.1f} ms (×{r['speedup_vs_in_use']:.2f})" for r in others)
        )
    m, p = kernels["machine"], kernels["protocol"]
    limits = " with " + ", ".join(f"`{k}={v}`" for k, v in m["isa_limits"].items()) if m.get("isa_limits") else ""
    verdict = f"**Faster than the kernel in use: {', '.join(switch)}**" if switch else "**Kept: the kernels in use**"
    return (
        f"- {verdict}. One layer's attention, forward and backward, the kernels taking turns over {p['rounds']} "
        f"rounds (medians; {m['cpu']}{limits}, {m['precision']}): " + "; ".join(parts) + "."
    )


ALLOCATOR_GAIN = 1.05  # worth preloading if 5% faster in every round,
ALLOCATOR_MEMORY = 0.8  # or at most 80% of glibc's peak memory at glibc's speed (the median ratio within 3%)


def allocator_note(allocator: dict) -> str:
    """The allocator line of what was tried (`benchmarks/allocator.py`): tcmalloc, which the sweep preloads, kept or
    dropped by the rule above; every setting's step and peak memory against glibc's defaults."""
    if not allocator.get("rows"):
        return "- **Allocator: not measured yet**: run `python benchmarks/allocator.py`."
    rows = {r["allocator"]: r for r in allocator["rows"]}
    glibc, tc = rows["glibc"], rows.get("tcmalloc")
    faster = tc and tc["speedup_range"][0] >= ALLOCATOR_GAIN
    leaner = tc and tc["peak_rss_added_mb"] <= ALLOCATOR_MEMORY * glibc["peak_rss_added_mb"]
    leaner = leaner and tc["speedup_vs_glibc"] >= 0.97
    if faster or leaner:
        verdict = (
            f"**Kept: tcmalloc**, which `python -m adaptstudy.sweep` preloads where the system has it "
            f"(`ADAPTSTUDY_ALLOCATOR=system` turns it off): peak memory +{tc['peak_rss_added_mb']:.0f} MB against "
            f"glibc's +{glibc['peak_rss_added_mb']:.0f} MB, speed {tc['speedup_vs_glibc']:.2f}× glibc "
            f"({tc['speedup_range'][0]:.2f}–{tc['speedup_range'][1]:.2f} over the rounds)"
        )
    else:
        verdict = (
            f"**Dropped: tcmalloc** (neither {100 * (ALLOCATOR_GAIN - 1):.0f}% faster in every round nor "
            f"{100 * (1 - ALLOCATOR_MEMORY):.0f}% less peak memory at glibc's speed)"
        )
    p = allocator["protocol"]
    return (
        f"- {verdict}. {p['task'].upper()}, full fine-tuning, batch {p['batch_size']}, each allocator in its own "
        f"process, {p['rounds']} rounds of {p['timed_steps']} steps taking turns (speed compared within a round): "
        + ", ".join(
            f"{r['allocator']} {1000 * r['median_step_s']:.0f} ms (×{r['speedup_vs_glibc']:.2f}), "
            f"+{r['peak_rss_added_mb']:.0f} MB"
            for r in allocator["rows"]
        )
        + f". With glibc's defaults the kernel takes {100 * glibc['system_share']:.1f}% of the step's CPU "
        f"time ({glibc['minor_faults_per_step']:,.0f} page faults per step)."
    )
