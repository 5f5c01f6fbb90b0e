"""What every run's settings share: validation with one readable error, an identity, and a stable run id.

Parameters come from notebooks (papermill), YAML profiles and sweep grids; all of them pass through
a pydantic model, so an unknown name, a wrong type or an impossible combination is one clear
error before any data is read or any weight is trained.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adaptstudy.common.registry import did_you_mean

# A run's `precision`: "auto" picks per machine (`adaptstudy.training.device`): bf16 where native (Ampere+ GPUs,
# CPUs with AVX512-BF16/AMX), fp16 with loss scaling on older CUDA GPUs (T4), else fp32. fp16 needs CUDA.
Precision = Literal["auto", "fp32", "bf16", "fp16"]


class ConfigError(ValueError):
    """Bad parameters: says which value is wrong and what would be valid."""


def validate(model: type[BaseModel], values: Mapping[str, Any], what: str = "parameter") -> BaseModel:
    """`model(**values)` with pydantic's errors turned into one readable message."""
    unknown = sorted(set(values) - set(model.model_fields) - set(getattr(model, "RENAMED", ())))
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


def run_id(identity: Mapping[str, Any]) -> str:
    """A stable hash of a configuration: the same settings give the same id on any machine."""
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class RunConfig(BaseModel):
    """The settings of one run (fine-tuning, pretraining, multi-task training): frozen, strict, identified.

    A run's identity is its resolved settings without where data, results and checkpoints live (`LOCATIONS`).
    Settings added after records were first committed (`OUT_OF_RUN_ID`) enter it only when not at their neutral
    value, so that every earlier run keeps its id.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    LOCATIONS: ClassVar[frozenset[str]] = frozenset({"data_dir", "results_dir", "checkpoint_every_s"})
    OUT_OF_RUN_ID: ClassVar[dict[str, Any]] = {}  # setting -> the value at which it stays out of the run id
    RENAMED: ClassVar[frozenset[str]] = frozenset()  # old names still read (a `mode="before"` validator maps them)
    STUDY: ClassVar[str] = "finetune"  # results/<STUDY> when results_dir is not given
    NAMES_REGISTERED: ClassVar[bool] = True  # names tasks, backbones, ...: `training.config_checks` checks them

    def resolved(self) -> RunConfig:
        """Defaults that depend on other settings filled in, so the record says what actually ran."""
        return self

    def identity(self) -> dict[str, Any]:
        """What makes a run this run: everything but where data and results live."""
        identity = self.resolved().model_dump(exclude=set(self.LOCATIONS))
        for name, neutral in self.OUT_OF_RUN_ID.items():
            if identity[name] == neutral:
                del identity[name]
        return self.refine_identity(identity)

    def refine_identity(self, identity: dict[str, Any]) -> dict[str, Any]:
        """Subclasses name the runs they start from by run id, not by where their files are."""
        return identity

    @property
    def run_id(self) -> str:
        return run_id(self.identity())


class TrainingRun(RunConfig):
    """The training settings every kind of run has (fine-tuning, multi-task, pretraining), declared once: the one
    training core builds its optimizer, schedule and checkpoints from them (`training.core.Session.arguments`). A
    kind of run whose recipe differs declares its own default (pretraining: Don't Stop Pretraining's)."""

    backbone: str = "minilm-l6"
    seed: int = 0
    learning_rate: float | None = Field(None, gt=0, description="None: the method's default")
    num_train_epochs: float = Field(3.0, gt=0)
    max_seq_length: int = Field(128, ge=8, le=4096)
    batch_size: int = Field(32, ge=1)
    warmup_ratio: float = Field(0.1, ge=0, lt=1)
    weight_decay: float = Field(0.0, ge=0)
    adam_beta2: float = Field(0.999, gt=0, lt=1, description="Don't Stop Pretraining's recipe uses 0.98")
    adam_epsilon: float = Field(1e-8, gt=0, description="Don't Stop Pretraining's recipe uses 1e-6")
    precision: Precision = "auto"
    data_dir: str | None = None
    results_dir: str | None = Field(None, description="None: results/<study> in the project")
    checkpoint_every_s: float = Field(300.0, ge=0, description="sweeps: seconds between checkpoints (0: every step)")
