"""The masked-LM model for pretraining: what makes DAPT/TAPT affordable on a CPU.

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

import torch
from torch import nn
from transformers import AutoModelForMaskedLM

from adaptstudy.models.adapter_interfaces import init_adapters
from adaptstudy.models.backbones import resolve_backbone
from adaptstudy.models.fast_dropout import attention_implementation
from adaptstudy.models.last_layer import masked_query_positions, queries_at, train_last_layer_at_queries
from adaptstudy.models.methods import METHODS, adapter_modes, continuing
from adaptstudy.models.methods.base import check_adapter_widths

MLM_ADAPTER = "mlm"  # the adapter an adapter mode trains
PRETRAIN_ATTENTION_DROPOUT = 0.0


def load_mlm(backbone: str, attention_dropout: float | None = PRETRAIN_ATTENTION_DROPOUT) -> MaskedPositionsMLM:
    """The backbone with its masked-LM head (new if it has none), logits at masked positions only.

    `attention_dropout=None` keeps the backbone's own value.
    """
    path = resolve_backbone(backbone)
    overrides = {"attn_implementation": attention_implementation(path, attention_dropout)}
    if attention_dropout is not None:
        overrides["attention_probs_dropout_prob"] = attention_dropout
    return MaskedPositionsMLM(AutoModelForMaskedLM.from_pretrained(path, use_safetensors=True, **overrides))


class MaskedPositionsMLM(nn.Module):
    """A `*ForMaskedLM` model whose vocabulary projection runs only where `labels != -100`.

    Gives the same loss as the wrapped model's forward (cross-entropy over masked positions),
    without computing logits that the loss never reads; with `last_layer_at_masked` (set by `prepare_mode`),
    training computes the encoder's last layer only there too (`adaptstudy.models.last_layer`).
    """

    def __init__(self, mlm_model: nn.Module):
        super().__init__()
        self.mlm = mlm_model
        self.config = mlm_model.config
        self.last_layer_at_masked = False  # set by `prepare_mode`

    @property
    def encoder(self) -> nn.Module:
        return self.mlm.base_model

    @property
    def head(self) -> nn.Module:
        """The MLM head: transform, layer norm and the decoder tied to the word embeddings."""
        return self.mlm.cls if hasattr(self.mlm, "cls") else self.mlm.lm_head  # BERT, RoBERTa

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None, **kwargs):
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
        if labels is None:
            return {"logits": self.head(self.encoder(**inputs).last_hidden_state)}
        masked = labels != -100
        if self.training and self.last_layer_at_masked:
            positions, valid = masked_query_positions(masked)
            with queries_at(self.encoder, positions):
                hidden = self.encoder(**inputs).last_hidden_state[valid]
        else:
            hidden = self.encoder(**inputs).last_hidden_state[masked]
        logits = self.head(hidden)
        loss = nn.functional.cross_entropy(logits.float(), labels[masked])
        return {"loss": loss, "logits": logits}

    def save_pretrained(self, *args, **kwargs):
        return self.mlm.save_pretrained(*args, **kwargs)


def masked_lm_loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> float:
    """The MLM loss of one batch without gradients (for perplexity on held-out text)."""
    with torch.inference_mode():
        return float(model(**batch)["loss"])


def prepare_mode(
    model: MaskedPositionsMLM, mode: str, adapter_size: int | None = None, adapter_from: str | None = None
) -> MaskedPositionsMLM:
    """What a pretraining mode trains: everything (full), the head alone (head), or an adapter (an adapter mode: a
    new one as its continuing method declares, `Method.pretraining_adapter`, or the one saved in `adapter_from`) with
    the encoder frozen. The head's transform and layer norm train beside the adapter (`train_adapter` freezes the
    base model only; the decoder stays tied to the frozen word embeddings), and the artifact keeps the adapter alone:
    on minilm-l6 at width 24, 113,040 adapter and 148,608 head parameters train. Except where the adapter adds
    positions to attention (prefixes), training computes the last layer at the masked positions only."""
    method = METHODS.get(continuing(mode)) if mode in adapter_modes() else None
    if mode == "head":
        for param in model.encoder.parameters():
            param.requires_grad_(
                False
            )  # the decoder is tied to the (frozen) word embeddings: transform, norm, bias train
    elif method is not None:
        init_adapters(model.mlm)
        if adapter_from is not None:
            model.mlm.load_adapter(adapter_from, load_as=MLM_ADAPTER)
        else:
            model.mlm.add_adapter(
                MLM_ADAPTER, config=method.pretraining_adapter(model.config.hidden_size, adapter_size)
            )
        if adapter_size:
            check_adapter_widths(model.mlm, adapter_size)
        model.mlm.train_adapter(MLM_ADAPTER)
    if method is None or not method.changes_sequence:
        model.last_layer_at_masked = train_last_layer_at_queries(model.encoder)
    return model
