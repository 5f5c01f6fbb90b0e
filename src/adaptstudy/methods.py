"""The method registry: each method prepares a model and says which of its weights train.

Every method starts from `AutoModelForSequenceClassification` on the backbone. The *head* is
BERT's pooler (a pretrained dense layer on [CLS]) plus the new classifier; every method trains it,
so trainable counts differ only in what each method adds or unfreezes in the encoder.
Parameters are counted here, head included, the same way for every method; for adapter methods
the record also keeps what the `adapters` package reports (the adapter weights alone).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from torch import nn

from adaptstudy.registry import Registry

ADAPTER_NAME = "task"
HEAD_PATTERN = re.compile(r"(^|\.)(classifier|pooler|score|heads)\.")


def is_head(name: str) -> bool:
    return bool(HEAD_PATTERN.search(name))


def is_layer_norm(name: str) -> bool:
    return "LayerNorm" in name or "layer_norm" in name


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    trainable: Callable[[str], bool] = field(repr=False)
    prepare: Callable[[nn.Module, object], nn.Module] = field(default=lambda model, config: model, repr=False)
    default_learning_rate: float = 2e-5
    uses_adapter_size: bool = False
    default_adapter_size: int | None = None

    def apply(self, model: nn.Module, config) -> nn.Module:
        """Prepare `model` for this method and set `requires_grad` on every parameter."""
        model = self.prepare(model, config)
        for name, param in model.named_parameters():
            param.requires_grad_(self.trainable(name))
        return model


def _add_houlsby(model: nn.Module, config) -> nn.Module:
    """Two bottleneck adapters per layer (after attention and after feed-forward), GELU,
    near-identity init: N(0, 1e-2) truncated at two std, zero biases (Houlsby et al. 2019)."""
    import adapters
    from adapters import DoubleSeqBnConfig

    adapters.init(model)
    hidden = model.config.hidden_size
    model.add_adapter(
        ADAPTER_NAME,
        config=DoubleSeqBnConfig(
            reduction_factor=hidden / config.adapter_size,
            non_linearity="gelu",
            init_weights="houlsby",
            init_weights_seed=config.seed,
        ),
    )
    model.train_adapter(ADAPTER_NAME)
    return model


def _is_adapter(name: str) -> bool:
    return ".adapters." in name


def _is_bias(name: str) -> bool:
    return name.endswith(".bias")


METHODS: Registry[Method] = Registry("method")

for _m in (
    Method("full", "every weight of the backbone and the head", trainable=lambda n: True),
    Method(
        "houlsby",
        "Houlsby adapters (two per layer, GELU, near-identity init) + all layer norms + head",
        trainable=lambda n: _is_adapter(n) or is_layer_norm(n) or is_head(n),
        prepare=_add_houlsby,
        default_learning_rate=1e-3,
        uses_adapter_size=True,
        default_adapter_size=64,
    ),
    Method(
        "bitfit",
        "every bias term (BitFit, Ben Zaken et al. 2022) + head",
        trainable=lambda n: _is_bias(n) or is_head(n),
        default_learning_rate=1e-3,
    ),
):
    METHODS.add(_m.name, _m)


def count_parameters(model: nn.Module) -> dict[str, int]:
    """Trainable and total parameters (head included), and the backbone's own size."""
    params = dict(model.named_parameters())
    backbone = sum(p.numel() for n, p in params.items() if not is_head(n) and not _is_adapter(n))
    counts = {
        "trainable_params": sum(p.numel() for p in params.values() if p.requires_grad),
        "total_params": sum(p.numel() for p in params.values()),
        "backbone_params": backbone,
        "head_params": sum(p.numel() for n, p in params.items() if is_head(n)),
    }
    if hasattr(model, "adapter_summary"):
        counts["adapters_reported_params"] = sum(
            row["#param"] for row in model.adapter_summary(as_dict=True) if row["name"] != "Full model"
        )
    return counts
