"""What a run config knows of the methods, as data: the settings each method family takes (a pydantic model per
family: types, bounds, defaults, descriptions), which the run configs inherit so users write them flat
(`-p adapter_size 64`), and each registered method's facts a config needs (its defaults and the settings it takes).

The settings models live here, below the models, so that a config imports nothing that builds or trains a model;
a family names its models in its `Method` (`models/methods`), and registering the method records its facts here
(`METHOD_FACTS`), as registering it records the weights it adds. A setting enters a run's id only where it is not at
its default (`MethodSettings.neutral`), so a setting added to a family leaves every earlier run's id as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from adaptstudy.common.registry import did_you_mean
from adaptstudy.runs.base import ConfigError

ALL_SETTINGS: list[type[MethodSettings]] = []  # every family's model, in the order they are declared below


class MethodSettings(BaseModel):
    """A family's settings; `RUNS`: the kinds of run that offer them (fine-tuning, multi-task). `IN_EVERY_RUN_ID`
    names those that were in run ids from the start, at any value."""

    RUNS: ClassVar[frozenset[str]] = frozenset({"finetune", "multitask"})
    IN_EVERY_RUN_ID: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        ALL_SETTINGS.append(cls)

    @classmethod
    def neutral(cls) -> dict[str, object]:
        """The settings kept out of a run's id at these values: every field's default, but `IN_EVERY_RUN_ID`."""
        return {name: f.default for name, f in cls.model_fields.items() if name not in cls.IN_EVERY_RUN_ID}


class AdapterWidth(MethodSettings):
    """Methods that add bottleneck adapters (single-task and multi-task runs)."""

    IN_EVERY_RUN_ID: ClassVar[frozenset[str]] = frozenset({"adapter_size"})

    adapter_size: int | None = Field(
        None, ge=1, description="adapter methods: bottleneck width (None: the method's default)"
    )


class AdapterTraining(MethodSettings):
    """Bottleneck adapters' initialisation and layer ablation (single-task runs)."""

    RUNS: ClassVar[frozenset[str]] = frozenset({"finetune"})

    adapter_init_std: float | None = Field(
        None, gt=0, description="adapter methods: init std (None: the library's 1e-2)"
    )
    layer_ablation: bool = Field(
        False, description="adapter methods: after training, evaluate with each span of layers' adapters removed"
    )


class HoulsbyVariant(MethodSettings):
    """Houlsby et al.'s architecture variants (single-task runs)."""

    RUNS: ClassVar[frozenset[str]] = frozenset({"finetune"})

    adapter_variant: Literal["layer_norm_inside", "two_layer", "tanh", "attention_only", "parallel"] | None = Field(
        None, description="houlsby: an architecture variant from the paper's ablations (None: the plain adapter)"
    )


BOTTLENECK = (AdapterWidth, AdapterTraining)


class FusionSettings(MethodSettings):
    """What a fusion run fuses (single-task runs)."""

    RUNS: ClassVar[frozenset[str]] = frozenset({"finetune"})

    fusion_sources: tuple[str, ...] | None = Field(
        None,
        description="fusion: the tasks whose single-task adapters are fused (the target alone: the N = 1 control, "
        "which adds the fusion layers' capacity without other tasks' adapters)",
    )
    source_settings: dict[str, Any] | None = Field(
        None,
        description="fusion: the settings of the single-task runs that train the source adapters "
        "(method, size, rate, ...); `per_task: {task: {setting: value}}` overrides them for some sources",
    )
    fusion_from: dict[str, Any] | None = Field(
        None,
        description="fusion over a multi-task run's adapters instead (AdapterFusion's Fusion w/ MT-A): that run's "
        "settings (method task_adapters); this run starts from its encoder and fuses its adapters of fusion_sources",
    )


class TopK(MethodSettings):
    """Variable fine-tuning's depth (single-task runs)."""

    RUNS: ClassVar[frozenset[str]] = frozenset({"finetune"})

    top_k_layers: int | None = Field(None, ge=1, description="top_k: how many of the top transformer layers train")


class HypernetworkSettings(MethodSettings):
    """The hypernetworks' switches, initialisation and rate, and few-shot transfer (multi-task runs)."""

    RUNS: ClassVar[frozenset[str]] = frozenset({"multitask"})
    IN_EVERY_RUN_ID: ClassVar[frozenset[str]] = frozenset({"conditional_layer_norm", "task_projector", "transfer_from"})

    conditional_layer_norm: bool = Field(True, description="hyperformer: a generated layer norm inside each adapter")
    task_projector: bool = Field(True, description="hyperformer: the task embedding goes through the projector MLP")
    hypernetwork_init_std: float | None = Field(
        None,
        gt=0,
        description="hyperformer: the standard deviation of the adapter hypernetworks' initial weights (None: 1e-4, "
        "generated adapters near the identity; the reference code: 1e-2)",
    )
    hypernetwork_learning_rate: float | None = Field(
        None,
        gt=0,
        description="hyperformer: the learning rate of the hypernetworks and task embeddings (None: the run's "
        "learning_rate, which the heads and layer norms keep)",
    )
    transfer_from: dict[str, Any] | None = Field(
        None,
        description="few-shot transfer: the settings of a trained multi-task Hyperformer run; its hypernetworks and "
        "encoder stay frozen and only a new task embedding (and the new task's head) train",
    )


def settings_for(run: str) -> tuple[type[MethodSettings], ...]:
    """The settings models a kind of run offers ("finetune", "multitask"): the run config inherits their fields."""
    return tuple(model for model in ALL_SETTINGS if run in model.RUNS)


def neutral_settings(run: str) -> dict[str, object]:
    """The method settings a kind of run keeps out of its ids at their defaults (`MethodSettings.neutral`)."""
    return {name: value for model in settings_for(run) for name, value in model.neutral().items()}


@dataclass(frozen=True)
class MethodFacts:
    """What a run config asks of a registered method: its defaults, the settings it takes, and what it can be (the
    method's registration in `models/methods` records them)."""

    name: str
    default_learning_rate: float
    default_adapter_size: int | None
    takes: frozenset[str]
    continues: str | None = None  # the pretraining mode whose adapter it trains on
    stackable: bool = False
    fusion_source: bool = False
    per_task_adapters: bool = False

    @property
    def uses_adapter_size(self) -> bool:
        return "adapter_size" in self.takes

    @property
    def uses_top_k(self) -> bool:
        return "top_k_layers" in self.takes


METHOD_FACTS: dict[str, MethodFacts] = {}  # by name, in registration order: written as each method registers


def _registered() -> dict[str, MethodFacts]:
    """`METHOD_FACTS`, or one clear error where no method has registered (the models were never imported)."""
    if not METHOD_FACTS:
        raise ConfigError("no method is registered: import adaptstudy.models.methods before making run configs")
    return METHOD_FACTS


def method_facts(name: str) -> MethodFacts:
    """A registered method's facts; one clear error naming the valid methods for any other name."""
    _registered()
    if name not in METHOD_FACTS:
        raise ConfigError(
            f"unknown method {name!r}{did_you_mean(name, METHOD_FACTS)}; valid: {', '.join(METHOD_FACTS)}"
        )
    return METHOD_FACTS[name]


def methods_that(capable: Callable[[MethodFacts], bool]) -> list[str]:
    """The registered methods with a capability, in registration order: `methods_that(lambda m: m.stackable)`."""
    return [name for name, facts in _registered().items() if capable(facts)]


def taking(setting: str) -> list[str]:
    """The methods that take a setting."""
    return methods_that(lambda m: setting in m.takes)


def adapter_modes() -> tuple[str, ...]:
    """The pretraining modes that train an adapter (02_dapt): the ones some method continues."""
    return tuple(sorted({m.continues for m in _registered().values() if m.continues}))


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
