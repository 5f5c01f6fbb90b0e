"""The settings a method owns, checked for every run config that names a method (fine-tuning, multi-task)."""

from __future__ import annotations

from pydantic import BaseModel

from adaptstudy.models.methods import METHODS, taking


def refuse_foreign_settings(config: BaseModel, method: str) -> None:
    """A setting that some methods own (`Method.settings`), given to a run of another method at other than its
    default, is refused, naming the methods that take it: the methods say what they take, no list here does."""
    fields = type(config).model_fields
    own = METHODS.get(method).takes
    for setting in sorted({s for name in METHODS for s in METHODS.get(name).takes} & set(fields)):
        value = getattr(config, setting)
        if value != fields[setting].default and setting not in own:
            raise ValueError(
                f"{setting}={value!r} does not apply to method {method!r}; methods that take it: "
                f"{', '.join(taking(setting))}"
            )
