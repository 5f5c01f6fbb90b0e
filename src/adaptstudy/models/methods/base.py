"""What every method shares: the `Method` record, parameter names (head, added weights, layers) and counting.

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
from functools import cache

from adapters.methods.modeling import Adapter
from torch import nn

from adaptstudy.runs.method_catalog import METHOD_FACTS, MethodFacts, method_facts

ADAPTER_NAME = "task"
PRETRAINED_ADAPTER = "pretrained"  # an adapter from MLM pretraining, frozen under the task adapter (stack)
HEAD_PATTERN = re.compile(r"(^|\.)(classifier|pooler|score|heads)\.")
LAYER_PATTERN = re.compile(r"\.layer\.(\d+)\.")


def adapter_name(task: str) -> str:
    """What a task's adapter is called in a model holding several (AdapterFusion's sources, MT-A's adapters)."""
    return f"source_{task}"


def is_head(name: str) -> bool:
    return bool(HEAD_PATTERN.search(name))


def is_layer_norm(name: str) -> bool:
    return "LayerNorm" in name or "layer_norm" in name


def layer_index(name: str) -> int | None:
    """The transformer layer a parameter belongs to (None: embeddings, head)."""
    match = LAYER_PATTERN.search(name)
    return int(match.group(1)) if match else None


def is_adapter(name: str) -> bool:
    return ".adapters." in name


def is_added(name: str) -> bool:
    """A weight that a method added to the backbone (adapter, LoRA, prefix, prompt, ...): under a module name some
    method's facts declare it adds (`MethodFacts.adds`), so a family declares its added weights in one place."""
    return bool(_added_pattern(frozenset().union(*(f.adds for f in METHOD_FACTS.values()))).search(name))


@cache
def _added_pattern(names: frozenset[str]) -> re.Pattern:
    alternatives = "|".join(sorted(map(re.escape, names))) or "(?!)"
    return re.compile(rf"(^|\.)({alternatives})\.")


def is_embedding(name: str) -> bool:
    return ".embeddings." in name or name.startswith("embeddings.")


def is_encoder_layer(name: str) -> bool:
    return layer_index(name) is not None and not is_added(name)


def is_bias(name: str) -> bool:
    return name.endswith(".bias")


@dataclass(frozen=True)
class Method:
    """A method's implementation, attached by name to its facts (`runs.method_catalog`: what it adds, its defaults,
    the settings it takes, its capabilities), which read as its own attributes (`method.default_learning_rate`).
    `trainable(parameter name, model, config)`: whether a weight trains; `prepare(model, config)`: the model with what
    the method adds; `pretraining_adapter(hidden, width)`: the `adapters` config of the adapter 02_dapt trains for a
    method that `continues` one; `own_rate(name)`: the parameters a multi-task run trains at the method's own rate
    (`hypernetwork_learning_rate`); `transfer(model, tasks)`: prepare a source run's trained model for new tasks
    (`transfer_from`), training only what they add."""

    name: str
    trainable: Callable[[str, nn.Module, object], bool] = field(repr=False)
    prepare: Callable[[nn.Module, object], nn.Module] = field(default=lambda model, config: model, repr=False)
    pretraining_adapter: Callable[[int, int | None], object] | None = field(default=None, repr=False)
    own_rate: Callable[[str], bool] | None = field(default=None, repr=False)
    transfer: Callable[[nn.Module, tuple[str, ...]], None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        """Its facts are declared, and a method that takes a setting has what the setting needs."""
        facts = method_facts(self.name)  # one error naming the declared methods for an undeclared one
        needs = {"transfer_from": "transfer", "hypernetwork_learning_rate": "own_rate"}
        missing = [f"takes {s} but no `{h}`" for s, h in needs.items() if s in facts.takes and not getattr(self, h)]
        if facts.continues and not self.pretraining_adapter:
            missing.append(f"continues pretraining mode {facts.continues!r} but has no `pretraining_adapter`")
        if missing:
            raise ValueError(f"method {self.name!r}: {'; '.join(missing)}")

    @property
    def facts(self) -> MethodFacts:
        return method_facts(self.name)

    def __getattr__(self, name: str):
        """The facts read as the method's own attributes (`description`, `adds`, `takes`, ...)."""
        if name.startswith("_") or "name" not in self.__dict__:
            raise AttributeError(name)
        return getattr(method_facts(self.__dict__["name"]), name)

    def apply(self, model: nn.Module, config) -> nn.Module:
        """Prepare `model` for this method and set `requires_grad` on every parameter."""
        return self.set_trainable(self.prepare(model, config), config)

    def apply_to_encoder(self, model: nn.Module, config) -> nn.Module:
        """The same for a model whose encoder is `model.bert` with heads of its own (multi-task): the method
        prepares the encoder; what trains is decided over the whole model's names."""
        model.bert = self.prepare(model.bert, config)
        return self.set_trainable(model, config)

    def set_trainable(self, model: nn.Module, config) -> nn.Module:
        """`requires_grad` on every parameter: what the method trains, never a frozen pretrained adapter."""
        for name, param in model.named_parameters():
            frozen_pretrained = f".{PRETRAINED_ADAPTER}." in name
            param.requires_grad_(bool(self.trainable(name, model, config)) and not frozen_pretrained)
        return model


def reduction_factor(hidden: int, width: int) -> float:
    """The `reduction_factor` that makes `adapters` build a bottleneck `width` wide. It builds `int(hidden // factor)`,
    so `hidden / width` can lose one to rounding (on hidden 384, widths 13 and 1000 built 12 and 999); there, half a
    unit more lands the quotient inside [width, width + 1). Exact factors are kept as they are (committed runs)."""
    exact = hidden / width
    return exact if int(hidden // exact) == width else hidden / (width + 0.5)


def adapter_widths(model: nn.Module) -> list[int]:
    """The distinct bottleneck widths of the `adapters` package's adapters in `model` (empty: none)."""
    return sorted({m.down_sample for m in model.modules() if isinstance(m, Adapter)})


def check_adapter_widths(model: nn.Module, width: int) -> None:
    """Stop before training when what was built is not what was asked: every bottleneck `width` wide."""
    built = adapter_widths(model)
    if built and built != [width]:
        raise ValueError(
            f"adapter_size {width}: the adapters built are {', '.join(map(str, built))} wide on hidden size "
            f"{model.config.hidden_size}; build them with reduction_factor(hidden, width)"
        )


def count_parameters(model: nn.Module) -> dict[str, int | list[int]]:
    """Trainable and total parameters (head included), the backbone's own size, and the adapters' built widths."""
    params = dict(model.named_parameters())
    backbone = sum(p.numel() for n, p in params.items() if not is_head(n) and not is_added(n))
    counts = {
        "trainable_params": sum(p.numel() for p in params.values() if p.requires_grad),
        "total_params": sum(p.numel() for p in params.values()),
        "backbone_params": backbone,
        "head_params": sum(p.numel() for n, p in params.items() if is_head(n)),
    }
    if widths := adapter_widths(model):
        counts["adapter_widths"] = widths
    if hasattr(model, "adapter_summary"):
        counts["adapters_reported_params"] = sum(
            row["#param"] for row in model.adapter_summary(as_dict=True) if row["name"] != "Full model"
        )
    return counts
