"""The Efficiency page: the committed measurements (throughput per machine kind, profiles, fp32 candidates, the
sweep comparison), read as the page shows them."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from adaptstudy.reporting.efficiency.candidates import (
    allocator_note,
    attention_note,
    candidates_note,
    candidates_table,
)
from adaptstudy.reporting.efficiency.sweeps import PARALLEL_GAIN, parallel_note, parallel_table
from adaptstudy.reporting.efficiency.tables import (
    commit_note,
    commit_table,
    efficiency_table,
    load_benchmark,
    load_benchmarks,
    load_commit_comparisons,
    machine_kind,
    machine_note,
    machine_notes,
    profile_table,
    side_by_side,
    targets,
)

COMMITTED = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "parallel_sweep.json"


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(COMMITTED.read_text())


def test_the_committed_comparison_ran_the_same_cells_both_ways_on_a_described_machine(committed):
    here, ray = committed["engines"]["in process"], committed["engines"]["ray"]
    assert here["cells"] == ray["cells"] == 6 and set(here["metrics"]) == set(ray["metrics"])
    assert here["torch_threads"] == [committed["machine"]["cores"]] and ray["torch_threads"] == [1]
    assert committed["speedup"] == pytest.approx(ray["cells_per_hour"] / here["cells_per_hour"])
    assert {"cpu", "cores", "cpu_capability", "precision"} <= set(committed["machine"])


def test_the_table_has_a_row_per_engine_with_cells_per_hour(committed):
    table = parallel_table(committed).set_index("engine")
    assert list(table.index) == ["in process", "ray"]
    assert table.loc["ray", "cells per hour"] == pytest.approx(committed["engines"]["ray"]["cells_per_hour"])
    minutes = (
        table["training and evaluation, over the cells at once (min)"] + table["the rest: start-up, loading (min)"]
    )
    assert minutes.tolist() == pytest.approx(table["wall (min)"].tolist())


@pytest.mark.parametrize("gain", [0.96, 1.2])
def test_the_note_gives_the_ratio_and_keeps_one_worker_the_default_unless_two_beat_it(committed, gain):
    benchmark = copy.deepcopy(committed)
    benchmark["speedup"] = gain
    note = parallel_note(benchmark)
    assert f"**{gain:.2f}×**" in note and committed["machine"]["cpu"] in note
    if gain >= PARALLEL_GAIN:
        assert "worth running with `--workers 2 --threads 1`" in note
    else:
        assert "Two workers did not beat one process here, so on a CPU the default stays one worker" in note


def test_a_missing_measurement_says_how_to_make_it(tmp_path):
    assert "benchmarks/parallel_sweep.py" in parallel_note(load_benchmark(tmp_path / "none.json"))
    assert parallel_table(load_benchmark(tmp_path / "none.json")).empty


RESULTS = COMMITTED.parent


def test_each_machine_kind_has_its_benchmark_and_a_full_run_wins_over_a_quick_one(tmp_path):
    bf16 = json.loads((RESULTS / "throughput-avx512-bf16.json").read_text())
    assert machine_kind(bf16) == "avx512-bf16"  # written before files said their kind
    quick = {**copy.deepcopy(bf16), "quick": True, "machine": {**bf16["machine"], "kind": "avx2-fp32"}}
    full = {**copy.deepcopy(quick), "quick": False}
    for name, content in (("throughput-avx2-fp32-quick.json", quick), ("throughput-avx512-bf16.json", bf16)):
        (tmp_path / name).write_text(json.dumps(content))
    assert load_benchmarks(tmp_path)["avx2-fp32"]["quick"]
    partial = {**full, "partial": True}  # `--rows`: some rows only
    (tmp_path / "throughput-avx2-fp32-partial.json").write_text(json.dumps(partial))
    assert load_benchmarks(tmp_path)["avx2-fp32"]["quick"]
    (tmp_path / "throughput-avx2-fp32.json").write_text(json.dumps(full))
    found = load_benchmarks(tmp_path)
    assert list(found) == ["avx2-fp32", "avx512-bf16"] and not found["avx2-fp32"]["quick"]
    table = side_by_side(found).set_index(["workload", "path"])
    mlm = table.loc[("mlm/imdb", "ours")]
    assert mlm["× stock, avx512-bf16"] == pytest.approx(
        next(r for r in bf16["rows"] if r["row"] == "mlm/imdb" and r["path"] == "ours")["speedup_tokens"]
    )
    assert "**avx2-fp32**" in machine_notes(found) and "Not measured yet" in machine_notes({})


def test_targets_follow_the_machine_kind():
    bf16 = json.loads((RESULTS / "throughput-avx512-bf16.json").read_text())
    fp32 = {**copy.deepcopy(bf16), "machine": {**bf16["machine"], "kind": "avx2-fp32"}}
    approx = {**copy.deepcopy(bf16), "machine": {**bf16["machine"], "kind": "avx2-fp32-approx"}}
    aims = {kind: targets(b) for kind, b in (("avx512-bf16", bf16), ("avx2-fp32", fp32))}
    assert targets(approx).equals(aims["avx2-fp32"])  # an approximation answers to the kind it stands for
    sst2 = {k: t[t["workload"] == "sst2/full"]["target"].iloc[0] for k, t in aims.items()}
    assert sst2 == {"avx512-bf16": "≥ 3× the stock train examples/s", "avx2-fp32": "≥ 6× the stock train examples/s"}
    mfu = aims["avx2-fp32"][aims["avx2-fp32"]["target"].str.startswith("MFU")]
    assert mfu["workload"].tolist() == ["mrpc/full", "mlm/imdb"] and mfu["target"].str.contains("50%").all()


def test_the_profiles_and_candidates_read_as_the_page_shows_them():
    profiles = {
        w: load_benchmark(RESULTS / f)
        for w, f in (
            ("before", "profile_step-before.json"),
            ("after", "profile_step.json"),
            ("approx", "profile_step-avx2-approx.json"),
        )
    }
    table = profile_table(profiles)
    assert set(table["profile"]) == {"before", "after", "approx"} and (table["matmul"] > 40).all()
    by_profile = table.groupby("profile", sort=False)["workload"].apply(list)
    assert by_profile["approx"] == by_profile["before"] == list(profiles["before"]["workloads"])  # one order
    rate = table.set_index("profile")["matmul rate (% of peak)"]
    assert rate[["before", "after"]].isna().all()  # profiled before the rate was
    assert rate["approx"].between(30, 110).all()  # FLOPs from the operators' shapes, over their self time
    shares = table.drop(columns=["profile", "workload", "step (ms)", "data", "matmul rate (% of peak)"]).sum(axis=1)
    assert shares.tolist() == pytest.approx([100.0] * len(table), abs=1.0)  # operators + Python and framework
    candidates = load_benchmark(RESULTS / "fp32_candidates.json")
    rows = candidates_table(candidates)
    assert rows.groupby("task")["× before"].first().tolist() == [1.0, 1.0]
    note = candidates_note(candidates)
    assert "**Dropped: `torch.compile`**" in note and candidates["machine"]["cpu"] in note
    assert "Not measured yet" in candidates_note({})
    mlm = load_benchmark(RESULTS / "mlm_candidates.json")
    line = candidates_note(candidates, mlm=mlm).splitlines()[-3]  # before the attention's and the allocator's
    eager, compiled = (r["median_step_s"] for r in mlm["rows"])
    assert line.startswith(f"- **{'Kept' if compiled < eager else 'Dropped'} for the masked LM: `torch.compile`**")
    assert f"{1000 * compiled:.0f} ms per step against {1000 * eager:.0f} eager" in line


def test_the_allocator_line_keeps_tcmalloc_only_where_it_is_faster_every_round_or_leaner_at_the_same_speed():
    protocol = {"task": "mrpc", "batch_size": 32, "rounds": 5, "timed_steps": 30}
    glibc = {"allocator": "glibc", "median_step_s": 1.0, "speedup_vs_glibc": 1.0, "speedup_range": [1.0, 1.0]}
    glibc |= {"system_share": 0.012, "minor_faults_per_step": 2863.0, "peak_rss_added_mb": 1000.0}
    tc = {"allocator": "tcmalloc", "median_step_s": 1.02, "speedup_vs_glibc": 0.98, "speedup_range": [0.9, 1.1]}
    tc |= {"system_share": 0.001, "minor_faults_per_step": 10.0, "peak_rss_added_mb": 850.0}
    note = allocator_note({"rows": [glibc, tc], "protocol": protocol})
    assert note.startswith("- **Dropped: tcmalloc** (neither 5% faster in every round nor 20% less peak memory")
    assert "glibc 1000 ms (×1.00), +1000 MB, tcmalloc 1020 ms (×0.98), +850 MB." in note
    assert note.endswith("takes 1.2% of the step's CPU time (2,863 page faults per step).")
    leaner = allocator_note({"rows": [glibc, tc | {"peak_rss_added_mb": 600.0}], "protocol": protocol})
    assert leaner.startswith("- **Kept: tcmalloc**, which `python -m adaptstudy.sweep` preloads")
    assert "peak memory +600 MB against glibc's +1000 MB, speed 0.98× glibc (0.90–1.10 over the rounds)" in leaner
    slower = tc | {"peak_rss_added_mb": 600.0, "speedup_vs_glibc": 0.9}
    assert "Dropped" in allocator_note({"rows": [glibc, slower], "protocol": protocol})
    faster = tc | {"speedup_vs_glibc": 1.2, "speedup_range": [1.06, 1.3]}
    assert "Kept" in allocator_note({"rows": [glibc, faster], "protocol": protocol})
    assert "not measured yet" in allocator_note(load_benchmark("/nonexistent/allocator.json"))


def test_the_committed_avx2_run_shows_no_bf16_utilization_and_says_which_targets_it_met():
    """On AVX2 bf16 is emulated (about 1 GFLOP/s): utilization of that 'peak' would read thousands of percent."""
    fp32 = json.loads((RESULTS / "throughput-avx2-fp32.json").read_text())
    assert not fp32["quick"] and fp32["machine"]["native_bf16"] is False
    assert "MFU % (bf16 peak)" not in efficiency_table(fp32)
    assert "MFU % (bf16 peak)" in efficiency_table(json.loads((RESULTS / "throughput-avx512-bf16.json").read_text()))
    table = targets(fp32)
    assert not table["measured"].str.contains("bf16").any() and set(table["met"]) <= {"yes", "no"}
    speed = table[table["target"].str.startswith("≥")].set_index("workload")["measured"]
    assert speed.str.rstrip("×").astype(float).min() >= 3.0  # every row's speed-up, as committed


def test_the_approximated_avx2_run_shows_no_bf16_utilization_though_its_cpu_has_bf16():
    """Under the ISA limits bf16 is emulated: its measured 'peak' is near zero whatever the CPU flag says."""
    approx = json.loads((RESULTS / "throughput-avx2-fp32-approx.json").read_text())
    assert approx["machine"]["native_bf16"] is True and approx["machine"]["isa_limits"]
    assert "MFU % (bf16 peak)" not in efficiency_table(approx)
    assert not targets(approx)["measured"].str.contains("bf16").any()
    note = machine_note(approx)
    assert "native bf16: no (the CPU has it; the ISA limits emulate it)" in note
    assert f"{approx['machine']['matmul_bf16_flops'] / 1e9:.3g} GFLOP/s in bf16" in note and " 0 GFLOP/s" not in note
    assert "native bf16: yes" in machine_note(json.loads((RESULTS / "throughput-avx512-bf16.json").read_text()))


def test_an_avx512_run_whose_bf16_is_slower_trains_in_fp32_and_answers_to_the_fp32_targets():
    """A Xeon VM with the AVX512-BF16 flag ran bf16 matmuls at half its fp32 speed: `precision: auto` chose fp32, so
    its run is a kind of its own, judged by the AVX2 kind's fp32 targets, and the bf16 peak (below our fp32 rate) is
    no limit to show utilization of."""
    run = json.loads((RESULTS / "throughput-avx512-fp32.json").read_text())
    assert machine_kind(run) == "avx512-fp32" and run["precision"]["ours"] == "fp32"
    assert run["machine"]["native_bf16"] and run["machine"]["bf16_speedup"] < 1
    assert "avx512-fp32" in load_benchmarks(RESULTS)
    assert "MFU % (bf16 peak)" not in efficiency_table(run)
    table = targets(run)
    assert not table["measured"].str.contains("bf16").any()
    assert table[table["target"].str.startswith("MFU")]["target"].str.contains("50%").all()
    assert table[table["workload"] == "sst2/full"]["target"].iloc[0] == "≥ 6× the stock train examples/s"
    assert f"yes, a bf16 matmul at {run['machine']['bf16_speedup']:.2f}× fp32" in machine_note(run)


def test_the_attention_line_keeps_the_kernel_in_use_only_while_none_is_faster():
    kernels = load_benchmark(RESULTS / "attention_kernels.json")
    assert set(kernels["workloads"]) == {"masked LM", "MRPC classification"}
    for w in kernels["workloads"].values():
        assert sum(r["in_use"] for r in w["rows"]) == 1 and len(w["rows"]) >= 2
    line = attention_note(kernels)
    fastest_in_use = all(
        max(w["rows"], key=lambda r: r["speedup_vs_in_use"])["in_use"] for w in kernels["workloads"].values()
    )
    assert line.startswith("- **Kept: the kernels in use**" if fastest_in_use else "- **Faster than the kernel in use")
    assert "`MKL_ENABLE_INSTRUCTIONS=AVX2`" in line  # an approximated machine says so
    slower = copy.deepcopy(kernels)
    mlm = slower["workloads"]["masked LM"]["rows"]
    next(r for r in mlm if r["kernel"] == "eager")["speedup_vs_in_use"] = 1.3
    assert attention_note(slower).startswith("- **Faster than the kernel in use: eager for the masked LM**")
    assert "not measured yet" in attention_note({})


def test_the_commit_comparison_shows_each_workload_at_both_commits_with_its_spread_round_by_round():
    comparison = load_commit_comparisons(RESULTS)["avx512-bf16"]
    table = commit_table(comparison).set_index("workload")
    assert list(table.index) == ["sst2/full", "sst2/houlsby", "mrpc/full", "mrpc/houlsby", "mlm/imdb"]
    ratio = table["step, earlier version (ms)"] / table["step, later version (ms)"]
    assert ratio.tolist() == pytest.approx(table["speed, later over earlier"].tolist())
    for row in comparison["rows"]:
        per_round = row["earlier_over_now_per_round"]
        assert len(per_round) == comparison["rounds"] >= 2
        assert table.loc[row["row"], "round by round"] == f"{min(per_round):.2f}–{max(per_round):.2f}"
    note = commit_note(comparison)
    assert "an earlier version of the code against a later one" in note and comparison["machine"]["cpu"] in note
    assert comparison["earlier_commit"][:7] not in note  # the record names the versions, the page does not
    assert ("changes not yet committed" in note) == comparison["git_commit"].endswith("-dirty")


def test_the_commit_comparison_names_a_revision_that_is_no_commit_before_it_starts():
    script = RESULTS.parent / "speed_vs_commit.py"
    done = subprocess.run(
        [sys.executable, str(script), "--against", "no-such-revision"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "--against 'no-such-revision' is not a commit of" in done.stderr
