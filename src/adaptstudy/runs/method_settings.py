"""The settings each method family takes, as data (a pydantic model per family: types, bounds, defaults,
descriptions), which the run configs inherit so users write them flat (`-p adapter_size 64`). Each method's facts,
which of these models it takes among them, are declared once in `runs.method_catalog`.

The settings models live here, below the models, so that a config imports nothing that builds or trains a model. A
setting enters a run's id only where it is not at its default (`MethodSettings.neutral`), so a setting added to a
family leaves every earlier run's id as it was.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

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
