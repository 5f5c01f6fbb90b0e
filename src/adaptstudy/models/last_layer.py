"""While training, the encoder's last layer runs only at the positions the loss reads: [CLS], or the masked tokens.

A sequence classifier reads the last layer at [CLS] alone (the pooler's input); a masked-LM loss at the ~15%
masked positions. That layer's keys and values still need every token, but its queries, attention output,
feed-forward block and adapters are needed only there: 10 of the 12 hidden-squared matmuls per token of one
layer in 6, about 14% of a `minilm-l6` training step's matmul work. The loss and every gradient are the same as
the whole layer's (what is skipped is never read); evaluation runs the whole layer, so predictions, layer
ablations, fusion attention and held-out MLM losses do not change.

It applies to methods that keep one hidden state per input token (`Method.changes_sequence` is off: not soft
prompts or prefixes) on BERT-style layers (`attention`, `feed_forward_chunk`); elsewhere the model is unchanged.
"""

from __future__ import annotations

import contextlib
import types

import torch
from torch import nn


def _queries_only(
    self: nn.Module, hidden_states, attention_mask=None, head_mask=None, encoder_hidden_states=None, **kw
):
    """The last layer's `forward` (bound to it, so a deep copy binds to the copy): while training a plain encoder
    pass, it computes the layer at `self.query_positions` (batch x queries; None: [CLS] alone) and returns
    batch x queries x hidden; otherwise it is the layer's own forward."""
    special = head_mask is not None or encoder_hidden_states is not None or kw.get("output_attentions")
    if not self.training or special or kw.get("past_key_values") is not None:
        return type(self).forward(self, hidden_states, attention_mask, head_mask, encoder_hidden_states, **kw)
    positions = self.query_positions
    if positions is None:
        queries = hidden_states[:, :1]
        positions = torch.zeros(len(hidden_states), 1, dtype=torch.long, device=hidden_states.device)
    else:
        queries = hidden_states.gather(1, positions[..., None].expand(-1, -1, hidden_states.shape[-1]))
    if attention_mask is not None and attention_mask.dim() == 4 and attention_mask.shape[-2] > 1:
        rows = positions[:, None, :, None].expand(-1, attention_mask.shape[1], -1, attention_mask.shape[-1])
        attention_mask = attention_mask.gather(2, rows)  # sdpa's per-query mask: the queries' rows
    attended = self.attention(queries, attention_mask=attention_mask, encoder_hidden_states=hidden_states)[0]
    return (self.feed_forward_chunk(attended),)


def last_layer(model: nn.Module) -> nn.Module | None:
    """The last encoder layer of a BERT-style encoder (`attention`, `feed_forward_chunk`), else None."""
    layers = getattr(getattr(model.base_model, "encoder", None), "layer", None)
    if not layers or not hasattr(layers[-1], "feed_forward_chunk") or getattr(layers[-1], "is_decoder", True):
        return None
    return layers[-1]


def train_last_layer_at_queries(model: nn.Module) -> bool:
    """Make `model`'s last encoder layer compute only its queries while training: [CLS], or the positions set by
    `queries_at`. False (model unchanged) where its layers are not BERT-style encoder layers."""
    layer = last_layer(model)
    if layer is None:
        return False
    layer.query_positions = None
    layer.forward = types.MethodType(_queries_only, layer)
    return True


@contextlib.contextmanager
def queries_at(model: nn.Module, positions: torch.Tensor):
    """Within the block, the last layer's training pass computes the rows `positions` (batch x queries)."""
    layer = last_layer(model)
    layer.query_positions = positions
    try:
        yield
    finally:
        layer.query_positions = None


def masked_query_positions(masked: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For a batch x length boolean mask: each row's masked positions in order, padded (batch x most per row), and
    which of them are real; `hidden[valid]` then lists the masked positions in the order `x[masked]` does."""
    counts = masked.sum(dim=1)
    order = torch.argsort((~masked).to(torch.int8), dim=1, stable=True)[:, : max(int(counts.max()), 1)]
    valid = torch.arange(order.shape[1], device=masked.device) < counts[:, None]
    return order, valid
