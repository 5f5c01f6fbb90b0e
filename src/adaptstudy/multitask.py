"""Multi-task training: one shared encoder, a head per task, batches drawn one task at a time.

Hyperformer's setting (Mahabadi et al. 2021), also AdapterFusion's multi-task adapter: task t is drawn for
each batch with probability proportional to n_t^(1/T), n_t its training examples (temperature sampling,
T = 10 in the paper: between proportional, T = 1, and uniform, T -> inf). Any method of the registry
trains this way (`full`: multi-task fine-tuning; `houlsby`/`pfeiffer`: one adapter shared by the tasks;
`hyperformer`/`hyperformer++`: adapters generated per task; `layernorm`: the no-adapter ablation); with
one task it is single-task training under the same splits and model selection, for a fair baseline.

Splits follow the paper: a task with fewer than 10k training examples gives half its validation set for
model selection and half as the test set; a larger one holds out 1k training examples for model
selection and uses its validation set as the test set. Training caps apply after the hold-out. Every
epoch is scored on both; the record reports the test scores of the epoch with the best mean
validation score.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from datasets import Dataset, DatasetDict, Value, concatenate_datasets
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import nn
from transformers.modeling_outputs import SequenceClassifierOutput

from adaptstudy.data import TaskSpec, load_task, resolve_task, subsample
from adaptstudy.metrics import compute_metrics

LARGE_TASK = 10_000  # training examples from which a task holds out training data for model selection
HELD_OUT = 1_000


def selection_splits(splits: DatasetDict, spec: TaskSpec, seed: int) -> DatasetDict:
    """train / validation (model selection) / test by the paper's rule (see the module docstring)."""
    train, dev = splits["train"], splits[spec.eval_split]
    order = np.random.default_rng(seed)
    if len(train) < LARGE_TASK:
        idx = order.permutation(len(dev))
        half = len(dev) // 2
        return DatasetDict({"train": train, "validation": dev.select(np.sort(idx[:half]).tolist()),
                            "test": dev.select(np.sort(idx[half:]).tolist())})  # fmt: skip
    idx = order.permutation(len(train))
    return DatasetDict({"train": train.select(np.sort(idx[HELD_OUT:]).tolist()),
                        "validation": train.select(np.sort(idx[:HELD_OUT]).tolist()), "test": dev})  # fmt: skip


def sampling_probabilities(sizes: list[int], temperature: float) -> np.ndarray:
    weights = np.asarray(sizes, dtype=float) ** (1.0 / temperature)
    return weights / weights.sum()


class TemperatureBatchSampler:
    """Batches of global indices into the tasks' concatenation, each from one task drawn with probability
    ∝ n_t^(1/T); within a task, examples come in a seeded shuffled order, reshuffled when used up.
    One pass yields as many batches as the tasks' examples fill (sum n_t / batch size)."""

    def __init__(self, sizes: list[int], batch_size: int, temperature: float, seed: int):
        self.sizes, self.batch_size, self.seed = list(sizes), batch_size, seed
        self.probabilities = sampling_probabilities(self.sizes, temperature)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])
        self.passes = 0

    def __len__(self) -> int:
        return math.ceil(sum(self.sizes) / self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        rng = np.random.default_rng([self.seed, self.passes])
        self.passes += 1
        orders = [rng.permutation(n) for n in self.sizes]
        cursor = [0] * len(self.sizes)
        for task in rng.choice(len(self.sizes), size=len(self), p=self.probabilities):
            batch = []
            while len(batch) < min(self.batch_size, self.sizes[task]):
                if cursor[task] == self.sizes[task]:
                    orders[task], cursor[task] = rng.permutation(self.sizes[task]), 0
                take = orders[task][cursor[task] : cursor[task] + self.batch_size - len(batch)]
                cursor[task] += len(take)
                batch.extend(int(self.offsets[task] + i) for i in take)
            yield batch


class MultiTaskModel(nn.Module):
    """A shared encoder (`bert`, a `BertModel`, its pooler part of the head) and one classifier per task.
    Every batch is from one task, named by `task_ids`; with hypernetworks, that task's adapters apply."""

    def __init__(self, bert: nn.Module, specs: Mapping[str, TaskSpec]):
        super().__init__()
        self.bert, self.task_names, self.specs = bert, list(specs), dict(specs)
        self.dropout = nn.Dropout(bert.config.hidden_dropout_prob)
        self.heads = nn.ModuleDict({t: nn.Linear(bert.config.hidden_size, s.num_labels) for t, s in specs.items()})
        for head in self.heads.values():
            bert._init_weights(head)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, task_ids=None, labels=None):
        if task_ids is None or not bool((task_ids == task_ids[0]).all()):
            raise ValueError("every example of a batch must be from the same task (task_ids)")
        task = self.task_names[int(task_ids[0])]
        hypernetworks = getattr(self.bert, "hypernetworks", None)
        if hypernetworks is not None:
            hypernetworks.select(task)
        pooled = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).pooler_output
        logits = self.heads[task](self.dropout(pooled))
        loss = None
        if labels is not None:
            if self.specs[task].is_regression:
                loss = nn.functional.mse_loss(logits.squeeze(-1).float(), labels.float())
            else:
                loss = nn.functional.cross_entropy(logits.float(), labels.long())
        return SequenceClassifierOutput(loss=loss, logits=logits)


class MultiTaskConfig(BaseModel):
    """One multi-task (or, with one task, single-task) run under the paper's splits and selection."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: tuple[str, ...] = Field(min_length=1, description="registered task names")
    method: str = "hyperformer++"
    backbone: str = "minilm-l6"
    seed: int = 0
    learning_rate: float | None = Field(None, gt=0, description="None: the method's default")
    num_train_epochs: float = Field(3.0, gt=0, description="passes of sum-over-tasks examples / batch size batches")
    max_train_examples: int | None = Field(None, gt=0, description="per task, after the model-selection hold-out")
    max_eval_examples: int | None = Field(None, gt=0, description="per task, cap on each of validation and test (seeded)")
    max_seq_length: int = Field(128, ge=8, le=4096)
    batch_size: int = Field(32, ge=1)
    temperature: float = Field(10.0, ge=1.0, description="task sampling: p_t ∝ n_t^(1/T)")
    eval_every_epochs: int = Field(1, ge=1, description="score validation and test every this many epochs (and after the "
                                                        "last): few-shot runs take many short epochs")
    adapter_size: int | None = Field(None, ge=1, description="adapter methods: bottleneck width (None: the method's default)")
    conditional_layer_norm: bool = Field(True, description="hyperformer: a generated layer norm inside each adapter")
    task_projector: bool = Field(True, description="hyperformer: the task embedding goes through the projector MLP")
    transfer_from: dict[str, Any] | None = Field(
        None, description="few-shot transfer: the settings of a trained multi-task Hyperformer run; its hypernetworks and "
                          "encoder stay frozen and only a new task embedding (and the new task's head) train")
    data_seed: int = 0
    warmup_ratio: float = Field(0.1, ge=0, lt=1)
    weight_decay: float = Field(0.0, ge=0)
    eval_batch_size: int = Field(128, ge=1)
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    data_dir: str | None = None
    results_dir: str | None = Field(None, description="None: results/multitask in the project")
    checkpoint_every_s: float = Field(300.0, ge=0)

    @model_validator(mode="after")
    def _known_names(self) -> MultiTaskConfig:
        from adaptstudy.backbones import check_backbone
        from adaptstudy.methods import METHODS

        method = METHODS.get(self.method)
        for task in self.tasks:
            resolve_task(task)
        if len(set(self.tasks)) != len(self.tasks):
            raise ValueError(f"tasks must be distinct, got {list(self.tasks)}")
        check_backbone(self.backbone)
        if self.adapter_size is not None and not method.uses_adapter_size:
            raise ValueError(f"adapter_size={self.adapter_size} does not apply to method {self.method!r}")
        hyper = self.method.startswith("hyperformer")
        for name in ("conditional_layer_norm", "task_projector"):
            if not getattr(self, name) and not hyper:
                raise ValueError(f"{name}=False is a Hyperformer ablation; method {self.method!r} has no {name}")
        if method.uses_top_k:
            raise ValueError("method 'top_k' is not offered for multi-task runs")
        if self.transfer_from is not None:
            source = self.source()
            if not hyper or source.method != self.method or source.backbone != self.backbone:
                raise ValueError(f"transfer_from needs the same Hyperformer method and backbone as the source run "
                                 f"({source.method}, {source.backbone}), got {self.method}, {self.backbone}")  # fmt: skip
            shared = set(self.tasks) & set(source.tasks)
            if shared:
                raise ValueError(f"transfer is to new tasks; the source run already trained {sorted(shared)}")
        return self

    def source(self) -> MultiTaskConfig:
        """The multi-task run a transfer starts from."""
        from adaptstudy.config import validate

        return validate(MultiTaskConfig, self.transfer_from, what="transfer_from setting").resolved()

    @property
    def task_name(self) -> str:
        return "+".join(self.tasks)

    def resolved(self) -> MultiTaskConfig:
        from adaptstudy.methods import METHODS

        method, updates = METHODS.get(self.method), {}
        if self.learning_rate is None:
            updates["learning_rate"] = method.default_learning_rate
        if method.uses_adapter_size and self.adapter_size is None:
            updates["adapter_size"] = method.default_adapter_size
        return self.model_copy(update=updates)

    def identity(self) -> dict[str, Any]:
        identity = {"kind": "multitask", **self.resolved().model_dump(exclude={"data_dir", "results_dir", "checkpoint_every_s"})}
        if self.transfer_from is not None:
            identity["transfer_from"] = self.source().run_id
        return identity

    def artifact_dir(self) -> Path:
        from adaptstudy.onnx_bert import cache_root

        return cache_root() / "multitask" / self.run_id

    @property
    def run_id(self) -> str:
        from adaptstudy.config import run_id

        return run_id(self.identity())

    def load_splits(self) -> dict[str, DatasetDict]:
        """Per task: train (capped), validation and test, by the paper's rule."""
        out = {}
        for task in self.tasks:
            spec = resolve_task(task)
            splits = selection_splits(load_task(task, self.data_dir), spec, self.data_seed)
            if self.max_train_examples is not None:
                splits["train"] = subsample(splits["train"], self.max_train_examples, self.data_seed)
            if self.max_eval_examples is not None:
                for split in ("validation", "test"):
                    splits[split] = subsample(splits[split], self.max_eval_examples, self.data_seed)
            out[task] = splits
        return out


def build_multitask_model(config: MultiTaskConfig) -> MultiTaskModel:
    """The encoder with the method applied and a head per task; for a transfer, the source run's trained encoder
    and hypernetworks (loaded from its artifact, frozen) with a new embedding for each new task."""
    from transformers import AutoModel

    from adaptstudy.backbones import resolve_backbone
    from adaptstudy.methods import METHODS

    torch.manual_seed(config.seed)
    model = MultiTaskModel(AutoModel.from_pretrained(resolve_backbone(config.backbone)), {t: resolve_task(t) for t in config.tasks})
    if config.transfer_from is None:
        return METHODS.get(config.method).apply_to_encoder(model, config)
    source = config.source()
    METHODS.get(config.method).apply_to_encoder(model, source)  # hypernetworks for the source tasks
    _load_encoder(model, source.artifact_dir())
    for task in config.tasks:
        model.bert.hypernetworks.add_task(task)
    for name, param in model.named_parameters():
        param.requires_grad_(any(name == f"bert.hypernetworks.task_embeddings.{t}" or name.startswith(f"heads.{t}.") for t in config.tasks))
    return model


ENCODER_FILE = "encoder.safetensors"


def save_encoder(model: MultiTaskModel, config: MultiTaskConfig) -> Path:
    """The trained encoder with its hypernetworks (heads left out), for transfer runs; atomic, in the cache."""
    from safetensors.torch import save_file

    from adaptstudy.results import atomic_folder

    folder = config.artifact_dir()
    with atomic_folder(folder) as scratch:
        save_file({k: v.contiguous() for k, v in model.state_dict().items() if k.startswith("bert.")}, str(scratch / ENCODER_FILE))
        (scratch / "run.json").write_text(config.model_dump_json())
    return folder


def _load_encoder(model: MultiTaskModel, folder: Path) -> None:
    from safetensors.torch import load_file

    if not (folder / ENCODER_FILE).is_file():
        raise FileNotFoundError(f"no trained multi-task encoder at {folder}: run the source (transfer_from) run first")
    missing, unexpected = model.load_state_dict(load_file(str(folder / ENCODER_FILE)), strict=False)
    missing = [k for k in missing if k.startswith("bert.")]
    if missing or unexpected:
        raise ValueError(f"{folder}: the saved encoder does not fit (missing {missing[:3]}, unexpected {unexpected[:3]})")


def ensure_source(config: MultiTaskConfig, checkpoint_root: Path | None = None) -> None:
    """A transfer's source run, trained (record in `<results_dir>_sources`) and saved first if it is not in the cache."""
    import shutil

    from adaptstudy.results import resolve_results_dir

    if config.transfer_from is None or (config.source().artifact_dir() / ENCODER_FILE).is_file():
        return
    results = resolve_results_dir(config.results_dir, "multitask")
    source = config.source().model_copy(update={"results_dir": str(results.with_name(f"{results.name}_sources"))})
    checkpoints = Path(checkpoint_root) / source.run_id if checkpoint_root else None
    print(f"  training the transfer source {source.run_id} ({source.task_name}, {source.method}) first", flush=True)
    train_multitask(source, checkpoint_dir=checkpoints, save=True)
    if checkpoints is not None:
        shutil.rmtree(checkpoints, ignore_errors=True)


def _encode(splits: dict[str, DatasetDict], tokenizer, max_seq_length: int) -> dict[str, DatasetDict]:
    from adaptstudy.train import tokenize_task

    out = {}
    for index, (task, task_splits) in enumerate(splits.items()):
        encoded = tokenize_task(task_splits, tokenizer, max_seq_length)
        encoded = encoded.map(lambda batch: {"task_ids": [index] * len(batch["label"])}, batched=True)
        out[task] = encoded.cast_column("label", Value("float32"))  # one label type across tasks (ids and scores)
    return out


def score(trainer, encoded: dict[str, DatasetDict], split: str) -> dict[str, dict[str, float]]:
    """Per task: its metrics on `split` (batches never mix tasks: one dataset per task)."""
    from adaptstudy.train import sort_by_length

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


def train_multitask(config: MultiTaskConfig | Mapping[str, Any], write: bool = True, checkpoint_dir=None,
                    save: bool | None = None) -> dict[str, Any]:
    """Train, score every epoch on validation and test, and return the record (written unless `write` is off).

    With `save` (default: for Hyperformer runs) the trained encoder goes to the cache, for transfer runs."""
    from transformers import DataCollatorWithPadding, Trainer, TrainerCallback, set_seed

    from adaptstudy.backbones import load_tokenizer
    from adaptstudy.config import validate
    from adaptstudy.device import training_arguments, use_bf16
    from adaptstudy.methods import count_parameters
    from adaptstudy.results import base_record, peak_rss_mb, reset_peak_rss, resolve_results_dir, write_record
    from adaptstudy.train import PAD_TO_MULTIPLE_OF, NonFiniteLossError, TimedCheckpoints, last_complete_checkpoint

    if not isinstance(config, MultiTaskConfig):
        config = validate(MultiTaskConfig, config)
    config = config.resolved()
    record = base_record(config)
    peak_scope = reset_peak_rss()
    ensure_source(config, Path(checkpoint_dir).parent if checkpoint_dir else None)
    set_seed(config.seed)
    splits = config.load_splits()
    encoded = _encode(splits, load_tokenizer(config.backbone), config.max_seq_length)
    train_sets = [encoded[t]["train"] for t in config.tasks]
    sampler = TemperatureBatchSampler([len(d) for d in train_sets], config.batch_size, config.temperature, config.seed)
    model = build_multitask_model(config)
    counts = count_parameters(model)
    history: list[dict[str, Any]] = []

    class _Trainer(Trainer):
        def get_train_dataloader(self):
            return torch.utils.data.DataLoader(self.train_dataset, batch_sampler=sampler, collate_fn=self.data_collator)

    class _ScoreEachEpoch(TrainerCallback):
        def on_epoch_end(self, args, state, control, **kwargs):
            epoch = round(state.epoch)
            if epoch % config.eval_every_epochs and epoch < math.ceil(config.num_train_epochs):
                return
            start = time.perf_counter()
            model.eval()
            row = {"epoch": round(state.epoch, 4), "step": state.global_step,
                   "validation": score(trainer, encoded, "validation"), "test": score(trainer, encoded, "test")}  # fmt: skip
            row["validation_mean"], row["test_mean"] = _mean_main(row["validation"]), _mean_main(row["test"])
            row["eval_runtime_s"] = time.perf_counter() - start
            history.append(row)

    with tempfile.TemporaryDirectory(prefix="adaptstudy-mt-") as scratch:
        output_dir = Path(checkpoint_dir) if checkpoint_dir else Path(scratch)
        resume = last_complete_checkpoint(output_dir) if checkpoint_dir else None
        args = training_arguments(
            config.precision, output_dir=str(output_dir), learning_rate=config.learning_rate,
            num_train_epochs=config.num_train_epochs, per_device_train_batch_size=config.batch_size,
            per_device_eval_batch_size=config.eval_batch_size, warmup_ratio=config.warmup_ratio,
            weight_decay=config.weight_decay, lr_scheduler_type="linear", eval_strategy="no", logging_strategy="epoch",
            logging_nan_inf_filter=False, save_strategy="steps" if checkpoint_dir else "no", save_steps=10**9,
            save_total_limit=2, optim="adamw_torch_fused", seed=config.seed, report_to=[], dataloader_num_workers=0,
            remove_unused_columns=False,
            save_safetensors=False,  # an `adapters` model ties prompt_tuning's embeddings to the word embeddings
        )  # fmt: skip
        callbacks = [_ScoreEachEpoch()] + ([TimedCheckpoints(config.checkpoint_every_s)] if checkpoint_dir else [])
        trainer = _Trainer(model=model, args=args, train_dataset=concatenate_datasets(train_sets).remove_columns(_text_free(train_sets)),
                           data_collator=DataCollatorWithPadding(load_tokenizer(config.backbone), pad_to_multiple_of=PAD_TO_MULTIPLE_OF),
                           callbacks=callbacks)  # fmt: skip
        start = time.perf_counter()
        output = trainer.train(resume_from_checkpoint=resume)
        wall = time.perf_counter() - start
    if save if save is not None else (config.method.startswith("hyperformer") and config.transfer_from is None):
        save_encoder(model, config)
    if not math.isfinite(output.training_loss):
        raise NonFiniteLossError(f"training loss is {output.training_loss}")
    best = max(history, key=lambda row: row["validation_mean"])
    eval_time = sum(row["eval_runtime_s"] for row in history)
    train_time = max(wall - eval_time, 1e-9)
    examples = sum(len(d) for d in train_sets)
    record.update(
        status="ok",
        task=config.task_name,
        tasks=list(config.tasks),
        metrics={f"{t}/{m}": v for t, scores in best["test"].items() for m, v in scores.items()},
        validation_metrics={f"{t}/{m}": v for t, scores in best["validation"].items() for m, v in scores.items()},
        main_metric="mean over tasks",
        main_metric_value=best["test_mean"],
        validation_mean=best["validation_mean"],
        selected_epoch=best["epoch"],
        **counts,
        trainable_params_per_task=counts["trainable_params"] / len(config.tasks),
        train_examples={t: len(encoded[t]["train"]) for t in config.tasks},
        eval_examples={t: {s: len(encoded[t][s]) for s in ("validation", "test")} for t in config.tasks},
        sampling_probabilities=dict(zip(config.tasks, sampler.probabilities.round(4).tolist())),
        train_loss=output.training_loss,
        train_runtime_s=train_time,
        eval_runtime_s=eval_time,
        train_examples_per_s=examples * config.num_train_epochs / train_time,
        peak_rss_mb=peak_rss_mb(),
        peak_rss_scope=peak_scope,
        device="cuda" if torch.cuda.is_available() else "cpu",
        precision_used="bf16" if use_bf16(config.precision) else "fp32",
        resumed_from_step=int(Path(resume).name.split("-")[-1]) if resume else None,
        history=history,
        finished_at=datetime.now(timezone.utc).isoformat(),
    )
    if write:
        write_record(record, resolve_results_dir(config.results_dir, "multitask"))
    return record


def _text_free(datasets: list[Dataset]) -> list[str]:
    """Columns the model does not take (none after tokenisation; kept for datasets with extra fields)."""
    keep = {"input_ids", "attention_mask", "token_type_ids", "label", "task_ids"}
    return sorted({c for d in datasets for c in d.column_names} - keep)
