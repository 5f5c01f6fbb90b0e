"""What a method family takes beyond the training recipe, declared once beside the method: a pydantic model per
family (types, bounds, defaults, descriptions). The run configs inherit these fields (`registry.settings_for`), so
users still write them flat (`-p adapter_size 64`) and every run id stays as it was."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel


class MethodSettings(BaseModel):
    """A family's settings; `RUNS`: the kinds of run that offer them (fine-tuning, multi-task). A setting enters a
    run's id only where it is not at its default, so a setting added to a family leaves every earlier run's id as it
    was; `IN_EVERY_RUN_ID` names those that were in run ids from the start, at any value."""

    RUNS: ClassVar[frozenset[str]] = frozenset({"finetune", "multitask"})
    IN_EVERY_RUN_ID: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def neutral(cls) -> dict[str, object]:
        """The settings kept out of a run's id at these values: every field's default, but `IN_EVERY_RUN_ID`."""
        return {name: f.default for name, f in cls.model_fields.items() if name not in cls.IN_EVERY_RUN_ID}
