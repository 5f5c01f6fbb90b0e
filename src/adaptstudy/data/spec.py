"""What a labelled task is (`TaskSpec`), the registry of tasks, and the errors of the data layer.

Every task is a `TaskSpec`: where its files are in the mirror, its Hub id for users with network,
its text fields, its labels (or regression), its metrics and its splits. Custom tasks are a
`TaskSpec` written as a mapping in a params file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from adaptstudy.common.registry import Registry
from adaptstudy.data.builders import BUILDERS
from adaptstudy.data.errors import DataNotFoundError, MalformedDataError
from adaptstudy.data.metrics import check_metric_names

__all__ = ["TASKS", "DataNotFoundError", "MalformedDataError", "TaskSpec", "register_task"]


class TaskSpec(BaseModel):
    """Everything the project needs to know about one labelled task."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    format: Literal["tsv", "csv", "jsonl", "built"] = Field(
        description="built: only the task's builder reads the files"
    )
    files: dict[str, str] = Field(description="split -> path relative to the data directory")
    files_outside_data_dir: bool = Field(
        False, description="let `files` be absolute or leave the data directory ('..'): said explicitly, never assumed"
    )
    selection_file: str | None = Field(
        None,
        description="a labelled split made for model selection (FewGLUE's dev32), relative to the data directory: "
        "the selection split of runs that carve one, where the training data is too small to spare it",
    )
    text_fields: list[str] = Field(min_length=1, max_length=2)
    label_field: str
    labels: list[str] | None = Field(None, description="raw label values in class-id order; None: regression")
    label_names: list[str] | None = None
    metrics: list[str]
    main_metric: str
    header: bool = True
    columns: list[str] | None = Field(None, description="column names of a file without header")
    quoting: bool = Field(False, description="honour quotes in tsv/csv (GLUE TSVs must be read without)")
    hub_id: str | None = None
    hub_config: str | None = None
    hub_splits: dict[str, str] = {}
    hub_text_fields: list[str] | None = None
    hub_label_field: str = "label"
    builder: str | None = Field(None, description="a function of data.builders.BUILDERS that makes the splits")
    description: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        check_metric_names(self.metrics)
        if self.builder is not None and self.builder not in BUILDERS:
            raise ValueError(f"task {self.name!r}: unknown builder {self.builder!r}; valid: {', '.join(BUILDERS)}")
        if self.format == "built" and self.builder is None:
            raise ValueError(f"task {self.name!r}: format 'built' needs a builder")
        if self.main_metric not in self.metrics:
            raise ValueError(f"main_metric {self.main_metric!r} is not among metrics {self.metrics}")
        if self.format != "jsonl" and not self.header and not self.columns:
            raise ValueError(f"task {self.name!r}: a {self.format} file without header needs `columns`")
        if "train" not in self.files or len(self.files) < 2:
            raise ValueError(
                f"task {self.name!r}: `files` needs a 'train' split and an evaluation split (dev), "
                f"got {sorted(self.files)}"
            )
        for split, path in {**self.files, "selection_file": self.selection_file or ""}.items():
            parts = PurePosixPath(path)
            if not self.files_outside_data_dir and (parts.is_absolute() or ".." in parts.parts):
                raise ValueError(
                    f"task {self.name!r}: {split} file {path!r} is outside the data directory (files are relative to "
                    "it, without '..'); set files_outside_data_dir: true to read it from there"
                )
        if self.label_names is not None and self.labels is not None and len(self.label_names) != len(self.labels):
            raise ValueError(f"task {self.name!r}: label_names and labels differ in length")
        return self

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def num_labels(self) -> int:
        return 1 if self.labels is None else len(self.labels)

    @property
    def eval_split(self) -> str:
        """`dev` where there is one (GLUE's test labels are not public), else the first other split."""
        return "dev" if "dev" in self.files else next(s for s in self.files if s != "train")


TASKS: Registry[TaskSpec] = Registry("task")


def register_task(spec: TaskSpec | Mapping) -> TaskSpec:
    spec = spec if isinstance(spec, TaskSpec) else TaskSpec.model_validate(spec)
    TASKS.add(spec.name, spec)
    return spec


def resolve_task(task: str | TaskSpec | Mapping) -> TaskSpec:
    """A registered name, a `TaskSpec`, or a mapping declaring a custom task."""
    if isinstance(task, TaskSpec):
        return task
    if isinstance(task, Mapping):
        return TaskSpec.model_validate(task)
    return TASKS.get(task)
