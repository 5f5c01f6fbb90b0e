"""A user's own claims on their own records: a declaration file and the README's command give the chapters' verdict
table for a custom task built in a temporary folder, without code; a bad declaration is one clear error."""

import numpy as np
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
