"""Methods: how each prepares a backbone and which of its weights train (`METHODS`), one module per family."""

from adaptstudy.models.methods.base import ADAPTER_NAME, PRETRAINED_ADAPTER, Method, count_parameters, is_head
from adaptstudy.models.methods.bottleneck import adapters_removed
from adaptstudy.models.methods.registry import (
    METHODS,
    adapter_modes,
    check_runs_on,
    continuing,
    methods_that,
    neutral_settings,
    settings_for,
    taking,
)
from adaptstudy.models.methods.settings import MethodSettings

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
