"""What notebooks call to turn their parameters cell into a validated config.

Papermill only warns about a parameter the notebook does not declare, and injects values of any
type. So a notebook's parameters cell ends with `_declared = set(globals())`; papermill injects its
cell right after, and the first call of `parameters()` sees every name that appeared since: each must
be a setting of the notebook's model (declared in the cell or not, so every setting a run accepts can be
given to its notebook). Then all values are validated against the model, and every name they hold against the
registries (`training.config_checks`): an unknown name or a wrong type fails before any data is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from pydantic import BaseModel

from adaptstudy.common.registry import did_you_mean
from adaptstudy.runs.base import ConfigError, validate

CHECKED = "_parameters_checked"  # set in the notebook's namespace once its injected names were checked


def parameters(
    namespace: MutableMapping[str, Any],
    declared: Iterable[str],
    model: type[BaseModel],
    derived: Mapping[str, Any] | None = None,
) -> BaseModel:
    """Validate a notebook's parameters: `namespace` is the notebook's `globals()`, `declared` the snapshot at the
    end of its parameters cell, `derived` the settings the notebook computes from its parameters (03_tapt's
    corpus from its task), which a parameter may not set: it would be overwritten without a word.

    Names are checked once, on the first call: later calls (the cell re-run in Jupyter, after other cells
    assigned names of their own) validate the current values again, and nothing else.
    """
    fields, derived = list(model.model_fields), dict(derived or {})
    if not namespace.get(CHECKED):
        declared = set(declared)
        injected = [k for k in namespace if k not in declared and not k.startswith("_")]
        unknown = sorted(k for k in injected if k not in fields)
        if unknown:
            hints = "; ".join(f"unknown notebook parameter {k!r}{did_you_mean(k, fields)}" for k in unknown)
            raise ConfigError(f"{hints}. Valid: {', '.join(fields)}")
        overridden = sorted(k for k in injected if k in derived)
        if overridden:
            raise ConfigError(
                f"notebook parameter {', '.join(map(repr, overridden))}: this notebook sets it from its other "
                f"parameters (to {', '.join(repr(derived[k]) for k in overridden)}); leave it out"
            )
    values = {k: namespace[k] for k in fields if k in namespace} | derived
    config = validate(model, values, what="notebook parameter")
    if getattr(model, "NAMES_REGISTERED", False):  # a run's or a data description's: its names checked before work
        from adaptstudy.training.config_checks import check_config  # the analyses' pages load no training stack

        check_config(config)
    namespace[CHECKED] = True
    return config
