"""Bottleneck adapters: Houlsby et al.'s (two per layer, with the paper's architecture variants) and
Pfeiffer et al.'s (one per layer), from the `adapters` package, and their layer ablation."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch
from adapters import DoubleSeqBnConfig, ParBnConfig, SeqBnConfig
from adapters.methods.modeling import Adapter
from torch import nn

from adaptstudy.models.adapter_interfaces import init_adapters
from adaptstudy.models.methods.base import (
    ADAPTER_NAME,
    check_adapter_widths,
    is_adapter,
    layer_index,
    reduction_factor,
)


def add_houlsby(model: nn.Module, config) -> nn.Module:
    """Two bottleneck adapters per layer (after attention and after feed-forward), GELU,
    near-identity init: N(0, 1e-2) truncated at two std, zero biases (Houlsby et al. 2019).

    `adapter_variant` gives the variants the paper tried and found no better: a layer norm inside
    the adapter, two layers in the bottleneck, tanh, adapters after the attention block only, and
    adapters in parallel to the sublayer instead of after it."""
    init_adapters(model)
    variant = getattr(config, "adapter_variant", None)
    common = dict(
        reduction_factor=reduction_factor(model.config.hidden_size, config.adapter_size),
        init_weights="houlsby",
        init_weights_seed=config.seed,
        non_linearity="tanh" if variant == "tanh" else "gelu",
    )
    if variant == "parallel":
        adapter_config = ParBnConfig(mh_adapter=True, output_adapter=True, scaling=1.0, **common)
    else:
        adapter_config = DoubleSeqBnConfig(
            ln_before=variant == "layer_norm_inside", output_adapter=variant != "attention_only", **common
        )
    model.add_adapter(ADAPTER_NAME, config=adapter_config)
    check_adapter_widths(model, config.adapter_size)
    if variant == "two_layer":
        _deepen_bottlenecks(model, config.seed)
    model.train_adapter(ADAPTER_NAME)
    _rescale_adapter_init(model, config)
    return model


def _deepen_bottlenecks(model: nn.Module, seed: int) -> None:
    """A second bottleneck-wide layer (same activation, same near-identity init) in every adapter."""
    generator = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, Adapter):
            width, activation = module.down_sample, module.non_linearity
            extra = nn.Linear(width, width)
            with torch.no_grad():
                extra.weight.copy_(
                    torch.nn.init.trunc_normal_(
                        torch.empty_like(extra.weight), std=1e-2, a=-2e-2, b=2e-2, generator=generator
                    )
                )
                extra.bias.zero_()
            module.adapter_down = nn.Sequential(*module.adapter_down, extra, activation)


def add_pfeiffer(model: nn.Module, config) -> nn.Module:
    """One bottleneck per layer, after the feed-forward block (`seq_bn`, Pfeiffer et al. 2021)."""
    init_adapters(model)
    model.add_adapter(
        ADAPTER_NAME,
        config=SeqBnConfig(
            reduction_factor=reduction_factor(model.config.hidden_size, config.adapter_size),
            init_weights_seed=config.seed,
        ),
    )
    check_adapter_widths(model, config.adapter_size)
    model.train_adapter(ADAPTER_NAME)
    _rescale_adapter_init(model, config)
    return model


def pretraining_seq_bn(hidden: int, width: int | None) -> SeqBnConfig:
    """The seq_bn adapter 02_dapt trains (which pfeiffer continues): `width` wide, or the library's reduction
    factor 16."""
    return SeqBnConfig(reduction_factor=reduction_factor(hidden, width) if width else 16)


def _rescale_adapter_init(model: nn.Module, config) -> None:
    """With `adapter_init_std`, redraw every adapter weight from N(0, std) truncated at two std, biases zero
    (Houlsby et al.'s init, at another scale; their Figure 6 varies it from 1e-7 to 1)."""
    std = getattr(config, "adapter_init_std", None)
    if std is None:
        return
    generator = torch.Generator().manual_seed(config.seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if is_adapter(name) and name.endswith(".weight"):
                param.copy_(
                    torch.nn.init.trunc_normal_(
                        torch.empty_like(param), std=std, a=-2 * std, b=2 * std, generator=generator
                    )
                )
            elif is_adapter(name) and name.endswith(".bias"):
                param.zero_()


@contextmanager
def adapters_removed(model: nn.Module, layers: Iterable[int]) -> Iterator[nn.Module]:
    """Evaluate `model` with the adapters of `layers` taken out, without retraining (Houlsby et al. Figure 6).

    An adapter adds `up(f(down(h)))` to its input; zeroing its up-projection makes it the identity,
    so those layers compute what the backbone computes (their trained layer norms are kept, as in the
    paper). The weights are restored on exit.
    """
    layers = set(layers)
    saved = {}
    with torch.no_grad():
        for name, param in model.named_parameters():
            if is_adapter(name) and ".adapter_up." in name and layer_index(name) in layers:
                saved[name] = param.detach().clone()
                param.zero_()
    try:
        yield model
    finally:
        with torch.no_grad():
            params = dict(model.named_parameters())
            for name, value in saved.items():
                params[name].copy_(value)
