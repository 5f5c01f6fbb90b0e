"""Our training path at an earlier commit against the checked-out one, on this machine, in one run.

The throughput benchmark compares our path with the stock recipes on the machine it runs on; its files from
different sessions come from different machines (two "AMD EPYC" VMs measured a 2.1x different bf16 matmul peak), so
they cannot tell whether a change of ours made a machine kind slower. This script can: it checks the earlier commit
out into a temporary git worktree and runs the throughput benchmark's own `ours_*` trainings of both trees,
alternating the trees round by round (earlier, now; now, earlier; ...) so that the VM's drifts fall on both. Each
training runs in its own process with its tree's `src` first on the path, both under the same allocator (the
sweep's), so only the code differs. Step times only (no dev metric): the same rows, shorter.

    python benchmarks/speed_vs_commit.py --against <commit>  # about 15 minutes on AVX512-BF16
    # writes benchmarks/results/speed_vs_commit-<kind>.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from throughput import machine_kind

from adaptstudy.common.files import write_json_atomic
from adaptstudy.launch.allocator import preload_env
from adaptstudy.training.device import provenance, resolve_precision

ROOT = Path(__file__).resolve().parents[1]
WARMUP = 3
# (workload, the throughput benchmark's function, its arguments): its rows with fewer examples and no evaluation
JOBS = (
    ("sst2/full", "ours_classification", ("sst2", "full", 1000, 32, False, 0)),
    ("sst2/houlsby", "ours_classification", ("sst2", "houlsby", 1000, 32, False, 0)),
    ("mrpc/full", "ours_classification", ("mrpc", "full", 640, 32, False, 0)),
    ("mrpc/houlsby", "ours_classification", ("mrpc", "houlsby", 640, 32, False, 0)),
    ("mlm/imdb", "ours_mlm", (800, 256, 10, 16)),
)


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout.strip()


def step_times(tree: Path, fn: str, args: tuple) -> list[float]:
    """The timed steps (after `WARMUP`) of `fn(*args)` as `tree`'s throughput benchmark runs it, in a process of its
    own with `tree/src` first on the path."""
    env = {**preload_env(os.environ), "PYTHONPATH": str(tree / "src")}
    job = json.dumps({"fn": fn, "args": args, "kw": {}})
    done = subprocess.run(
        [sys.executable, str(tree / "benchmarks" / "throughput.py"), "--child", job],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"{fn}{args} at {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["step_times"][WARMUP:]


def compare(trees: dict[str, Path], rounds: int) -> list[dict]:
    """Each workload's median step per tree, the trees alternating round by round, and the earlier tree's step over
    the current one's (above 1: the current code is faster), over all rounds and round by round (its spread is the
    noise a verdict must exceed)."""
    rows = []
    for workload, fn, args in JOBS:
        runs = {name: [] for name in trees}
        for r in range(rounds):
            for name in list(trees)[:: 1 if r % 2 == 0 else -1]:
                runs[name].append(step_times(trees[name], fn, args))
        median = {name: statistics.median(t for run in rs for t in run) for name, rs in runs.items()}
        per_round = [statistics.median(e) / statistics.median(n) for e, n in zip(runs["earlier"], runs["now"])]
        row = {
            "row": workload,
            "median_step_s": median,
            "timed_steps": {name: sum(map(len, rs)) for name, rs in runs.items()},
            "earlier_over_now": median["earlier"] / median["now"],
            "earlier_over_now_per_round": per_round,
        }
        print(
            f"{workload}: earlier {median['earlier']:.3f} s, now {median['now']:.3f} s per step, "
            f"{row['earlier_over_now']:.2f}x (rounds {min(per_round):.2f}-{max(per_round):.2f}x)",
            flush=True,
        )
        rows.append(row)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the earlier commit (any git revision)")
    parser.add_argument("--rounds", type=int, default=4, help="trainings per tree and workload (default 4)")
    parser.add_argument("--out", type=Path, help="JSON path (default: benchmarks/results/speed_vs_commit-<kind>.json)")
    args = parser.parse_args(argv)
    try:
        earlier = git("rev-parse", "--verify", f"{args.against}^{{commit}}")
    except subprocess.CalledProcessError:
        parser.error(f"--against {args.against!r} is not a commit of {ROOT}")
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, not {args.rounds}")
    precision = resolve_precision("auto")
    print(f"our path in {precision}: {earlier[:7]} (earlier) against {git('rev-parse', 'HEAD')[:7]} (now)", flush=True)
    with tempfile.TemporaryDirectory(prefix="speed-vs-commit-") as scratch:
        tree = Path(scratch) / "earlier"
        git("worktree", "add", "--detach", str(tree), earlier)
        try:
            rows = compare({"earlier": tree, "now": ROOT}, args.rounds)
        finally:
            git("worktree", "remove", "--force", str(tree))
    out = {
        **provenance(),
        "earlier_commit": earlier,
        "precision": precision,
        "kind": machine_kind(precision),
        "rounds": args.rounds,
        "rows": rows,
    }
    path = args.out or ROOT / "benchmarks" / "results" / f"speed_vs_commit-{out['kind']}.json"
    write_json_atomic(out, path)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
