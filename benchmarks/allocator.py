"""What the memory allocator costs an fp32 training step on this CPU, in time and in resident memory.

torch's CPU tensors come from the C allocator, with no cache of its own: every step allocates and frees its
activations, and length-grouped batches change their shapes from step to step. Each setting trains the path now
(`minilm-l6`, full fine-tuning, fused AdamW, batch 32) on the same length-grouped MRPC batches as
`fp32_candidates.py` (two passes), in its own process, the settings taking turns round by round:

- `glibc`: the defaults;
- `glibc, no trim or mmap`: `MALLOC_TRIM_THRESHOLD_` and `MALLOC_MMAP_THRESHOLD_` set high, so freed blocks stay in
  the heap instead of going back to the kernel and faulting in again;
- `jemalloc`, `tcmalloc`: preloaded (`LD_PRELOAD`), where the system has them (Debian: libjemalloc2,
  libtcmalloc-minimal4).

Per step: wall time, the process's kernel (system) time and its minor page faults; per process: the peak resident
memory above what it held before training. This VM's speed drifts by up to 1.4x between minutes, more than the
allocators differ, so speed is compared within a round (each setting's median step over glibc's in the same round)
and reported as the median of those ratios over the rounds, with their range.

    python benchmarks/allocator.py      # about 12 minutes; writes benchmarks/results/allocator.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

LIBRARIES = Path("/usr/lib/x86_64-linux-gnu")
SETTINGS = {
    "glibc": {},
    "glibc, no trim or mmap": {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(1 << 30)},
    "jemalloc": {"LD_PRELOAD": str(LIBRARIES / "libjemalloc.so.2")},
    "tcmalloc": {"LD_PRELOAD": str(LIBRARIES / "libtcmalloc_minimal.so.4")},
}
ROUNDS, PASSES = 5, 2


def child() -> dict:
    """Train `PASSES` passes over the batches after the warm-up steps; the step times, kernel seconds and faults
    per step, and the peak resident memory above the memory held before the first step (MB)."""
    import psutil

    sys.path.insert(0, str(Path(__file__).parent))
    from fp32_candidates import VARIANTS, WARMUP, variant

    run = variant("mrpc", *VARIANTS["+ last layer at [CLS]"])
    held = psutil.Process().memory_info().rss
    batches = run["data"][WARMUP:] + run["data"] * (PASSES - 1)
    for batch in run["data"][:WARMUP]:
        run["step"](batch)
    times = []
    before = resource.getrusage(resource.RUSAGE_SELF)
    for batch in batches:
        start = time.perf_counter()
        run["step"](batch)
        times.append(time.perf_counter() - start)
    after = resource.getrusage(resource.RUSAGE_SELF)
    steps = len(batches)
    return {
        "step_times_s": times,
        "system_s_per_step": (after.ru_stime - before.ru_stime) / steps,
        "user_s_per_step": (after.ru_utime - before.ru_utime) / steps,
        "minor_faults_per_step": (after.ru_minflt - before.ru_minflt) / steps,
        "peak_rss_added_mb": (after.ru_maxrss * 1024 - held) / 2**20,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "allocator.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("ADAPTSTUDY_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    if args.child:
        print(json.dumps(child()))
        return 0
    from adaptstudy.common.files import write_json_atomic
    from adaptstudy.training.device import provenance

    available = {
        name: env for name, env in SETTINGS.items() if "LD_PRELOAD" not in env or Path(env["LD_PRELOAD"]).exists()
    }
    measured: dict[str, list[dict]] = {name: [] for name in available}
    for _ in range(ROUNDS):
        for name, env in available.items():
            out = subprocess.run(
                [sys.executable, __file__, "--child"],
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                check=True,
            )
            measured[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    per_round = {name: [statistics.median(r["step_times_s"]) for r in runs] for name, runs in measured.items()}
    rows = []
    for name, runs in measured.items():
        ratios = [g / s for g, s in zip(per_round["glibc"], per_round[name])]
        row = {
            "allocator": name,
            "median_step_s": statistics.median(per_round[name]),
            "round_median_steps_s": per_round[name],
            "speedup_vs_glibc": statistics.median(ratios),
            "speedup_range": [min(ratios), max(ratios)],
            "peak_rss_added_mb": statistics.median(r["peak_rss_added_mb"] for r in runs),
            "system_share": statistics.mean(
                r["system_s_per_step"] / (r["system_s_per_step"] + r["user_s_per_step"]) for r in runs
            ),
            "minor_faults_per_step": statistics.mean(r["minor_faults_per_step"] for r in runs),
        }
        rows.append(row)
        print(
            f"{name:24} {1000 * row['median_step_s']:6.0f} ms/step  x{row['speedup_vs_glibc']:.2f} "
            f"({row['speedup_range'][0]:.2f}-{row['speedup_range'][1]:.2f})  +{row['peak_rss_added_mb']:5.0f} MB  "
            f"kernel {100 * row['system_share']:4.1f}% of CPU time  {row['minor_faults_per_step']:8.0f} faults/step",
            flush=True,
        )
    result = {
        **provenance(),
        "protocol": {
            "task": "mrpc",
            "method": "full",
            "batch_size": 32,
            "rounds": ROUNDS,
            "timed_steps": len(measured["glibc"][0]["step_times_s"]),
        },
        "rows": rows,
    }
    write_json_atomic(result, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
