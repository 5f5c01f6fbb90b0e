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

from pydantic import BaseModel, ConfigDict, ValidationError

from adaptstudy.common.registry import did_you_mean

# A run's `precision`: "auto" picks per machine (`adaptstudy.training.device`): bf16 where native (Ampere+ GPUs,
# CPUs with AVX512-BF16/AMX), fp16 with loss scaling on older CUDA GPUs (T4), else fp32. fp16 needs CUDA.
Precision = Literal["auto", "fp32", "bf16", "fp16"]


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


def run_id(identity: Mapping[str, Any]) -> str:
    """A stable hash of a configuration: the same settings give the same id on any machine."""
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class RunConfig(BaseModel):
    """The settings of one run (fine-tuning, pretraining, multi-task training): frozen, strict, identified.

    A run's identity is its resolved settings without where data, results and checkpoints live (`LOCATIONS`).
    Settings added after records were first committed (`NEUTRAL`) enter it only when not at their neutral
    value, so that every earlier run keeps its id.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    LOCATIONS: ClassVar[frozenset[str]] = frozenset({"data_dir", "results_dir", "checkpoint_every_s"})
    NEUTRAL: ClassVar[dict[str, Any]] = {}
    STUDY: ClassVar[str] = "finetune"  # results/<STUDY> when results_dir is not given

    def resolved(self) -> RunConfig:
        """Defaults that depend on other settings filled in, so the record says what actually ran."""
        return self

    def identity(self) -> dict[str, Any]:
        """What makes a run this run: everything but where data and results live."""
        identity = self.resolved().model_dump(exclude=set(self.LOCATIONS))
        for name, neutral in self.NEUTRAL.items():
            if identity[name] == neutral:
                del identity[name]
        return self.refine_identity(identity)

    def refine_identity(self, identity: dict[str, Any]) -> dict[str, Any]:
        """Subclasses name the runs they start from by run id, not by where their files are."""
        return identity

    @property
    def run_id(self) -> str:
        return run_id(self.identity())
