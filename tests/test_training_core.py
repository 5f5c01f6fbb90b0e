"""The training core (`adaptstudy.training.core`) and the runner on real data: every kind of run gets its optimizer
from its settings, stops on a non-finite loss, resumes only from whole checkpoints and writes its record whole; a
run's prerequisites are trained once; and `trainer.train` is called from the core alone."""

import json
import math
import re
from pathlib import Path

import pytest
import torch
from transformers import Trainer

from adaptstudy.common.files import TMP_PREFIX, mark_complete, read_marker, remove_folder
from adaptstudy.launch.cells import Cell
from adaptstudy.launch.ray_sweep import next_ready
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.multitask_config import MultiTaskConfig
from adaptstudy.runs.pretrain_config import PretrainConfig
from adaptstudy.training import core, device, runner
from adaptstudy.training.callbacks import NonFiniteLossError
from adaptstudy.training.checkpoints import last_complete_checkpoint
from adaptstudy.training.device import use_bf16
from adaptstudy.training.finetune import finetune
from adaptstudy.training.multitask import train_multitask
from adaptstudy.training.pretrain import pretrain

SRC = Path(__file__).resolve().parents[1] / "src" / "adaptstudy"
TINY = {"task": "rte", "num_train_epochs": 1, "max_train_examples": 16, "max_seq_length": 48, "batch_size": 8}
TINY_EVAL = {"eval_batch_size": 64, "max_eval_examples": 32}
TINY_MLM = {"corpus_fraction": 0.01, "held_out_fraction": 0.01, "batch_size": 8, "max_seq_length": 48}
TINY_MT = {"max_train_examples": 16, "max_eval_examples": 16, "max_seq_length": 48, "batch_size": 8}
OPTIMIZER = {"learning_rate": 3e-4, "warmup_ratio": 0.2, "weight_decay": 0.05, "adam_beta2": 0.95}
OPTIMIZER |= {"adam_epsilon": 1e-7, "seed": 7, "batch_size": 12, "precision": "fp32"}


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Artifacts in a fresh cache; a bf16 run here must not leave its precision in the environment."""
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "no")


def records(folder: Path) -> dict[str, dict]:
    assert not list(folder.glob(f"{TMP_PREFIX}*")), f"leftover temporary files in {folder}"
    return {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}


# Arguments: one optimizer, from the run's settings, for every kind of run (no training).

KINDS = {
    "finetune": lambda **kw: FinetuneConfig(task="rte", method="houlsby", **kw),
    "pretrain": lambda **kw: PretrainConfig(corpus="task:rte", mode="full", **kw),
    "multitask": lambda **kw: MultiTaskConfig(tasks=("rte", "mrpc"), method="houlsby", **kw),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_arguments_take_the_optimizer_from_the_settings_of_every_kind_of_run(kind, precision):
    config = KINDS[kind](**OPTIMIZER | {"precision": precision}).resolved()
    with core.Session(config) as session:
        args = session.arguments()
        scratch = session.output_dir
        assert args.output_dir == str(scratch) and scratch.is_dir()
    assert not scratch.exists()  # a session without a checkpoint folder trains in a temporary one
    assert args.learning_rate == 3e-4 and args.warmup_ratio == 0.2 and args.weight_decay == 0.05
    assert args.adam_beta2 == 0.95 and args.adam_epsilon == 1e-7 and args.adam_beta1 == 0.9
    assert args.seed == 7 and args.per_device_train_batch_size == 12
    assert args.num_train_epochs == config.num_train_epochs
    assert args.bf16 is (precision == "bf16") and args.bf16 is use_bf16(config.precision)
    assert args.lr_scheduler_type.value == "linear" and args.optim.value == "adamw_torch_fused"
    assert args.logging_nan_inf_filter is False  # a NaN loss must reach StopOnNonFiniteLoss
    assert args.save_strategy.value == "no" and args.report_to == []


def test_pretraining_defaults_to_the_dont_stop_pretraining_optimizer_and_overrides_win(tmp_path):
    with core.Session(PretrainConfig(corpus="news").resolved(), tmp_path / "ckpt") as session:
        args = session.arguments()
        assert (args.adam_beta2, args.adam_epsilon) == (0.98, 1e-6)
        assert args.learning_rate == 1e-4 and args.warmup_ratio == 0.06 and args.weight_decay == 0.01
        assert args.save_strategy.value == "steps"  # checkpoints (by wall time) only with a checkpoint folder
        overridden = session.arguments(learning_rate=5e-5, max_steps=3, logging_steps=1)
        assert (overridden.learning_rate, overridden.max_steps, overridden.logging_steps) == (5e-5, 3, 1)
        assert overridden.adam_beta2 == 0.98  # what is not overridden stays the run's
    for config in (FinetuneConfig(task="rte"), MultiTaskConfig(tasks=("rte",))):
        with core.Session(config.resolved()) as session:
            args = session.arguments()
        assert (args.adam_beta2, args.adam_epsilon) == (0.999, 1e-8)  # the Trainer's (and Houlsby's) defaults


# Checkpoints: a session resumes from the newest whole checkpoint only.


def test_a_session_resumes_from_the_newest_whole_checkpoint_and_removes_broken_ones(tmp_path):
    folder = tmp_path / "ckpt"
    for step, complete in ((2, True), (10, True), (11, False)):  # checkpoint-10 sorts before 11 by number, not name
        (folder / f"checkpoint-{step}").mkdir(parents=True)
        (folder / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
        if complete:
            mark_complete(folder / f"checkpoint-{step}", {"kind": "checkpoint", "step": step})
    with core.Session(FinetuneConfig(task="rte"), folder) as session:
        assert session.resume == str(folder / "checkpoint-10") and session.resumed_step == 10
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint-10", "checkpoint-2"]
    with core.Session(FinetuneConfig(task="rte"), tmp_path / "fresh") as session:
        assert session.resume is None and session.resumed_step is None


@pytest.mark.parametrize("train", [finetune, train_multitask], ids=["finetune", "multitask"])
def test_a_resumed_run_reports_the_training_loss_of_all_its_steps(train, tmp_path, data_dir):
    """The Trainer's own `training_loss` after a resume sums only the steps after it (and divides by all steps):
    the core keeps the loss sum in each checkpoint and adds it back. (Pretraining shares the code; its resumed steps
    draw other MLM masks, so its loss cannot be compared exactly.)"""
    settings = {
        finetune: lambda: FinetuneConfig(**TINY, method="bitfit", checkpoint_every_s=0),
        train_multitask: lambda: MultiTaskConfig(
            **TINY_MT, tasks=("rte", "mrpc"), method="houlsby", checkpoint_every_s=0
        ),
    }[train]()
    folder = tmp_path / "ckpt"
    first = train(settings, checkpoint_dir=folder, write=False)  # checkpoints every step, the last but one kept
    resumed = train(settings, checkpoint_dir=folder, write=False)  # resumes from it: one step left to train
    assert first["resumed_from_step"] is None and resumed["resumed_from_step"] >= 1
    assert resumed["train_loss"] == pytest.approx(first["train_loss"], rel=1e-5)


@pytest.mark.parametrize("train", [finetune, train_multitask], ids=["finetune", "multitask"])
def test_a_resumed_run_costs_the_seconds_of_all_its_sessions_and_keeps_its_epochs(train, tmp_path, data_dir):
    """A resumed run's record once counted only the seconds after the resume (the chapters' CPU-hours fell short),
    and a resumed multi-task run forgot the epochs it had scored (its best epoch came from the later ones)."""
    epochs = {"num_train_epochs": 2, "checkpoint_every_s": 0}
    settings = {
        finetune: lambda: FinetuneConfig(**{**TINY, **epochs}, method="bitfit"),
        train_multitask: lambda: MultiTaskConfig(**TINY_MT, **epochs, tasks=("rte", "mrpc"), method="houlsby"),
    }[train]()
    folder = tmp_path / "ckpt"
    first = train(settings, checkpoint_dir=folder, write=False)
    kept = last_complete_checkpoint(folder)  # the last step but one
    marker = read_marker(kept)
    assert 0 < marker[core.SECONDS] <= first["train_runtime_s"] + first["eval_runtime_s"]
    here = core.this_session(device.resolve_precision(settings.precision))
    assert marker[core.SESSIONS] == [here]
    elsewhere = {"precision": here["precision"], "cpu_capability": "AVX512", "machine": "another kind"}
    # an earlier session of 1,000 s, on another machine kind training in the same precision
    mark_complete(kept, {**marker, core.SECONDS: marker[core.SECONDS] + 1000.0, core.SESSIONS: [elsewhere]})
    resumed = train(settings, checkpoint_dir=folder, write=False)
    assert resumed["resumed_from_step"] == marker["step"]
    assert resumed["train_runtime_s"] > 1000.0
    assert resumed["sessions"] == [elsewhere, here] and first["sessions"] == [here]
    assert resumed["precision_used"] == here["precision"]
    assert [row["epoch"] for row in resumed["history"]] == [row["epoch"] for row in first["history"]] == [1.0, 2.0]


def test_a_run_never_resumes_from_a_checkpoint_saved_in_another_precision(tmp_path, data_dir):
    """bf16 steps then fp32 steps would be a treatment no other run had: the checkpoint goes, the run trains from
    step 0 in this machine's precision, and its record says why (`restarted`)."""
    settings = FinetuneConfig(**{**TINY, "num_train_epochs": 2, "checkpoint_every_s": 0}, method="bitfit")
    folder = tmp_path / "ckpt"
    first = finetune(settings, checkpoint_dir=folder, write=False)
    kept = last_complete_checkpoint(folder)
    marker = read_marker(kept)
    here = core.this_session(device.resolve_precision(settings.precision))
    other = {**here, "precision": "bf16" if here["precision"] == "fp32" else "fp32", "machine": "another kind"}
    mark_complete(kept, {**marker, core.SECONDS: marker[core.SECONDS] + 1000.0, core.SESSIONS: [other]})
    again = finetune(settings, checkpoint_dir=folder, write=False)
    assert again["resumed_from_step"] is None and again["sessions"] == [here]
    assert again["train_runtime_s"] < 1000.0 and again["precision_used"] == here["precision"]
    assert again["restarted"][0]["checkpoint"] == kept and "started again from step 0" in again["restarted"][0]["error"]
    assert again["train_loss"] == pytest.approx(first["train_loss"], rel=1e-5)


@pytest.mark.parametrize("train", [finetune, train_multitask], ids=["finetune", "multitask"])
def test_a_run_resumed_in_its_last_epoch_equals_the_uninterrupted_run(train, tmp_path, data_dir):
    """Fine-tuning's length-grouped batches draw each epoch's order from torch's global generator, which the Trainer
    restores only after that draw: a run resumed in its second epoch trained on another order (train_loss 0.6402
    against 0.6451) and its record said nothing. The checkpoint now keeps the state the epoch's order was drawn from.
    (Multi-task batches are seeded per epoch.)"""
    epochs = {"num_train_epochs": 2, "max_train_examples": 48, "precision": "fp32"}  # 6 steps an epoch
    settings = {
        finetune: lambda: FinetuneConfig(**{**TINY, **epochs}, method="bitfit"),
        train_multitask: lambda: MultiTaskConfig(**{**TINY_MT, **epochs}, tasks=("rte", "mrpc"), method="houlsby"),
    }[train]()
    uninterrupted = train(settings, write=False)
    folder = tmp_path / "ckpt"
    train(settings.model_copy(update={"checkpoint_every_s": 0}), checkpoint_dir=folder, write=False)
    last = last_complete_checkpoint(folder)
    remove_folder(Path(last))  # as if killed after the step before it: resumed a few steps into epoch 2
    resumed = train(settings.model_copy(update={"checkpoint_every_s": 0}), checkpoint_dir=folder, write=False)
    assert resumed["resumed_from_step"] > (6 if train is finetune else 12)  # in the second epoch
    assert resumed["resumed_order"] == "kept" and uninterrupted["resumed_order"] is None
    assert resumed["train_loss"] == pytest.approx(uninterrupted["train_loss"], rel=1e-12, abs=0)
    assert untimed(resumed["history"]) == untimed(uninterrupted["history"])  # each epoch's loss and scores
    assert resumed["metrics"] == uninterrupted["metrics"]
    assert resumed.get("predictions") == uninterrupted.get("predictions")


def untimed(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if not k.endswith("_s")} for row in history]


# The record: completed with costs, device and precision, written whole.

RESULTS = {"main_metric": "accuracy", "trainable_params": 1, "total_params": 2, "train_runtime_s": 1.0}
RESULTS |= {"train_examples_per_s": 16.0}


def test_finish_completes_the_record_and_writes_it_whole_or_not_at_all(tmp_path):
    results = tmp_path / "results"
    folder = tmp_path / "ckpt"
    (folder / "checkpoint-6").mkdir(parents=True)
    mark_complete(folder / "checkpoint-6", {"kind": "checkpoint", "step": 6})
    run = core.start({**TINY, "method": "bitfit", "results_dir": str(results)}, FinetuneConfig)
    assert run.record["status"] is None and run.config.learning_rate is not None  # resolved before training
    with core.Session(run.config, folder) as session:
        record = core.finish(run, session, write=False, metrics={"accuracy": 50.0})
    assert not results.exists()  # write=False writes nothing
    assert record["status"] == "ok" and record["metrics"] == {"accuracy": 50.0}
    assert record["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    assert record["precision_used"] == ("bf16" if use_bf16(run.config.precision) else "fp32")
    assert record["resumed_from_step"] == 6 and record["peak_rss_mb"] > 0 and record["torch_threads"] >= 1
    assert record["finished_at"] and record["peak_rss_scope"] == run.peak_rss_scope
    assert record["machine"]["cpu_capability"] == torch.backends.cpu.get_cpu_capability()  # the kernels it ran on


def test_finish_refuses_a_nan_metric_and_leaves_no_partial_file(tmp_path):
    results = tmp_path / "results"
    run = core.start({**TINY, "method": "bitfit", "results_dir": str(results)}, FinetuneConfig)
    with core.Session(run.config) as session, pytest.raises(ValueError, match="JSON"):
        core.finish(run, session, metrics={"accuracy": math.nan}, **RESULTS)
    assert list(results.iterdir()) == []  # the temporary file went too
    with core.Session(run.config) as session:
        core.finish(run, session, metrics={"accuracy": 50.0}, **RESULTS)
    saved = records(results)
    assert list(saved) == [run.record["run_id"]] and saved[run.record["run_id"]]["resumed_from_step"] is None


# Divergence: every kind of run stops on a non-finite loss, and writes no record.


@pytest.fixture
def nan_loss(monkeypatch):
    """Every Trainer's loss becomes NaN (the multi-task runs' Trainer subclass included)."""
    compute_loss = Trainer.compute_loss

    def poisoned(self, model, inputs, *args, **kwargs):
        out = compute_loss(self, model, inputs, *args, **kwargs)
        return (out[0] * math.nan, *out[1:]) if isinstance(out, tuple) else out * math.nan

    monkeypatch.setattr(Trainer, "compute_loss", poisoned)


RUNS = {
    "finetune": (finetune, lambda r: FinetuneConfig(**TINY, **TINY_EVAL, method="bitfit", results_dir=r)),
    "pretrain": (
        pretrain,  # 12 steps: it logs the loss every 10, and must stop there, not after all its steps
        lambda r: PretrainConfig(corpus="task:rte", mode="head", max_steps=12, results_dir=r, **TINY_MLM),
    ),
    "multitask": (
        train_multitask,
        lambda r: MultiTaskConfig(tasks=("rte",), method="bitfit", results_dir=r, **TINY_MT),
    ),
}


@pytest.mark.parametrize("kind", RUNS)
def test_every_kind_of_run_stops_on_a_nan_loss_and_writes_no_record(kind, tmp_path, data_dir, nan_loss):
    train, make = RUNS[kind]
    step = "10" if kind == "pretrain" else "2"  # at the first logged loss (fine-tuning: one epoch of two batches)
    with pytest.raises(NonFiniteLossError, match=f"training loss is nan at step {step}$"):
        train(make(str(tmp_path / "r")), checkpoint_dir=tmp_path / "ckpt")
    assert not list((tmp_path / "r").glob("*.json"))
    assert not list((tmp_path / "cache").glob("pretrained/*"))  # a diverged pretraining leaves no artifact


def test_a_diverging_learning_rate_stops_a_finetuning_run_at_the_first_logged_loss(tmp_path, data_dir):
    config = FinetuneConfig(**TINY | {"max_train_examples": 32}, **TINY_EVAL, method="full", learning_rate=1e30)
    config = config.model_copy(update={"warmup_ratio": 0.0, "max_steps": 6})  # the loss is logged every 2 steps
    with pytest.raises(NonFiniteLossError, match=r"training loss is (nan|-?inf) at step 2$"):
        finetune(config, write=False)


# The runner: a run's prerequisite is trained first, once.


def test_prerequisites_come_in_waves_each_needing_only_the_waves_before(tmp_path, data_dir):
    """DSP's chains (a warm-up, DAPT on it, TAPT on DAPT) and fusion's sources train as sweep cells of their own, a
    wave at a time: each prerequisite once, after everything it starts from, never one already trained."""
    warm = {"corpus": "task:rte", "mode": "head", "max_steps": 2, "learning_rate": 3e-3, **TINY_MLM}
    dapt = {**warm, "corpus": "task:mrpc", "mode": "full", "init_from": warm}
    tapt = {**dapt, "corpus": "task:rte", "init_from": dapt}
    here = {"method": "bitfit", "results_dir": str(tmp_path / "r")}  # the pretrainings' records: beside, in tmp
    runs = [FinetuneConfig(**TINY, **here, init_from=tapt, seed=seed) for seed in (0, 1)]
    runs += [FinetuneConfig(**TINY, **here, init_from=dapt), FinetuneConfig(**TINY, **here)]
    waves = runner.prerequisite_waves(runs)
    assert [[(needed.corpus, needed.mode) for needed, _ in wave] for wave in waves] == [
        [("task:rte", "head")],
        [("task:mrpc", "full")],
        [("task:rte", "full")],
    ]
    assert waves[2][0][1] == runs[0] and waves[0][0][1].corpus == "task:mrpc"  # each with a run that needs it
    runner.ensure(runs[2], tmp_path / "ckpt")  # the warm-up and DAPT trained: only TAPT is left
    assert [[needed.run_id for needed, _ in wave] for wave in runner.prerequisite_waves(runs)] == [
        [waves[2][0][0].run_id]
    ]
    assert runner.prerequisite_waves(runs[3:]) == []


def test_a_ray_worker_starts_a_cell_that_needs_nothing_pending_while_a_prerequisite_trains(tmp_path):
    """Fusion's stage 2 once trained its third MT-A run alone for 40 minutes, a core idle, while the cells that need
    no MT-A waited for the prerequisites' wave to end."""
    warm = {"corpus": "task:rte", "mode": "head", "max_steps": 2, "learning_rate": 3e-3, **TINY_MLM}
    here = {"method": "bitfit", "results_dir": str(tmp_path / "r")}
    needing, free = FinetuneConfig(**TINY, **here, init_from=warm), FinetuneConfig(**TINY, **here, seed=1)
    ((needed, by),) = [entry for wave in runner.prerequisite_waves([needing, free]) for entry in wave]
    cells = [Cell(needed, needed_by=by), Cell(needing), Cell(free)]
    needs = {cell.run_id: runner.pending_prerequisites(cell.config) for cell in cells}
    assert needs == {needed.run_id: set(), needing.run_id: {needed.run_id}, free.run_id: set()}
    assert next_ready(cells, [], needs) is cells[0]
    assert next_ready(cells[1:], cells[:1], needs) is cells[2]  # not the one waiting for the prerequisite
    assert next_ready(cells[1:2], cells[:1], needs) is None
    assert next_ready(cells[1:2], [], needs) is cells[1]  # the prerequisite has finished


def test_a_pretraining_named_by_its_settings_is_trained_once_before_the_runs_that_start_from_it(
    tmp_path, data_dir, monkeypatch
):
    results = tmp_path / "r"
    warmup = {"corpus": "task:rte", "mode": "head", "max_steps": 2, "learning_rate": 3e-3, **TINY_MLM}
    config = FinetuneConfig(**TINY, **TINY_EVAL, method="bitfit", init_from=warmup, results_dir=str(results))
    checkpoints = results / ".checkpoints" / config.run_id
    record = runner.run(config, checkpoint_dir=checkpoints)

    pretraining = PretrainConfig(**warmup)
    (pre,) = records(tmp_path / "r_pretrain").values()  # beside the run's results
    assert pre["run_id"] == pretraining.run_id and pre["status"] == "ok" and pre["steps"] == 2
    assert pre["config"]["adam_beta2"] == 0.98 and pre["device"] in ("cpu", "cuda")
    assert (
        Path(pre["artifact"]) == pretraining.artifact_dir()
        and (pretraining.artifact_dir() / "adaptstudy.json").is_file()
    )
    assert not (results / ".checkpoints" / pretraining.run_id).exists()  # its checkpoints go once it is done
    assert record["status"] == "ok"
    assert records(results)[config.run_id]["config"]["init_from"] == warmup
    assert config.identity()["init_from"] == pretraining.run_id

    def trained_again(*args, **kwargs):
        raise AssertionError("the pretraining was trained a second time")

    monkeypatch.setattr(runner, "pretrain", trained_again)
    other_seed = config.model_copy(update={"seed": 1})
    again = runner.run(other_seed, write=False)
    assert again["status"] == "ok" and again["run_id"] != record["run_id"]
    assert len(records(tmp_path / "r_pretrain")) == 1


def test_a_prerequisite_whose_artifact_is_gone_trains_again_and_keeps_its_record_if_it_reproduces(tmp_path, data_dir):
    """Artifacts are cached per machine, records committed: a new clone retrains a fusion run's sources. Retraining
    to the same metrics keeps the record (and the costs of the run that first reported, the retraining's listed under
    `retrained`); other metrics replace it, the replaced training listed with its costs and scores."""
    warmup = {"corpus": "task:rte", "mode": "head", "max_steps": 2, "learning_rate": 3e-3, **TINY_MLM}
    config = FinetuneConfig(**TINY, method="bitfit", init_from=warmup, results_dir=str(tmp_path / "r"))
    pretraining = PretrainConfig(**warmup)
    record_file = tmp_path / "r_pretrain" / f"{pretraining.run_id}.json"

    def retrain(kept_record: dict) -> dict:
        record_file.write_text(json.dumps(kept_record))
        remove_folder(pretraining.artifact_dir())  # the cache of another machine
        assert runner.pending_prerequisites(config) == {pretraining.run_id}
        runner.ensure(config, tmp_path / "ckpt")
        assert runner.pending_prerequisites(config) == set()
        return json.loads(record_file.read_text())

    runner.ensure(config, tmp_path / "ckpt")
    first = json.loads(record_file.read_text())
    kept = retrain(first | {"finished_at": "kept"})
    assert kept["finished_at"] == "kept" and kept["train_runtime_s"] == first["train_runtime_s"]
    assert len(kept["retrained"]) == 1 and kept["retrained"][0]["train_runtime_s"] > 0
    assert kept["retrained"][0]["finished_at"] not in ("kept", first["finished_at"])
    twice = retrain(kept)
    assert len(twice["retrained"]) == 2  # a third machine: both later trainings listed
    other = {**first["metrics"], "perplexity": first["metrics"]["perplexity"] + 1}
    replaced = retrain(twice | {"metrics": other})
    assert replaced["finished_at"] != "kept" and replaced["metrics"] == first["metrics"]
    assert [r["finished_at"] for r in replaced["retrained"][:2]] == [r["finished_at"] for r in twice["retrained"]]
    assert replaced["retrained"][2]["finished_at"] == "kept" and replaced["retrained"][2]["metrics"] == other
    assert replaced["retrained"][2]["train_runtime_s"] == first["train_runtime_s"]  # three trainings before, all paid
    assert runner.same_metrics({"stsb/pearson": 83.83788466453552}, {"stsb/pearson": 83.837890625})  # float32's
    assert not runner.same_metrics({"a": 83.8}, {"a": 83.9}) and not runner.same_metrics({"a": 1.0}, {"b": 1.0})


def test_a_retrained_prerequisite_that_diverges_keeps_its_record_and_stops_what_needs_it(
    tmp_path, data_dir, monkeypatch
):
    """A cache without a prerequisite's artifact trains it again; where that training diverges and the reported one
    did not, what needs it must not start from it, and its record must not trade its scores for a failure."""
    from adaptstudy.launch.cells import write_failure

    warmup = {"corpus": "task:rte", "mode": "head", "max_steps": 2, "learning_rate": 3e-3, **TINY_MLM}
    config = FinetuneConfig(**TINY, method="bitfit", init_from=warmup, results_dir=str(tmp_path / "r"))
    pretraining = PretrainConfig(**warmup)
    record_file = tmp_path / "r_pretrain" / f"{pretraining.run_id}.json"
    runner.ensure(config, tmp_path / "ckpt")
    first = json.loads(record_file.read_text())
    remove_folder(pretraining.artifact_dir())  # another machine's cache
    trained = runner.pretrain
    diverged = {"step": 7, "rule": "training loss above 10x the first step's for 2 steps in a row", "loss": 9.4}

    def diverging(*args, **kwargs):
        return {**trained(*args, **kwargs), "diverged": diverged}

    monkeypatch.setattr(runner, "pretrain", diverging)
    with pytest.raises(runner.PrerequisiteDiverged, match=f"{pretraining.run_id}: pretraining .* diverged at step 7"):
        runner.ensure(config, tmp_path / "ckpt")
    kept = json.loads(record_file.read_text())
    assert kept["metrics"] == first["metrics"] and kept["finished_at"] == first["finished_at"]
    assert kept["retrained"][-1]["why"] == runner.DIVERGED_AGAIN and kept["retrained"][-1]["diverged"] == diverged
    assert kept["retrained"][-1]["train_runtime_s"] > 0  # paid, in sight
    assert runner.pending_prerequisites(config) == {pretraining.run_id}  # its model removed: the next sweep retries
    write_failure(pretraining.model_copy(update={"results_dir": str(record_file.parent)}), RuntimeError("diverged"))
    assert json.loads(record_file.read_text())["status"] == "ok"  # the sweep's failure record does not replace it


# The invariants: one training core, small modules.


def test_trainer_train_is_called_from_the_training_core_alone():
    calls = {
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if re.search(r"\.train\(\s*resume_from_checkpoint", p.read_text())
    }
    assert calls == {"training/core.py"}


def test_no_module_is_longer_than_400_lines():
    long = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert not long, f"modules over 400 lines: {long}"
