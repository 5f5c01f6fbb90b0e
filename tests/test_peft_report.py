"""The IMDb chapter's aggregation: rates chosen on seed 0 at 90%/10%, the report's table, costs, curves, verdicts."""

import shutil

import pytest
import yaml

from adaptstudy.launch import sweep
from adaptstudy.planning import peft as pp
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.peft import claims as pc
from adaptstudy.reporting.peft import figures as pf
from adaptstudy.reporting.peft import tables as pt
from adaptstudy.reporting.peft.published import PEFT_REPORT_METHODS
from adaptstudy.runs.finetune_config import FinetuneConfig

BACKBONE = 22_713_216
TRAINABLE = {
    "full": BACKBONE,
    "embeddings_only": 11_900_000,
    "encoder_only": 10_600_000,
    "prompt_tuning": 160_000,
    "bitfit": 250_000,
    "lora": 220_000,
}


@pytest.fixture
def run(fake_record):
    """Writes an IMDb run: its validation accuracy, setting (`share`), training cap fraction and a two-epoch history
    (`first`: the accuracy after epoch 1, `epoch_s`: seconds per epoch), or the history of `curve` (accuracy after
    each epoch)."""

    def write(
        score,
        method="full",
        share=0.9,
        seed=0,
        lr=5e-5,
        fraction=1.0,
        first=None,
        epoch_s=10.0,
        steps=None,
        curve=None,
        backbone="minilm-l6",
    ):
        cap = 1200 if share == 0.9 else 400
        config = FinetuneConfig(
            task="imdb",
            backbone=backbone,
            method=method,
            seed=seed,
            learning_rate=lr,
            resplit_train_share=share,
            max_train_examples=cap,
            train_fraction=fraction,
            num_train_epochs=2,
            max_steps=steps,
        )
        curve = curve or [score if first is None else first, score]  # accuracy after each epoch
        history = [
            {"epoch": float(e), "train_loss": 0.5, "accuracy": a, "train_epoch_s": epoch_s}
            for e, a in enumerate(curve, 1)
        ]
        return fake_record(
            config,
            score,
            trainable_params=TRAINABLE[method],
            total_params=BACKBONE + 1000,
            backbone_params=BACKBONE,
            train_runtime_s=2 * epoch_s,
            train_examples=round(cap * fraction),
            history=history,
        )

    return write


@pytest.fixture
def runs(tmp_path, run):
    # Stage 1: rates on seed 0, 90%/10%.
    run(80.0, lr=2e-5, first=70.0)
    run(85.0, lr=5e-5, first=70.0)
    run(70.0, method="bitfit", lr=1e-3, epoch_s=4.0)
    run(78.0, method="bitfit", lr=3e-3, epoch_s=4.0)
    run(60.0, method="prompt_tuning", lr=3e-2, epoch_s=9.0)
    run(76.0, method="lora", lr=1e-3, epoch_s=5.0)
    run(81.0, method="encoder_only", lr=5e-5, first=55.0, epoch_s=8.0)
    # Other seeds and the 30%/70% setting at the chosen rates (and one run at a rate not chosen: left out).
    run(83.0, seed=1, lr=5e-5)
    run(10.0, seed=1, lr=2e-5)
    run(82.0, seed=1, share=0.3, lr=5e-5)
    run(71.0, method="bitfit", seed=1, share=0.3, lr=3e-3, epoch_s=2.0)
    run(59.0, method="prompt_tuning", seed=1, share=0.3, lr=3e-2, epoch_s=3.0)
    # Learning curve for full fine-tuning.
    run(65.0, fraction=0.1, lr=5e-5)
    run(75.0, fraction=0.3, lr=5e-5)
    run(72.0, fraction=0.1, lr=5e-5, steps=76)  # as many updates as the full cap's 2 epochs of 38 batches
    return pt.label_runs(load_runs(tmp_path))


def test_rates_are_chosen_per_backbone_and_method_on_seed_0(runs):
    chosen = pt.chosen_learning_rates(runs).set_index("method")["learning_rate"].to_dict()
    assert chosen == {"full": 5e-5, "bitfit": 3e-3, "prompt_tuning": 3e-2, "lora": 1e-3, "encoder_only": 5e-5}


def test_the_note_names_methods_whose_best_rate_is_at_the_grid_edge(runs):
    note = pt.rate_edge_note(runs)
    assert "the largest rate tried won for bitfit, full:" in note  # lora, prompt tuning: one rate each, no edge
    assert "smallest" not in note and "lora" not in note


def test_report_table_puts_ours_beside_the_published_rows(runs):
    table = pt.report_table(runs).set_index(["source", "setting"])
    assert table.loc[("ours (minilm-l6)", "90%/10%"), "full"] == "83.0 (1)"  # seed 0's 85.0 chose the rate
    assert table.loc[("ours (minilm-l6)", "30%/70%"), "bitfit"] == "71.0 (1)"
    assert table.loc[("ours (minilm-l6)", "30%/70%"), "embeddings_only"] == "–"
    assert table.loc[("published (TinyRoBERTa)", "90%/10%"), "bitfit"] == "82"
    assert table.loc[("published (TinyBERT)", "30%/70%"), "bitfit"] == "65"


def test_epoch_history_and_costs_come_from_the_records(runs):
    frame = pf.epoch_frame(runs)
    # the reported seeds at the chosen rates: seed 1 of full fine-tuning at 5e-5 (seed 0 chose; 2e-5 was not chosen)
    assert set(zip(frame["method"], frame["seed"], frame["setting"])) == {
        ("full", 1, "90%/10%"),
        *((m, 1, "30%/70%") for m in ("full", "bitfit", "prompt_tuning")),
    }
    assert frame[frame["setting"] == "90%/10%"]["accuracy"].tolist() == [83.0, 83.0]  # two epochs
    table = pt.method_table(runs).set_index(["setting", "method"])
    assert table.loc[("30%/70%", "bitfit"), "epoch_s"] == 2.0
    assert ("90%/10%", "bitfit") not in table.index  # only seed 0, which chose, ran it


def test_verdicts_rest_on_the_seeds_that_chose_no_rate(runs, claims_table):
    table = claims_table(pc, runs)
    assert len(table) == len(pc.DECLARED) and set(table["verdict"]) <= {"not testable"}  # the fixture's runs: seed 0
    assert table["why"].str.startswith("fewer than 3 reported seeds").all()


def test_seconds_are_the_median_over_seeds_so_one_slowed_run_does_not_move_them(tmp_path, run):
    for seed, seconds in ((0, 10.0), (1, 11.0), (2, 50.0), (3, 12.0)):  # seed 2 shared the machine with other work
        run(80.0, seed=seed, epoch_s=seconds)
    runs = pt.label_runs(load_runs(tmp_path))
    row = pt.method_table(runs).iloc[0]
    assert (row["epoch_s"], row["train_s"], row["seeds"]) == (12.0, 24.0, 3)  # seed 0 chose the rate: not reported


def test_convergence_compares_the_mean_of_epochs_1_to_3_with_the_last_epoch_over_the_reported_seeds(
    tmp_path, run, claims_table
):
    for seed, noise in enumerate((0.0, 0.5, 1.0, 1.5)):  # seed 0 chooses the rates, 1-3 report
        run(85.0 + noise, seed=seed, curve=[70.0, 75.0, 80.0, 85.0 + noise])
        run(84.0 + noise, method="encoder_only", seed=seed, curve=[55.0, 60.0, 70.0, 84.0 + noise])
    runs = pt.label_runs(load_runs(tmp_path))
    assert runs.set_index(["method", "seed"]).loc[("encoder_only", 1), "early_accuracy"] == pytest.approx(185 / 3)
    verdict = claims_table(pc, runs).set_index("claim").loc[pc.CONVERGENCE.sentence]
    assert verdict["verdict"] == "holds" and verdict["seeds"] == 3
    # (75 - 61.7) early against 1 at the end: the gap closes by 12.3 points
    assert verdict["ours: effect [95% CI]"].startswith("+12.3 [")


def test_the_slowest_convergence_is_judged_against_every_other_approach_on_either_backbone(tmp_path, run, claims_table):
    for seed, noise in enumerate((0.0, 0.5, 1.0, 1.5)):
        for backbone in ("minilm-l6", "minilm-l3"):
            for method in PEFT_REPORT_METHODS:
                slowest = (method, backbone) == ("embeddings_only", "minilm-l6")  # the report's Table 7
                curve = [50.0, 55.0, 60.0] if slowest else [70.0, 75.0, 80.0]
                run(85.0 + noise, method=method, seed=seed, backbone=backbone, curve=[*curve, 85.0 + noise])
    runs = pt.label_runs(load_runs(tmp_path))
    verdict = next(v for v in pc.verdicts(runs) if v.claim == pc.SLOWEST)
    assert verdict.verdict == "holds" and len(verdict.names) == 9  # four methods on its backbone, five on the other
    assert all(j.verdict == "holds" for j in verdict.judgements)
    effect = claims_table(pc, runs).set_index("claim").loc[pc.SLOWEST.sentence, "ours: effect [95% CI]"]
    assert effect.startswith("vs full on minilm-l6: +20.0 [")


def stage_1_config(method: str, lr: float, **settings) -> FinetuneConfig:
    """A stage-1 cell of the IMDb chapter: seed 0, minilm-l6, 90%/10% with its 800 reviews, the selection split."""
    return FinetuneConfig(
        task="imdb",
        method=method,
        adapter_size=64 if method == "houlsby" else None,
        seed=0,
        learning_rate=lr,
        resplit_train_share=0.9,
        max_train_examples=800,
        selection_split=True,
        **settings,
    )


def test_stage_2_runs_the_reported_seeds_of_both_backbones_and_settings_at_the_rates_stage_1_chose(
    tmp_path, fake_record
):
    stage1 = tmp_path / "stage1"
    rates = {"full": (2e-5, 5e-5), "embeddings_only": (3e-4, 1e-3), "encoder_only": (2e-5, 5e-5)}
    rates |= {"prompt_tuning": (1e-2, 3e-2), "bitfit": (1e-3, 3e-3), "lora": (3e-4, 1e-3), "houlsby": (3e-4, 1e-3)}
    for method, (low, high) in rates.items():
        for lr, selection in ((low, 70.0), (high, 60.0 if method == "bitfit" else 80.0)):
            config = stage_1_config(method, lr, max_eval_examples=1000, num_train_epochs=10)
            fake_record(
                config, 50.0, folder=stage1, selection_metric_value=selection, trainable_params=1, backbone_params=10
            )
    grid = pp.report_grid(pt.label_runs(load_runs(stage1)))
    path = tmp_path / "report.yaml"
    path.write_text(yaml.safe_dump(grid, sort_keys=False))
    configs = [c.config for c in sweep.plan(path, results_dir=tmp_path / "stage2").cells]
    assert len(configs) == 2 * (7 * 5 + 5 * 3)
    assert all(c.selection_split and c.num_train_epochs == 10 and c.max_eval_examples == 1000 for c in configs)
    assert {(c.resplit_train_share, c.max_train_examples) for c in configs} == {(0.9, 800), (0.3, 267)}
    chosen = {(c.method, c.learning_rate, c.adapter_size) for c in configs}
    assert chosen == {(m, high, 64 if m == "houlsby" else None) for m, (_, high) in rates.items() if m != "bitfit"} | {
        ("bitfit", 1e-3, None)
    }
    l3 = {(c.method, c.seed) for c in configs if c.backbone == "minilm-l3"}
    assert l3 == {(m, s) for m in PEFT_REPORT_METHODS for s in (1, 2, 3)}
    assert {c.seed for c in configs if c.backbone == "minilm-l6"} == {1, 2, 3, 4, 5}
    order = [(c.backbone, c.resplit_train_share) for c in configs]  # what a short budget cuts runs last
    assert sorted(set(order), key=order.index) == [
        ("minilm-l6", 0.9),
        ("minilm-l6", 0.3),
        ("minilm-l3", 0.9),
        ("minilm-l3", 0.3),
    ]
    assert [c.seed for c in configs[:7]] == [1] * 7  # every method of a seed before the next seed

    mixed = tmp_path / "mixed"  # stage 1 beside a seed-0 run from before the protocol (no selection split)
    shutil.copytree(stage1, mixed)
    old = FinetuneConfig(task="imdb", method="full", seed=0, learning_rate=3e-5, resplit_train_share=0.9)
    fake_record(old.model_copy(update={"max_train_examples": 800}), 80.0, folder=mixed)
    with pytest.raises(ValueError, match="not scored on a selection split"):
        pp.report_grid(pt.label_runs(load_runs(mixed)))
    for p in stage1.glob("*.json"):  # BitFit's stage-1 runs missing
        if '"method": "bitfit"' in p.read_text():
            p.unlink()
    with pytest.raises(ValueError, match="stage 1 chose no rate for bitfit"):
        pp.report_grid(pt.label_runs(load_runs(stage1)))


def test_the_collapse_note_names_the_reported_runs_that_learned_nothing(tmp_path, run):
    run(78.0, method="bitfit", lr=3e-3)  # seed 0 chose the rate: never named
    for seed, score in ((1, 80.0), (2, 50.0), (3, 49.5)):
        run(score, method="bitfit", seed=seed, lr=3e-3)
    run(50.0, method="bitfit", seed=1, share=0.3, lr=3e-3)
    run(50.0, method="bitfit", seed=4, lr=1e-3)  # not at the chosen rate: not in any table
    run(85.0, seed=1)
    runs = pt.label_runs(load_runs(tmp_path))
    assert pt.collapsed_note(runs) == (
        "Reported runs that learned nothing (a constant prediction, within noise): bitfit: 3 of its 4 reported runs "
        "(minilm-l6 30%/70%: seed 1; minilm-l6 90%/10%: seeds 2, 3)."
    )
    assert pt.collapsed_note(runs[runs["method"] == "full"]).startswith("Every reported run learned")


def test_a_backbone_that_chose_no_rate_reports_at_the_choosing_backbones_rates(tmp_path, run, fake_record):
    """minilm-l3 runs at the rates minilm-l6's stage 1 chose (the plan): its cells fill the tables at those rates."""
    run(85.0, lr=5e-5)  # seed 0, minilm-l6: 5e-5 chosen
    run(80.0, lr=2e-5)
    for seed, lr, score in ((1, 5e-5, 78.0), (2, 5e-5, 76.0), (1, 2e-5, 10.0)):
        config = FinetuneConfig(
            task="imdb", method="full", backbone="minilm-l3", seed=seed, learning_rate=lr, resplit_train_share=0.9
        )
        fake_record(config, score, trainable_params=1, total_params=1, backbone_params=1, history=[])
    runs = pt.label_runs(load_runs(tmp_path))
    table = pt.method_table(runs).set_index(["backbone", "method"])
    assert table.loc[("minilm-l3", "full"), "accuracy"] == 77.0  # seeds 1-2 at 5e-5; 2e-5 was not chosen
    assert pt.report_table(runs).set_index(["source", "setting"]).loc[("ours (minilm-l3)", "90%/10%"), "full"] == (
        "77.0 ± 1.4 (2)"
    )


def test_a_method_beyond_the_seven_reports_on_seeds_1_to_3_at_90_10_once_its_stage_1_grid_has_run(
    tmp_path, fake_record
):
    """The twelve-method comparison: a method outside the chapter's claims enters stage 2 (minilm-l6, 90%/10%, seeds
    1-3) only once every rate its stage-1 grid lists has a record, never from part of its grid."""
    stage1 = tmp_path / "stage1"
    select = tmp_path / "select.yaml"
    methods = {m: {"learning_rate": [1e-3, 3e-3]} for m in (*pp.CLAIMED, "ia3", "compacter")}
    methods["houlsby"]["adapter_size"] = [64]
    select.write_text(yaml.safe_dump({"study": "peft_imdb", "axes": {"method": methods}}))
    for method in (*pp.CLAIMED, "ia3", "compacter"):
        for lr in (1e-3, 3e-3) if method != "compacter" else (1e-3,):  # compacter's 3e-3 has not run
            config = stage_1_config(method, lr)
            fake_record(
                config,
                50.0,
                folder=stage1,
                selection_metric_value=70.0 + 1000 * lr,
                trainable_params=1,
                backbone_params=10,
            )
    grid = pt.label_runs(load_runs(stage1))
    assert pp.unfinished_methods(pp.selection_grid(grid), select) == {"compacter"}
    report = pp.report_grid(grid, stage_1=select)
    extra = report["axes"][-1]
    assert extra["method"] == {"ia3": {"learning_rate": [3e-3]}} and extra["seed"] == [1, 2, 3]
    assert extra["resplit_train_share"] == [0.9] and extra["backbone"] == ["minilm-l6"]
