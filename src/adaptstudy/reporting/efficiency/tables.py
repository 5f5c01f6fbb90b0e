"""The Efficiency page: the throughput benchmark's JSON per machine kind as tables, a plot and whether each target is
met; the step profiles. What was tried, kept or dropped, is `candidates`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

METRIC_TOLERANCE = 1.0


@dataclass(frozen=True)
class Targets:
    """A machine kind's targets: examples/s over the stock recipe's per task, MLM useful tokens/s, and the MFU
    (of the fp32 matmul peak) on the rows `mfu_rows` (workload prefixes)."""

    speedup: dict[str, float]
    mlm_speedup: float
    mfu: float
    mfu_rows: tuple[str, ...]
    name: str  # what the page calls them


FP32_TARGETS = Targets({"sst2": 6.0, "mrpc": 3.0}, 4.0, 0.50, ("mrpc/full", "mlm"), "the fp32 targets (AVX2)")
TARGETS = {
    "avx512-bf16": Targets({"sst2": 3.0, "mrpc": 3.0}, 4.0, 0.40, ("mrpc", "mlm"), "the bf16 targets (an aim)"),
    "avx2-fp32": FP32_TARGETS,
}


def kind_targets(kind: str) -> Targets:
    """The targets of a machine kind; an approximation ("avx2-fp32-approx") answers to the kind it stands for, and
    any other fp32 kind (an AVX512 CPU whose bf16 is slower than its fp32) to the AVX2 kind's fp32 targets."""
    return TARGETS.get(kind.removesuffix("-approx"), FP32_TARGETS)


def load_benchmark(path) -> dict:
    """The benchmark's JSON, or an empty benchmark (no rows) when it has not been run yet."""
    path = Path(path)
    if not path.is_file():
        return {"rows": [], "missing": str(path)}
    return json.loads(path.read_text())


def machine_kind(benchmark: dict) -> str:
    """ "avx512-bf16" where our path ran in bf16, else "<cpu capability>-fp32" (older files do not say)."""
    if "kind" in benchmark["machine"]:
        return benchmark["machine"]["kind"]
    if benchmark.get("precision", {}).get("ours", "").startswith("bf16"):
        return "avx512-bf16"
    return f"{benchmark['machine']['cpu_capability'].lower()}-fp32"


def load_benchmarks(directory) -> dict[str, dict]:
    """Each machine kind's throughput benchmark in `directory` (throughput-<kind>.json; a quick run only where no
    full one exists; never a partial one, which lacks rows), bf16 first; empty where none has been run."""
    found: dict[str, dict] = {}
    for path in sorted(Path(directory).glob("throughput-*.json")):
        benchmark = load_benchmark(path)
        if benchmark.get("partial"):
            continue
        kind = machine_kind(benchmark)
        if kind not in found or (found[kind].get("quick") and not benchmark.get("quick")):
            found[kind] = benchmark
    return dict(sorted(found.items()))


def side_by_side(benchmarks: dict[str, dict]) -> pd.DataFrame:
    """Our path against the stock recipe on every machine kind: the speed-up (examples/s; MLM: useful tokens/s)
    and the MFU of the fp32 peak."""
    columns = []
    for kind, benchmark in benchmarks.items():
        rows = pd.DataFrame(benchmark["rows"])
        rows = rows[rows["path"] != "stock"].set_index(["row", "path"])
        speed = rows["speedup_examples"].where(~rows.index.get_level_values("row").str.startswith("mlm"))
        speed = speed.fillna(rows["speedup_tokens"])
        columns += [speed.rename(f"× stock, {kind}"), (100 * rows["mfu_fp32"]).rename(f"MFU % fp32, {kind}")]
    if not columns:
        return pd.DataFrame()
    return pd.concat(columns, axis=1).reset_index().rename(columns={"row": "workload"})


def efficiency_table(benchmark: dict) -> pd.DataFrame:
    """The benchmark's rows: stock recipe and our path side by side, with ratios (MFU against the bf16 peak only
    where the machine computes bf16 natively: an emulated peak is no limit)."""
    keep = {
        "row": "workload",
        "path": "path",
        "examples_per_s": "examples/s",
        "useful_tokens_per_s": "useful tokens/s",
        "speedup_examples": "× examples/s",
        "speedup_tokens": "× tokens/s",
        "mfu_fp32": "MFU % (fp32 peak)",
        "mfu_bf16": "MFU % (bf16 peak)",
        "peak_rss_added_mb": "peak memory added (MB)",
        "dev_metric": "dev metric (mean)",
        "dev_metric_sd": "dev sd",
    }
    rows = pd.DataFrame(benchmark["rows"]).reindex(columns=list(keep)).rename(columns=keep)
    for peak in ("fp32", "bf16"):
        rows[f"MFU % ({peak} peak)"] = 100 * rows[f"MFU % ({peak} peak)"]
    if not _ours_in_bf16(benchmark):
        rows = rows.drop(columns="MFU % (bf16 peak)")
    return rows


def _ours_in_bf16(benchmark: dict) -> bool:
    """Whether our path trained in bf16, the only case where the bf16 peak is its limit: elsewhere that peak is
    emulated (AVX2, or the AVX2 approximation's ISA limits) or slower than fp32, and our fp32 matmuls outrun it."""
    return benchmark.get("precision", {}).get("ours", "").startswith("bf16")


def display_efficiency(table: pd.DataFrame):
    """The benchmark table rounded for reading."""
    formats = {
        "examples/s": "{:.1f}",
        "useful tokens/s": "{:,.0f}",
        "× examples/s": "{:.2f}",
        "× tokens/s": "{:.2f}",
        "MFU % (fp32 peak)": "{:.0f}",
        "MFU % (bf16 peak)": "{:.0f}",
        "peak memory added (MB)": "{:,.0f}",
        "dev metric (mean)": "{:.1f}",
        "dev sd": "{:.1f}",
    }
    formats = {column: f for column, f in formats.items() if column in table}
    return table.style.format(formats, na_rep="–").hide(axis="index")


def targets(benchmark: dict) -> pd.DataFrame:
    """Each of its machine kind's targets (`TARGETS`), measured, and whether it is met (engineering targets, not a
    paper's claims: the scorecard's verdicts do not apply)."""
    rows = pd.DataFrame(benchmark["rows"])
    if rows.empty:
        return pd.DataFrame(columns=["workload", "target", "measured", "met"])
    aims = kind_targets(machine_kind(benchmark))
    out = []
    for workload, group in rows.groupby("row", sort=False):
        stock, ours = group.iloc[0], group[group["path"] == "ours"].iloc[0]
        mlm = workload.startswith("mlm")
        need = aims.mlm_speedup if mlm else aims.speedup[workload.split("/")[0]]
        speed = ours["speedup_tokens"] if mlm else ours["speedup_examples"]
        unit = "useful tokens/s" if mlm else "train examples/s"
        out.append((workload, f"≥ {need:g}× the stock {unit}", f"{speed:.2f}×", speed >= need))
        if not mlm and pd.notna(ours["dev_metric"]):
            gap, seeds = ours["dev_metric"] - stock["dev_metric"], len(ours["dev_metrics"])
            out.append(
                (
                    workload,
                    f"dev metric within {METRIC_TOLERANCE:g} point of the stock recipe's (mean of {seeds} seeds)",
                    f"{ours['dev_metric']:.1f} ± {ours['dev_metric_sd']:.1f} vs "
                    f"{stock['dev_metric']:.1f} ± {stock['dev_metric_sd']:.1f} ({gap:+.1f})",
                    abs(gap) <= METRIC_TOLERANCE,
                )
            )
        if workload.startswith(aims.mfu_rows):
            out.append(
                (
                    workload,
                    f"MFU ≥ {100 * aims.mfu:.0f}% of the fp32 matmul peak",
                    f"{100 * ours['mfu_fp32']:.0f}%"
                    + (f" (of the bf16 peak: {100 * ours['mfu_bf16']:.0f}%)" if _ours_in_bf16(benchmark) else ""),
                    ours["mfu_fp32"] >= aims.mfu,
                )
            )
        out.append(
            (
                workload,
                "peak memory no higher than the stock recipe's",
                f"{ours['peak_rss_added_mb']:.0f} vs {stock['peak_rss_added_mb']:.0f} MB above the process's baseline",
                ours["peak_rss_added_mb"] <= stock["peak_rss_added_mb"],
            )
        )
    table = pd.DataFrame(out, columns=["workload", "target", "measured", "met"])
    table["met"] = table["met"].map({True: "yes", False: "no"})
    return table


def _bf16_note(machine: dict) -> str:
    if not machine.get("native_bf16", True):
        return "no"
    if machine.get("isa_limits"):
        return "no (the CPU has it; the ISA limits emulate it)"
    speedup = machine.get("bf16_speedup")
    return "yes" if speedup is None else f"yes, a bf16 matmul at {speedup:.2f}× fp32"


def _gflops(flops: float) -> str:
    """GFLOP/s, whole from 100 up, else to three significant figures (an emulated bf16 peak is under 1)."""
    return f"{flops / 1e9:.3g}" if flops < 1e11 else f"{flops / 1e9:.0f}"


def machine_note(benchmark: dict) -> str:
    if "missing" in benchmark:
        return f"**Not measured yet**: run `python benchmarks/throughput.py` to write `{benchmark['missing']}`."
    m, precision = benchmark["machine"], benchmark.get("precision", {})
    allocator = benchmark.get("allocator", {})
    processes = (
        f" Each training in its own process; memory allocator: stock {allocator['stock']}, ours {allocator['ours']}."
        if allocator
        else " Both paths in one process, glibc's allocator."
    )
    limits = m.get("isa_limits") or {}
    approximated = (
        " **An approximation of this machine kind** on a faster one, with "
        + ", ".join(f"`{k}={v}`" for k, v in limits.items())
        + "."
        if limits
        else ""
    )
    return (
        f"**{machine_kind(benchmark)}**: "
        f"measured on {m['cpu']} ({m['cores']} cores, {m['torch_threads']} torch threads, "
        f"CPU capability {m['cpu_capability']}, native bf16: {_bf16_note(m)}): "
        f"matmul peak {_gflops(m['matmul_fp32_flops'])} GFLOP/s in fp32, "
        f"{_gflops(m['matmul_bf16_flops'])} GFLOP/s in bf16. "
        f"Stock recipe in {precision.get('stock', 'fp32')}, ours in {precision.get('ours', 'fp32')}."
        + processes
        + f" Torch {benchmark['versions']['torch']}, transformers {benchmark['versions']['transformers']}; "
        f"the whole benchmark took {benchmark.get('wall_s', float('nan')) / 60:.0f} minutes."
        + (" Quick run: step times only, no dev metric." if benchmark.get("quick") else "")
        + approximated
    )


def machine_notes(benchmarks: dict[str, dict]) -> str:
    """`machine_note` of every machine kind's benchmark, or how to run the first."""
    if not benchmarks:
        return "**Not measured yet**: run `python benchmarks/throughput.py` (it writes `throughput-<machine>.json`)."
    return "\n\n".join(machine_note(b) for b in benchmarks.values())


def plot_efficiency(table: pd.DataFrame):
    if table.empty:
        return None
    ax = sns.barplot(data=table, y="workload", x="useful tokens/s", hue="path", orient="h")
    ax.set_xscale("log")
    ax.set_xlabel("useful (non-pad) training tokens per second, log scale")
    ax.legend(title=None, fontsize="small")
    plt.tight_layout()
    return ax


def profile_table(profiles: dict[str, dict]) -> pd.DataFrame:
    """Where one training step's time went (`benchmarks/profile_step.py`), per profile (e.g. before and after) and
    workload: the step time and the shares of operator categories, Python/framework and data loading, in %; and the
    rate of its matmuls in % of the machine's fp32 matmul peak (how much the largest share could still shrink), where
    the profile measured it. Workloads keep the first profile's order in every profile."""
    order = list(dict.fromkeys(name for profile in profiles.values() for name in profile.get("workloads", {})))
    rows = []
    for when, profile in profiles.items():
        for workload, w in sorted(profile.get("workloads", {}).items(), key=lambda item: order.index(item[0])):
            shares = {k: 100 * v for k, v in w["operators_share"].items()}
            rows.append(
                {
                    "profile": when,
                    "workload": workload,
                    "step (ms)": 1000 * w["step_s"],
                    **shares,
                    "Python and framework": 100 * w["python_and_framework_share"],
                    "data": 100 * w["phases_share"].get("data", 0.0),
                    "matmul rate (% of peak)": 100 * w.get("matmul_share_of_peak", float("nan")),
                }
            )
    return pd.DataFrame(rows)


def load_commit_comparisons(directory) -> dict[str, dict]:
    """Each machine kind's `benchmarks/speed_vs_commit.py` run in `directory` (speed_vs_commit-<kind>.json)."""
    return {b["kind"]: b for b in map(load_benchmark, sorted(Path(directory).glob("speed_vs_commit-*.json")))}


def commit_table(benchmark: dict) -> pd.DataFrame:
    """Our path's median step at the earlier version of the code and the later, on one machine in one run, and the
    ratio (above 1: the later is faster) over all steps and its range round by round: a change is real only outside
    that noise."""
    return pd.DataFrame(
        {
            "workload": r["row"],
            "step, earlier version (ms)": 1000 * r["median_step_s"]["earlier"],
            "step, later version (ms)": 1000 * r["median_step_s"]["now"],
            "speed, later over earlier": r["earlier_over_now"],
            "round by round": f"{min(r['earlier_over_now_per_round']):.2f}–{max(r['earlier_over_now_per_round']):.2f}",
            "timed steps each": r["timed_steps"]["now"],
        }
        for r in benchmark["rows"]
    )


def commit_note(benchmark: dict) -> str:
    """Where and how the two versions of the code were compared (the record names them; the page does not)."""
    m, now = benchmark["machine"], benchmark.get("git_commit") or "?"
    dirty = ", the later with changes not yet committed" if now.endswith("-dirty") else ""
    return (
        f"**{benchmark['kind']}**: our path at an earlier version of the code against a later one{dirty}, on "
        f"{m['cpu']} ({m['cores']} cores, CPU capability {m['cpu_capability']}), in {benchmark['precision']}; "
        f"{benchmark['rounds']} trainings per version and workload, the versions alternating, each in its own "
        "process under the same allocator."
    )
