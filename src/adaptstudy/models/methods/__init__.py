"""Methods: how each prepares a backbone and which of its weights train (`METHODS`), one module per family,
attached by name to its facts, which are data below (`runs.method_catalog`: what it adds, its defaults, the settings
it takes, its capabilities)."""

from adaptstudy.models.methods.base import ADAPTER_NAME, PRETRAINED_ADAPTER, Method, count_parameters, is_head
from adaptstudy.models.methods.bottleneck import adapters_removed
from adaptstudy.models.methods.registry import METHODS, check_runs_on
from adaptstudy.runs.method_catalog import adapter_modes, continuing, methods_that, taking
from adaptstudy.runs.method_settings import MethodSettings, neutral_settings, settings_for

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
