"""Masked-LM pretraining pieces that make DAPT/TAPT affordable on a CPU.

Two things dominate a stock MLM step: padding (one text per row, padded to the longest) and the
vocabulary projection at every position (30,522 outputs per token, more work than the whole
6-layer encoder). Here texts are packed end to end into full rows, and the projection is computed
only at the ~15% masked positions; the loss is the same cross-entropy over the same positions.

Attention dropout is off during MLM pretraining by default. On a CPU, scaled-dot-product
attention with dropout falls back to the unfused kernel that materializes every attention map
(measured on minilm-l6, 16 rows of 256 tokens, bf16: 1.96 s per step with attention dropout 0.1,
0.91 s without), and pretraining is where dropout matters least: Geiping & Goldstein (2023,
"Cramming") pretrain BERT without dropout. Hidden-state dropout is kept; fine-tuning keeps both.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from datasets import Dataset
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import nn

from adaptstudy.artifacts import artifact_folder, check_full_artifact, reference_meta, save_artifact


def pack_texts(texts: Iterable[str], tokenizer, max_seq_length: int, drop_last: bool = False) -> Dataset:
    """Token rows of exactly `max_seq_length`: [CLS] text [SEP] text [SEP] ... with texts split across rows.

    The last, shorter row is kept unless `drop_last` (nothing is silently dropped by default).
    """
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    body = max_seq_length - 1
    rows, current = [], []
    for ids in tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]:
        current.extend(ids + [sep])
        while len(current) >= body:
            rows.append([cls] + current[:body])
            current = current[body:]
    if current and not drop_last:
        rows.append([cls] + current)
    return Dataset.from_dict({"input_ids": rows})


PRETRAIN_ATTENTION_DROPOUT = 0.0


def load_mlm(backbone: str, attention_dropout: float | None = PRETRAIN_ATTENTION_DROPOUT) -> "MaskedPositionsMLM":
    """The backbone with its masked-LM head (new if it has none), logits at masked positions only.

    `attention_dropout=None` keeps the backbone's own value.
    """
    from transformers import AutoModelForMaskedLM

    from adaptstudy.backbones import resolve_backbone

    overrides = {} if attention_dropout is None else {"attention_probs_dropout_prob": attention_dropout}
    return MaskedPositionsMLM(AutoModelForMaskedLM.from_pretrained(resolve_backbone(backbone), use_safetensors=True, **overrides))


class MaskedPositionsMLM(nn.Module):
    """A `*ForMaskedLM` model whose vocabulary projection runs only where `labels != -100`.

    Gives the same loss as the wrapped model's forward (cross-entropy over masked positions),
    without computing logits that the loss never reads.
    """

    def __init__(self, mlm_model: nn.Module):
        super().__init__()
        self.mlm = mlm_model
        self.config = mlm_model.config

    @property
    def encoder(self) -> nn.Module:
        return self.mlm.base_model

    @property
    def head(self) -> nn.Module:
        """The MLM head: transform, layer norm and the decoder tied to the word embeddings."""
        return self.mlm.cls if hasattr(self.mlm, "cls") else self.mlm.lm_head  # BERT, RoBERTa

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None, **kwargs):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
        if labels is None:
            return {"logits": self.head(hidden)}
        masked = labels != -100
        logits = self.head(hidden[masked])
        loss = nn.functional.cross_entropy(logits.float(), labels[masked])
        return {"loss": loss, "logits": logits}

    def save_pretrained(self, *args, **kwargs):
        return self.mlm.save_pretrained(*args, **kwargs)


def masked_lm_loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> float:
    """The MLM loss of one batch without gradients (for perplexity on held-out text)."""
    with torch.inference_mode():
        return float(model(**batch)["loss"])


# ---------------------------------------------------------------------------------------------------
# A pretraining run: DAPT, TAPT, or the warm-up of a new MLM head, with checkpoints and a record.

ADAPTER_NAME = "mlm"
class PretrainConfig(BaseModel):
    """One masked-LM pretraining run on a corpus, from a backbone or from an earlier run's artifact."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    corpus: str = Field(description="a registered corpus, or task:<name> (TAPT: the task's training texts)")
    mode: Literal["head", "full", "seq_bn", "unipelt"] = "full"
    backbone: str = "minilm-l6"
    init_from: str | dict[str, Any] | None = Field(
        None, description="a full artifact of an earlier run (e.g. the warmed head, or DAPT for DAPT+TAPT): its folder, or "
                          "that run's settings (a mapping), which name its artifact in the cache")
    exclude_eval_of: tuple[str, ...] = Field((), description="tasks whose evaluation texts are left out of the corpus")
    adapter_size: int | None = Field(None, ge=1, description="seq_bn: bottleneck width (None: reduction factor 16)")
    mlm_probability: float = Field(0.15, gt=0, lt=1)
    max_steps: int | None = Field(None, gt=0, description="None: num_train_epochs over the corpus")
    num_train_epochs: float = Field(1.0, gt=0)
    corpus_fraction: float = Field(1.0, gt=0, le=1, description="share of the corpus's documents (seeded, nested)")
    held_out_fraction: float = Field(0.05, ge=0, lt=0.5, description="documents kept out for the held-out MLM loss")
    max_seq_length: int = Field(128, ge=16, le=512)
    batch_size: int = Field(32, ge=1)
    learning_rate: float = Field(1e-4, gt=0)
    warmup_ratio: float = Field(0.06, ge=0, lt=1)
    weight_decay: float = Field(0.01, ge=0)
    seed: int = 0
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    data_dir: str | None = None
    results_dir: str | None = Field(None, description="None: results/pretrain in the project")
    output_dir: str | None = Field(None, description="where the artifact goes (None: the cache, by run id)")
    checkpoint_every_s: float = Field(300.0, ge=0)

    @model_validator(mode="after")
    def _known_names(self) -> PretrainConfig:
        from adaptstudy.backbones import check_backbone
        from adaptstudy.corpora import CORPORA
        from adaptstudy.data import resolve_task

        if self.corpus.startswith("task:"):
            resolve_task(self.corpus.removeprefix("task:"))
        else:
            CORPORA.get(self.corpus)
        for task in self.exclude_eval_of:
            resolve_task(task)
        check_backbone(self.backbone)
        if self.adapter_size is not None and self.mode != "seq_bn":
            raise ValueError(f"adapter_size={self.adapter_size} applies only to mode 'seq_bn', not {self.mode!r}")
        if self.init_from is not None:
            check_full_artifact(self.init_from, self.backbone)
        return self

    # What base_record and the results layer read.
    @property
    def task_name(self) -> str:
        return f"mlm:{self.corpus}"

    @property
    def method(self) -> str:
        return self.mode

    def resolved(self) -> PretrainConfig:
        return self

    def identity(self) -> dict[str, Any]:
        identity = self.model_dump(exclude={"data_dir", "results_dir", "output_dir", "checkpoint_every_s"})
        if self.init_from:
            identity["init_from"] = reference_meta(self.init_from)["run_id"]  # the run, not where its files happen to be
        return identity

    @property
    def run_id(self) -> str:
        from adaptstudy.config import run_id

        return run_id(self.identity())

    def artifact_dir(self) -> Path:
        from adaptstudy.onnx_bert import cache_root

        return Path(self.output_dir) if self.output_dir else cache_root() / "pretrained" / self.run_id


def corpus_splits(config: PretrainConfig) -> tuple[list[str], list[str], int]:
    """Training and held-out documents (a fixed, seeded split of the documents; then `corpus_fraction` of the
    training documents, nested across fractions), and how many documents were excluded as evaluation texts."""
    from adaptstudy.corpora import load_corpus

    corpus = load_corpus(config.corpus, config.data_dir, config.exclude_eval_of)
    order = np.random.default_rng(0).permutation(len(corpus.documents))
    n_held = round(config.held_out_fraction * len(order))
    held, train = order[:n_held], order[n_held:]
    train = train[: max(1, round(config.corpus_fraction * len(train)))]
    return [corpus.documents[i] for i in sorted(train)], [corpus.documents[i] for i in sorted(held)], corpus.excluded


def held_out_loss(model: nn.Module, rows: Dataset, tokenizer, mlm_probability: float, batch_size: int = 64, seed: int = 0) -> float:
    """Mean masked-LM loss over held-out packed rows, with the same masks whatever the model (fixed seed)."""
    from transformers import DataCollatorForLanguageModeling

    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=mlm_probability)
    total, count = 0.0, 0
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        was_training = model.training
        model.eval()
        for start in range(0, len(rows), batch_size):
            batch = collator([rows[i] for i in range(start, min(start + batch_size, len(rows)))])
            masked = int((batch["labels"] != -100).sum())
            if masked:
                total += masked_lm_loss(model, batch) * masked
                count += masked
        model.train(was_training)
    return total / max(count, 1)


def build_pretraining_model(config: PretrainConfig) -> MaskedPositionsMLM:
    """The MLM model for a mode: from `init_from` if given, else the backbone (a new head where it has none)."""
    source = str(artifact_folder(config.init_from)) if config.init_from else config.backbone
    model = load_mlm(source)
    if config.mode == "head":
        for param in model.encoder.parameters():
            param.requires_grad_(False)  # the decoder is tied to the (frozen) word embeddings: transform, norm, bias train
    elif config.mode in ("seq_bn", "unipelt"):
        import adapters
        from adapters import SeqBnConfig, UniPELTConfig

        adapters.init(model.mlm)
        hidden = model.config.hidden_size
        adapter_config = (SeqBnConfig(reduction_factor=hidden / config.adapter_size if config.adapter_size else 16)
                          if config.mode == "seq_bn" else UniPELTConfig())  # fmt: skip
        model.mlm.add_adapter(ADAPTER_NAME, config=adapter_config)
        model.mlm.train_adapter(ADAPTER_NAME)  # everything else frozen, the warmed head included
    return model


def pretrain(config: PretrainConfig | dict, write: bool = True, checkpoint_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Run masked-LM pretraining; save the artifact; return (and write) the run's record.

    The record has the held-out MLM loss and perplexity before and after, on held-out documents of the
    corpus (the same masks before and after), and the costs. With `checkpoint_dir`, a checkpoint is saved
    every `checkpoint_every_s` seconds and a rerun resumes from the last complete one.
    """
    import math
    import tempfile
    import time
    from datetime import datetime, timezone

    from transformers import DataCollatorForLanguageModeling, Trainer, set_seed

    from adaptstudy.backbones import load_tokenizer
    from adaptstudy.config import validate
    from adaptstudy.device import training_arguments, use_bf16
    from adaptstudy.results import base_record, peak_rss_mb, reset_peak_rss, resolve_results_dir, write_record
    from adaptstudy.train import TimedCheckpoints, last_complete_checkpoint

    if not isinstance(config, PretrainConfig):
        config = validate(PretrainConfig, config)
    record = base_record(config)
    peak_scope = reset_peak_rss()
    set_seed(config.seed)
    tokenizer = load_tokenizer(str(artifact_folder(config.init_from)) if config.init_from else config.backbone)
    train_docs, held_docs, excluded = corpus_splits(config)
    rows = pack_texts(train_docs, tokenizer, config.max_seq_length)
    held_rows = pack_texts(held_docs, tokenizer, config.max_seq_length) if held_docs else None
    model = build_pretraining_model(config)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    before = held_out_loss(model, held_rows, tokenizer, config.mlm_probability) if held_rows else None

    with tempfile.TemporaryDirectory(prefix="adaptstudy-mlm-") as scratch:
        output_dir = Path(checkpoint_dir) if checkpoint_dir else Path(scratch)
        resume = last_complete_checkpoint(output_dir) if checkpoint_dir else None
        args = training_arguments(
            config.precision, output_dir=str(output_dir), learning_rate=config.learning_rate,
            num_train_epochs=config.num_train_epochs, max_steps=config.max_steps or -1,
            per_device_train_batch_size=config.batch_size, warmup_ratio=config.warmup_ratio,
            weight_decay=config.weight_decay, adam_beta2=0.98, adam_epsilon=1e-6, lr_scheduler_type="linear",
            logging_strategy="steps", logging_steps=10, save_strategy="steps" if checkpoint_dir else "no",
            save_steps=10**9, save_total_limit=2, save_safetensors=False,  # the decoder shares the word embeddings' tensor
            optim="adamw_torch_fused", seed=config.seed, data_seed=config.seed, report_to=[], dataloader_num_workers=0,
        )  # fmt: skip
        trainer = Trainer(model=model, args=args, train_dataset=rows,
                          data_collator=DataCollatorForLanguageModeling(tokenizer, mlm_probability=config.mlm_probability),
                          callbacks=[TimedCheckpoints(config.checkpoint_every_s)] if checkpoint_dir else [])  # fmt: skip
        start = time.perf_counter()
        output = trainer.train(resume_from_checkpoint=resume)
        seconds = time.perf_counter() - start
        steps = trainer.state.global_step
    after = held_out_loss(model, held_rows, tokenizer, config.mlm_probability) if held_rows else None
    artifact = save_artifact(model, tokenizer, config, config.artifact_dir())
    resumed_step = int(Path(resume).name.split("-")[-1]) if resume else None
    steps_here = steps - (resumed_step or 0)
    tokens = steps_here * config.batch_size * config.max_seq_length
    metrics = {"held_out_loss": after, "perplexity": math.exp(after)} if after is not None else {}
    record.update(
        status="ok", metrics=metrics, main_metric="perplexity" if metrics else None,
        main_metric_value=metrics.get("perplexity"),
        held_out_loss_before=before, perplexity_before=math.exp(before) if before is not None else None,
        trainable_params=trainable, total_params=sum(p.numel() for p in model.parameters()),
        train_loss=output.training_loss, train_runtime_s=seconds, steps=steps, resumed_from_step=resumed_step,
        train_examples_per_s=steps_here * config.batch_size / seconds, train_tokens_per_s=tokens / seconds,
        corpus_documents=len(train_docs), corpus_words=sum(len(d.split()) for d in train_docs),
        corpus_rows=len(rows), held_out_documents=len(held_docs), excluded_eval_documents=excluded,
        peak_rss_mb=peak_rss_mb(), peak_rss_scope=peak_scope, precision_used="bf16" if use_bf16(config.precision) else "fp32",
        device="cuda" if torch.cuda.is_available() else "cpu", artifact=str(artifact),
        finished_at=datetime.now(timezone.utc).isoformat(),
    )  # fmt: skip
    if write:
        write_record(record, resolve_results_dir(config.results_dir, "pretrain"))
    return record
