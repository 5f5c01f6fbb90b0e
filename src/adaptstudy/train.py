"""Fine-tune one (task, method, backbone, seed) on the train split and evaluate it on dev.

Built on `transformers.Trainer`, with what matters on a small CPU: dynamic padding with
length-grouped batches (GLUE sentences are far shorter than `max_seq_length`), evaluation
every epoch for the per-epoch history, and CUDA settings (bf16, TF32) only behind device checks.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from datasets import DatasetDict

from adaptstudy.backbones import load_tokenizer
from adaptstudy.config import FinetuneConfig, validate
from adaptstudy.data import TaskSpec, resolve_task
from adaptstudy.device import training_arguments, use_bf16
from adaptstudy.methods import METHODS, adapters_removed, count_parameters
from adaptstudy.artifacts import initial_weights
from adaptstudy.metrics import compute_metrics
from adaptstudy.results import base_record, peak_rss_mb, reset_peak_rss, resolve_results_dir, write_record


# Batches pad to their longest example rounded up to a multiple of 16: a handful of distinct shapes
# instead of one per length, which keeps the CPU allocator from fragmenting (measured on MRPC, houlsby,
# one epoch: peak memory added 1,587 MB against 1,744, same step time and dev F1).
PAD_TO_MULTIPLE_OF = 16


class NonFiniteLossError(RuntimeError):
    """Training diverged: the loss became NaN or infinite."""


def tokenize_task(splits: DatasetDict, tokenizer, max_seq_length: int) -> DatasetDict:
    """Token ids for every split; pairs are encoded as one sequence with segment ids."""

    def encode(batch):
        pair = batch["text_b"] if "text_b" in batch else None
        return tokenizer(batch["text_a"], pair, truncation=True, max_length=max_seq_length)

    text_columns = [c for c in ("text_a", "text_b") if c in splits["train"].column_names]
    return splits.map(encode, batched=True, remove_columns=text_columns, desc="tokenize")


def build_model(config: FinetuneConfig, spec: TaskSpec):
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the head is new by design; don't warn that it is untrained
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            initial_weights(config),
            num_labels=spec.num_labels,
            problem_type="regression" if spec.is_regression else "single_label_classification",
            use_safetensors=True,
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    return METHODS.get(config.method).apply(model, config)


def _metric_fn(spec: TaskSpec):
    def fn(eval_pred) -> dict[str, float]:
        logits, labels = eval_pred.predictions, eval_pred.label_ids
        preds = logits.squeeze(-1) if spec.is_regression else np.argmax(logits, axis=-1)
        return compute_metrics(spec.metrics, preds, labels)

    return fn


def epoch_history(log_history: list[dict], metrics: list[str]) -> list[dict[str, float]]:
    """One row per epoch: training loss, dev metrics and eval time, from the Trainer's log."""
    rows: dict[float, dict[str, float]] = {}
    for entry in log_history:
        if "epoch" not in entry:
            continue
        row = rows.setdefault(round(entry["epoch"], 4), {"epoch": round(entry["epoch"], 4)})
        if "loss" in entry:
            row["train_loss"] = entry["loss"]
        for m in metrics:
            if f"eval_{m}" in entry:
                row[m] = entry[f"eval_{m}"]
        if "eval_runtime" in entry:
            row["eval_runtime_s"] = entry["eval_runtime"]
    return [r for _, r in sorted(rows.items()) if len(r) > 1]


def sort_by_length(dataset):
    """Evaluation order by length, so each batch pads only to its own longest (metrics ignore order)."""
    lengths = [len(ids) for ids in dataset["input_ids"]]
    return dataset.select(np.argsort(lengths, kind="stable").tolist())


COMPLETE_MARKER = "adaptstudy-complete"


class TimedCheckpoints:
    """Save a checkpoint every `every_s` seconds of training (0: every step), and only then.

    The Trainer also saves at the last step; that save is skipped (the record follows at once). A
    checkpoint gets a marker file once the Trainer has written all of it, so a kill in the middle
    of a save never leaves a checkpoint that a rerun would try to resume from. The Trainer removes
    old checkpoints before the new one gets its marker, so runs keep two (`save_total_limit=2`):
    with one, a kill in that gap left nothing to resume from.
    """

    def __new__(cls, every_s: float):
        from transformers import TrainerCallback

        class _Timed(TrainerCallback):
            def __init__(self):
                self.last = time.monotonic()

            def on_step_end(self, args, state, control, **kwargs):
                control.should_save = time.monotonic() - self.last >= every_s and state.global_step < state.max_steps
                if control.should_save:
                    self.last = time.monotonic()

            def on_save(self, args, state, control, **kwargs):
                folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
                (folder / COMPLETE_MARKER).touch()

        return _Timed()


def last_complete_checkpoint(folder: Path) -> str | None:
    """The newest checkpoint under `folder` that was written whole; incomplete ones are removed."""
    import shutil

    complete = None
    checkpoints = sorted(folder.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1])) if folder.is_dir() else []
    for checkpoint in checkpoints:
        if (checkpoint / COMPLETE_MARKER).is_file():
            complete = checkpoint
        else:
            shutil.rmtree(checkpoint, ignore_errors=True)
    return str(complete) if complete else None


class EpochTimer:
    """Training seconds of each epoch (evaluation excluded: the Trainer evaluates after `on_epoch_end`)."""

    def __new__(cls):
        from transformers import TrainerCallback

        class _Timer(TrainerCallback):
            def __init__(self):
                self.seconds: dict[float, float] = {}

            def on_epoch_begin(self, args, state, control, **kwargs):
                self.start = time.perf_counter()

            def on_epoch_end(self, args, state, control, **kwargs):
                self.seconds[round(state.epoch, 4)] = time.perf_counter() - self.start

        return _Timer()


class _RaiseOnNonFiniteLoss:
    def __new__(cls):
        from transformers import TrainerCallback

        class _Check(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kwargs):
                loss = (logs or {}).get("loss")
                if loss is not None and not math.isfinite(loss):
                    raise NonFiniteLossError(f"training loss is {loss} at step {state.global_step}")

        return _Check()


def layer_ablation(trainer, spec: TaskSpec) -> list[dict[str, float]]:
    """The dev metrics with the adapters of every contiguous span of layers first..last removed (no retraining)."""
    layers = trainer.model.config.num_hidden_layers
    rows = []
    for first in range(layers):
        for last in range(first, layers):
            with adapters_removed(trainer.model, range(first, last + 1)):
                scores = trainer.evaluate(metric_key_prefix="ablation")
            rows.append({"first": first, "last": last, **{m: scores[f"ablation_{m}"] for m in spec.metrics}})
    return rows


def majority_class_score(spec: TaskSpec, train_set, eval_set) -> float | None:
    """The main metric of always predicting the training set's most frequent label (None for regression)."""
    if spec.is_regression:
        return None
    majority = np.bincount(np.asarray(train_set["label"])).argmax()
    labels = np.asarray(eval_set["label"])
    return compute_metrics([spec.main_metric], np.full_like(labels, majority), labels)[spec.main_metric]


def finetune(
    config: FinetuneConfig | Mapping[str, Any],
    write: bool = True,
    callbacks: Sequence[Any] = (),
    checkpoint_dir: str | os.PathLike | None = None,
    save_adapter_to: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Train, evaluate, and return the run's record (also written to `results_dir` unless `write` is off).

    With `checkpoint_dir`, a checkpoint is saved there every `config.checkpoint_every_s` seconds and
    a rerun resumes from the last one (the record says from which step). `callbacks` are
    `transformers.TrainerCallback`s (the throughput benchmark times steps with one). With `save_adapter_to`,
    the trained task adapter is saved there (a fusion source). A fusion run trains its missing source adapters first.
    """
    if not isinstance(config, FinetuneConfig):
        config = validate(FinetuneConfig, config)
    config = config.resolved()
    spec = resolve_task(config.task)
    record = base_record(config)  # before training: the commit and versions that this run starts from
    peak_rss_scope = reset_peak_rss()

    from transformers import DataCollatorWithPadding, Trainer, set_seed

    set_seed(config.seed)
    splits = config.load_splits()
    tokenizer = load_tokenizer(config.backbone)
    encoded = tokenize_task(splits, tokenizer, config.max_seq_length)
    train_set, eval_set = encoded["train"], sort_by_length(encoded[spec.eval_split])
    fusing = config.method == "fusion"
    if fusing:
        from adaptstudy import fusion

        fusion.ensure_sources(config, Path(checkpoint_dir).parent if checkpoint_dir else None)
    model = build_model(config, spec)
    counts = count_parameters(model)

    with tempfile.TemporaryDirectory(prefix="adaptstudy-") as scratch:
        output_dir = Path(checkpoint_dir) if checkpoint_dir else Path(scratch)
        resume = last_complete_checkpoint(output_dir) if checkpoint_dir else None
        # a fixed number of updates is scored once, at the end; epochs are scored one by one
        schedule = ({"max_steps": config.max_steps, "eval_strategy": "no", "logging_strategy": "steps",
                     "logging_steps": max(1, config.max_steps // 3)}
                    if config.max_steps else {"eval_strategy": "epoch", "logging_strategy": "epoch"})  # fmt: skip
        args = training_arguments(
            config.precision,
            output_dir=str(output_dir),
            learning_rate=config.learning_rate,
            num_train_epochs=config.num_train_epochs,
            **schedule,
            per_device_train_batch_size=config.batch_size,
            per_device_eval_batch_size=config.eval_batch_size,
            warmup_ratio=config.warmup_ratio,
            weight_decay=config.weight_decay,
            adam_beta2=config.adam_beta2,
            adam_epsilon=config.adam_epsilon,
            lr_scheduler_type="linear",
            logging_nan_inf_filter=False,  # a NaN loss must fail the run, not vanish from the average
            save_strategy="steps" if checkpoint_dir else "no",
            save_steps=10**9,  # checkpoints come from TimedCheckpoints, by wall time
            save_total_limit=2,  # the Trainer deletes the older checkpoint before the newer gets its marker
            group_by_length=True,
            optim="adamw_torch_fused",  # one fused kernel: ~8x faster than the per-tensor loop on CPU
            seed=config.seed,
            data_seed=config.data_seed,
            report_to=[],
            dataloader_num_workers=0,
        )
        timer = EpochTimer()
        own = [_RaiseOnNonFiniteLoss(), timer] + ([TimedCheckpoints(config.checkpoint_every_s)] if checkpoint_dir else [])
        own += [fusion.regularization_callback()] if fusing else []
        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=train_set,
            eval_dataset=eval_set,
            data_collator=DataCollatorWithPadding(tokenizer, pad_to_multiple_of=PAD_TO_MULTIPLE_OF),
            compute_metrics=_metric_fn(spec),
            callbacks=own + list(callbacks),
        )
        start = time.perf_counter()
        train_output = trainer.train(resume_from_checkpoint=resume)
        wall = time.perf_counter() - start
        history = epoch_history(trainer.state.log_history, spec.metrics)
        for row in history:
            if row["epoch"] in timer.seconds:
                row["train_epoch_s"] = timer.seconds[row["epoch"]]
        epochs_run = trainer.state.epoch or config.num_train_epochs
        if not history or not all(m in history[-1] for m in spec.metrics) or history[-1]["epoch"] < epochs_run - 1e-6:
            final = trainer.evaluate()
            scores = {m: final[f"eval_{m}"] for m in spec.metrics}
            if history and history[-1]["epoch"] == round(epochs_run, 4):
                history[-1].update(scores)
            else:
                history.append({"epoch": round(epochs_run, 4), **scores})
        total_steps = trainer.state.global_step
        ablation = layer_ablation(trainer, spec) if config.layer_ablation else None
        attention = fusion.mean_attention(trainer.model, trainer.get_eval_dataloader(), list(config.fusion_sources)) if fusing else None
        if save_adapter_to is not None:
            from adaptstudy.fusion import save_source_adapter

            save_source_adapter(trainer.model, config, Path(save_adapter_to))
    if not math.isfinite(train_output.training_loss):
        raise NonFiniteLossError(f"training loss is {train_output.training_loss}")

    resumed_step = int(Path(resume).name.split("-")[-1]) if resume else None
    share_run_here = 1.0 - (resumed_step or 0) / max(total_steps, 1)
    eval_time = sum(row.get("eval_runtime_s", 0.0) for row in history)
    train_time = max(wall - eval_time, 1e-9)
    epochs = epochs_run * share_run_here
    tokens = sum(len(ids) for ids in train_set["input_ids"])
    metrics = {m: history[-1][m] for m in spec.metrics}
    record.update(
        status="ok",
        metrics=metrics,
        main_metric=spec.main_metric,
        main_metric_value=metrics[spec.main_metric],
        **counts,
        train_examples=len(train_set),
        eval_examples=len(eval_set),
        eval_split=spec.eval_split,
        train_loss=train_output.training_loss,
        train_runtime_s=train_time,
        eval_runtime_s=eval_time,
        train_examples_per_s=len(train_set) * epochs / train_time,
        train_tokens_per_s=tokens * epochs / train_time,
        peak_rss_mb=peak_rss_mb(),
        peak_rss_scope=peak_rss_scope,
        device="cuda" if torch.cuda.is_available() else "cpu",
        precision_used="bf16" if use_bf16(config.precision) else "fp32",
        torch_threads=torch.get_num_threads(),
        resumed_from_step=resumed_step,
        **({"layer_ablation": ablation, "majority_class_score": majority_class_score(spec, train_set, eval_set)}
           if ablation is not None else {}),
        **({"fusion_attention": attention} if attention is not None else {}),
        history=history,
        finished_at=datetime.now(timezone.utc).isoformat(),
    )
    if write:
        write_record(record, resolve_results_dir(config.results_dir))
    return record
