"""The parameters of the notebooks that are not runs, as data: describing a task (its names are checked before any
work, in `training.config_checks`), the analyses, the sweep notebook."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from adaptstudy.common.paths import PROJECT_ROOT


class DataPrepParams(BaseModel):
    """Parameters of `01_data_prep`: which task to describe, tokenized by which backbone."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    NAMES_REGISTERED: ClassVar[bool] = True  # a task and a backbone: `training.config_checks` checks them

    task: str | dict[str, Any] = "rte"
    backbone: str = "minilm-l6"
    max_seq_length: int = Field(128, ge=8, le=4096)
    data_dir: str | None = None


class AnalysisParams(BaseModel):
    """Parameters of the analysis notebooks: where the committed records are."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    results_dir: str | None = Field(None, description="None: results/ in the project")


class BenchmarkParams(BaseModel):
    """Parameters of the efficiency analysis: where the benchmarks' JSON files are."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    benchmark_dir: str | None = Field(None, description="None: benchmarks/results in the project")

    @property
    def directory(self) -> Path:
        return Path(self.benchmark_dir) if self.benchmark_dir else PROJECT_ROOT / "benchmarks" / "results"


class SweepParams(BaseModel):
    """Parameters of `05_sweep`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sweep: str
    results_dir: str | None = Field(None, description="None: results/<study> in the project")
    data_dir: str | None = None
    dry_run: bool = False
    workers: int = Field(1, ge=1, description="cells at once; above 1 on Ray")
    threads: int | None = Field(None, ge=1, description="torch threads per cell")
    ray_address: str | None = Field(None, description="an existing Ray cluster")
