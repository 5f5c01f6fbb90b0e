"""What a method family takes beyond the training recipe, declared once beside the method: a pydantic model per
family (types, bounds, defaults, descriptions). The run configs inherit these fields (`registry.settings_for`), so
users still write them flat (`-p adapter_size 64`) and every run id stays as it was."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel


class MethodSettings(BaseModel):
    """A family's settings; `RUNS`: the kinds of run that offer them (fine-tuning, multi-task)."""

    RUNS: ClassVar[frozenset[str]] = frozenset({"finetune", "multitask"})
