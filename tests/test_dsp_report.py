"""The Don't Stop Pretraining chapter: conditions read off the pretraining chain, Table 5 beside ours, gains,
verdicts."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.metrics import f1_score

from adaptstudy.data import load_task, resolve_task
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.dsp import claims as dc
from adaptstudy.reporting.dsp import figures as df
from adaptstudy.reporting.dsp import tables as dr
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.predictions import stored_predictions
from adaptstudy.runs.pretrain_config import PretrainConfig

ROOT = Path(__file__).resolve().parents[1]

WARM = {"corpus": "general", "mode": "head", "max_steps": 10}
DAPT = {"corpus": "reviews", "mode": "full", "max_steps": 10, "init_from": WARM}
NOT_DAPT = {"corpus": "news", "mode": "full", "max_steps": 10, "init_from": WARM}
TAPT = {"corpus": "task:helpfulness", "mode": "full", "max_steps": 10, "init_from": WARM}
DAPT_TAPT = {**TAPT, "init_from": DAPT}
ADAPTER_DAPT = {"corpus": "reviews", "mode": "seq_bn", "max_steps": 10, "init_from": WARM}
CONTROL = {"corpus": "neutral", "mode": "full", "max_steps": 10, "init_from": WARM}


@pytest.fixture
def run(fake_record):
    """Writes a fine-tuning run from the starting point `init_from` (a pretraining chain)."""

    def write(score, init_from, seed=0, method="full", task="helpfulness", **settings):
        return fake_record(FinetuneConfig(task=task, method=method, seed=seed, init_from=init_from, **settings), score)

    return write


@pytest.fixture
def runs(tmp_path, run):
    for seed, (base, dapt, tapt, both, other, control) in enumerate(
        [(60, 63, 62, 66, 58, 61), (62, 65, 64, 66, 60, 61)]
    ):
        for score, start in (
            (base, WARM),
            (dapt, DAPT),
            (tapt, TAPT),
            (both, DAPT_TAPT),
            (other, NOT_DAPT),
            (control, CONTROL),
        ):
            run(float(score), start, seed=seed)
    run(59.0, WARM, method="pfeiffer")  # the adapter family's baseline
    run(62.5, ADAPTER_DAPT, method="pfeiffer", adapter_use="continue")  # +3.5, the full model's DAPT gains +3.0
    run(55.0, {**DAPT, "corpus_fraction": 0.1}, seed=0)
    return dr.label_runs(load_runs(tmp_path))


def test_conditions_are_read_off_the_pretraining_chain():
    assert dr.condition("helpfulness", dr.chain(WARM)) == "baseline"
    assert dr.condition("helpfulness", dr.chain(DAPT)) == "dapt"
    assert dr.condition("agnews", dr.chain(DAPT)) == "not-dapt"  # reviews text for a news task
    assert dr.condition("helpfulness", dr.chain(DAPT_TAPT)) == "dapt+tapt"
    assert dr.condition("helpfulness", dr.chain(CONTROL)) == dr.condition("agnews", dr.chain(CONTROL)) == "control"
    assert (
        dr.condition("helpfulness", dr.chain({"corpus": "reviews", "mode": "full"})) is None
    )  # no warmed head under it
    assert dr.adaptation("pfeiffer", dr.chain(ADAPTER_DAPT), "stack") == (
        "pfeiffer adapter",
        "pfeiffer adapter, seq_bn pretrained (stack)",
    )
    assert dr.adaptation("full", dr.chain(DAPT_TAPT), None) == ("full model", "full model")


def test_main_table_puts_ours_beside_table_5(runs):
    table = dr.main_table(runs).set_index(["task", "model"])
    full = table.loc[("helpfulness", "ours: full model")]
    assert full["baseline"] == "61.0 ± 1.4 (2)"
    assert full["dapt"] == "64.0 ± 1.4 (2)"  # the 10% corpus run is not in the main table
    assert full["control"] == "61.0 ± 0.0 (2)"
    assert table.loc[("helpfulness", "paper: RoBERTa-base"), "control"] == "–"  # the paper has no such control
    assert table.loc[("helpfulness", "paper: RoBERTa-base"), "dapt+tapt"] == "68.7 (1.8)"
    adapter = table.loc[("helpfulness", "ours: pfeiffer adapter, seq_bn pretrained (continue)")]
    assert (adapter["baseline"], adapter["dapt"], adapter["tapt"]) == ("59.0 (1)", "62.5 (1)", "–")
    assert ("helpfulness", "ours: pfeiffer adapter") not in table.index  # its baseline is shown in the variant's row
    assert ("rct", "ours: full model") not in table.index and ("rct", "paper: RoBERTa-base") in table.index
    assert dr.TABLE_NOTE.startswith("RCT: not in the mirror")
    assert ("chemprot", "ours: full model") not in table.index  # no runs: the paper's row alone


def test_tasks_without_a_domain_corpus_leave_their_dapt_cells_to_the_note(tmp_path, run):
    run(50.0, WARM, task="chemprot")
    row = (
        dr.main_table(dr.label_runs(load_runs(tmp_path)))
        .set_index(["task", "model"])
        .loc[("chemprot", "ours: full model")]
    )
    assert (row["baseline"], row["dapt"], row["dapt+tapt"], row["not-dapt"]) == (
        "50.0 (1)",
        "–",
        "–",
        "–",
    )
    assert "no domain corpus offline" in dr.TABLE_NOTE


def test_two_seeds_are_not_testable_and_the_adapter_claim_says_what_dapt_cost(runs):
    table = dc.claims(runs)
    assert set(table["verdict"]) == {"not testable"}
    first = [c.sentence for c in (dc.DAPT_HELPS, dc.DAPT_DOMAIN, dc.TAPT_HELPS, dc.BOTH_BEST, dc.NOT_DAPT)]
    ran = table[table["claim"].isin(first)]
    assert len(ran) == 5 and ran["why"].str.contains("fewer than 3 reported seeds: helpfulness", regex=False).all()
    pretraining = pd.DataFrame(
        {
            "task": ["mlm:reviews", "mlm:reviews", "mlm:reviews", "mlm:general"],
            "method": ["full", "seq_bn", "full", "head"],
            "config.corpus_fraction": [1.0, 1.0, 0.1, 1.0],
            "train_runtime_s": [600.0, 300.0, 60.0, 200.0],
            "trainable_params": [22_700_000, 300_000, 22_700_000, 179_000],
            "peak_rss_mb": [3072.0, 2048.0, 3072.0, 2000.0],
        }
    )
    adapters = dc.claims(runs, pretraining).set_index("claim").loc[dc.ADAPTER_DAPT.sentence, "why"]
    assert adapters.endswith(
        "DAPT per corpus: full 10.0 min, 22.70M trained, peak 3.0 GB; seq_bn 5.0 min, 0.30M trained, peak 2.0 GB"
    )
    sizes = dr.data_size_frame(runs).set_index(["family", "corpus_fraction"])["gain"]
    # the adapter ran the whole corpus only: a main-table cell, not a size series
    assert sizes.to_dict() == {("full model", 0.1): -6.0, ("full model", 1.0): 3.0}


def test_three_seeds_give_verdicts_and_the_adapter_claim_needs_its_own_seeds(tmp_path, run, claims_table):
    for seed, noise in enumerate((0.0, 0.5, 1.0)):
        for score, start in ((60, WARM), (63, DAPT), (62, TAPT), (66, DAPT_TAPT), (58, NOT_DAPT), (65, CONTROL)):
            run(score + noise, start, seed=seed)
    run(59.0, WARM, method="pfeiffer")
    run(62.5, ADAPTER_DAPT, method="pfeiffer", adapter_use="continue")
    table = claims_table(dc, dr.label_runs(load_runs(tmp_path))).set_index("claim")
    claims = (dc.DAPT_HELPS, dc.DAPT_DOMAIN, dc.TAPT_HELPS, dc.BOTH_BEST, dc.NOT_DAPT, dc.ADAPTER_DAPT)
    assert table.loc[[c.sentence for c in claims], "verdict"].tolist() == [
        "holds",
        "does not hold",
        "holds",
        "holds",
        "holds",
        "not testable",
    ]
    assert table.loc[dc.DAPT_HELPS.sentence, "ours: effect [95% CI]"].startswith("+3.0 [")
    # more masked-LM training on neutral text gains as much: DAPT's gain is not the domain's
    assert table.loc[dc.DAPT_DOMAIN.sentence, "ours: effect [95% CI]"].startswith("-2.0 [")
    assert "fewer than 3 reported seeds: helpfulness (1)" in table.loc[dc.ADAPTER_DAPT.sentence, "why"]


def test_dapts_gain_splits_into_more_mlm_and_the_domain_on_the_tasks_with_a_control(tmp_path, run):
    for seed, noise in enumerate((0.0, 0.5, 1.0)):
        for score, start in ((60, WARM), (63, DAPT), (65, CONTROL)):
            run(score + noise, start, seed=seed)
        run(70 + noise, WARM, seed=seed, task="agnews")  # no control or DAPT: not a row
        run(72 + noise, {**NOT_DAPT, "corpus": "reviews"}, seed=seed, task="agnews")
    table = dc.domain_or_more_mlm(dr.label_runs(load_runs(tmp_path))).set_index("task")
    assert table.index.tolist() == ["helpfulness", "over tasks"]
    more_mlm, domain, dapt = (table.loc["over tasks", c] for c in dc.DECOMPOSITION)
    assert (more_mlm[:5], domain[:5], dapt[:5]) == ("+5.0 ", "-2.0 ", "+3.0 ")
    assert "fewer than" not in more_mlm


def test_the_split_says_when_an_arm_is_short_of_seeds(runs):
    table = dc.domain_or_more_mlm(runs).set_index("task")
    assert table.loc["helpfulness", "the domain (DAPT − control)"].startswith("+3.0 [")
    assert "fewer than 3 reported seeds: helpfulness (2)" in table.loc["helpfulness", "the domain (DAPT − control)"]


def test_the_adapter_claim_bootstraps_over_the_stored_predictions(tmp_path, fake_record, data_dir):
    """The adapter's gain against the full model's is a difference of differences: built without the task's
    metric, the bootstrap over examples of runs that stored predictions failed on metric None."""
    spec = resolve_task("helpfulness")
    dev = load_task("helpfulness", data_dir)[spec.eval_split]
    labels = np.asarray(dev["label"])
    rng = np.random.default_rng(0)
    cells = [  # (starting point, method, adapter use, share of examples right)
        (WARM, "full", None, 0.8),
        (DAPT, "full", None, 0.9),
        (WARM, "pfeiffer", None, 0.75),
        (ADAPTER_DAPT, "pfeiffer", "continue", 0.85),
    ]
    for seed in (0, 1, 2):
        for start, method, use, right in cells:
            predictions = np.where(rng.random(len(labels)) < right, labels, 1 - labels)
            config = FinetuneConfig(task="helpfulness", method=method, seed=seed, init_from=start, adapter_use=use)
            stored = stored_predictions(predictions, dev, spec.eval_split, regression=False)
            fake_record(config, 100 * f1_score(labels, predictions, average="macro"), predictions=stored)
    adapter_claim = next(v for v in dc.verdicts(dr.label_runs(load_runs(tmp_path))) if v.claim is dc.ADAPTER_DAPT)
    assert "paired bootstrap over 345 evaluation examples" in adapter_claim.judgements[0].method


def test_the_recipe_is_read_off_the_records(runs):
    pretraining = pd.DataFrame(
        {
            "task": ["mlm:general", "mlm:reviews", "mlm:reviews", "mlm:task:helpfulness"],
            "method": ["head", "full", "full", "full"],
            "steps": [400, 314, 31, 100],
            "config.corpus_fraction": [1.0, 1.0, 0.1, 1.0],
            "config.learning_rate": [1e-3, 1e-4, 1e-4, 1e-4],
            "config.batch_size": 32,
            "config.max_seq_length": 128,
            "config.mlm_probability": 0.15,
        }
    )
    note = dr.recipe_note(runs, pretraining)
    assert "3 epochs on the whole training set (helpfulness); batch 32" in note and "warmup 10%" in note
    assert (
        "warm-up 400 steps at learning rate 0.001" in note
        and "(reviews 314 steps)" in note
        and "TAPT 100 steps" in note
    )


def test_the_recipe_names_each_schedule_with_its_tasks(tmp_path, run):
    run(60.0, WARM, num_train_epochs=3, max_train_examples=500)
    run(20.0, WARM, task="scierc", num_train_epochs=10, max_train_examples=1000)
    run(50.0, WARM, task="chemprot", num_train_epochs=10, max_train_examples=1000)
    runs = dr.label_runs(load_runs(tmp_path))
    pretraining = pd.DataFrame(
        {
            "task": ["mlm:general"],
            "method": ["head"],
            "steps": [400],
            "config.corpus_fraction": [1.0],
            "config.learning_rate": [1e-3],
            "config.batch_size": 32,
            "config.max_seq_length": 128,
            "config.mlm_probability": 0.15,
        }
    )
    note = dr.recipe_note(runs, pretraining)
    assert (
        "3 epochs on at most 500 examples (helpfulness); 10 epochs on at most 1000 examples (chemprot, scierc); "
        in note
    )


def test_the_chapter_cost_counts_the_pretraining_with_the_fine_tuning_and_its_retraining(tmp_path, fake_record):
    fine, pretraining = tmp_path / "dsp", tmp_path / "dsp_pretrain"
    for seed in (0, 1):
        config = FinetuneConfig(task="helpfulness", method="full", seed=seed, init_from=DAPT)
        fake_record(config, 60.0, folder=fine, train_runtime_s=1800.0, eval_runtime_s=0.0)
    again = [{"train_runtime_s": 1800.0, "eval_runtime_s": 36.0}]  # a second machine's cache lacked the weights
    fake_record(PretrainConfig(**DAPT), 30.0, folder=pretraining, train_runtime_s=3600.0, eval_runtime_s=0.0)
    cost = dr.chapter_cost(dr.label_runs(load_runs(fine)), dr.label_pretraining(load_runs(pretraining)))
    assert cost.startswith("3 runs: 2.00 h of training and 0.00 h of evaluation")
    assert "budget of about 5 h" in cost and cost.endswith("Of the training, 1.00 h were masked-LM pretraining.")
    fake_record(PretrainConfig(**DAPT), 30.0, folder=pretraining, train_runtime_s=3600.0, retrained=again)
    cost = dr.chapter_cost(dr.label_runs(load_runs(fine)), dr.label_pretraining(load_runs(pretraining)))
    assert cost.startswith("3 runs: 2.50 h of training and 0.01 h of evaluation")
    assert cost.endswith("Of the training, 1.50 h were masked-LM pretraining.")


def test_pretraining_tables_tell_tapt_from_dapt_plus_tapt(tmp_path, fake_record):
    for corpus, init_from, before, after in (
        ("task:helpfulness", DAPT, 75.0, 67.8),
        ("task:helpfulness", WARM, 565.0, 126.6),
        ("general", None, 46384.7, 734.1),
    ):
        mode = "head" if init_from is None else "full"
        config = PretrainConfig(corpus=corpus, mode=mode, init_from=init_from, max_steps=10)
        fake_record(config, after, perplexity_before=before)
    table = dr.perplexity_table(dr.label_pretraining(load_runs(tmp_path)))
    assert table[["corpus", "starts from", "perplexity after"]].values.tolist() == [
        ["general", "backbone", 734.1],
        ["task:helpfulness", "reviews (full) ← warmed head", 67.8],
        ["task:helpfulness", "warmed head", 126.6],
    ]


def test_dapt_plus_tapt_is_judged_against_each_condition_on_the_tasks_that_ran_it(tmp_path, run, claims_table):
    for seed, noise in enumerate((0.0, 0.2, 0.4)):
        for score, start in ((60.0, WARM), (58.0, DAPT), (59.0, TAPT), (55.5, DAPT_TAPT)):  # every one below
            run(score + noise, start, seed=seed)
        chemprot_tapt = {**TAPT, "corpus": "task:chemprot"}
        for score, start in ((50.0, WARM), (52.0, chemprot_tapt)):  # no DAPT+TAPT run: not a case of the claim
            run(score + noise, start, seed=seed, task="chemprot")
    claim = claims_table(dc, dr.label_runs(load_runs(tmp_path))).set_index("claim").loc[dc.BOTH_BEST.sentence]
    assert claim["verdict"] == "does not hold"
    assert claim["ours: effect [95% CI]"].startswith("vs dapt: -2.5 [")


def test_the_committed_controls_train_like_their_domains_dapt_on_neutral_text():
    """Each control has its domain's DAPT settings and steps (from DAPT's committed records), and each task of a
    domain starts from that domain's control."""
    grid = yaml.safe_load((ROOT / "params/cpu/dsp.yaml").read_text())
    definitions = grid["definitions"]
    dapt_steps = {
        r["config"]["corpus"]: r["steps"]
        for r in map(json.loads, map(Path.read_text, (ROOT / "results/dsp_pretrain").glob("*.json")))
        if r["config"]["corpus"] in dr.CORPUS_DOMAIN
        and r["config"]["mode"] == "full"
        and r["config"].get("corpus_fraction", 1.0) == 1.0
    }
    for corpus in ("reviews", "news"):
        control, dapt = definitions[f"control_{corpus}"], definitions[corpus]
        assert control["max_steps"] == dapt_steps[corpus]
        assert {k: v for k, v in dapt.items() if k not in ("corpus", "exclude_eval_of")} == {
            k: v for k, v in control.items() if k not in ("corpus", "max_steps")
        }
        tasks = {t for block in grid["axes"] if block.get("init_from") == [control] for t in block["task"]}
        assert tasks == {
            t for t in ("helpfulness", "imdb", "hyperpartisan", "agnews") if dr.condition(t, dr.chain(dapt)) == "dapt"
        }


def test_the_figure_draws_each_condition_with_the_control_beside_dapt_and_the_constant(runs):
    frame = df.condition_frame(runs)
    assert len(frame) == 12  # the full model's two seeds of six conditions: no adapter, no 10% corpus run
    grid = df.plot_conditions(frame)
    ax = grid.axes_dict["helpfulness"]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["baseline", "control", "dapt", "tapt", "dapt+tapt", "not-dapt"]
    means = ax.lines[0].get_ydata()  # the point estimates, in the order of the labels
    assert list(means) == pytest.approx([61.0, 61.0, 64.0, 63.0, 66.0, 59.0])
    constant = frame["constant"].iloc[0]
    assert any(list(line.get_ydata()) == [constant, constant] for line in ax.lines)
    assert df.plot_conditions(frame.iloc[:0]) is None
