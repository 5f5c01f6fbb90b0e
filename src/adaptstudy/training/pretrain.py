"""A masked-LM pretraining run (DAPT, TAPT, or the warm-up of a new MLM head): the corpus packed into full rows,
trained through the training core, the held-out loss before and after, and the artifact that other runs start
from (`runs.artifacts`)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from datasets import Dataset
from torch import nn
from transformers import DataCollatorForLanguageModeling, Trainer, set_seed

from adaptstudy.common.files import atomic_folder, mark_complete
from adaptstudy.data.corpora import load_corpus
from adaptstudy.data.encoding import pack_texts
from adaptstudy.models.backbones import load_tokenizer
from adaptstudy.models.mlm import MLM_ADAPTER, MaskedPositionsMLM, load_mlm, masked_lm_loss, prepare_mode
from adaptstudy.runs.artifacts import FULL_MODES, KIND, artifact_base
from adaptstudy.runs.pretrain_config import PretrainConfig, artifact_folder, root_backbone
from adaptstudy.training import core


def corpus_splits(config: PretrainConfig) -> tuple[list[str], list[str], int]:
    """Training and held-out documents (a fixed, seeded split of the documents; then `corpus_fraction` of the
    training documents, nested across fractions), and how many documents were excluded as evaluation texts."""
    corpus = load_corpus(config.corpus, config.data_dir, config.exclude_eval_of)
    order = np.random.default_rng(0).permutation(len(corpus.documents))
    n_held = round(config.held_out_fraction * len(order))
    held, train = order[:n_held], order[n_held:]
    train = train[: max(1, round(config.corpus_fraction * len(train)))]
    return [corpus.documents[i] for i in sorted(train)], [corpus.documents[i] for i in sorted(held)], corpus.excluded


def held_out_loss(
    model: nn.Module, rows: Dataset, tokenizer, mlm_probability: float, batch_size: int = 64, seed: int = 0
) -> float:
    """Mean masked-LM loss over held-out packed rows, with the same masks whatever the model (fixed seed)."""
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


def starting_model(config: PretrainConfig) -> str:
    """The full model a run loads: `init_from`'s (an adapter's base, for a continued adapter), else the backbone."""
    return artifact_base(artifact_folder(config.init_from)) if config.init_from else config.backbone


def build_pretraining_model(config: PretrainConfig) -> MaskedPositionsMLM:
    """The MLM model for a mode: from `init_from` if given (its adapter loaded to train on, for an adapter), else the
    backbone (a new head where it has none)."""
    adapter_from = str(artifact_folder(config.init_from)) if config.continues_adapter else None
    return prepare_mode(load_mlm(starting_model(config)), config.mode, config.adapter_size, adapter_from)


def save_artifact(model: MaskedPositionsMLM, tokenizer, config: PretrainConfig, folder: Path) -> Path:
    """A full MLM checkpoint (modes head, full) or the adapter alone in the `adapters` format; atomic."""
    with atomic_folder(folder) as scratch:
        if config.mode in FULL_MODES:
            model.save_pretrained(scratch, safe_serialization=True)
            tokenizer.save_pretrained(scratch)
        else:
            model.mlm.save_adapter(str(scratch), MLM_ADAPTER)
        meta = {
            "kind": KIND,
            "run_id": config.run_id,
            "mode": config.mode,
            "base": starting_model(config),
            "backbone": root_backbone(config),
        }
        if config.sized:
            meta["adapter_size"] = config.adapter_width(model.config.hidden_size)
        mark_complete(scratch, meta)
    return folder


def pretrain(
    config: PretrainConfig | Mapping[str, Any], write: bool = True, checkpoint_dir: str | os.PathLike | None = None
) -> dict[str, Any]:
    """Run masked-LM pretraining; save the artifact; return (and write) the run's record.

    The record has the held-out MLM loss and perplexity before and after, on held-out documents of the
    corpus (the same masks before and after), and the costs. With `checkpoint_dir`, a checkpoint is saved
    every `checkpoint_every_s` seconds and a rerun resumes from the last complete one.
    """
    run = core.start(config, PretrainConfig)
    config = run.config
    set_seed(config.seed)
    tokenizer = load_tokenizer(starting_model(config))
    train_docs, held_docs, excluded = corpus_splits(config)
    rows = pack_texts(train_docs, tokenizer, config.max_seq_length)
    held_rows = pack_texts(held_docs, tokenizer, config.max_seq_length) if held_docs else None
    model = build_pretraining_model(config)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    before = held_out_loss(model, held_rows, tokenizer, config.mlm_probability) if held_rows else None

    with core.Session(config, checkpoint_dir) as session:
        args = session.arguments(
            max_steps=config.max_steps or -1,
            logging_strategy="steps",
            logging_steps=10,
            save_safetensors=False,  # the decoder shares the word embeddings' tensor
            data_seed=config.seed,
        )
        collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=config.mlm_probability)
        trainer = Trainer(model=model, args=args, train_dataset=rows, data_collator=collator)
        output = session.train(trainer)
        steps = trainer.state.global_step
    after = held_out_loss(model, held_rows, tokenizer, config.mlm_probability) if held_rows else None
    artifact = save_artifact(model, tokenizer, config, config.artifact_dir())
    steps_timed = steps * session.run_share_here  # the steps `session.run_seconds` covers
    tokens = steps_timed * config.batch_size * config.max_seq_length
    metrics = {"held_out_loss": after, "perplexity": math.exp(after)} if after is not None else {}
    return core.finish(
        run,
        session,
        write,
        metrics=metrics,
        main_metric="perplexity" if metrics else None,
        main_metric_value=metrics.get("perplexity"),
        held_out_loss_before=before,
        perplexity_before=math.exp(before) if before is not None else None,
        trainable_params=trainable,
        total_params=sum(p.numel() for p in model.parameters()),
        train_loss=output.training_loss,
        train_runtime_s=session.run_seconds,
        steps=steps,
        train_examples_per_s=steps_timed * config.batch_size / session.run_seconds,
        train_tokens_per_s=tokens / session.run_seconds,
        corpus_documents=len(train_docs),
        corpus_words=sum(len(d.split()) for d in train_docs),
        corpus_rows=len(rows),
        held_out_documents=len(held_docs),
        excluded_eval_documents=excluded,
        artifact=str(artifact),
    )
