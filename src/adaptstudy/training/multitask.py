"""Multi-task training: one shared encoder, a head per task, batches drawn one task at a time.

Hyperformer's setting (Mahabadi et al. 2021), also AdapterFusion's multi-task adapter: task t is drawn for
each batch with probability proportional to n_t^(1/T) (`data.sampling`). Any method of the registry
trains this way (`full`: multi-task fine-tuning; `houlsby`/`pfeiffer`: one adapter shared by the tasks;
`hyperformer`/`hyperformer++`: adapters generated per task; `layernorm`: the no-adapter ablation); with
one task it is single-task training under the same splits and model selection, for a fair baseline.

Splits follow the paper (`data.splits.selection_splits`); training caps apply after the hold-out. Every
epoch is scored on validation and test; the record reports the test scores of the epoch with the best mean
validation score.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from datasets import Dataset, DatasetDict, Value, concatenate_datasets
from safetensors.torch import load_file, save_file
from transformers import AutoConfig, AutoModel, DataCollatorWithPadding, Trainer, set_seed

from adaptstudy.common.files import atomic_folder, is_complete, mark_complete
from adaptstudy.data.encoding import sort_by_length, tokenize_task
from adaptstudy.data.metrics import compute_metrics
from adaptstudy.data.sampling import TemperatureBatchSampler
from adaptstudy.data.spec import resolve_task
from adaptstudy.models.backbones import load_tokenizer, resolve_backbone
from adaptstudy.models.fast_dropout import attention_implementation
from adaptstudy.models.last_layer import train_last_layer_at_queries
from adaptstudy.models.methods import METHODS, count_parameters
from adaptstudy.models.methods.base import adapter_name, is_added
from adaptstudy.models.multitask import MultiTaskModel
from adaptstudy.runs.multitask_config import MultiTaskConfig
from adaptstudy.runs.predictions import stored_labels
from adaptstudy.training import core
from adaptstudy.training.callbacks import ScoreEachEpoch
from adaptstudy.training.splits import multitask_splits

ENCODER_FILE = "encoder.safetensors"


def build_multitask_model(config: MultiTaskConfig) -> MultiTaskModel:
    """The encoder with the method applied and a head per task; for a transfer, the source run's trained encoder
    and hypernetworks (loaded from its artifact, frozen) with a new embedding for each new task."""
    torch.manual_seed(config.seed)
    path = resolve_backbone(config.backbone)
    model = MultiTaskModel(
        AutoModel.from_pretrained(path, attn_implementation=attention_implementation(path)),
        {t: resolve_task(t) for t in config.tasks},
    )
    if not METHODS.get(config.method).changes_sequence:
        train_last_layer_at_queries(model.bert)  # the heads read the pooler, which reads [CLS]
    method = METHODS.get(config.method)
    if config.transfer_from is None:
        return method.apply_to_encoder(model, config)
    source = config.source()
    method.apply_to_encoder(model, source)  # as the source run was built, for its tasks
    load_encoder(model, source.artifact_dir())
    method.transfer(model, tuple(config.tasks))  # transfer_from is among the settings of methods that have one
    return model


def own_rate_optimizer(trainer: Trainer, rate: float, own_rate: Callable[[str], bool]) -> torch.optim.Optimizer:
    """The Trainer's optimizer, with the parameters `own_rate` names (a method's, e.g. Hyperformer's hypernetworks
    and task embeddings) at `rate` and the rest (heads, layer norms) at the run's rate; weight decay as the Trainer
    applies it (not on biases and layer norms)."""
    decay = set(trainer.get_decay_parameter_names(trainer.model))
    groups: dict[tuple[bool, bool], list] = {}
    for name, param in trainer.model.named_parameters():
        if param.requires_grad:
            groups.setdefault((own_rate(name), name in decay), []).append(param)
    optimizer_cls, kwargs = Trainer.get_optimizer_cls_and_kwargs(trainer.args, trainer.model)
    return optimizer_cls(
        [
            {
                "params": params,
                "weight_decay": trainer.args.weight_decay if decayed else 0.0,
                **({"lr": rate} if hyper else {}),
            }
            for (hyper, decayed), params in groups.items()
        ],
        **kwargs,
    )


def save_encoder(model: MultiTaskModel, config: MultiTaskConfig) -> Path:
    """The trained encoder with its hypernetworks (heads left out), for transfer runs; atomic, in the cache."""
    folder = config.artifact_dir()
    with atomic_folder(folder) as scratch:
        encoder = {k: v.contiguous() for k, v in model.state_dict().items() if k.startswith("bert.")}
        save_file(encoder, str(scratch / ENCODER_FILE))
        mark_complete(scratch, {"kind": "multitask encoder", "run_id": config.run_id, "config": config.model_dump()})
    return folder


def save_task_adapters(model: MultiTaskModel, config: MultiTaskConfig) -> Path:
    """MT-A's trained encoder (without adapters, as a model folder) and each task's adapter apart (heads left out),
    for Fusion w/ MT-A (`FinetuneConfig.fusion_from`); atomic, in the cache."""
    folder = config.artifact_dir()
    with atomic_folder(folder) as scratch:
        encoder = scratch / config.encoder_folder().relative_to(folder)
        AutoConfig.from_pretrained(resolve_backbone(config.backbone)).save_pretrained(encoder)
        weights = {k: v.contiguous() for k, v in model.bert.state_dict().items() if not is_added(k)}
        save_file(weights, str(encoder / "model.safetensors"), metadata={"format": "pt"})
        for task, adapter in config.task_adapter_folders().items():
            target = scratch / adapter.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)  # `save_adapter` makes the last folder only
            model.bert.save_adapter(str(target), adapter_name(task), with_head=False)
            mark_complete(target, {"kind": "adapter", "run_id": config.run_id, "task": task})
        mark_complete(scratch, {"kind": "multitask adapters", "run_id": config.run_id, "config": config.model_dump()})
    return folder


def load_encoder(model: MultiTaskModel, folder: Path) -> None:
    if not is_complete(folder):
        raise FileNotFoundError(f"no trained multi-task encoder at {folder}: run the source (transfer_from) run first")
    missing, unexpected = model.load_state_dict(load_file(str(folder / ENCODER_FILE)), strict=False)
    missing = [k for k in missing if k.startswith("bert.")]
    if missing or unexpected:
        raise ValueError(
            f"{folder}: the saved encoder does not fit (missing {missing[:3]}, unexpected {unexpected[:3]})"
        )


def _encode(splits: dict[str, DatasetDict], tokenizer, max_seq_length: int) -> dict[str, DatasetDict]:
    out = {}
    for index, (task, task_splits) in enumerate(splits.items()):
        encoded = tokenize_task(task_splits, tokenizer, max_seq_length)
        encoded = encoded.map(lambda batch: {"task_ids": [index] * len(batch["label"])}, batched=True)
        out[task] = encoded.cast_column("label", Value("float32"))  # one label type across tasks (ids and scores)
    return out


def score(trainer, encoded: dict[str, DatasetDict], split: str) -> dict[str, dict[str, float]]:
    """Per task: its metrics on `split` (batches never mix tasks: one dataset per task)."""
    out = {}
    for task, splits in encoded.items():
        spec = resolve_task(task)
        prediction = trainer.predict(sort_by_length(splits[split]), metric_key_prefix=f"{split}_{task}")
        logits, labels = prediction.predictions, prediction.label_ids
        preds = logits.squeeze(-1) if spec.is_regression else np.argmax(logits, axis=-1)
        out[task] = compute_metrics(spec.metrics, preds, labels if spec.is_regression else labels.astype(int))
    return out


def _mean_main(scores: dict[str, dict[str, float]]) -> float:
    return float(np.mean([scores[t][resolve_task(t).main_metric] for t in scores]))


def make_trainer(config: MultiTaskConfig, session: core.Session, model, encoded, sampler, history: list) -> Trainer:
    """The Trainer of a multi-task run: batches drawn by `sampler` (one task per batch), the method's own rate where
    it has one, and every task scored on validation and test each `eval_every_epochs` epochs into `history`."""

    class _Loader(torch.utils.data.DataLoader):
        def set_epoch(self, epoch: int) -> None:  # the Trainer calls it each epoch, also when resuming
            sampler.set_epoch(epoch)

    class _Trainer(Trainer):
        def get_train_dataloader(self):
            return _Loader(self.train_dataset, batch_sampler=sampler, collate_fn=self.data_collator)

        def create_optimizer(self):
            if config.hypernetwork_learning_rate is None:
                return super().create_optimizer()
            own_rate = METHODS.get(config.method).own_rate  # the setting is among the methods' that have one
            self.optimizer = own_rate_optimizer(self, config.hypernetwork_learning_rate, own_rate)
            return self.optimizer

    def score_epoch(state) -> None:
        start = time.perf_counter()
        model.eval()
        row = {
            "epoch": round(state.epoch, 4),
            "step": state.global_step,
            "validation": score(trainer, encoded, "validation"),
            "test": score(trainer, encoded, "test"),
        }
        row["validation_mean"], row["test_mean"] = _mean_main(row["validation"]), _mean_main(row["test"])
        row["eval_runtime_s"] = time.perf_counter() - start
        history.append(row)

    args = session.arguments(
        per_device_eval_batch_size=config.eval_batch_size,
        eval_strategy="no",
        logging_strategy="epoch",
        remove_unused_columns=False,
        save_safetensors=False,  # an `adapters` model ties prompt_tuning's embeddings to the word embeddings
    )
    collator = DataCollatorWithPadding(load_tokenizer(config.backbone), pad_to_multiple_of=core.pad_to_multiple_of())
    train_sets = [encoded[t]["train"] for t in config.tasks]
    trainer = _Trainer(
        model=model,
        args=args,
        train_dataset=concatenate_datasets(train_sets).remove_columns(_text_free(train_sets)),
        data_collator=collator,
        callbacks=[ScoreEachEpoch(score_epoch, config.eval_every_epochs, config.num_train_epochs)],
    )
    return trainer


def keep_trained(model: MultiTaskModel, config: MultiTaskConfig, save: bool | None) -> None:
    """What later runs start from, in the cache: MT-A's adapters (Fusion w/ MT-A) unless `save` is False; the
    encoder of a run that can be transferred from (`save` None) or when `save` says so."""
    method = METHODS.get(config.method)
    transferable = "transfer_from" in method.takes and config.transfer_from is None  # a source of transfers
    if method.per_task_adapters and save is not False:
        save_task_adapters(model, config)
    elif save if save is not None else transferable:
        save_encoder(model, config)


def outcome(config: MultiTaskConfig, session: core.Session, splits, encoded, sampler, history, train_loss) -> dict:
    """Record: the scores at the epoch with the best validation mean (the paper's rule), costs, and the labels."""
    best = max(history, key=lambda row: row["validation_mean"])
    eval_time = sum(row["eval_runtime_s"] for row in history)
    train_time = max(session.run_seconds - eval_time, 1e-9)
    examples = sum(len(encoded[t]["train"]) for t in config.tasks) * session.run_share_here
    return dict(
        task=config.task_name,
        tasks=list(config.tasks),
        metrics={f"{t}/{m}": v for t, scores in best["test"].items() for m, v in scores.items()},
        validation_metrics={f"{t}/{m}": v for t, scores in best["validation"].items() for m, v in scores.items()},
        main_metric="mean over tasks",
        main_metric_value=best["test_mean"],
        validation_mean=best["validation_mean"],
        selected_epoch=best["epoch"],
        train_examples={t: len(encoded[t]["train"]) for t in config.tasks},
        eval_examples={t: {s: len(encoded[t][s]) for s in ("validation", "test")} for t in config.tasks},
        sampling_probabilities=dict(zip(config.tasks, sampler.probabilities.round(4).tolist())),
        labels={
            f"{t}/{s}": stored_labels(splits[t][s]["label"], resolve_task(t).is_regression)
            for t in config.tasks
            for s in ("validation", "test")
        },
        train_loss=train_loss,
        train_runtime_s=train_time,
        eval_runtime_s=eval_time,
        train_examples_per_s=examples * config.num_train_epochs / train_time,
        history=history,
    )


def train_multitask(
    config: MultiTaskConfig | Mapping[str, Any],
    write: bool = True,
    checkpoint_dir: str | os.PathLike | None = None,
    save: bool | None = None,
) -> dict[str, Any]:
    """Train, score every epoch on validation and test, and return the record (written unless `write` is off):
    build, train (scored each epoch), keep what later runs start from, record.

    With `save` (default: for Hyperformer runs) the trained encoder goes to the cache, for transfer runs; a
    transfer's source run must be there (`adaptstudy.training.runner.run` trains it first). MT-A (`task_adapters`)
    keeps its encoder and adapters there unless `save` is False, for Fusion w/ MT-A."""
    run = core.start(config, MultiTaskConfig)
    config = run.config
    set_seed(config.seed)
    splits = multitask_splits(config)
    encoded = _encode(splits, load_tokenizer(config.backbone), config.max_seq_length)
    sizes = [len(encoded[t]["train"]) for t in config.tasks]
    sampler = TemperatureBatchSampler(sizes, config.batch_size, config.temperature, config.seed)
    model = build_multitask_model(config)
    counts = count_parameters(model)
    history: list[dict[str, Any]] = []
    with core.Session(config, checkpoint_dir) as session:
        trainer = make_trainer(config, session, model, encoded, sampler, history)
        history.extend(session.marker.get("history", []))  # the epochs scored before a resume
        output = session.train(trainer, keep=lambda: {"history": history})
    keep_trained(model, config, save)
    fields = outcome(config, session, splits, encoded, sampler, history, output.training_loss)
    return core.finish(
        run,
        session,
        write,
        **counts,
        trainable_params_per_task=counts["trainable_params"] / len(config.tasks),
        **fields,
    )


def _text_free(datasets: list[Dataset]) -> list[str]:
    """Columns the model does not take (none after tokenisation; kept for datasets with extra fields)."""
    keep = {"input_ids", "attention_mask", "token_type_ids", "label", "task_ids"}
    return sorted({c for d in datasets for c in d.column_names} - keep)
