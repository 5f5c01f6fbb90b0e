"""Methods the `adapters` package implements with its default configs (LoRA, IA3, prefix and prompt tuning,
Compacter, UniPELT): what the method adds trains, with the head; nothing else does."""

from __future__ import annotations

from collections.abc import Callable

import adapters
from adapters.interface import AdapterMethod
from torch import nn

from adaptstudy.models.adapter_interfaces import init_adapters
from adaptstudy.models.methods.base import ADAPTER_NAME, Method, is_added, is_head


def _library_method(config_class: str, **options) -> Callable[[nn.Module, object], nn.Module]:
    """`prepare` for a method the `adapters` package implements (its config class by name, imported
    late like the package itself): add it under one name and activate it."""

    def prepare(model: nn.Module, config) -> nn.Module:
        init_adapters(model)
        model.add_adapter(ADAPTER_NAME, config=getattr(adapters, config_class)(**options))
        model.train_adapter(ADAPTER_NAME)
        return model

    return prepare


def from_library(name: str, config_class: str, **options) -> Method:
    """A method the `adapters` package implements, its facts declared in `runs.method_catalog`: what it adds (under
    the module names its facts name) trains, with the head; nothing else does."""
    return Method(
        name,
        trainable=lambda n, *_: is_added(n) or is_head(n),
        prepare=_library_method(config_class, **options),
        pretraining_adapter=(lambda hidden, width: getattr(adapters, config_class)(**options)),
    )


def attached(config_class: str, **options) -> frozenset[str]:
    """The kinds of `adapters` method a library config attaches, as the package reads it (the catalog's
    `attaches` must say the same: tested)."""
    return frozenset(AdapterMethod.get_from_config(getattr(adapters, config_class)(**options)))
