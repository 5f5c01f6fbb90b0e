"""Validated run configurations and their stable identity.

Parameters come from notebooks (papermill), YAML profiles and sweep grids; all of them pass through
a pydantic model here, so an unknown name, a wrong type or an impossible combination is one clear
error before any data is read or any weight is trained.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from adaptstudy.registry import did_you_mean


class ConfigError(ValueError):
    """Bad parameters: says which value is wrong and what would be valid."""


def validate(model: type[BaseModel], values: Mapping[str, Any], what: str = "parameter") -> BaseModel:
    """`model(**values)` with pydantic's errors turned into one readable message."""
    unknown = sorted(set(values) - set(model.model_fields))
    if unknown:
        hints = "; ".join(f"unknown {what} {k!r}{did_you_mean(k, model.model_fields)}" for k in unknown)
        raise ConfigError(f"{hints}. Valid: {', '.join(model.model_fields)}")
    try:
        return model.model_validate(dict(values))
    except ValidationError as e:
        problems = []
        for err in e.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(config)"
            got = f" (got {err['input']!r})" if err["type"] != "value_error" and loc != "(config)" else ""
            msg = err["msg"].removeprefix("Value error, ")
            problems.append(f"{msg}" if loc == "(config)" else f"{what} {loc}: {msg}{got}")
        raise ConfigError("; ".join(problems)) from None


# Settings added after records were first committed enter the run id only when they are not at their
# neutral value, so that every earlier run keeps its id.
NEUTRAL_SINCE_FIRST_RECORDS = {
    "train_fraction": 1.0, "top_k_layers": None, "adapter_init_std": None, "layer_ablation": False, "adapter_variant": None,
    "resplit_train_share": None, "max_eval_examples": None, "init_from": None, "adapter_use": None,
    "adam_beta2": 0.999, "adam_epsilon": 1e-8, "fusion_sources": None, "source_settings": None, "max_steps": None,
}  # fmt: skip


class FinetuneConfig(BaseModel):
    """One fine-tuning run: a (task, method, backbone, seed) and how it is trained."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str | dict[str, Any] = Field("rte", description="a registered task, or a mapping declaring a custom task")
    method: str = "houlsby"
    backbone: str = "minilm-l6"
    seed: int = 42
    learning_rate: float | None = Field(None, gt=0, description="None: the method's default")
    num_train_epochs: float = Field(3.0, gt=0)
    max_steps: int | None = Field(
        None, ge=1, description="train this many optimizer steps instead of num_train_epochs, scored at the end (learning "
                                "curves: the same number of updates at every data size)")
    max_train_examples: int | None = Field(None, gt=0, description="None: the whole training set")
    max_seq_length: int = Field(128, ge=8, le=4096)
    batch_size: int = Field(32, ge=1)
    adapter_size: int | None = Field(None, ge=1, description="bottleneck width; only for adapter methods")
    data_dir: str | None = None
    results_dir: str | None = Field(None, description="None: results/finetune in the project")
    # Settings beyond the notebook's parameters, for profiles and sweeps.
    data_seed: int = 0
    warmup_ratio: float = Field(0.1, ge=0, lt=1)
    weight_decay: float = Field(0.0, ge=0)
    adam_beta2: float = Field(0.999, gt=0, lt=1, description="Don't Stop Pretraining's recipe uses 0.98")
    adam_epsilon: float = Field(1e-8, gt=0, description="Don't Stop Pretraining's recipe uses 1e-6")
    eval_batch_size: int = Field(128, ge=1)
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    train_fraction: float = Field(1.0, gt=0, le=1, description="share of the (capped) training set; nested across values")
    checkpoint_every_s: float = Field(300.0, ge=0, description="sweeps: seconds between checkpoints (0: every step)")
    top_k_layers: int | None = Field(None, ge=1, description="top_k: how many of the top transformer layers train")
    adapter_init_std: float | None = Field(None, gt=0, description="adapter methods: init std (None: the library's 1e-2)")
    layer_ablation: bool = Field(False, description="adapter methods: after training, evaluate with each span of layers' adapters removed")
    init_from: str | dict[str, Any] | None = Field(
        None, description="a pretraining artifact (02_dapt / 03_tapt output) to start from: its folder, or the settings of "
                          "the pretraining run that makes it (a mapping)")
    adapter_use: Literal["continue", "stack"] | None = Field(
        None, description="with an adapter artifact: train it on (continue) or freeze it under a new task adapter (stack)")
    resplit_train_share: float | None = Field(
        None, gt=0, lt=1, description="pool the task's labelled splits and re-split them, this share for training (seeded by data_seed)")
    max_eval_examples: int | None = Field(None, gt=0, description="None: the whole evaluation split; else a seeded subsample")
    adapter_variant: Literal["layer_norm_inside", "two_layer", "tanh", "attention_only", "parallel"] | None = Field(
        None, description="houlsby: an architecture variant from the paper's ablations (None: the plain adapter)")
    fusion_sources: tuple[str, ...] | None = Field(None, description="fusion: the tasks whose single-task adapters are fused")
    source_settings: dict[str, Any] | None = Field(
        None, description="fusion: the settings of the single-task runs that train the source adapters (method, size, rate, ...)")

    @model_validator(mode="after")
    def _known_names(self) -> FinetuneConfig:
        from adaptstudy.backbones import check_backbone
        from adaptstudy.data import resolve_task
        from adaptstudy.methods import METHODS

        method = METHODS.get(self.method)
        resolve_task(self.task)
        check_backbone(self.backbone)
        with_adapters = ", ".join(m for m in METHODS if METHODS.get(m).uses_adapter_size)
        for setting, value in (("adapter_size", self.adapter_size), ("adapter_init_std", self.adapter_init_std),
                               ("layer_ablation", self.layer_ablation or None)):  # fmt: skip
            if value is not None and not method.uses_adapter_size:
                raise ValueError(f"{setting}={value} does not apply to method {self.method!r}; methods with adapters: {with_adapters}")
        if self.init_from is not None:
            from adaptstudy.artifacts import check_init_from

            check_init_from(self.init_from, self.backbone, self.method, self.adapter_use, self.adapter_size)
        elif self.adapter_use is not None:
            raise ValueError(f"adapter_use={self.adapter_use!r} needs init_from (an adapter artifact of 02_dapt / 03_tapt)")
        if self.adapter_variant is not None and self.method != "houlsby":
            raise ValueError(f"adapter_variant={self.adapter_variant!r} applies only to method 'houlsby', not {self.method!r}")
        if (self.method == "fusion") != (self.fusion_sources is not None) or (self.fusion_sources is None) != (self.source_settings is None):
            raise ValueError("method 'fusion' needs fusion_sources and source_settings, and only it takes them")
        if self.fusion_sources is not None:
            from adaptstudy.fusion import source_config

            if len(set(self.fusion_sources)) != len(self.fusion_sources) or len(self.fusion_sources) < 2:
                raise ValueError(f"fusion_sources must be at least two distinct tasks, got {list(self.fusion_sources)}")
            for task in self.fusion_sources:
                source_config(task, self.source_settings)
        if self.top_k_layers is not None and not method.uses_top_k:
            raise ValueError(f"top_k_layers={self.top_k_layers} applies only to method 'top_k', not {self.method!r}")
        if method.uses_top_k:
            layers = num_layers(self.backbone)
            if self.top_k_layers is None or self.top_k_layers > layers:
                raise ValueError(f"method 'top_k' needs top_k_layers between 1 and {layers} (the layers of {self.backbone}), got {self.top_k_layers}")
        return self

    @property
    def task_name(self) -> str:
        from adaptstudy.data import resolve_task

        return resolve_task(self.task).name

    def resolved(self) -> FinetuneConfig:
        """Defaults that depend on the method filled in, so the record says what actually ran."""
        from adaptstudy.methods import METHODS

        method = METHODS.get(self.method)
        updates: dict[str, Any] = {}
        if self.learning_rate is None:
            updates["learning_rate"] = method.default_learning_rate
        if method.uses_adapter_size and self.adapter_use == "continue":
            from adaptstudy.artifacts import reference_meta

            updates["adapter_size"] = reference_meta(self.init_from)["adapter_size"]  # the pretrained adapter's
        elif method.uses_adapter_size and self.adapter_size is None:
            updates["adapter_size"] = method.default_adapter_size
        return self.model_copy(update=updates)

    def identity(self) -> dict[str, Any]:
        """What makes a run this run: everything but where data and results live."""
        identity = self.resolved().model_dump(exclude={"data_dir", "results_dir", "checkpoint_every_s"})
        for name, neutral in NEUTRAL_SINCE_FIRST_RECORDS.items():
            if identity[name] == neutral:
                del identity[name]
        if self.init_from is not None:
            from adaptstudy.artifacts import reference_meta

            identity["init_from"] = reference_meta(self.init_from)["run_id"]  # the pretraining run, wherever its files are
        return identity

    def train_examples_cap(self) -> int | None:
        """How many training examples to keep: `train_fraction` of `max_train_examples` (or of the whole set)."""
        if self.train_fraction == 1.0:
            return self.max_train_examples
        total = self.max_train_examples or len(self.load_splits(cap=False)["train"])
        return max(1, round(self.train_fraction * total))

    def load_splits(self, cap: bool = True):
        """The task's splits as this run uses them: re-split, then capped and subsampled."""
        from adaptstudy.data import load_task

        return load_task(self.task, self.data_dir, self.train_examples_cap() if cap else None, self.data_seed,
                         resplit_train_share=self.resplit_train_share, max_eval_examples=self.max_eval_examples)  # fmt: skip

    @property
    def run_id(self) -> str:
        return run_id(self.identity())


def num_layers(backbone: str) -> int:
    from transformers import AutoConfig

    from adaptstudy.backbones import BACKBONES, resolve_backbone

    if backbone in BACKBONES and BACKBONES.get(backbone).layers is not None:
        return BACKBONES.get(backbone).layers
    return AutoConfig.from_pretrained(resolve_backbone(backbone)).num_hidden_layers


def run_id(identity: Mapping[str, Any]) -> str:
    """A stable hash of a configuration: the same settings give the same id on any machine."""
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class DataPrepParams(BaseModel):
    """Parameters of `01_data_prep`: which task to describe, tokenized by which backbone."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str | dict[str, Any] = "rte"
    backbone: str = "minilm-l6"
    max_seq_length: int = Field(128, ge=8, le=4096)
    data_dir: str | None = None

    @model_validator(mode="after")
    def _known_names(self) -> DataPrepParams:
        from adaptstudy.backbones import check_backbone
        from adaptstudy.data import resolve_task

        resolve_task(self.task)
        check_backbone(self.backbone)
        return self


class AnalysisParams(BaseModel):
    """Parameters of the analysis notebooks: where the committed records are."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    results_dir: str | None = Field(None, description="None: results/ in the project")


class BenchmarkParams(BaseModel):
    """Parameters of the efficiency analysis: which benchmark JSON to show."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    benchmark_json: str | None = Field(None, description="None: benchmarks/results/throughput.json")

    @property
    def path(self) -> str:
        from adaptstudy.data import PROJECT_ROOT

        return self.benchmark_json or str(PROJECT_ROOT / "benchmarks" / "results" / "throughput.json")


class SweepParams(BaseModel):
    """Parameters of `05_sweep`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sweep: str
    results_dir: str | None = Field(None, description="None: results/<study> in the project")
    data_dir: str | None = None
    dry_run: bool = False
