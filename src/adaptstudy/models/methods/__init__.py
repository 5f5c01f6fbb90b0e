"""Methods: how each prepares a backbone and which of its weights train (`METHODS`), one module per family; the
settings they take and the facts a run config reads of them are data below, in `runs.method_settings`."""

from adaptstudy.models.methods.base import ADAPTER_NAME, PRETRAINED_ADAPTER, Method, count_parameters, is_head
from adaptstudy.models.methods.bottleneck import adapters_removed
from adaptstudy.models.methods.registry import METHODS, check_runs_on
from adaptstudy.runs.method_settings import (
    MethodSettings,
    adapter_modes,
    continuing,
    methods_that,
    neutral_settings,
    settings_for,
    taking,
)

__all__ = [
    "ADAPTER_NAME",
    "METHODS",
    "PRETRAINED_ADAPTER",
    "Method",
    "MethodSettings",
    "adapter_modes",
    "adapters_removed",
    "check_runs_on",
    "continuing",
    "count_parameters",
    "is_head",
    "methods_that",
    "neutral_settings",
    "settings_for",
    "taking",
]
