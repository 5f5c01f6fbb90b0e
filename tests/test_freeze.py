"""Correct, then freeze, then confirm: a claim's `frozen` ledger entry fixes its design and protocol, only runs made
after it (and after any amendment that follows) give its confirmatory verdict, and the power plan that buys those
runs is written before any of them."""

import math
import shutil
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest
import yaml

from adaptstudy.claims.declarations import Entry, load_declaration
from adaptstudy.claims.evidence import Judgement
from adaptstudy.claims.freeze import confirmatory_since, first_freeze, freeze, frozen_at
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.planning.power import MIN_SEEDS, claim_cells, one_evaluation_set, plan, seeds_needed
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.power_plan import why_unconfirmed

REPORT = PROJECT_ROOT / "src" / "adaptstudy" / "reporting"  # the chapters, each with its claims.yaml
HOULSBY = REPORT / "houlsby" / "claims.yaml"
DECLARATIONS = sorted((PROJECT_ROOT / "src" / "adaptstudy" / "reporting").rglob("claims.yaml"))


def _protocol(path):
    from adaptstudy.reporting.amend import protocol_of

    return protocol_of(path)


def test_freezing_adds_an_entry_to_every_claim_and_refuses_a_ledger_that_does_not_account_for_its_design(tmp_path):
    copy = tmp_path / "claims.yaml"
    shutil.copy(HOULSBY, copy)
    protocol = _protocol(HOULSBY)
    when = datetime(2030, 1, 1, tzinfo=timezone.utc)
    names = freeze(copy, "designs fixed for confirmation", 289, protocol, when=when, refreeze=True)
    frozen = load_declaration(copy)
    assert sorted(names) == sorted(frozen.claims) and len(names) == 11
    for claim in frozen.claims.values():
        assert claim.ledger[-1].event == "frozen" and frozen_at(claim) == when
        assert confirmatory_since(claim) == when and claim.unamended(protocol) == ""
    raw = yaml.safe_load(HOULSBY.read_text())
    raw["claims"]["parity"]["rule"]["threshold"] = -2.0  # an edit the ledger does not account for
    copy.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match="not frozen, amend first: parity: the design has fingerprint"):
        freeze(copy, "too early", 289, protocol, refreeze=True)


def test_a_frozen_claim_is_frozen_again_only_when_asked_and_named_claims_alone_are_frozen(tmp_path):
    """A second freeze moves a claim's confirmatory runs to after it: refused, naming the claims, unless asked;
    `names` freezes those claims only, and a name the file does not declare is refused with the valid ones."""
    base = PROJECT_ROOT / "src" / "adaptstudy" / "reporting" / "houlsby_base" / "claims.yaml"
    copy = tmp_path / "claims.yaml"
    shutil.copy(base, copy)
    protocol, when = _protocol(base), datetime(2030, 1, 1, tzinfo=timezone.utc)
    with pytest.raises(ValueError, match=r"already frozen: .*ablation-one \(frozen 2026-12-05 15:18\)"):
        freeze(copy, "again", 24, protocol, when=when)
    assert load_declaration(copy) == load_declaration(base)  # nothing written
    with pytest.raises(ValueError, match="no claim named parity-65; its claims: parity-64, "):
        freeze(copy, "a typo", 24, protocol, when=when, names=["parity-65"])
    assert freeze(copy, "again, asked", 24, protocol, when=when, names=["parity-64"], refreeze=True) == ["parity-64"]
    claims = load_declaration(copy).claims
    assert frozen_at(claims["parity-64"]) == when
    assert frozen_at(claims["ablation-one"]) == frozen_at(load_declaration(base).claims["ablation-one"])


def test_the_claims_over_five_tasks_were_declared_and_frozen_before_any_of_their_runs():
    from adaptstudy.reporting.common import load_runs
    from adaptstudy.reporting.houlsby_base.claims import BACKBONE_OF
    from adaptstudy.runs.records import made_at

    claims = load_declaration(PROJECT_ROOT / "src" / "adaptstudy" / "reporting" / "houlsby_base" / "claims.yaml")
    runs = load_runs(PROJECT_ROOT / "results" / "houlsby_base")
    for name in ("parity-64-glue", "parity-64-l3"):
        claim = claims.claims[name]
        assert [e.event for e in claim.ledger[:3]] == ["declared", "recorded", "frozen"], name
        mine = runs[runs["backbone"] == BACKBONE_OF[name]]
        new_cells = mine[~mine["task"].isin(["mrpc", "cola"]) | (mine["backbone"] != "mpnet-base")]
        made = pd.to_datetime(made_at(new_cells), utc=True, format="ISO8601")
        assert (made > pd.Timestamp(frozen_at(claim))).all(), f"{name}: a run of its new cells predates its freeze"


def test_an_amendment_after_the_freeze_moves_confirmation_to_after_it_and_a_claim_never_frozen_has_none():
    claim = load_declaration(HOULSBY).claims["parity"]
    bare = claim.model_copy(update={"ledger": [e for e in claim.ledger if e.event != "frozen"]})
    assert frozen_at(bare) is None and confirmatory_since(bare) is None
    when = bare.last_change + timedelta(days=1)
    frozen = Entry(event="frozen", date=when, fingerprint=claim.fingerprint(), protocol=claim.recorded_protocol)
    later = Entry(
        event="amended",
        date=when + timedelta(hours=5),
        reason="a correction after the freeze",
        was={"smallest_effect": 0.3},
        fingerprint=claim.fingerprint(),
        protocol=claim.recorded_protocol,
    )
    assert confirmatory_since(bare.model_copy(update={"ledger": [*bare.ledger, frozen]})) == when
    amended = bare.model_copy(update={"ledger": [*bare.ledger, frozen, later]})
    assert confirmatory_since(amended) == when + timedelta(hours=5)  # the fresh seeds before it are spent


def test_seeds_to_decide_shrink_the_seeds_share_of_the_variance_but_never_the_examples():
    j = Judgement(0.0, -2.0, 2.0, 3, "inconclusive", "t", se=1.0, df=4, example_var=0.25)
    seeds, floor = seeds_needed(j, 4.2)  # one seed's variance 2.25; (4.2 / 2.80)² − 0.25 = 2.0 of room
    assert seeds == MIN_SEEDS and math.isclose(floor, 1.4, rel_tol=1e-2)
    assert seeds_needed(j, 2.1)[0] == math.ceil(2.25 / ((2.1 / 2.8016) ** 2 - 0.25))
    assert seeds_needed(j, 1.0) == (None, floor)  # the examples alone are wider than the distance


@pytest.fixture(scope="module")
def planned(committed_verdicts):
    return plan(committed_verdicts[0], PROJECT_ROOT / "results")


def test_the_power_plan_lists_every_claim_once_keeps_to_its_budget_and_buys_a_shared_cell_once(planned):
    from adaptstudy.claims.catalog import CLAIMS

    table, taken = planned
    assert table["claim"].is_unique and set(table["claim"]) == set(CLAIMS.names())
    bought = table[table["taken"] == "yes"]
    assert bought["cumulative"].max() <= 14.0
    assert bought["CPU-hours"].sum() == pytest.approx(bought["cumulative"].max(), abs=0.005 * len(bought) + 1e-9)
    assert (bought["seeds per arm"] >= MIN_SEEDS).all() and table["why"].str.len().gt(0).all()
    seeds = [(cell, s) for cell, ss in taken.items() for s in ss]
    assert len(seeds) == len(set(seeds)) and all(s > 0 for _, s in seeds)  # never the selection seed


HEADLINES = ["houlsby.parity", "houlsby.parity-64", "fusion.beats-st-a", "fusion.beats-full"]


def test_a_later_plan_buys_the_headlines_first_leaves_out_what_was_bought_and_costs_runs_on_its_machine(
    committed_verdicts,
):
    """A later plan takes only what the first did not buy, the headline claims before the others, and costs each
    cell at the seconds its records paid on the plan's kind of machine (others scaled by the kinds' measured
    ratio): on AVX2 in fp32, a run of a cell measured in bf16 costs about twice its seconds."""
    from adaptstudy.planning.allocation import chapter_records
    from adaptstudy.planning.power import cell_seconds, kind_ratio

    first_plan = pd.read_csv(PROJECT_ROOT / "params/cpu/confirm/power/plan.csv")
    bought = first_plan.query("taken == 'yes'")["claim"].tolist()
    table, _ = plan(
        committed_verdicts[0], PROJECT_ROOT / "results", 40, first=HEADLINES, skip=bought, kind="fp32 on AVX2"
    )
    assert not set(bought) & set(table["claim"])
    taken = table[table["taken"] == "yes"].sort_values("cumulative", kind="stable")  # ties: in the order bought
    assert set(taken["claim"].head(len(HEADLINES))) == set(HEADLINES)  # within the budget, the headlines first
    records = chapter_records(PROJECT_ROOT / "results")
    ratio = kind_ratio(records, "fp32 on AVX2")
    assert 1.5 < ratio < 3.0 and kind_ratio(records, "no such machine") == 1.0
    runs = [{"train_runtime_s": 90.0, "machine": {"cpu_capability": "AVX512"}, "precision_used": "bf16"}]
    assert cell_seconds(runs, "fp32 on AVX2", ratio) == pytest.approx(90.0 * ratio)
    here = [*runs, {"train_runtime_s": 200.0, "machine": {"cpu_capability": "AVX2"}, "precision_used": "fp32"}]
    assert cell_seconds(here, "fp32 on AVX2", ratio) == 200.0 and cell_seconds(here, None, ratio) == 145.0


def test_a_later_plan_names_a_wrong_claim_or_plan_before_reading_any_record(tmp_path, capsys):
    from adaptstudy.planning.power import main

    assert main([str(tmp_path / "no-records"), "--first", "houlsby.parity", "houlsby.pariti"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("error: --first or --only names ['houlsby.pariti'], not declared claims; valid: ")
        and "houlsby.parity" in err
    )
    assert main([str(tmp_path / "no-records"), "--after", str(tmp_path / "plan.csv")]) == 2
    assert capsys.readouterr().err.strip() == f"error: --after {tmp_path / 'plan.csv'}: no such file"


def test_the_planner_scores_an_arm_and_its_partner_on_one_evaluation_set(committed_verdicts):
    """Every claim's cells of one task are bought on one evaluation set (the DSP arms once mixed the whole split
    with its 500-example cap, so their fresh intervals could not be widened); cells that would mix are refused."""
    import json

    from adaptstudy.planning.allocation import PlanCell, chapter_records

    records = chapter_records(PROJECT_ROOT / "results")
    for v in committed_verdicts[0]:
        if v.run_ids:
            sets: dict[str, set] = {}
            for cell in claim_cells(v, records):
                settings = json.loads(cell.settings)
                sets.setdefault(str(settings.get("task") or settings.get("tasks")), set()).add(
                    settings.get("max_eval_examples")
                )
            assert all(len(caps) == 1 for caps in sets.values()), (v.claim.key, sets)
    whole = PlanCell("dsp", "finetune", json.dumps({"task": "imdb", "method": "full", "max_eval_examples": None}))
    capped = PlanCell("dsp", "finetune", json.dumps({"task": "imdb", "method": "pfeiffer", "max_eval_examples": 500}))
    with pytest.raises(ValueError, match="dsp.x: its cells would be scored on different evaluation sets"):
        one_evaluation_set("dsp.x", {whole, capped})


def test_a_claim_without_a_confirmatory_verdict_says_why_and_what_it_would_cost():
    plan_rows = {
        "a.b": {"taken": "no", "why": "a reading only: deciding it takes 40 fresh seeds per arm", "CPU-hours": 3.2},
        "a.c": {"taken": "yes", "seeds per arm": 5, "CPU-hours": 0.4, "why": "decides it"},
    }
    assert why_unconfirmed("a.b", plan_rows) == (
        "not run on fresh seeds yet: not bought (needs about 40 seeds per arm, 3.2 CPU-hours)"
    )
    assert why_unconfirmed("a.c", plan_rows) == "planned, not run yet: 5 fresh seeds per arm, 0.4 CPU-hours"
    assert why_unconfirmed("a.d", plan_rows) == "not run on fresh seeds yet: not in the confirmation plan"


@pytest.mark.parametrize("path", DECLARATIONS, ids=lambda p: p.parent.name)
def test_every_claim_is_frozen_after_its_last_change(path):
    for name, claim in load_declaration(path).claims.items():
        assert frozen_at(claim) is not None, f"{path.parent.name}.{name} is not frozen"
        changes = [e for e in claim.ledger if e.event not in ("refactor", "recorded")]  # those keep what stood
        assert frozen_at(claim) >= claim.last_change or changes[-1].event == "amended", name


def test_no_confirmatory_verdict_rests_on_a_run_made_before_its_claims_freeze(committed_verdicts):
    from adaptstudy.reporting.scorecard import chapter_runs, confirmatory

    runs = chapter_runs(PROJECT_ROOT / "results")
    seconds = committed_verdicts[1].drop_duplicates("run_id").set_index("run_id")["finished_at"]
    for key, v in confirmatory(runs, committed_verdicts[0]).items():
        since = pd.Timestamp(confirmatory_since(v.claim.declared))
        made = pd.to_datetime(seconds.reindex(sorted(v.run_ids)), utc=True, format="ISO8601")
        assert (made >= since).all(), f"{key}: {int((made < since).sum())} runs predate its freeze"


def test_every_fresh_run_is_in_the_power_plan_and_made_after_the_plan_was_committed():
    """Fresh runs of the frozen claims are the plan's: each finished after its sweep file's first commit (and the
    plan's), and no run of the chapters it covers was made after the freeze outside it (the base-size claims have
    their own grids)."""
    import subprocess

    from adaptstudy.reporting.common import load_runs
    from adaptstudy.reporting.power_plan import POWER_PLAN, later_plans
    from adaptstudy.runs.records import made_at

    def first_commit(path) -> pd.Timestamp:
        committed = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%cI", "--", str(path)],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert committed, f"{path.name} is not committed"
        return pd.Timestamp(committed[-1])

    # a run is planned by the first sweep file that lists it, committed before the run finished (an addendum too),
    # in the first plan or a later one
    since: dict[str, pd.Timestamp] = {}
    for folder in (POWER_PLAN.parent, *later_plans()):
        plan_time = first_commit(folder / "plan.csv")
        for run_ids in folder.glob("*.run_ids"):
            committed = max(plan_time, first_commit(run_ids))
            for i in run_ids.read_text().split():
                since[i] = min(since.get(i, committed), committed)
    planned = set(since)
    freeze_time = first_freeze(REPORT)
    assert freeze_time is not None
    for study in ("houlsby", "peft_imdb", "dsp", "fusion", "hyperformer"):
        runs = load_runs(PROJECT_ROOT / "results" / study)
        if runs.empty:
            continue
        made = pd.to_datetime(made_at(runs), utc=True, format="ISO8601")
        ours = runs["run_id"].isin(planned)
        in_time = made[ours] > runs.loc[ours, "run_id"].map(since)
        assert in_time.all(), f"{study}: a planned run finished before its sweep file was committed"
        after = (made >= pd.Timestamp(freeze_time)) & (runs["seed"] != 0)
        assert not (after & ~ours).any(), f"{study}: {list(runs.loc[after & ~ours, 'run_id'])} are in no plan"


def test_a_prerequisite_trained_again_to_other_metrics_is_no_fresh_seed_and_its_cost_is_the_plans():
    """The Hyperformer++ transfer source (seed 0, five GLUE tasks) was first trained on 27 November; a cache without
    its artifact trained it again after the freeze, to other metrics, and the new record replaced the old. It was
    made in November (not a fresh seed), and what its trainings after the freeze cost is the confirmation's."""
    from adaptstudy.reporting.common import load_runs
    from adaptstudy.runs.records import made_at, paid_since

    runs = load_runs(PROJECT_ROOT / "results" / "hyperformer").set_index("run_id", drop=False)
    source = runs.loc[["84d690388213c146"]]
    record = source["record"].iloc[0]
    assert pd.Timestamp(record["finished_at"]) > pd.Timestamp(first_freeze(REPORT))  # the record is the new training's
    assert made_at(source).iloc[0].startswith("2026-11-27")
    since = first_freeze(REPORT).isoformat()
    trainings = [record, *record["retrained"]]
    after = [t for t in trainings if pd.Timestamp(t["finished_at"]) >= pd.Timestamp(since)]
    assert 0 < len(after) < len(trainings)  # the November trainings were paid before
    paid = paid_since(source, since).iloc[0]
    assert paid == pytest.approx(sum(t["train_runtime_s"] + t["eval_runtime_s"] for t in after))
    assert paid > record["train_runtime_s"]


def test_what_a_run_paid_since_a_time_counts_its_layer_ablation_with_its_training():
    """A layer ablation evaluates the dev set once per span after training: a machine that trains such a run again
    pays for it too."""
    from adaptstudy.reporting.common import load_runs
    from adaptstudy.runs.records import ablation_seconds, paid_since

    runs = load_runs(PROJECT_ROOT / "results" / "houlsby_base")
    ablated = runs[runs["record"].map(lambda r: bool(r.get("layer_ablation")) and not r.get("retrained"))].head(1)
    assert len(ablated) == 1
    record = ablated["record"].iloc[0]
    assert ablation_seconds(ablated).iloc[0] > 0
    paid = paid_since(ablated, record["finished_at"]).iloc[0]
    assert paid == pytest.approx(
        record["train_runtime_s"] + record["eval_runtime_s"] + ablation_seconds(ablated).iloc[0]
    )
    later = (pd.Timestamp(record["finished_at"]) + pd.Timedelta(seconds=1)).isoformat()
    assert paid_since(ablated, later).iloc[0] == 0.0


def test_the_plan_note_counts_every_committed_fresh_run_once():
    """The scorecard's account of the plan: its landed runs are the committed records of its cells, in every study."""
    import json
    import re

    from adaptstudy.reporting.power_plan import POWER_PLAN, plan_note

    ids = set()
    for run_ids in POWER_PLAN.parent.glob("*.run_ids"):
        ids |= set(run_ids.read_text(encoding="utf-8").split())
    records = [json.loads(p.read_text(encoding="utf-8")) for p in (PROJECT_ROOT / "results").glob("*/*.json")]
    landed = {r["run_id"] for r in records if r["run_id"] in ids}
    note = plan_note(PROJECT_ROOT / "results")
    assert f"Landed so far: {len(landed)} of its {len(ids)} fresh runs" in note
    spent, again, total = map(
        float, re.search(r"([\d.]+) CPU-hours spent.*?([\d.]+) more.*?([\d.]+) CPU-hours in all", note).groups()
    )
    assert total == pytest.approx(spent + again, abs=0.11)
    budget, left = map(float, re.search(r"of its budget of ([\d.]+): (-?[\d.]+) left", note).groups())
    assert left == pytest.approx(budget - total, abs=0.11)


def test_a_claim_amended_after_its_freeze_says_its_fresh_seeds_were_spent():
    """hyperformer.few-shot's fresh seeds started from a transfer source trained again after the freeze to other
    metrics; the amendment that says so spends them, and the scorecard says that rather than 'planned, not run'."""
    from adaptstudy.reporting.power_plan import power_plan

    said = why_unconfirmed("hyperformer.few-shot", power_plan())
    assert said.startswith("none since its amendment of 6 December 2026, after its freeze")
    assert why_unconfirmed("hyperformer.low-resource", power_plan()).startswith(
        "not run on fresh seeds yet: not bought"
    )


def test_the_freeze_command_refreezes_only_when_asked_and_names_the_records_that_stop_confirming(
    tmp_path, monkeypatch, capsys
):
    from adaptstudy.reporting import amend

    base = PROJECT_ROOT / "src" / "adaptstudy" / "reporting" / "houlsby_base" / "claims.yaml"
    copy = tmp_path / "claims.yaml"
    shutil.copy(base, copy)
    protocol = _protocol(base)
    monkeypatch.setattr(amend, "protocol_of", lambda path: protocol)
    results = str(PROJECT_ROOT / "results" / "houlsby_base")
    argv = [str(copy), "--freeze", "--claims", "ablation-one", "--reason", "again", "--results-dir", results]
    assert amend.main(argv) == 2
    assert "already frozen: ablation-one (frozen 2026-12-05 15:18)" in capsys.readouterr().err
    assert amend.main([*argv, "--refreeze"]) == 0
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("ablation-one: "))
    assert "records of houlsby_base, made since its freeze of 2026-12-05 15:18, no longer confirm it: " in line
    assert "e1feb7f4df9c8bdb" in line  # MRPC, size 64, seed 1: made after that freeze


def test_a_later_plan_is_on_the_plan_s_page_with_the_machine_its_costs_were_measured_on():
    """A later plan's costs are in seconds of the machine kind that wrote it: the page names it, the claims it bought
    read 'planned' (not 'not bought') until their fresh runs land, and its cells train in the one precision it set."""
    import json

    from adaptstudy.planning.allocation import PlanCell
    from adaptstudy.planning.power import at_precision
    from adaptstudy.reporting.power_plan import every_plan, later_plans, plan_note, why_unconfirmed

    folder = PROJECT_ROOT / "params" / "cpu" / "confirm" / "power-houlsby"
    assert folder in later_plans()
    costed = json.loads((folder / "costed.json").read_text())
    note = plan_note(PROJECT_ROOT / "results")
    assert f"estimated on {costed['kind']} ({costed['machine']['cpu']}, 2 cores" in note
    assert "houlsby.parity, houlsby.parity-64" in note and "trains in fp32 on every machine" in note
    assert why_unconfirmed("houlsby.parity", every_plan()).startswith("planned, not run yet: 3 fresh seeds per arm")
    cell = PlanCell("houlsby", "finetune", json.dumps({"task": "rte", "precision": "auto"}))
    assert json.loads(at_precision(cell, "fp32").settings) == {"task": "rte", "precision": "fp32"}


def test_every_later_plan_was_committed_before_any_of_its_runs_finished():
    """A plan written after its runs would be chosen by them: each later plan's commit precedes the first of its
    runs' records (when each was first made)."""
    import subprocess

    from adaptstudy.reporting.power_plan import later_plans
    from adaptstudy.runs.records import made_at

    if not (PROJECT_ROOT / ".git").exists():
        pytest.skip("needs the repository's history")
    for folder in later_plans():
        log = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%cI", "--", str(folder / "plan.csv")],
            cwd=PROJECT_ROOT, capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        assert log, f"{folder.name}: its plan is not committed"
        committed = pd.Timestamp(log[-1])
        ids = {i for f in folder.glob("*.run_ids") for i in f.read_text().split()}
        runs = pd.concat([load_runs(p) for p in (PROJECT_ROOT / "results").iterdir() if p.is_dir()])
        mine = runs[runs["run_id"].isin(ids)]
        made = pd.to_datetime(made_at(mine), utc=True, format="ISO8601")
        assert (made > committed).all(), f"{folder.name}: a run finished before the plan was committed"
