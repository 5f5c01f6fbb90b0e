"""Sweep files: a YAML grid of runs, validated and expanded into one configuration per cell.

The format (see `adaptstudy.launch.sweep`) lives here, below the layers that train and report, because both read
it: the sweep to run the cells, a chapter's stage-2 planner to check that stage 1 has finished.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from adaptstudy.common import strict_yaml
from adaptstudy.runs.base import ConfigError, RunConfig, validate
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.multitask_config import MultiTaskConfig
from adaptstudy.runs.pretrain_config import PretrainConfig
from adaptstudy.runs.records import resolve_results_dir

CONFIGS = {"finetune": FinetuneConfig, "pretrain": PretrainConfig, "multitask": MultiTaskConfig}
Axes = dict[str, list[Any] | dict[str, dict[str, list[Any]]]]


class Grid(BaseModel):
    """A sweep file, validated."""

    model_config = ConfigDict(extra="forbid")

    study: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="the folder under results/ its records go to")
    kind: Literal["finetune", "pretrain", "multitask"] = Field(
        "finetune", description="what each cell runs: fine-tuning, MLM pretraining, or multi-task training"
    )
    description: str = ""
    definitions: dict[str, Any] = Field(
        {},
        description="named settings to refer to with YAML anchors (e.g. the pretraining "
        "runs that cells start from); not cells themselves",
    )
    fixed: dict[str, Any] = {}
    axes: Axes | list[Axes] = Field(min_length=1)

    @field_validator("study")
    @classmethod
    def _inside_results(cls, study: str) -> str:
        if set(study) == {"."}:
            raise ValueError(f"study {study!r} would write outside results/: a study is a folder name, not . or ..")
        return study

    @field_validator("axes")
    @classmethod
    def _non_empty(cls, axes):
        for block in axes if isinstance(axes, list) else [axes]:
            _check_block(block)
        return axes

    def blocks(self) -> list[Axes]:
        return self.axes if isinstance(self.axes, list) else [self.axes]


def _check_block(axes: Axes) -> None:
    if not axes:
        raise ValueError("a block of axes is empty: it would have no cells")
    for name, values in axes.items():
        if not values:
            raise ValueError(f"axis {name!r} is empty: the grid would have no cells")
        if isinstance(values, dict):
            if name != "method":
                raise ValueError(f"only the `method` axis may map names to their own axes, not {name!r}")
            for method, sub in values.items():
                for sub_name, sub_values in (sub or {}).items():
                    if not isinstance(sub_values, list) or not sub_values:
                        raise ValueError(f"axis method.{method}.{sub_name} must be a non-empty list")


def load_grid(path: str | Path) -> Grid:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"sweep file {path} does not exist")
    try:
        with open(path) as f:
            raw = strict_yaml.load(f.read())  # params are data, never code; a key written twice is an error
    except yaml.YAMLError as e:
        raise ConfigError(f"sweep file {path} is not valid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"sweep file {path}: expected a mapping with study, fixed and axes")
    return validate(Grid, raw, what=f"sweep key ({path.name})")


def expand(grid: Grid) -> list[dict[str, Any]]:
    """Every combination of each block's axes, merged over the fixed settings, in file order."""
    return [cell for block in grid.blocks() for cell in _expand_block(block, grid.fixed)]


def _expand_block(axes: Axes, fixed: dict[str, Any]) -> list[dict[str, Any]]:
    plain = {k: v for k, v in axes.items() if not isinstance(v, dict)}
    per_method = axes.get("method") if isinstance(axes.get("method"), dict) else None
    method_options: list[dict[str, Any]] = [{}]
    if per_method is not None:
        method_options = []
        for method, sub in per_method.items():
            sub = sub or {}
            for values in itertools.product(*sub.values()):
                method_options.append({"method": method, **dict(zip(sub, values))})
    cells = []
    for values in itertools.product(*plain.values()):
        for option in method_options:
            cells.append({**fixed, **dict(zip(plain, values)), **option})
    return cells


def grid_configs(
    sweep: str | Path, results_dir: str | Path | None = None, data_dir: str | None = None
) -> tuple[Grid, Path, list[RunConfig]]:
    """A sweep file's grid, its results folder (`results_dir`, or the study's) and every cell's validated settings
    in file order; every invalid or repeated cell is named in one error before anything runs."""
    grid = load_grid(sweep)
    folder = Path(results_dir) if results_dir else resolve_results_dir(None, grid.study)
    configs, problems = [], []
    for i, values in enumerate(expand(grid), start=1):
        values = {**values, "results_dir": str(folder), **({"data_dir": data_dir} if data_dir else {})}
        try:
            configs.append(validate(CONFIGS[grid.kind], values, what="setting"))
        except ConfigError as e:
            problems.append(f"cell {i} ({describe_values(values)}): {e}")
    if problems:
        raise ConfigError(f"sweep {sweep}: " + " | ".join(problems))
    seen: dict[str, int] = {}
    for i, config in enumerate(configs, start=1):
        if config.run_id in seen:
            raise ConfigError(f"sweep {sweep}: cells {seen[config.run_id]} and {i} are the same run ({config.run_id})")
        seen[config.run_id] = i
    return grid, folder, configs


DESCRIBED = (
    "task",
    "method",
    "tasks",
    "corpus",
    "mode",
    "backbone",
    "adapter_size",
    "top_k_layers",
    "adapter_init_std",
    "adapter_variant",
    "learning_rate",
    "seed",
    "train_fraction",
    "corpus_fraction",
    "max_steps",
    "max_train_examples",
)


def describe_values(values: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={values[k]}" for k in DESCRIBED if values.get(k) is not None)
