"""Each method's facts, declared once as data: its name, what it trains or adds, its default rate and adapter width,
the settings models it takes (`runs.method_settings`), the module names its added weights sit under, the kinds of
`adapters` method it attaches (a backbone that offers fewer cannot run it) and what it can be (a fusion source, a
stack on a pretrained adapter, ...). A run config reads them without importing torch; the models layer attaches each
method's implementation by name (`models/methods`), and refuses a method whose facts are not declared here.

A new method family: its facts here, its implementation in `models/methods` (the README's "How to extend").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from adaptstudy.common.registry import did_you_mean
from adaptstudy.runs.base import ConfigError
from adaptstudy.runs.method_settings import (
    BOTTLENECK,
    FusionSettings,
    HoulsbyVariant,
    HypernetworkSettings,
    MethodSettings,
    TopK,
)

BOTTLENECK_KIND = frozenset({"bottleneck"})
PROMPT_TOKENS = 20  # prompt tuning's soft tokens


@dataclass(frozen=True)
class MethodFacts:
    """What a method is, as data (see the module docstring). `continues`: the pretraining mode (02_dapt) whose
    adapter it trains on; `stackable`: it sits on a frozen pretrained adapter (adapters' Stack); `fusion_source`: its
    trained adapter is one AdapterFusion can combine; `per_task_adapters`: a multi-task run of it keeps an adapter per
    task (Fusion w/ MT-A's sources); `changes_sequence`: it adds positions to the input or to attention's keys."""

    name: str
    description: str
    default_learning_rate: float = 2e-5
    default_adapter_size: int | None = None
    settings: tuple[type[MethodSettings], ...] = ()
    adds: tuple[str, ...] = ()
    attaches: frozenset[str] = frozenset()
    continues: str | None = None
    stackable: bool = False
    fusion_source: bool = False
    per_task_adapters: bool = False
    changes_sequence: bool = False

    @property
    def takes(self) -> frozenset[str]:
        """The names of the settings this method takes."""
        return frozenset(name for model in self.settings for name in model.model_fields)

    @property
    def uses_adapter_size(self) -> bool:
        return "adapter_size" in self.takes

    @property
    def uses_top_k(self) -> bool:
        return "top_k_layers" in self.takes


def _hyperformer(name: str, detail: str) -> MethodFacts:
    return MethodFacts(
        name,
        f"{name} (Mahabadi et al. 2021): Houlsby-placed adapters whose weights and inner layer norms {detail} generate "
        "from a task embedding; hypernetworks + task embeddings + all layer norms + head",
        default_learning_rate=3e-4,
        default_adapter_size=24,
        settings=(*BOTTLENECK, HypernetworkSettings),
        adds=("hypernetworks",),
        attaches=frozenset({"bert_sublayers"}),  # the attention and feed-forward outputs of BERT-style layers
    )


FAMILIES = (
    MethodFacts("full", "every weight of the backbone and the head"),
    MethodFacts(
        "houlsby",
        "Houlsby adapters (two per layer, GELU, near-identity init) + all layer norms + head",
        default_learning_rate=1e-3,
        default_adapter_size=64,
        settings=(*BOTTLENECK, HoulsbyVariant),
        adds=("adapters",),
        attaches=BOTTLENECK_KIND,
        stackable=True,
        fusion_source=True,
    ),
    MethodFacts(
        "pfeiffer",
        "one adapter per layer after the feed-forward block (seq_bn: ReLU, original layer norms frozen) + head",
        default_learning_rate=1e-3,
        default_adapter_size=64,
        settings=BOTTLENECK,
        adds=("adapters",),
        attaches=BOTTLENECK_KIND,
        continues="seq_bn",
        stackable=True,
        fusion_source=True,
    ),
    MethodFacts(
        "head_only",
        "only the head (pooler and classifier); the whole encoder frozen (AdapterFusion's 'Head')",
        default_learning_rate=1e-3,
    ),
    MethodFacts(
        "fusion",
        "AdapterFusion (Pfeiffer et al. 2021): frozen single-task adapters of `fusion_sources`, combined by a trained "
        "attention per layer (dynamic Fuse, value initialised to the identity) + head",
        default_learning_rate=5e-5,
        settings=(FusionSettings,),
        adds=("adapters", "adapter_fusion_layer"),
        attaches=frozenset({"bottleneck", "fusion"}),
    ),
    MethodFacts(
        "task_adapters",
        "AdapterFusion's multi-task adapters (MT-A): one seq_bn adapter per task and every weight of the encoder, "
        "trained jointly (each batch through its task's adapter) + heads",
        default_learning_rate=1e-4,
        default_adapter_size=24,
        settings=BOTTLENECK,
        adds=("adapters",),
        attaches=BOTTLENECK_KIND,
        per_task_adapters=True,
    ),
    MethodFacts(
        "top_k",
        "variable fine-tuning: every weight of the top `top_k_layers` transformer layers + head",
        default_learning_rate=5e-5,
        settings=(TopK,),
    ),
    MethodFacts("layernorm", "only the layer-norm parameters (embeddings and every layer) + head", 1e-3),
    MethodFacts("bitfit", "every bias term (BitFit, Ben Zaken et al. 2022) + head", 1e-3),
    MethodFacts(
        "embeddings_only",
        "the embedding layer (word, position, token-type embeddings and their layer norm) + head",
        1e-3,
    ),
    MethodFacts("encoder_only", "every transformer layer + head; the embedding layer frozen", 5e-5),
    _hyperformer("hyperformer", "hypernetworks per layer and position"),
    _hyperformer("hyperformer++", "one hypernetwork shared over layers and positions"),
    # the `adapters` package's own methods, at its default configs (`models/methods/library.py`)
    MethodFacts(
        "prompt_tuning",
        f"{PROMPT_TOKENS} soft-prompt tokens prepended to the input embeddings (Lester et al. 2021) + head",
        3e-2,
        adds=("prompt_tuning",),
        attaches=frozenset({"prompt_tuning"}),
        changes_sequence=True,
    ),
    MethodFacts(
        "lora",
        "LoRA (Hu et al. 2022) on the query and value projections, r 8, alpha 8 (adapters' defaults) + head",
        1e-3,
        adds=("loras",),
        attaches=frozenset({"lora"}),
    ),
    MethodFacts(
        "ia3",
        "IA3 (Liu et al. 2022): learned scaling of keys, values and the feed-forward activations + head",
        3e-3,
        adds=("loras",),
        attaches=frozenset({"lora"}),
    ),
    MethodFacts(
        "prefix_tuning",
        "prefix tuning (Li & Liang 2021): 30 prefix tokens per layer through the reparameterising MLP (adapters' "
        "defaults; the MLP trains and counts) + head",
        1e-3,
        adds=("prefix_tuning",),
        attaches=frozenset({"prefix_tuning"}),
        changes_sequence=True,
    ),
    MethodFacts(
        "compacter",
        "Compacter (Mahabadi et al. 2021): Kronecker-factored low-rank adapters, reduction factor 32, n 4 (adapters' "
        "defaults) + head",
        3e-3,
        adds=("adapters", "shared_parameters"),
        attaches=BOTTLENECK_KIND,
    ),
    MethodFacts(
        "unipelt",
        "UniPELT (Mao et al. 2022), adapters' definition: gated LoRA (r 8), prefix tuning (10 tokens) and a seq_bn "
        "adapter (reduction factor 16) + head",
        1e-3,
        adds=("loras", "prefix_tuning", "adapters"),
        attaches=frozenset({"bottleneck", "lora", "prefix_tuning"}),
        continues="unipelt",
        changes_sequence=True,
    ),
)

METHOD_FACTS: dict[str, MethodFacts] = {facts.name: facts for facts in FAMILIES}  # in the order declared


def method_facts(name: str) -> MethodFacts:
    """A method's facts; one clear error naming the valid methods for any other name."""
    if name not in METHOD_FACTS:
        raise ConfigError(
            f"unknown method {name!r}{did_you_mean(name, METHOD_FACTS)}; valid: {', '.join(METHOD_FACTS)}"
        )
    return METHOD_FACTS[name]


def methods_that(capable: Callable[[MethodFacts], bool]) -> list[str]:
    """The methods with a capability, in the order declared: `methods_that(lambda m: m.stackable)`."""
    return [name for name, facts in METHOD_FACTS.items() if capable(facts)]


def taking(setting: str) -> list[str]:
    """The methods that take a setting."""
    return methods_that(lambda m: setting in m.takes)


def adapter_modes() -> tuple[str, ...]:
    """The pretraining modes that train an adapter (02_dapt): the ones some method continues."""
    return tuple(sorted({m.continues for m in METHOD_FACTS.values() if m.continues}))


def continuing(mode: str) -> str:
    """The method that trains a pretrained adapter of `mode` (02_dapt's seq_bn, unipelt) on."""
    (name,) = methods_that(lambda m: m.continues == mode)
    return name


def refuse_foreign_settings(config: BaseModel, method: str) -> None:
    """A setting that some methods own, given to a run of another method at other than its default, is refused,
    naming the methods that take it: the methods say what they take, no list here does."""
    fields = type(config).model_fields
    own = method_facts(method).takes
    for setting in sorted({s for facts in METHOD_FACTS.values() for s in facts.takes} & set(fields)):
        value = getattr(config, setting)
        if value != fields[setting].default and setting not in own:
            raise ValueError(
                f"{setting}={value!r} does not apply to method {method!r}; methods that take it: "
                f"{', '.join(taking(setting))}"
            )
