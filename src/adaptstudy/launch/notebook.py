"""What notebooks call to turn their parameters cell into a validated config.

Papermill only warns about a parameter the notebook does not declare, and injects values of any
type. So a notebook's parameters cell ends with `_declared = set(globals())`; papermill injects its
cell right after, and `parameters()` then sees every name that appeared since (an undeclared
parameter) and validates all declared values against a pydantic model: an unknown name or a wrong
type fails before any data is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from adaptstudy.common.registry import did_you_mean
from adaptstudy.runs.base import ConfigError, validate


def parameters(
    namespace: Mapping[str, Any],
    declared: Iterable[str],
    model: type[BaseModel],
    outputs: Iterable[str] = (),
) -> BaseModel:
    """Validate a notebook's parameters.

    `declared` is the namespace snapshot at the end of the parameters cell; `outputs` are names the
    notebook itself assigns after it (so rerunning a cell does not look like a new parameter).
    """
    declared, outputs = set(declared), set(outputs)
    unknown = sorted(k for k in namespace if k not in declared | outputs and not k.startswith("_"))
    if unknown:
        fields = list(model.model_fields)
        hints = "; ".join(f"unknown notebook parameter {k!r}{did_you_mean(k, fields)}" for k in unknown)
        raise ConfigError(f"{hints}. Valid: {', '.join(fields)}")
    values = {k: namespace[k] for k in model.model_fields if k in namespace}
    return validate(model, values, what="notebook parameter")
