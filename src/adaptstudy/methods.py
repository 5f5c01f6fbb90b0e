"""The method registry: each method prepares a model and says which of its weights train.

Every method starts from `AutoModelForSequenceClassification` on the backbone. The *head* is
BERT's pooler (a pretrained dense layer on [CLS]) plus the new classifier; every method trains it,
so trainable counts differ only in what each method adds or unfreezes in the encoder.
Parameters are counted here, head included, the same way for every method; for adapter methods
the record also keeps what the `adapters` package reports (the adapter weights alone).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from adaptstudy.registry import Registry

ADAPTER_NAME = "task"
PRETRAINED_ADAPTER = "pretrained"  # an adapter from MLM pretraining, frozen under the task adapter (stack)
HEAD_PATTERN = re.compile(r"(^|\.)(classifier|pooler|score|heads)\.")
# Modules the `adapters` package adds (bottleneck adapters, LoRA/IA3, prefixes, soft prompts, Compacter's shared
# rule, AdapterFusion's attention) and our Hyperformer hypernetworks.
ADDED_PATTERN = re.compile(r"(^|\.)(adapters|loras|prefix_tuning|prompt_tuning|shared_parameters|hypernetworks|adapter_fusion_layer)\.")
LAYER_PATTERN = re.compile(r"\.layer\.(\d+)\.")


def is_head(name: str) -> bool:
    return bool(HEAD_PATTERN.search(name))


def is_layer_norm(name: str) -> bool:
    return "LayerNorm" in name or "layer_norm" in name


def layer_index(name: str) -> int | None:
    """The transformer layer a parameter belongs to (None: embeddings, head)."""
    match = LAYER_PATTERN.search(name)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    trainable: Callable[[str, nn.Module, object], bool] = field(repr=False)  # (parameter name, model, config)
    prepare: Callable[[nn.Module, object], nn.Module] = field(default=lambda model, config: model, repr=False)
    default_learning_rate: float = 2e-5
    uses_adapter_size: bool = False
    default_adapter_size: int | None = None
    uses_top_k: bool = False

    def apply(self, model: nn.Module, config) -> nn.Module:
        """Prepare `model` for this method and set `requires_grad` on every parameter."""
        model = self.prepare(model, config)
        if getattr(config, "init_from", None):
            from adaptstudy.artifacts import attach_pretrained_adapter

            attach_pretrained_adapter(model, config, ADAPTER_NAME)
        return self._set_trainable(model, config)

    def apply_to_encoder(self, model: nn.Module, config) -> nn.Module:
        """The same for a model whose encoder is `model.bert` with heads of its own (multi-task): the method
        prepares the encoder; what trains is decided over the whole model's names."""
        model.bert = self.prepare(model.bert, config)
        return self._set_trainable(model, config)

    def _set_trainable(self, model: nn.Module, config) -> nn.Module:
        for name, param in model.named_parameters():
            frozen_pretrained = f".{PRETRAINED_ADAPTER}." in name
            param.requires_grad_(bool(self.trainable(name, model, config)) and not frozen_pretrained)
        return model


ADAPTER_VARIANTS = ("layer_norm_inside", "two_layer", "tanh", "attention_only", "parallel")


def _add_houlsby(model: nn.Module, config) -> nn.Module:
    """Two bottleneck adapters per layer (after attention and after feed-forward), GELU,
    near-identity init: N(0, 1e-2) truncated at two std, zero biases (Houlsby et al. 2019).

    `adapter_variant` gives the variants the paper tried and found no better: a layer norm inside
    the adapter, two layers in the bottleneck, tanh, adapters after the attention block only, and
    adapters in parallel to the sublayer instead of after it."""
    import adapters
    from adapters import DoubleSeqBnConfig, ParBnConfig

    adapters.init(model)
    variant = getattr(config, "adapter_variant", None)
    common = dict(reduction_factor=model.config.hidden_size / config.adapter_size, init_weights="houlsby",
                  init_weights_seed=config.seed, non_linearity="tanh" if variant == "tanh" else "gelu")  # fmt: skip
    if variant == "parallel":
        adapter_config = ParBnConfig(mh_adapter=True, output_adapter=True, scaling=1.0, **common)
    else:
        adapter_config = DoubleSeqBnConfig(
            ln_before=variant == "layer_norm_inside", output_adapter=variant != "attention_only", **common
        )
    model.add_adapter(ADAPTER_NAME, config=adapter_config)
    if variant == "two_layer":
        _deepen_bottlenecks(model, config.seed)
    model.train_adapter(ADAPTER_NAME)
    _rescale_adapter_init(model, config)
    return model


def _deepen_bottlenecks(model: nn.Module, seed: int) -> None:
    """A second bottleneck-wide layer (same activation, same near-identity init) in every adapter."""
    from adapters.methods.modeling import Adapter

    generator = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, Adapter):
            width, activation = module.down_sample, module.non_linearity
            extra = nn.Linear(width, width)
            with torch.no_grad():
                extra.weight.copy_(torch.nn.init.trunc_normal_(torch.empty_like(extra.weight), std=1e-2, a=-2e-2, b=2e-2, generator=generator))
                extra.bias.zero_()
            module.adapter_down = nn.Sequential(*module.adapter_down, extra, activation)


def _add_pfeiffer(model: nn.Module, config) -> nn.Module:
    """One bottleneck per layer, after the feed-forward block (`seq_bn`, Pfeiffer et al. 2021)."""
    import adapters
    from adapters import SeqBnConfig

    adapters.init(model)
    model.add_adapter(
        ADAPTER_NAME,
        config=SeqBnConfig(reduction_factor=model.config.hidden_size / config.adapter_size, init_weights_seed=config.seed),
    )
    model.train_adapter(ADAPTER_NAME)
    _rescale_adapter_init(model, config)
    return model


def _rescale_adapter_init(model: nn.Module, config) -> None:
    """With `adapter_init_std`, redraw every adapter weight from N(0, std) truncated at two std, biases zero
    (Houlsby et al.'s init, at another scale; their Figure 6 varies it from 1e-7 to 1)."""
    std = getattr(config, "adapter_init_std", None)
    if std is None:
        return
    generator = torch.Generator().manual_seed(config.seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if _is_adapter(name) and name.endswith(".weight"):
                param.copy_(torch.nn.init.trunc_normal_(torch.empty_like(param), std=std, a=-2 * std, b=2 * std, generator=generator))
            elif _is_adapter(name) and name.endswith(".bias"):
                param.zero_()


PROMPT_TOKENS = 20


def _library_method(config_class: str, **options) -> Callable[[nn.Module, object], nn.Module]:
    """`prepare` for a method the `adapters` package implements (its config class by name, imported
    late like the package itself): add it under one name and activate it."""

    def prepare(model: nn.Module, config) -> nn.Module:
        import adapters

        adapters.init(model)
        model.add_adapter(ADAPTER_NAME, config=getattr(adapters, config_class)(**options))
        model.train_adapter(ADAPTER_NAME)
        return model

    return prepare


def _from_library(name: str, description: str, config_class: str, learning_rate: float, **options) -> Method:
    """A method the `adapters` package implements: what it adds trains, with the head; nothing else does."""
    return Method(name, description + " + head", trainable=lambda n, *_: is_added(n) or is_head(n),
                  prepare=_library_method(config_class, **options), default_learning_rate=learning_rate)  # fmt: skip


def _add_fusion(model: nn.Module, config) -> nn.Module:
    from adaptstudy.fusion import add_fusion

    return add_fusion(model, config)


def _hypernetwork_method(shared: bool) -> Callable[[nn.Module, object], nn.Module]:
    """`prepare` for Hyperformer (shared=False) and Hyperformer++: hypernetwork-generated adapters in the
    encoder, for the run's tasks (`tasks` of a multi-task run, else its one task), the first selected."""

    def prepare(model: nn.Module, config) -> nn.Module:
        from adaptstudy.hyper import HyperConfig, insert_adapters

        tasks = tuple(getattr(config, "tasks", None) or (config.task_name,))
        hyper = HyperConfig(tasks=tasks, shared=shared, adapter_size=config.adapter_size,
                            conditional_layer_norm=getattr(config, "conditional_layer_norm", True),
                            task_projector=getattr(config, "task_projector", True))  # fmt: skip
        torch.manual_seed(config.seed)
        insert_adapters(model.base_model, hyper).select(tasks[0])
        return model

    return prepare


def _in_top_layers(name: str, model: nn.Module, config) -> bool:
    index = layer_index(name)
    return index is not None and index >= model.config.num_hidden_layers - config.top_k_layers


def _is_adapter(name: str) -> bool:
    return ".adapters." in name


def is_added(name: str) -> bool:
    """A weight that a method added to the backbone (adapter, LoRA, prefix, prompt, ...)."""
    return bool(ADDED_PATTERN.search(name))


def _is_embedding(name: str) -> bool:
    return ".embeddings." in name or name.startswith("embeddings.")


def _is_encoder_layer(name: str) -> bool:
    return layer_index(name) is not None and not is_added(name)


def _is_bias(name: str) -> bool:
    return name.endswith(".bias")


METHODS: Registry[Method] = Registry("method")

for _m in (
    Method("full", "every weight of the backbone and the head", trainable=lambda n, *_: True),
    Method(
        "houlsby",
        "Houlsby adapters (two per layer, GELU, near-identity init) + all layer norms + head",
        trainable=lambda n, *_: _is_adapter(n) or is_layer_norm(n) or is_head(n),
        prepare=_add_houlsby,
        default_learning_rate=1e-3,
        uses_adapter_size=True,
        default_adapter_size=64,
    ),
    Method(
        "pfeiffer",
        "one adapter per layer after the feed-forward block (seq_bn: ReLU, original layer norms frozen) + head",
        trainable=lambda n, *_: _is_adapter(n) or is_head(n),
        prepare=_add_pfeiffer,
        default_learning_rate=1e-3,
        uses_adapter_size=True,
        default_adapter_size=64,
    ),
    Method("head_only", "only the head (pooler and classifier); the whole encoder frozen (AdapterFusion's 'Head')",
           trainable=lambda n, *_: is_head(n), default_learning_rate=1e-3),
    Method(
        "fusion",
        "AdapterFusion (Pfeiffer et al. 2021): frozen single-task adapters of `fusion_sources`, combined by a trained "
        "attention per layer (dynamic Fuse, value initialised to the identity) + head",
        trainable=lambda n, *_: ".adapter_fusion_layer." in n or is_head(n),
        prepare=_add_fusion,
        default_learning_rate=5e-5,
    ),
    Method(
        "top_k",
        "variable fine-tuning: every weight of the top `top_k_layers` transformer layers + head",
        trainable=lambda n, model, config: _in_top_layers(n, model, config) or is_head(n),
        default_learning_rate=5e-5,
        uses_top_k=True,
    ),
    Method(
        "layernorm",
        "only the layer-norm parameters (embeddings and every layer) + head",
        trainable=lambda n, *_: is_layer_norm(n) or is_head(n),
        default_learning_rate=1e-3,
    ),
    Method(
        "bitfit",
        "every bias term (BitFit, Ben Zaken et al. 2022) + head",
        trainable=lambda n, *_: _is_bias(n) or is_head(n),
        default_learning_rate=1e-3,
    ),
    Method(
        "embeddings_only",
        "the embedding layer (word, position, token-type embeddings and their layer norm) + head",
        trainable=lambda n, *_: _is_embedding(n) or is_head(n),
        default_learning_rate=1e-3,
    ),
    Method(
        "encoder_only",
        "every transformer layer + head; the embedding layer frozen",
        trainable=lambda n, *_: _is_encoder_layer(n) or is_head(n),
        default_learning_rate=5e-5,
    ),
    *(
        Method(name, f"{name} (Mahabadi et al. 2021): Houlsby-placed adapters whose weights and inner layer norms "
               f"{detail} generate from a task embedding; hypernetworks + task embeddings + all layer norms + head",
               trainable=lambda n, *_: is_added(n) or is_layer_norm(n) or is_head(n),
               prepare=_hypernetwork_method(shared), default_learning_rate=3e-4, uses_adapter_size=True, default_adapter_size=24)
        for name, shared, detail in (("hyperformer", False, "hypernetworks per layer and position"),
                                     ("hyperformer++", True, "one hypernetwork shared over layers and positions"))
    ),  # fmt: skip
    _from_library("prompt_tuning", f"{PROMPT_TOKENS} soft-prompt tokens prepended to the input embeddings (Lester et al. 2021)",
                  "PromptTuningConfig", 3e-2, prompt_length=PROMPT_TOKENS),
    _from_library("lora", "LoRA (Hu et al. 2022) on the query and value projections, r 8, alpha 8 (adapters' defaults)",
                  "LoRAConfig", 1e-3),
    _from_library("ia3", "IA3 (Liu et al. 2022): learned scaling of keys, values and the feed-forward activations",
                  "IA3Config", 3e-3),
    _from_library("prefix_tuning", "prefix tuning (Li & Liang 2021): 30 prefix tokens per layer through the "
                  "reparameterising MLP (adapters' defaults; the MLP trains and counts)", "PrefixTuningConfig", 1e-3),
    _from_library("compacter", "Compacter (Mahabadi et al. 2021): Kronecker-factored low-rank adapters, reduction "
                  "factor 32, n 4 (adapters' defaults)", "CompacterConfig", 3e-3),
    _from_library("unipelt", "UniPELT (Mao et al. 2022), adapters' definition: gated LoRA (r 8), prefix tuning "
                  "(10 tokens) and a seq_bn adapter (reduction factor 16)", "UniPELTConfig", 1e-3),
):
    METHODS.add(_m.name, _m)


def count_parameters(model: nn.Module) -> dict[str, int]:
    """Trainable and total parameters (head included), and the backbone's own size."""
    params = dict(model.named_parameters())
    backbone = sum(p.numel() for n, p in params.items() if not is_head(n) and not is_added(n))
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
            if _is_adapter(name) and ".adapter_up." in name and layer_index(name) in layers:
                saved[name] = param.detach().clone()
                param.zero_()
    try:
        yield model
    finally:
        with torch.no_grad():
            params = dict(model.named_parameters())
            for name, value in saved.items():
                params[name].copy_(value)
