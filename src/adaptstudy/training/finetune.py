"""Fine-tune one (task, method, backbone, seed) on the train split and evaluate it on dev.

Built on `transformers.Trainer` through the training core, with what matters on a small CPU: dynamic padding
with length-grouped batches (GLUE sentences are far shorter than `max_seq_length`), the last layer at [CLS] alone
while training (`build_model`), fast dropout on a CPU (the training core), evaluation every epoch for the per-epoch
history, and CUDA settings (bf16 or fp16, TF32) only behind device checks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import DataCollatorWithPadding, Trainer, set_seed

from adaptstudy.data.encoding import length_order, sort_by_length, tokenize_task
from adaptstudy.data.metrics import compute_metrics, task_metric
from adaptstudy.data.spec import TaskSpec, resolve_task
from adaptstudy.models.backbones import load_tokenizer
from adaptstudy.models.methods import adapters_removed, count_parameters
from adaptstudy.models.methods.fusion import mean_attention
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.predictions import constant_predictions, stored_labels, stored_predictions
from adaptstudy.training import core
from adaptstudy.training.callbacks import EpochTimer, FusionRegularization
from adaptstudy.training.fusion import save_source_adapter
from adaptstudy.training.splits import finetune_splits
from adaptstudy.training.starting_point import build_model


class TaskScorer:
    """The Trainer's `compute_metrics` for a task: its metrics, in points; it keeps the last evaluation's
    predictions (`last`), which the record stores."""

    def __init__(self, spec: TaskSpec):
        self.spec, self.last, self.metric = spec, None, task_metric(spec.is_regression)

    def __call__(self, eval_pred) -> dict[str, float]:
        logits, labels = eval_pred.predictions, eval_pred.label_ids
        self.last = logits.squeeze(-1) if self.spec.is_regression else np.argmax(logits, axis=-1)
        return self.metric.compute(predictions=self.last, references=labels, metric_names=self.spec.metrics)


class SortedEvalTrainer(Trainer):
    """A `Trainer` that evaluates in the order of its eval set, which comes sorted by length (`length_order`).

    With `group_by_length` (set for training) transformers evaluates in a shuffled order, length-grouped only
    within mega-batches of 4 evaluation batches or more: on RTE's 277 dev examples, 3 random batches each padded to
    its longest. The permutation transformers would have drawn is still drawn, so the random stream of training
    after an evaluation (its dropout masks) is the one it was."""

    class _InOrder(torch.utils.data.Sampler):
        def __init__(self, n: int, draws: bool):
            self.n, self.draws = n, draws

        def __len__(self) -> int:
            return self.n

        def __iter__(self):
            if self.draws:
                torch.randperm(self.n)  # what transformers' LengthGroupedSampler draws when iterated
            return iter(range(self.n))

    def _get_eval_sampler(self, eval_dataset):
        return self._InOrder(len(eval_dataset), draws=self.args.group_by_length)


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


def layer_ablation(trainer, spec: TaskSpec) -> tuple[list[dict[str, float]], float]:
    """The dev metrics with the adapters of every contiguous span of layers first..last removed (no retraining), and
    the seconds those evaluations took: the run pays them beyond its epochs' evaluations (78 of them on 12 layers)."""
    layers = trainer.model.config.num_hidden_layers
    rows, seconds = [], 0.0
    for first in range(layers):
        for last in range(first, layers):
            with adapters_removed(trainer.model, range(first, last + 1)):
                scores = trainer.evaluate(metric_key_prefix="ablation")
            seconds += scores["ablation_runtime"]
            rows.append({"first": first, "last": last, **{m: scores[f"ablation_{m}"] for m in spec.metrics}})
    return rows, seconds


def selection_scores(trainer, encoded, spec: TaskSpec) -> dict[str, Any] | None:
    """The trained model's metrics on the selection split carved from train (`selection_split`), which chooses
    settings; None without one. Scored after the reported split's predictions are kept."""
    if "selection" not in encoded:
        return None
    output = trainer.predict(sort_by_length(encoded["selection"]), metric_key_prefix="selection")
    metrics = {m: output.metrics[f"selection_{m}"] for m in spec.metrics}
    return {
        "selection_metrics": metrics,
        "selection_metric_value": metrics[spec.main_metric],
        "selection_examples": len(encoded["selection"]),
    }


def majority_class_score(spec: TaskSpec, train_set, eval_set) -> float | None:
    """The main metric of always predicting the training set's most frequent label (None for regression)."""
    if spec.is_regression:
        return None
    majority = np.bincount(np.asarray(train_set["label"])).argmax()
    labels = np.asarray(eval_set["label"])
    return compute_metrics([spec.main_metric], np.full_like(labels, majority), labels)[spec.main_metric]


@dataclass
class Prepared:
    """What a run trains and is scored on: its task, its splits, and the encoded train and eval sets (the eval set
    sorted by length: row i of `eval_set` is row `order[i]` of the split)."""

    spec: TaskSpec
    splits: Any
    tokenizer: Any
    encoded: Any
    order: np.ndarray

    @property
    def train_set(self):
        return self.encoded["train"]

    @cached_property
    def eval_set(self):
        return self.encoded[self.spec.eval_split].select(self.order.tolist())


def prepare(config: FinetuneConfig) -> Prepared:
    """Build: the run's splits, tokenized."""
    spec = resolve_task(config.task)
    splits = finetune_splits(config)
    tokenizer = load_tokenizer(config.backbone)
    encoded = tokenize_task(splits, tokenizer, config.max_seq_length)
    return Prepared(spec, splits, tokenizer, encoded, length_order(encoded[spec.eval_split]))


def make_trainer(config: FinetuneConfig, session: core.Session, model, data: Prepared, callbacks: Sequence[Any]):
    """The Trainer of a run, with its epoch timer and its scorer (which keeps the last evaluation's predictions). A
    fixed number of updates is scored once, at the end; epochs are scored one by one."""
    if config.max_steps:
        schedule = {
            "max_steps": config.max_steps,
            "eval_strategy": "no",
            "logging_strategy": "steps",
            "logging_steps": max(1, config.max_steps // 3),
        }
    else:
        schedule = {"eval_strategy": "epoch", "logging_strategy": "epoch"}
    args = session.arguments(
        **schedule, per_device_eval_batch_size=config.eval_batch_size, group_by_length=True, data_seed=config.data_seed
    )
    timer, scorer = EpochTimer(), TaskScorer(data.spec)
    fusing = config.fusion_sources is not None  # only a fusion method takes them (Method.takes)
    trainer = SortedEvalTrainer(
        model=model,
        args=args,
        train_dataset=data.train_set,
        eval_dataset=data.eval_set,
        data_collator=DataCollatorWithPadding(data.tokenizer, pad_to_multiple_of=core.pad_to_multiple_of()),
        compute_metrics=scorer,
        callbacks=[timer, *([FusionRegularization()] if fusing else []), *callbacks],
    )
    return trainer, timer, scorer


def score(config: FinetuneConfig, trainer, timer: EpochTimer, scorer: TaskScorer, data: Prepared) -> dict[str, Any]:
    """Score the trained model: the per-epoch history (the last epoch scored, whatever the schedule), the reported
    split's predictions in its order, the selection split, the layer ablation and fusion's attention where asked."""
    spec = data.spec
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
    predictions = np.empty_like(scorer.last)  # the final evaluation's, before any ablation evaluates again
    predictions[data.order] = scorer.last  # row i of eval_set is row order[i] of the split
    constant = constant_predictions(predictions, spec.eval_split)
    if constant is not None:
        print(
            f"WARNING {config.run_id}: every prediction on {spec.eval_split} is {constant['value']} "
            f"({constant['examples']} examples): a constant, whatever it scores",
            flush=True,
        )
    fusing = config.fusion_sources is not None
    sources = list(config.fusion_sources) if fusing else None
    return {
        "history": history,
        "epochs_run": epochs_run,
        "predictions": predictions,
        "constant": constant,
        "selection": selection_scores(trainer, data.encoded, spec),
        "ablation": layer_ablation(trainer, spec) if config.layer_ablation else None,
        "attention": mean_attention(trainer.model, trainer.get_eval_dataloader(), sources) if fusing else None,
    }


def outcome(session: core.Session, data: Prepared, scored: dict[str, Any], train_loss: float) -> dict[str, Any]:
    """Record: the run's scores, costs, predictions and labels, as its record's fields."""
    spec, train_set, history = data.spec, data.train_set, scored["history"]
    eval_time = sum(row.get("eval_runtime_s", 0.0) for row in history)
    train_time = max(session.run_seconds - eval_time, 1e-9)
    epochs = scored["epochs_run"] * session.run_share_here
    tokens = sum(len(ids) for ids in train_set["input_ids"])
    metrics = {m: history[-1][m] for m in spec.metrics}
    extra = {}
    if scored["ablation"] is not None:
        rows, seconds = scored["ablation"]
        extra.update(
            layer_ablation=rows,
            ablation_runtime_s=seconds,
            majority_class_score=majority_class_score(spec, train_set, data.eval_set),
        )
    if scored["attention"] is not None:
        extra.update(fusion_attention=scored["attention"])
    if scored["selection"] is not None:
        extra.update(scored["selection"])
    kept = [s for s in (spec.eval_split, "selection") if s in data.splits]
    return dict(
        metrics=metrics,
        main_metric=spec.main_metric,
        main_metric_value=metrics[spec.main_metric],
        train_examples=len(train_set),
        eval_examples=len(data.eval_set),
        eval_split=spec.eval_split,
        train_loss=train_loss,
        train_runtime_s=train_time,
        eval_runtime_s=eval_time,
        train_examples_per_s=len(train_set) * epochs / train_time,
        train_tokens_per_s=tokens * epochs / train_time,
        **extra,
        constant_predictions=scored["constant"],
        predictions=stored_predictions(
            scored["predictions"], data.splits[spec.eval_split], spec.eval_split, spec.is_regression
        ),
        labels={s: stored_labels(data.splits[s]["label"], spec.is_regression) for s in kept},
        history=history,
    )


def finetune(
    config: FinetuneConfig | Mapping[str, Any],
    write: bool = True,
    callbacks: Sequence[Any] = (),
    checkpoint_dir: str | os.PathLike | None = None,
    save_adapter_to: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Train, evaluate, and return the run's record (also written to `results_dir` unless `write` is off): build,
    train, score, record.

    With `checkpoint_dir`, a checkpoint is saved there every `config.checkpoint_every_s` seconds and
    a rerun resumes from the last one (the record says from which step). `callbacks` are
    `transformers.TrainerCallback`s (the throughput benchmark times steps with one). With `save_adapter_to`,
    the trained task adapter is saved there (a fusion source). What the run starts from must exist:
    `adaptstudy.training.runner.run` trains it first.
    """
    run = core.start(config, FinetuneConfig)
    config = run.config
    set_seed(config.seed)
    data = prepare(config)
    model = build_model(config, data.spec)
    counts = count_parameters(model)
    with core.Session(config, checkpoint_dir) as session:
        trainer, timer, scorer = make_trainer(config, session, model, data, callbacks)
        train_output = session.train(trainer)
        scored = score(config, trainer, timer, scorer, data)
        if save_adapter_to is not None:
            save_source_adapter(trainer.model, config, Path(save_adapter_to))
    return core.finish(run, session, write, **counts, **outcome(session, data, scored, train_output.training_loss))
