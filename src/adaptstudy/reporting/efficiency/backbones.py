"""The Efficiency page's base-size rows: our path on `minilm-l6` and on `mpnet-base`, measured in one run on one
machine by `benchmarks/backbone_scale.py` (backbone_scale-<kind>.json), so their ratio is the machine's, not two
sessions'."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from adaptstudy.reporting.efficiency.tables import load_benchmark


def load_backbone_scales(directory) -> dict[str, dict]:
    """Each machine kind's MRPC run of the benchmark in `directory` (backbone_scale-<kind>.json)."""
    files = sorted(Path(directory).glob("backbone_scale-*.json"))
    benchmarks = (load_benchmark(path) for path in files if not path.name.startswith("backbone_scale-cola"))
    return {b["machine"]["kind"]: b for b in benchmarks}


def backbone_scale_table(benchmark: dict) -> pd.DataFrame:
    """Per workload and backbone: the median step, steps per second, useful tokens per second, model FLOP
    utilization in the precision the runs trained in, and the step's cost over `minilm-l6`'s."""
    rows = pd.DataFrame(benchmark["rows"])
    small = rows[rows["backbone"] == "minilm-l6"].set_index("row")["median_step_s"]
    return pd.DataFrame(
        {
            "workload": rows["row"],
            "backbone": rows["backbone"],
            "step (s)": rows["median_step_s"],
            "steps/s": rows["steps_per_s"],
            "useful tokens/s": rows["useful_tokens_per_s"],
            f"MFU ({benchmark['precision']})": rows["mfu"],
            "step over minilm-l6's": rows["median_step_s"] / rows["row"].map(small),
        }
    )


def backbone_scale_note(benchmark: dict) -> str:
    """Where, in what precision and how the two backbones were measured."""
    m, precision = benchmark["machine"], benchmark["precision"]
    peak = m["matmul_peak_flops"] / 1e9
    return (
        f"**{m['kind']}**: {m['cpu']} ({m['cores']} cores), {precision}; each backbone trained "
        f"{benchmark['rounds']} times per workload, the backbones alternating, {benchmark['examples']} MRPC examples "
        f"a training, the first {benchmark['warmup_steps']} steps not timed. MFU is against the {precision} matmul "
        f"peak measured in the same run ({peak:.0f} GFLOP/s, the best of {len(m['matmul_peaks_measured'])})."
    )
