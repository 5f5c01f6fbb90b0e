"""The settings of a masked-LM pretraining run (DAPT, TAPT, or the warm-up of a new MLM head), as data (its corpus
and backbone names are checked before any work, in `training.config_checks`), and how other runs name its artifact:
by its folder, or by the settings of the run that makes it (a mapping, found in the cache by run id, so one grid can
name every pretraining it starts from)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, model_validator

from adaptstudy.common.paths import cache_root
from adaptstudy.runs.artifacts import FULL_MODES, artifact_meta, is_artifact
from adaptstudy.runs.base import ConfigError, TrainingRun
from adaptstudy.runs.method_catalog import adapter_modes, continuing, method_facts

Reference = str | os.PathLike | dict


class PretrainConfig(TrainingRun):
    """One masked-LM pretraining run on a corpus, from a backbone or from an earlier run's artifact."""

    LOCATIONS: ClassVar[frozenset[str]] = TrainingRun.LOCATIONS | {"output_dir"}
    OUT_OF_RUN_ID: ClassVar[dict[str, Any]] = {"adam_beta2": 0.98, "adam_epsilon": 1e-6}
    STUDY: ClassVar[str] = "pretrain"

    corpus: str = Field(description="a registered corpus, or task:<name> (TAPT: the task's training texts)")
    mode: str = Field(
        "full",
        description="full (every weight), head (the MLM head alone), or an adapter mode: one a method continues "
        "(seq_bn: pfeiffer's adapter; unipelt)",
    )
    init_from: str | dict[str, Any] | None = Field(
        None,
        description="an artifact of an earlier run (e.g. the warmed head, or DAPT for DAPT+TAPT; for an adapter mode, "
        "also that mode's adapter, whose MLM training continues): its folder, or that run's settings (a mapping), "
        "which name its artifact in the cache",
    )
    exclude_eval_of: tuple[str, ...] = Field((), description="tasks whose evaluation texts are left out of the corpus")
    adapter_size: int | None = Field(
        None, ge=1, description="an adapter mode whose method takes a width (seq_bn): None, reduction factor 16"
    )
    mlm_probability: float = Field(0.15, gt=0, lt=1)
    max_steps: int | None = Field(None, gt=0, description="None: num_train_epochs over the corpus")
    num_train_epochs: float = Field(1.0, gt=0)
    corpus_fraction: float = Field(1.0, gt=0, le=1, description="share of the corpus's documents (seeded, nested)")
    held_out_fraction: float = Field(0.05, ge=0, lt=0.5, description="documents kept out for the held-out MLM loss")
    max_seq_length: int = Field(128, ge=16, le=512)
    learning_rate: float = Field(1e-4, gt=0)
    warmup_ratio: float = Field(0.06, ge=0, lt=1)
    weight_decay: float = Field(0.01, ge=0)
    adam_beta2: float = Field(0.98, gt=0, lt=1, description="Don't Stop Pretraining's recipe (RoBERTa's)")
    adam_epsilon: float = Field(1e-6, gt=0, description="Don't Stop Pretraining's recipe (RoBERTa's)")
    output_dir: str | None = Field(None, description="where the artifact goes (None: the cache, by run id)")

    @model_validator(mode="after")
    def _known_names(self) -> PretrainConfig:
        modes = (*FULL_MODES, *adapter_modes())
        if self.mode not in modes:
            raise ValueError(f"mode {self.mode!r} is not a pretraining mode; valid: {', '.join(modes)}")
        if self.adapter_size is not None and not self.sized:
            sized = [m for m in adapter_modes() if method_facts(continuing(m)).uses_adapter_size]
            raise ValueError(
                f"adapter_size={self.adapter_size} applies only to mode {' or '.join(map(repr, sized))}, "
                f"not {self.mode!r}"
            )
        if self.init_from is not None:
            check_start(self.init_from, self)
        return self

    # What the record's identity fields read.
    @property
    def task_name(self) -> str:
        return f"mlm:{self.corpus}"

    @property
    def method(self) -> str:
        return self.mode

    def refine_identity(self, identity: dict[str, Any]) -> dict[str, Any]:
        if self.init_from:
            identity["init_from"] = reference_meta(self.init_from)[
                "run_id"
            ]  # the run, not where its files happen to be
        return identity

    def artifact_dir(self) -> Path:
        return Path(self.output_dir) if self.output_dir else cache_root() / "pretrained" / self.run_id

    @property
    def sized(self) -> bool:
        """Whether the mode trains an adapter of a width (the continuing method takes `adapter_size`: seq_bn)."""
        return self.mode in adapter_modes() and method_facts(continuing(self.mode)).uses_adapter_size

    @property
    def continues_adapter(self) -> bool:
        """Whether the run trains on an earlier run's adapter (an adapter's DAPT+TAPT) rather than a new one."""
        return self.init_from is not None and reference_meta(self.init_from)["mode"] not in FULL_MODES

    def adapter_width(self, hidden_size: int) -> int:
        """A sized mode's bottleneck width: its own, the continued adapter's, else reduction factor 16."""
        if self.adapter_size:
            return self.adapter_size
        if self.continues_adapter:
            return reference_meta(self.init_from)["adapter_size"]
        return round(hidden_size / 16)


def root_backbone(config) -> str:
    """The registered backbone a chain of pretraining runs started from."""
    return reference_meta(config.init_from)["backbone"] if config.init_from else config.backbone


def reference_meta(ref: Reference) -> dict[str, Any]:
    """What an `init_from` names: its run id, mode, root backbone (and adapter size), from the artifact's
    marker (a folder) or from the settings of the run that makes it (a mapping; no file needed)."""
    if isinstance(ref, dict):
        config = PretrainConfig.model_validate(ref)
        meta = {"run_id": config.run_id, "mode": config.mode, "backbone": root_backbone(config)}
        if config.sized:
            meta["adapter_size"] = config.adapter_width(hidden_size(config.backbone))
        return meta
    return artifact_meta(ref)


def artifact_folder(ref: Reference) -> Path:
    """The folder of the artifact `ref` names; one clear error if that pretraining has not run (here) yet."""
    if not isinstance(ref, dict):
        return Path(ref)
    config = PretrainConfig.model_validate(ref)
    folder = config.artifact_dir()
    if not is_artifact(folder):
        raise FileNotFoundError(
            f"no artifact of pretraining run {config.run_id} ({config.corpus}, {config.mode}) at {folder}: "
            "run its pretraining grid (or 02_dapt / 03_tapt with these settings) first"
        )
    return folder


# How a backbone's hidden size is read (its model config: the backbone registry's work, which it registers here as
# it loads): a sized adapter mode without a width of its own is 1/16 of it, and a run continuing that adapter takes
# the width into its run id.
HIDDEN_SIZE: dict[str, Callable[[str], int]] = {}


def hidden_size(backbone: str) -> int:
    if "of" not in HIDDEN_SIZE:
        raise ConfigError("no backbone registry is loaded: import adaptstudy.models.backbones before resolving widths")
    return HIDDEN_SIZE["of"](backbone)


def check_start(folder: Reference, config: PretrainConfig) -> None:
    """What a pretraining run may continue: a full model made from its backbone (any mode), or an adapter of its own
    adapter mode and width (the adapter's MLM trained further, e.g. TAPT after an adapter's DAPT)."""
    meta = reference_meta(folder)
    if meta["backbone"] != config.backbone:
        raise ValueError(
            f"init_from={str(folder)!r} was pretrained from {meta['backbone']!r}, not from backbone {config.backbone!r}"
        )
    if meta["mode"] in FULL_MODES:
        return
    if meta["mode"] != config.mode:
        raise ValueError(
            f"init_from={str(folder)!r} holds a {meta['mode']} adapter: only mode {meta['mode']!r} continues it, "
            f"not {config.mode!r}"
        )
    if config.adapter_size not in (None, meta.get("adapter_size")):
        raise ValueError(
            f"adapter_size={config.adapter_size}: the adapter in {str(folder)!r} has size {meta.get('adapter_size')}"
        )
