"""Multi-task training: the paper's split rule on real GLUE data, temperature sampling, one task per batch."""

import json
import shutil

import numpy as np
import pytest
import torch

from adaptstudy.common.files import is_complete
from adaptstudy.data import load_task, resolve_task
from adaptstudy.data.sampling import TemperatureBatchSampler, sampling_probabilities
from adaptstudy.data.splits import selection_splits
from adaptstudy.runs.base import ConfigError, validate
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.multitask_config import MultiTaskConfig
from adaptstudy.training.config_checks import checked
from adaptstudy.training.multitask import build_multitask_model, train_multitask
from adaptstudy.training.runner import RETRAINED_FIELDS, run
from adaptstudy.training.splits import finetune_splits, multitask_splits


def test_small_tasks_split_validation_in_half_large_ones_hold_out_training_examples(data_dir):
    rte = selection_splits(load_task("rte", data_dir), resolve_task("rte"), seed=0)
    assert (len(rte["train"]), len(rte["validation"]), len(rte["test"])) == (2490, 138, 139)  # RTE dev: 277
    pairs = lambda d: set(zip(d["text_a"], d["text_b"]))  # noqa: E731
    assert not pairs(rte["validation"]) & pairs(rte["test"])  # the two halves of dev are disjoint
    assert len(pairs(rte["validation"]) | pairs(rte["test"])) == 277
    sst2 = selection_splits(load_task("sst2", data_dir), resolve_task("sst2"), seed=0)
    assert (len(sst2["train"]), len(sst2["validation"]), len(sst2["test"])) == (67349 - 1000, 1000, 872)
    assert not set(sst2["validation"]["text_a"]) & set(sst2["train"]["text_a"]) - _repeated(
        load_task("sst2", data_dir)["train"]
    )


def _repeated(dataset) -> set[str]:
    texts, counts = np.unique(dataset["text_a"], return_counts=True)
    return set(texts[counts > 1])


def test_temperature_sampling_flattens_task_sizes():
    assert sampling_probabilities([100, 10_000], temperature=1).round(4).tolist() == [0.0099, 0.9901]
    p = sampling_probabilities([100, 10_000], temperature=10)
    assert p[0] == pytest.approx(1 / (1 + 100**0.1))  # 100^(1/10) against 10000^(1/10)
    sampler = TemperatureBatchSampler([100, 10_000], batch_size=8, temperature=10, seed=0)
    tasks = [0 if batch[0] < 100 else 1 for _ in range(3) for batch in sampler]
    assert abs(np.mean(np.array(tasks) == 0) - p[0]) < 0.02  # 3 x 1263 batches


def test_every_batch_is_from_one_task_and_a_small_task_recycles_its_examples():
    sizes = [5, 40]
    sampler = TemperatureBatchSampler(sizes, batch_size=8, temperature=1e9, seed=1)  # near uniform
    batches = list(sampler)
    assert len(batches) == len(sampler) == 6
    for batch in batches:
        owners = {0 if i < 5 else 1 for i in batch}
        assert len(owners) == 1 and len(batch) == min(8, sizes[owners.pop()])
    assert batches != list(sampler)  # a new pass draws anew


def test_a_mixed_batch_is_refused():
    model = build_multitask_model(MultiTaskConfig(tasks=("rte", "mrpc"), method="layernorm"))
    ids = torch.tensor([[101, 2023, 102], [101, 2008, 102]])
    with pytest.raises(ValueError, match="same task"):
        model(input_ids=ids, task_ids=torch.tensor([0, 1]))


def test_bad_settings_name_the_value_and_the_valid_ones():
    with pytest.raises(ConfigError, match="unknown task 'rtee'"):
        checked(MultiTaskConfig, {"tasks": ["rtee"]})
    with pytest.raises(
        ConfigError,
        match=r"task_projector=False does not apply to method 'houlsby'; methods that take it: hyperformer, hyper",
    ):
        validate(MultiTaskConfig, {"tasks": ["rte"], "method": "houlsby", "task_projector": False})
    with pytest.raises(ConfigError, match="distinct"):
        validate(MultiTaskConfig, {"tasks": ["rte", "rte"]})


@pytest.mark.slow
def test_a_hyperformer_run_records_each_tasks_test_score_at_the_best_validation_epoch(data_dir, tmp_path):
    config = MultiTaskConfig(
        tasks=("rte", "stsb"),
        method="hyperformer++",
        max_train_examples=32,
        num_train_epochs=2,
        max_eval_examples=64,
        max_seq_length=48,
        batch_size=16,
        results_dir=str(tmp_path),
    )
    record = train_multitask(config)
    assert (tmp_path / f"{record['run_id']}.json").is_file()
    assert set(record["metrics"]) == {"rte/accuracy", "stsb/spearman", "stsb/pearson"}
    assert record["train_examples"] == {"rte": 32, "stsb": 32}
    assert record["eval_examples"] == {"rte": {"validation": 64, "test": 64}, "stsb": {"validation": 64, "test": 64}}
    assert [row["epoch"] for row in record["history"]] == [1.0, 2.0]
    best = max(record["history"], key=lambda row: row["validation_mean"])
    assert record["main_metric_value"] == pytest.approx(
        np.mean([best["test"]["rte"]["accuracy"], best["test"]["stsb"]["spearman"]])
    )
    assert record["trainable_params_per_task"] == record["trainable_params"] / 2
    assert record["sampling_probabilities"] == {"rte": 0.5, "stsb": 0.5}


@pytest.mark.slow
def test_few_shot_transfer_trains_only_a_new_task_embedding_and_head(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    tiny = {"max_eval_examples": 16, "max_seq_length": 48, "batch_size": 8, "num_train_epochs": 1}
    source = {"tasks": ["rte", "mrpc"], "method": "hyperformer++", "max_train_examples": 16, **tiny}
    config = MultiTaskConfig(
        tasks=("cb",),
        method="hyperformer++",
        max_train_examples=8,
        transfer_from=source,
        results_dir=str(tmp_path / "results"),
        **{**tiny, "num_train_epochs": 3, "eval_every_epochs": 2},
    )
    record = run(config)  # trains and saves the source first, its record beside the run's (a cell of the study)
    assert sorted(p.name for p in (tmp_path / "results").glob("*.json")) == sorted(
        [f"{MultiTaskConfig(**source).run_id}.json", f"{config.run_id}.json"]
    )
    saved = MultiTaskConfig(**source).artifact_dir()
    assert (saved / "encoder.safetensors").is_file()
    model = build_multitask_model(config)
    trained = sorted(n for n, p in model.named_parameters() if p.requires_grad)
    assert trained == ["bert.hypernetworks.task_embeddings.cb", "heads.cb.bias", "heads.cb.weight"]
    assert record["trainable_params"] == 64 + 3 * 384 + 3  # task embedding, CB's 3-way head
    assert record["train_examples"] == {"cb": 8}
    assert [row["epoch"] for row in record["history"]] == [2.0, 3.0]  # every 2 epochs, and after the last
    source_record = tmp_path / "results" / f"{MultiTaskConfig(**source).run_id}.json"
    kept = json.loads(source_record.read_text())
    shutil.rmtree(saved)  # a new clone: the source's record is committed, its artifact is not in the cache
    run(config.model_copy(update={"seed": 1}))  # trains the source again, to the metrics of its record: kept
    assert (saved / "encoder.safetensors").is_file()
    again = json.loads(source_record.read_text())
    assert {k: v for k, v in again.items() if k != "retrained"} == kept  # with the second training's cost beside it
    assert [sorted(r) for r in again["retrained"]] == [sorted(RETRAINED_FIELDS)]
    with pytest.raises(ConfigError, match="transfer is to new tasks"):
        validate(MultiTaskConfig, {"tasks": ["rte"], "method": "hyperformer++", "transfer_from": source})


def test_a_shared_adapter_run_checkpoints_and_resumes_to_the_same_scores(data_dir, tmp_path):
    """One `adapters` adapter shared by two tasks: its tied embeddings once made every checkpoint save fail."""
    config = MultiTaskConfig(
        tasks=("rte", "mrpc"),
        method="houlsby",
        adapter_size=8,
        max_train_examples=16,
        max_eval_examples=16,
        max_seq_length=48,
        batch_size=8,
        num_train_epochs=1,
        checkpoint_every_s=0,
    )
    checkpoints = tmp_path / "checkpoints"
    first = train_multitask(config, checkpoint_dir=checkpoints, write=False)
    assert first["resumed_from_step"] is None and any(checkpoints.glob("checkpoint-*/adaptstudy.json"))
    resumed = train_multitask(config, checkpoint_dir=checkpoints, write=False)
    assert resumed["resumed_from_step"] >= 1
    assert resumed["metrics"] == pytest.approx(first["metrics"], abs=1e-6)


# AdapterFusion's MT-A: an adapter per task and the encoder, trained jointly; Fusion w/ MT-A over them.

MT_A = {"tasks": ("rte", "mrpc"), "method": "task_adapters", "adapter_size": 8, "max_train_examples": 16}
MT_A |= {
    "max_eval_examples": 16,
    "max_seq_length": 48,
    "batch_size": 8,
    "num_train_epochs": 1,
    "selection_split": True,
}


def test_the_selection_rule_gives_a_multitask_run_the_single_task_runs_splits(data_dir):
    """MT-A's column sits beside single-task columns that select on the selection split and report the dev set."""
    multi = multitask_splits(MultiTaskConfig(**MT_A))["rte"]
    single = finetune_splits(
        FinetuneConfig(task="rte", selection_split=True, max_train_examples=16, max_eval_examples=16)
    )
    for mine, theirs in (("train", "train"), ("validation", "selection"), ("test", "dev")):
        assert list(multi[mine]["text_a"]) == list(single[theirs]["text_a"])
    assert "split_rule" not in MultiTaskConfig(**{**MT_A, "selection_split": False}).identity()  # ids kept


def test_the_old_spelling_of_the_selection_split_still_reads_and_keeps_run_ids():
    """`split_rule: selection | hyperformer` (params files, records' settings) reads as `selection_split`."""
    old = {k: v for k, v in MT_A.items() if k != "selection_split"}
    for rule, flag in (("selection", True), ("hyperformer", False)):
        then = validate(MultiTaskConfig, {**old, "split_rule": rule})
        assert then == MultiTaskConfig(**old, selection_split=flag)
    assert MultiTaskConfig(**MT_A).identity()["split_rule"] == "selection"
    with pytest.raises(ConfigError, match="split_rule='dev' is the old spelling of selection_split"):
        validate(MultiTaskConfig, {**old, "split_rule": "dev"})


@pytest.mark.slow
def test_mt_a_trains_an_adapter_per_task_with_the_encoder_and_fusion_over_it_starts_from_both(
    tmp_path, data_dir, monkeypatch
):
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    fused = FinetuneConfig(
        task="rte",
        method="fusion",
        fusion_sources=("rte", "mrpc"),
        fusion_from=MT_A,
        max_train_examples=16,
        max_eval_examples=16,
        max_seq_length=48,
        batch_size=8,
        num_train_epochs=1,
        results_dir=str(tmp_path / "fusion"),
    )
    record = run(fused)  # trains MT-A first: its record goes beside the fusion run's
    mt_a = fused.mt_source()
    (mt_record,) = [r for r in map(_read, (tmp_path / "fusion").glob("*.json")) if r["method"] == "task_adapters"]
    assert mt_record["run_id"] == mt_a.run_id and set(mt_record["metrics"]) >= {"rte/accuracy", "mrpc/accuracy"}
    assert mt_record["trainable_params"] > 0.9 * mt_record["backbone_params"]  # the encoder trains too
    assert all(is_complete(f) for f in mt_a.task_adapter_folders().values())
    assert (mt_a.encoder_folder() / "model.safetensors").is_file()
    assert record["status"] == "ok" and set(record["fusion_attention"]) == {"rte", "mrpc"}
    assert fused.identity()["fusion_from"] == mt_a.run_id

    model = build_multitask_model(mt_a)  # each batch runs its own task's adapter
    model.bert.select_task("mrpc")
    assert "source_mrpc" in str(model.bert.active_adapters) and "source_rte" not in str(model.bert.active_adapters)
    with pytest.raises(
        ConfigError,
        match=r"fusion_from needs a multi-task run of a method that keeps an adapter per task \(task_adapters\)",
    ):
        validate(FinetuneConfig, {**fused.model_dump(), "fusion_from": {**MT_A, "method": "houlsby"}})
    with pytest.raises(ConfigError, match=r"fusion_sources \['sst2'\] have no adapter"):
        validate(FinetuneConfig, {**fused.model_dump(), "fusion_sources": ("rte", "sst2")})


def _read(path):
    return json.loads(path.read_text())
