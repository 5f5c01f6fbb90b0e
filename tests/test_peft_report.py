"""The IMDb chapter's aggregation: rates chosen on seed 0 at 90%/10%, the report's table, costs, curves, verdicts."""

import pytest

from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.peft import claims as pc
from adaptstudy.reporting.peft import figures as pf
from adaptstudy.reporting.peft import tables as pt
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
    (`first`: the accuracy after epoch 1, `epoch_s`: seconds per epoch)."""

    def write(score, method="full", share=0.9, seed=0, lr=5e-5, fraction=1.0, first=None, epoch_s=10.0, steps=None):
        cap = 1200 if share == 0.9 else 400
        config = FinetuneConfig(
            task="imdb",
            method=method,
            seed=seed,
            learning_rate=lr,
            resplit_train_share=share,
            max_train_examples=cap,
            train_fraction=fraction,
            num_train_epochs=2,
            max_steps=steps,
        )
        history = [
            {"epoch": 1.0, "train_loss": 0.6, "accuracy": score if first is None else first, "train_epoch_s": epoch_s},
            {"epoch": 2.0, "train_loss": 0.4, "accuracy": score, "train_epoch_s": epoch_s},
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
    run(82.0, share=0.3, lr=5e-5)
    run(71.0, method="bitfit", share=0.3, lr=3e-3, epoch_s=2.0)
    run(59.0, method="prompt_tuning", share=0.3, lr=3e-2, epoch_s=3.0)
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
    assert table.loc[("ours (minilm-l6)", "90%/10%"), "full"] == "84.0 ± 1.4 (2)"
    assert table.loc[("ours (minilm-l6)", "30%/70%"), "bitfit"] == "71.0 (1)"
    assert table.loc[("ours (minilm-l6)", "30%/70%"), "embeddings_only"] == "–"
    assert table.loc[("published (TinyRoBERTa)", "90%/10%"), "bitfit"] == "82"
    assert table.loc[("published (TinyBERT)", "30%/70%"), "bitfit"] == "65"


def test_epoch_history_and_costs_come_from_the_records(runs):
    frame = pf.epoch_frame(runs)
    assert set(frame["method"]) == {"full", "bitfit", "prompt_tuning", "lora", "encoder_only"}
    assert len(frame[(frame["method"] == "full") & (frame["setting"] == "90%/10%")]) == 2  # seed 0 only, two epochs
    table = pt.method_table(runs).set_index(["setting", "method"])
    assert table.loc[("90%/10%", "bitfit"), "epoch_s"] == 4.0


def test_learning_curve_has_the_fractions_of_the_cap(runs):
    curve = pf.learning_curve(runs).set_index("schedule")
    by_epochs, by_updates = curve.loc["2 epochs at every size"], curve.loc["76 updates at every size"]
    assert by_epochs["train_examples"].tolist() == [120, 360, 1200] and by_epochs["accuracy"].tolist() == [
        65.0,
        75.0,
        84.0,
    ]
    assert by_updates["train_examples"].tolist() == [120, 1200] and by_updates["accuracy"].tolist() == [72.0, 84.0]


def test_verdicts_rest_on_the_seeds_that_chose_no_rate(runs):
    table = pc.claims(runs)
    assert len(table) == 6 and set(table["verdict"]) <= {"not testable"}  # the fixture's runs are seed 0's
    assert table["why"].str.startswith("fewer than 3 reported seeds").all()


def test_seconds_are_the_median_over_seeds_so_one_slowed_run_does_not_move_them(tmp_path, run):
    for seed, seconds in ((0, 10.0), (1, 11.0), (2, 50.0)):  # seed 2 shared the machine with other work
        run(80.0, seed=seed, epoch_s=seconds)
    runs = pt.label_runs(load_runs(tmp_path))
    row = pt.method_table(runs).iloc[0]
    assert (row["epoch_s"], row["train_s"], row["seeds"]) == (11.0, 22.0, 3)
