"""A user's own claims on their own records: a declaration file and the guide's command give the chapters' verdict
table for a custom task built in a temporary folder, without code; a bad declaration is one clear error."""

import re

import numpy as np
import pandas as pd
import pytest
import yaml

from adaptstudy.reporting import user_claims
from adaptstudy.reporting.selection import arm_precisions
from adaptstudy.runs.finetune_config import FinetuneConfig

LABELS = ["neg", "pos"]


def custom_task(folder) -> dict:
    """A two-class CSV task of 200 test reviews (120 positive: the constant scores 60%)."""
    (folder / "reviews").mkdir()
    rows = ["text,label", *(f"review {i},{'pos' if i % 5 < 3 else 'neg'}" for i in range(200))]
    (folder / "reviews" / "train.csv").write_text("\n".join(rows) + "\n")
    (folder / "reviews" / "test.csv").write_text("\n".join(rows) + "\n")
    return {
        "name": "my-reviews",
        "format": "csv",
        "files": {"train": "reviews/train.csv", "test": "reviews/test.csv"},
        "text_fields": ["text"],
        "label_field": "label",
        "labels": LABELS,
        "metrics": ["accuracy"],
        "main_metric": "accuracy",
    }


DECLARATION = {
    "paper": "my notes",
    "arms": {"lora": {"method": "lora"}, "bitfit": {"method": "bitfit"}},
    "selection_seed": 0,
    "claims": {
        "lora-beats-bitfit": {
            "sentence": "LoRA beats BitFit on my reviews",
            "where": "lab notebook, 3 Dec",
            "published": "–",
            "effect": "LoRA − BitFit (accuracy, points)",
            "arms": ["lora", "bitfit"],
            "units": ["my-reviews"],
            "rule": {"kind": "above", "threshold": 0.0},
        }
    },
}


@pytest.fixture
def user_records(tmp_path, fake_record):
    task = custom_task(tmp_path)
    results = tmp_path / "results"
    for seed in (0, 1, 2, 3):
        for method, score in (("lora", 80.0), ("bitfit", 70.0)):
            config = FinetuneConfig(task=task, method=method, seed=seed, data_dir=str(tmp_path))
            fake_record(config, score + seed * 0.5, folder=results)
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(DECLARATION, allow_unicode=True))
    return path, results


def test_the_readme_command_gives_the_verdict_table_for_a_custom_task(user_records, capsys):
    path, results = user_records
    csv = path.with_suffix(".csv")
    assert user_claims.main([str(path), "--results-dir", str(results), "--csv", str(csv)]) == 0
    printed = capsys.readouterr().out
    assert "LoRA beats BitFit on my reviews" in printed and "holds" in printed
    table = __import__("pandas").read_csv(csv)
    row = table.iloc[0]
    assert row["verdict"] == "holds" and row["seeds"] == 3  # seed 0 chose: it never reports
    assert row["ours: effect [95% CI]"].startswith("+10.0 [")
    assert row["rests on"].startswith("1 of 1 units: my-reviews")


def test_runs_at_the_custom_tasks_constant_are_counted_and_named(user_records):
    path, results = user_records
    declaration = user_claims.load_user_declaration(path)
    runs = user_claims.load_runs(results)
    runs.loc[runs["method"] == "bitfit", "main_metric_value"] = 60.0  # the constant's 60% on these labels
    for record in runs.loc[runs["method"] == "bitfit", "record"]:
        record["metrics"]["accuracy"] = 60.0
    verdict = user_claims.user_verdicts(declaration, runs)[0]
    assert "counted, though they learned nothing: my-reviews (3 runs)" in verdict.rests_on()
    assert np.isclose(verdict.judgements[0].effect, 21.0)


def test_a_claim_naming_an_undefined_arm_is_one_error_naming_it(tmp_path, capsys):
    bad = {**DECLARATION, "arms": {"lora": {"method": "lora"}}}
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(bad, allow_unicode=True))
    (tmp_path / "r").mkdir()
    assert user_claims.main([str(path), "--results-dir", str(tmp_path / "r")]) == 2
    assert "arms ['bitfit'] are used by claims but not defined; defined: ['lora']" in capsys.readouterr().err


def test_a_verdict_whose_runs_mix_precisions_says_so_and_each_arm_states_its_own(user_records):
    path, results = user_records
    declaration = user_claims.load_user_declaration(path)
    runs = user_claims.load_runs(results)
    runs["record"] = [{**r, "precision_used": "bf16"} for r in runs["record"]]
    (verdict,) = user_claims.user_verdicts(declaration, runs)
    assert verdict.precisions() == {"bf16": 6} and "mix precisions" not in verdict.rests_on()
    lora_seed_1 = runs.index[(runs["method"] == "lora") & (runs["seed"] == 1)][0]
    runs.at[lora_seed_1, "record"] = {**runs.at[lora_seed_1, "record"], "precision_used": "fp32"}
    (verdict,) = user_claims.user_verdicts(declaration, runs)
    assert verdict.rests_on().endswith("its runs mix precisions: bf16 (5 runs), fp32 (1 runs)")
    table = arm_precisions(runs, ["method"]).set_index("method")
    assert table.loc["lora"].to_dict() == {"bf16 on an unrecorded CPU": 2, "fp32 on an unrecorded CPU": 1}
    assert table.loc["bitfit"].sum() == 3  # the choosing seed 0 is not among them


def _mrpc_declaration(tmp_path, houlsby: dict, units=("mrpc",)) -> object:
    declaration = {
        "paper": "Houlsby et al. 2019, read by a user",
        "arms": {"houlsby-64": houlsby, "full": {"method": "full", "learning_rate": 1.0e-4}},
        "selection_seed": 0,
        "claims": {
            "mrpc-parity": {
                "sentence": "Size-64 adapters come within a point of full fine-tuning on MRPC",
                "where": "§3.2",
                "published": "–",
                "effect": "houlsby-64 − full (F1, points)",
                "arms": ["houlsby-64", "full"],
                "units": list(units),
                "rule": {"kind": "above", "threshold": -1.0},
                "margin_reason": "a loss beyond a point is more than Table 1's 0.8",
            }
        },
    }
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(declaration, allow_unicode=True))
    return user_claims.load_user_declaration(path)


@pytest.fixture(scope="module")
def houlsby_runs():
    from adaptstudy.common.paths import PROJECT_ROOT

    return user_claims.load_runs(PROJECT_ROOT / "results" / "houlsby")


def _reported_64(runs, task: str, rate: float) -> set[str]:
    """The run ids of the plain size-64 adapter runs of `task` at `rate` for 3 epochs, on the reported seeds."""
    configs = runs["record"].map(lambda r: r["config"])
    plain = configs.map(
        lambda c: (
            (c["task"], c["method"], c.get("adapter_size"), c.get("learning_rate"), c.get("num_train_epochs"))
            == (task, "houlsby", 64, rate, 3)
            and c.get("adapter_variant") is None
            and c.get("adapter_init_std") is None
            and c["seed"] != 0
        )
    )
    return set(runs.loc[plain & (runs["status"] == "ok"), "run_id"])


PLAIN_64 = {"method": "houlsby", "adapter_size": 64, "learning_rate": 1.0e-3, "num_train_epochs": 3}


def test_an_arm_rests_on_the_runs_of_its_whole_configuration_only(tmp_path, houlsby_runs):
    """The committed MRPC runs of size 64 at 1e-3 for 3 epochs are plain ones and others with an initialisation
    scale or a variant: the arm means the plain ones (the others' settings are unstated, so plain)."""
    (verdict,) = user_claims.user_verdicts(_mrpc_declaration(tmp_path, PLAIN_64), houlsby_runs)
    used = houlsby_runs[houlsby_runs["run_id"].isin(verdict.run_ids) & (houlsby_runs["method"] == "houlsby")]
    assert set(used["run_id"]) == _reported_64(houlsby_runs, "mrpc", 1.0e-3)
    assert len(used) >= 5 and 0 not in set(used["seed"])
    variant = {**PLAIN_64, "adapter_variant": "tanh"}
    (tanh,) = user_claims.user_verdicts(_mrpc_declaration(tmp_path, variant), houlsby_runs)
    configs = houlsby_runs["record"].map(lambda r: r["config"])
    tanh_runs = configs.map(
        lambda c: (
            (c["task"], c["method"], c.get("adapter_size"), c.get("adapter_variant"), c.get("learning_rate"))
            == ("mrpc", "houlsby", 64, "tanh", 1.0e-3)
            and c.get("num_train_epochs") == 3
        )
    )
    assert tanh_runs.sum() >= 3
    # a stated variant selects its own runs, all of them
    assert tanh.run_ids - verdict.run_ids == set(houlsby_runs.loc[tanh_runs, "run_id"])


def test_an_arm_that_would_pool_several_configurations_stops_with_the_list(tmp_path, houlsby_runs):
    declaration = _mrpc_declaration(tmp_path, {"method": "houlsby", "adapter_size": 64})
    with pytest.raises(ValueError, match="arm 'houlsby-64' on mrpc would pool") as error:
        user_claims.user_verdicts(declaration, houlsby_runs)
    assert "learning_rate=0.001" in str(error.value) and "num_train_epochs=20.0" in str(error.value)


def test_settings_may_differ_per_task(tmp_path, houlsby_runs):
    """Size 64's 3-epoch choice is 1e-3 on MRPC and 3e-3 on STS-B; full fine-tuning's 1e-4 on both."""
    arm = {
        "method": "houlsby",
        "adapter_size": 64,
        "num_train_epochs": 3,
        "per_task": {"mrpc": {"learning_rate": 1.0e-3}, "stsb": {"learning_rate": "3e-3"}},
    }
    (verdict,) = user_claims.user_verdicts(_mrpc_declaration(tmp_path, arm, units=("mrpc", "stsb")), houlsby_runs)
    adapters = _reported_64(houlsby_runs, "mrpc", 1.0e-3) | _reported_64(houlsby_runs, "stsb", 3.0e-3)
    assert verdict.used_units() == ["mrpc", "stsb"] and adapters < verdict.run_ids
    assert {"stsb"} < set(houlsby_runs.loc[houlsby_runs["run_id"].isin(verdict.run_ids), "task"])


@pytest.mark.parametrize(
    "arm, units, message",
    [
        (
            {**PLAIN_64, "adaptor_size": 64},
            ("mrpc",),
            "arm 'houlsby-64': unknown setting 'adaptor_size' (did you mean 'adapter_size'?)",
        ),
        ({**PLAIN_64, "learning_rate": "fast"}, ("mrpc",), "arm 'houlsby-64': learning_rate: 'fast' is not a number"),
        (PLAIN_64, ("MRPC",), "unit 'MRPC': no record has this task (did you mean 'mrpc'?)"),
        ({**PLAIN_64, "learning_rate": 5.0e-2}, ("mrpc",), "arm 'houlsby-64' selects no run of mrpc"),
    ],
)
def test_a_slip_in_a_declaration_is_one_error_naming_it(tmp_path, houlsby_runs, arm, units, message):
    with pytest.raises(ValueError) as error:
        user_claims.user_verdicts(_mrpc_declaration(tmp_path, arm, units), houlsby_runs)
    assert message in str(error.value)


def test_a_rate_written_1e_3_is_read_as_the_number_it_means(tmp_path, houlsby_runs):
    """PyYAML reads `1e-3` (no dot) as text; the arm means the runs at 0.001 all the same."""
    path = tmp_path / "claims.yaml"
    _mrpc_declaration(tmp_path, PLAIN_64)
    path.write_text(path.read_text().replace("learning_rate: 0.001", "learning_rate: 1e-3"))
    declaration = user_claims.load_user_declaration(path)
    assert declaration.arms["houlsby-64"]["learning_rate"] == "1e-3"
    (verdict,) = user_claims.user_verdicts(declaration, houlsby_runs)
    assert _reported_64(houlsby_runs, "mrpc", 1.0e-3) < verdict.run_ids


def test_the_user_table_says_whether_each_verdict_is_exploratory_or_confirmatory(user_records):
    path, results = user_records
    table = user_claims.user_table(user_claims.load_user_declaration(path), user_claims.load_runs(results))
    assert table.loc[0, "status"] == "exploratory: declared now, after its 6 runs"


def test_a_claim_of_closeness_without_the_reason_for_its_margin_stops_naming_it(tmp_path):
    """A margin is part of what a claim asserts: `within`, `above` a negative threshold and `below` a positive one
    say why the margin is what it is, for a user's claims as for the chapters'."""
    declared = _mrpc_declaration(tmp_path, {"method": "houlsby", "adapter_size": 64, "learning_rate": 1.0e-3})
    assert declared.claims["mrpc-parity"].margin_reason
    text = (tmp_path / "claims.yaml").read_text().replace("margin_reason:", "# margin_reason:")
    (tmp_path / "claims.yaml").write_text(text)
    with pytest.raises(ValueError, match="is a claim of closeness \\(rule above -1\\): give `margin_reason`"):
        user_claims.load_user_declaration(tmp_path / "claims.yaml")


def test_a_missing_declaration_and_a_csv_into_a_missing_folder_are_one_line_each(user_records, tmp_path, capsys):
    path, results = user_records
    assert user_claims.main([str(tmp_path / "nope.yaml"), "--results-dir", str(results)]) == 2
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'nope.yaml'}: no such file"
    csv = tmp_path / "missing" / "table.csv"
    assert user_claims.main([str(path), "--results-dir", str(results), "--csv", str(csv)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: --csv {csv}: its folder") and len(err.splitlines()) == 1


def test_a_hand_written_freeze_must_freeze_the_declared_design_after_its_declaration(user_records, capsys):
    """`--freeze` writes each claim's ledger as the chapters' and makes later runs confirmatory; a `frozen` entry
    with a made-up fingerprint, dated before the claim's declaration, or of another protocol (another arm) would
    make runs confirmatory that are not: refused, naming what is wrong."""
    path, results = user_records
    assert user_claims.main([str(path), "--freeze", "--results-dir", str(results)]) == 0
    frozen = yaml.safe_load(path.read_text())
    ledger = frozen["claims"]["lora-beats-bitfit"]["ledger"]
    assert [e["event"] for e in ledger] == ["declared", "frozen"]
    assert user_claims.main([str(path), "--freeze", "--results-dir", str(results)]) == 2
    assert "already frozen: lora-beats-bitfit" in capsys.readouterr().err
    table = user_claims.user_table(user_claims.load_user_declaration(path), user_claims.load_runs(results))
    assert table.loc[0, "status"].startswith("exploratory: 6 of 6 runs predate its freeze")

    def edited(change) -> str:
        copy = yaml.safe_load(path.read_text())
        change(copy, copy["claims"]["lora-beats-bitfit"]["ledger"])
        return yaml.safe_dump(copy, allow_unicode=True, sort_keys=False)

    cases = {
        "has fingerprint 'x', not that of the design it freezes": lambda d, led: led[1].update(fingerprint="x"),
        "its frozen entry is dated 2020-01-01 00:00, outside its declaration": lambda d, led: led[1].update(
            date="2020-01-01T00:00:00Z"
        ),
        "a ledger opens with its `declared` entry, not `frozen`": lambda d, led: led.pop(0),
        "its frozen entry is of another protocol than this one": lambda d, led: d["arms"]["lora"].update(seed=1),
    }
    for message, change in cases.items():
        path.write_text(edited(change))
        with pytest.raises(ValueError, match=re.escape(message)):
            user_claims.load_user_declaration(path)
        path.write_text(yaml.safe_dump(frozen, allow_unicode=True, sort_keys=False))


# --- designs the engine would judge wrongly: refused, or judged as they say -----------------------


def _records_for(tmp_path, fake_record, bitfit: dict | None = None, bitfit_metric: str | None = None):
    """Four seeds of each arm on the custom task; `bitfit` fields set on BitFit's records (another evaluation set),
    `bitfit_metric` its main metric (another metric)."""
    task = custom_task(tmp_path)
    results = tmp_path / "results"
    for seed in (0, 1, 2, 3):
        for method, score in (("lora", 80.0), ("bitfit", 70.0)):
            config = FinetuneConfig(task=task, method=method, seed=seed, data_dir=str(tmp_path))
            extra = {"eval_examples": 200, "eval_split": "test", **((bitfit or {}) if method == "bitfit" else {})}
            metric = bitfit_metric if method == "bitfit" else None
            if metric:  # scored in both, reporting the other: a custom task whose main metric changed
                extra = {**extra, "metrics": {metric: score + seed * 0.5, "accuracy": score + seed * 0.5}}
            fake_record(config, score + seed * 0.5, metric=metric, folder=results, **extra)
    return results


def _declared(tmp_path, **claims) -> object:
    declaration = {**DECLARATION, "claims": {**DECLARATION["claims"], **claims}}
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(declaration, allow_unicode=True))
    return path


def _judged(path, results):
    """The verdicts, by claim name, in the order `lora-beats-bitfit` first (the file lists its claims sorted)."""
    verdicts = user_claims.user_verdicts(user_claims.load_user_declaration(path), user_claims.load_runs(results))
    return sorted(verdicts, key=lambda v: v.claim.key != "lora-beats-bitfit")


def test_arms_that_report_different_metrics_are_refused_naming_the_arm_and_the_metrics(tmp_path, fake_record):
    results = _records_for(tmp_path, fake_record, bitfit_metric="f1")
    with pytest.raises(ValueError) as error:
        _judged(_declared(tmp_path), results)
    assert (
        "lora-beats-bitfit: arm 'bitfit' on my-reviews reports f1, arm 'lora' accuracy: a comparison is made on one"
        in (str(error.value))
    )


def test_arms_scored_on_different_evaluation_sets_are_refused_naming_both_sets(tmp_path, fake_record):
    results = _records_for(tmp_path, fake_record, bitfit={"eval_examples": 150, "eval_split": "test"})
    with pytest.raises(ValueError) as error:
        _judged(_declared(tmp_path), results)
    assert "arm 'bitfit' on my-reviews scored 150 examples of test, arm 'lora' 200 examples of test" in str(error.value)


def test_arms_on_one_evaluation_set_and_metric_are_judged(tmp_path, fake_record):
    results = _records_for(tmp_path, fake_record)
    (verdict,) = _judged(_declared(tmp_path), results)
    assert verdict.verdict == "holds"


def test_a_measured_quantity_on_the_records_main_metric_is_refused(tmp_path, houlsby_runs):
    declaration = _mrpc_declaration(tmp_path, PLAIN_64)
    measured = declaration.claims["mrpc-parity"].model_copy(update={"quantity": "measured"})
    declaration.claims["mrpc-parity"] = measured
    with pytest.raises(ValueError, match="mrpc-parity: quantity measured, but its effect is the records' main metric"):
        user_claims.user_verdicts(declaration, houlsby_runs)


REQUIRING = {
    "sentence": "LoRA beats BitFit by more than a point where it beats it",
    "where": "lab notebook, 5 Dec",
    "published": "–",
    "effect": "LoRA − BitFit (accuracy, points)",
    "arms": ["lora", "bitfit"],
    "units": ["my-reviews"],
    "rule": {"kind": "above", "threshold": 1.0},
    "requires": "lora-beats-bitfit",
}


def test_a_required_claim_gates_the_verdict_as_it_comes_out(tmp_path, fake_record):
    """`requires` names a claim of the file, judged first: the requiring claim is judged where it holds, and not
    testable, saying why, where it does not."""
    results = _records_for(tmp_path, fake_record)
    first, gated = _judged(_declared(tmp_path, gated=REQUIRING), results)
    assert (first.verdict, gated.verdict) == ("holds", "holds")
    reversed_rule = {**DECLARATION["claims"]["lora-beats-bitfit"], "rule": {"kind": "below", "threshold": 0.0}}
    path = _declared(tmp_path, gated=REQUIRING)
    text = yaml.safe_load(path.read_text())
    text["claims"]["lora-beats-bitfit"] = reversed_rule
    path.write_text(yaml.safe_dump(text, allow_unicode=True))
    first, gated = _judged(path, results)
    assert first.verdict == "does not hold" and gated.verdict == "not testable"
    assert "judged only where lora-beats-bitfit holds (does not hold here)" in gated.blocked


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"requires": "lora-beat-bitfit"},
            "gated: requires 'lora-beat-bitfit', not another claim of this file (did you",
        ),
        ({"requires": "gated"}, "gated: requires 'gated', not another claim of this file"),
        ({"rule": {"kind": "above", "threshold": True}}, "the threshold is a number of the effect's units, not True"),
        ({"rule": {"kind": "above"}}, "claims.gated.rule.threshold: Field required"),
        ({"versus_units": ["my-reviews"]}, "unit 'my-reviews' is in both `units` and `versus_units`"),
    ],
)
def test_a_design_that_would_be_judged_wrongly_is_one_error_naming_it(tmp_path, change, message):
    path = _declared(tmp_path, gated={**REQUIRING, **change})
    with pytest.raises(ValueError) as error:
        user_claims.load_user_declaration(path)
    assert message in str(error.value)


def test_a_users_study_from_declaration_to_a_confirmatory_verdict_in_one_folder(user_records, fake_record, tmp_path):
    """Declare, run, freeze, run fresh seeds into the same folder: the table judges every run (exploratory: some
    predate the freeze) and, apart, the runs made after the freeze alone (confirmatory), with each arm's mean ± sd
    and the effect and interval as numbers."""
    path, results = user_records
    assert user_claims.main([str(path), "--freeze"]) == 0
    declaration = user_claims.load_user_declaration(path)
    table = user_claims.user_table(declaration, user_claims.load_runs(results))
    assert table.loc[0, "confirmatory"].startswith("none: no run since its freeze of")
    (tmp_path / "fresh").mkdir()
    task = custom_task(tmp_path / "fresh")  # the same task, its files where the fresh runs read them
    later = (pd.Timestamp.now(tz="UTC") + pd.Timedelta(seconds=1)).isoformat()
    for seed in (4, 5, 6):
        for method, score in (("lora", 81.0), ("bitfit", 70.0)):
            config = FinetuneConfig(task=task, method=method, seed=seed, data_dir=str(tmp_path / "fresh"))
            fake_record(config, score + seed * 0.25, folder=results, finished_at=later)
    table = user_claims.user_table(declaration, user_claims.load_runs(results))
    row = table.iloc[0]
    assert row["status"].startswith("exploratory: 6 of 12 runs predate its freeze")
    assert row["confirmatory"].startswith("holds: +11.0 [") and "on 3 fresh seeds" in row["confirmatory"]
    assert row["arms"] == "my-reviews: lora 81.6 ± 0.8 (6 seeds), bitfit 71.1 ± 0.4 (6 seeds)"
    assert row["low"] < row["effect"] < row["high"] and abs(row["effect"] - 10.5) < 1e-9
    csv = tmp_path / "table.csv"
    assert user_claims.main([str(path), "--results-dir", str(results), "--csv", str(csv)]) == 0
    assert pd.read_csv(csv)[["effect", "low", "high"]].dtypes.map(lambda t: t.kind).tolist() == ["f", "f", "f"]


def test_a_constant_arm_is_the_majority_class_score_on_the_compared_arms_evaluation_set(user_records):
    """`{constant: true}` is the constant prediction's score (60% on these labels), which the engine computes for
    every run: an arm of its own, compared with, not first, and with no other setting."""
    path, results = user_records
    declared = yaml.safe_load(path.read_text())
    declared["arms"]["majority"] = {"constant": True}
    claim = {**declared["claims"]["lora-beats-bitfit"], "sentence": "LoRA beats the majority class"}
    declared["claims"]["lora-learns"] = {**claim, "arms": ["lora", "majority"]}
    path.write_text(yaml.safe_dump(declared, allow_unicode=True))
    table = user_claims.user_table(user_claims.load_user_declaration(path), user_claims.load_runs(results))
    row = table.set_index("claim").loc["LoRA beats the majority class"]
    assert row["verdict"] == "holds" and abs(row["effect"] - 21.0) < 1e-9
    assert row["arms"] == "my-reviews: lora 81.0 ± 0.5 (3 seeds), majority 60.0 (the constant prediction)"
    declared["claims"]["lora-learns"]["arms"] = ["majority", "lora"]
    path.write_text(yaml.safe_dump(declared, allow_unicode=True))
    with pytest.raises(ValueError, match="the constant arm 'majority' is what the first arm is compared with"):
        user_claims.load_user_declaration(path)
    declared["claims"]["lora-learns"]["arms"] = ["lora", "majority"]
    declared["arms"]["majority"] = {"constant": True, "method": "lora"}
    path.write_text(yaml.safe_dump(declared, allow_unicode=True))
    with pytest.raises(ValueError, match="`constant: true` is an arm of its own"):
        user_claims.load_user_declaration(path)


def test_a_measured_quantity_is_refused_also_where_the_records_kept_no_predictions(tmp_path, fake_record):
    """Without stored predictions there is no bootstrap to drop, but `measured` would still lift the threshold's
    ±100-point bound: the records' main metric is a metric all the same."""
    results = _records_for(tmp_path, fake_record)
    measured = {**DECLARATION["claims"]["lora-beats-bitfit"], "quantity": "measured"}
    with pytest.raises(ValueError, match=r"lora-beats-bitfit: quantity measured, .* \(accuracy on my-reviews\)"):
        _judged(_declared(tmp_path, **{"lora-beats-bitfit": measured}), results)
