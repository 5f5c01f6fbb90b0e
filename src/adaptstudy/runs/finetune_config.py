"""The settings of one fine-tuning run, as data: a (task, method, backbone, seed) and how it is trained, checked
against the methods' facts (`method_catalog`), and what it starts from (a backbone, a pretraining artifact, or
source adapters for fusion). The names of tasks and backbones, and what a backbone can carry, are checked where
they live, before any work (`training.config_checks`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from adaptstudy.common.paths import cache_root
from adaptstudy.runs.artifacts import FULL_MODES
from adaptstudy.runs.base import RunConfig, TrainingRun, validate
from adaptstudy.runs.method_catalog import continuing, method_facts, methods_that, refuse_foreign_settings
from adaptstudy.runs.method_settings import neutral_settings, settings_for
from adaptstudy.runs.multitask_config import MultiTaskConfig
from adaptstudy.runs.pretrain_config import Reference, reference_meta


class FinetuneConfig(TrainingRun, *settings_for("finetune")):
    """One fine-tuning run: a (task, method, backbone, seed) and how it is trained; the settings only some methods
    take are their families' (`models/methods`: `settings`), inherited."""

    LOCATIONS: ClassVar[frozenset[str]] = RunConfig.LOCATIONS | {"keep_adapter"}

    OUT_OF_RUN_ID: ClassVar[dict[str, Any]] = {  # the run's own settings added later; the methods' are their families'
        "train_fraction": 1.0,
        "resplit_train_share": None,
        "max_eval_examples": None,
        "init_from": None,
        "adapter_use": None,
        "adam_beta2": 0.999,
        "adam_epsilon": 1e-8,
        "max_steps": None,
        "selection_split": False,
        **neutral_settings("finetune"),
    }

    task: str | dict[str, Any] = Field("rte", description="a registered task, or a mapping declaring a custom task")
    method: str = "houlsby"
    seed: int = 42
    max_steps: int | None = Field(
        None,
        ge=1,
        description="train this many optimizer steps instead of num_train_epochs, scored at the end (learning "
        "curves: the same number of updates at every data size)",
    )
    max_train_examples: int | None = Field(None, gt=0, description="None: the whole training set")
    # Settings beyond the notebook's parameters, for profiles and sweeps.
    data_seed: int = 0
    eval_batch_size: int = Field(128, ge=1)
    train_fraction: float = Field(
        1.0, gt=0, le=1, description="share of the (capped) training set; nested across values"
    )
    init_from: str | dict[str, Any] | None = Field(
        None,
        description="a pretraining artifact (02_dapt / 03_tapt output) to start from: its folder, or the settings of "
        "the pretraining run that makes it (a mapping)",
    )
    adapter_use: Literal["continue", "stack"] | None = Field(
        None,
        description="with an adapter artifact: train it on (continue) or freeze it under a new task adapter (stack)",
    )
    resplit_train_share: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="pool the task's labelled splits and re-split them, this share for training (seeded by data_seed)",
    )
    max_eval_examples: int | None = Field(
        None, gt=0, description="None: the whole evaluation split; else a seeded subsample"
    )
    selection_split: bool = Field(
        False,
        description="carve a selection split from the training data (10%, at most 1,000 examples, stratified, the "
        "same for every run of the task; a task with a split made for selection, FewGLUE's dev32, takes that); the "
        "run scores it too, and settings are chosen on it, never on the reported split",
    )
    keep_adapter: bool = Field(
        False,
        description="keep the trained adapter in the cache as a fusion source (so a grid can train its sources as "
        "cells of their own); where the adapter is kept, not what trains: no part of the run's identity",
    )

    @model_validator(mode="after")
    def _known_names(self) -> FinetuneConfig:
        method = method_facts(self.method)
        refuse_foreign_settings(self, self.method)
        if self.init_from is not None:
            check_init_from(self.init_from, self.backbone, self.method, self.adapter_use, self.adapter_size)
        elif self.adapter_use is not None:
            raise ValueError(
                f"adapter_use={self.adapter_use!r} needs init_from (an adapter artifact of 02_dapt / 03_tapt)"
            )
        given = sum(x is not None for x in (self.source_settings, self.fusion_from))
        if "fusion_sources" in method.takes and (self.fusion_sources is None or given != 1):
            raise ValueError(
                f"method {self.method!r} needs fusion_sources and source_settings (or instead fusion_from: a "
                "multi-task run's adapters)"
            )
        if self.fusion_from is not None:
            mt = self.mt_source()
            if (
                not method_facts(mt.method).per_task_adapters
                or mt.backbone != self.backbone
                or self.init_from is not None
            ):
                raise ValueError(
                    f"fusion_from needs a multi-task run of a method that keeps an adapter per task "
                    f"({', '.join(methods_that(lambda m: m.per_task_adapters))}) on backbone {self.backbone!r} and "
                    f"no init_from, got method {mt.method!r} on {mt.backbone!r}"
                )
            missing = sorted(set(self.fusion_sources) - set(mt.tasks))
            if missing:
                raise ValueError(f"fusion_sources {missing} have no adapter in the fusion_from run (tasks {mt.tasks})")
        if self.source_settings is not None:
            alone = tuple(self.fusion_sources) == (self.task,)  # the N = 1 control: capacity without composition
            if len(set(self.fusion_sources)) != len(self.fusion_sources) or (
                len(self.fusion_sources) < 2 and not alone
            ):
                raise ValueError(
                    f"fusion_sources must be at least two distinct tasks, or the target task alone (the N = 1 "
                    f"control), got {list(self.fusion_sources)} for task {self.task!r}"
                )
            for task in self.fusion_sources:
                source_config(task, self.source_settings)
        if self.keep_adapter and not method.fusion_source:
            raise ValueError(
                f"keep_adapter keeps a source adapter: source adapters are bottleneck adapters "
                f"({', '.join(methods_that(lambda m: m.fusion_source))}), not method {self.method!r}"
            )
        if method.uses_top_k and self.top_k_layers is None:
            raise ValueError("method 'top_k' needs top_k_layers (how many of the top layers train)")
        return self

    @property
    def task_name(self) -> str:
        return self.task if isinstance(self.task, str) else self.task["name"]

    def resolved(self) -> FinetuneConfig:
        """Defaults that depend on the method filled in, so the record says what actually ran."""
        method = method_facts(self.method)
        updates: dict[str, Any] = {}
        if self.learning_rate is None:
            updates["learning_rate"] = method.default_learning_rate
        if method.uses_adapter_size and self.adapter_use == "continue":
            updates["adapter_size"] = reference_meta(self.init_from)["adapter_size"]  # the pretrained adapter's
        elif method.uses_adapter_size and self.adapter_size is None:
            updates["adapter_size"] = method.default_adapter_size
        return self.model_copy(update=updates)

    def mt_source(self):
        """fusion_from: the multi-task run whose adapters this run fuses."""
        return validate(MultiTaskConfig, self.fusion_from, what="fusion_from setting").resolved()

    def refine_identity(self, identity: dict[str, Any]) -> dict[str, Any]:
        if self.fusion_from is not None:
            identity["fusion_from"] = self.mt_source().run_id  # the multi-task run, wherever its files are
        if self.init_from is not None:
            identity["init_from"] = reference_meta(self.init_from)[
                "run_id"
            ]  # the pretraining run, wherever its files are
        return identity

    def source_adapter_folders(self) -> dict[str, Path]:
        """fusion: per source task, where its trained adapter is (or will be) in the cache: its single-task run's, or
        the fusion_from run's."""
        if self.fusion_from is not None:
            return {task: self.mt_source().task_adapter_folders()[task] for task in self.fusion_sources}
        return {task: source_folder(source_config(task, self.source_settings)) for task in self.fusion_sources}


def check_init_from(
    folder: Reference, backbone: str, method: str, adapter_use: str | None, adapter_size: int | None = None
) -> None:
    """Fine-tuning from a pretraining artifact: a full model, or an adapter to continue or to stack a task
    adapter on."""
    meta = reference_meta(folder)
    if meta["backbone"] != backbone:
        raise ValueError(
            f"init_from={str(folder)!r} was pretrained from {meta['backbone']!r}, not from backbone {backbone!r}"
        )
    if meta["mode"] in FULL_MODES:
        if adapter_use is not None:
            raise ValueError(
                f"adapter_use={adapter_use!r} applies to an adapter artifact; {str(folder)!r} is a full model"
            )
        return
    if adapter_use is None:
        raise ValueError(
            f"init_from={str(folder)!r} holds a {meta['mode']} adapter: say adapter_use='continue' (train it on) "
            "or 'stack' (freeze it, train a new task adapter on top)"
        )
    if adapter_use == "continue" and method != continuing(meta["mode"]):
        raise ValueError(
            f"a pretrained {meta['mode']} adapter is continued by method {continuing(meta['mode'])!r}, not {method!r}"
        )
    if adapter_use == "continue" and adapter_size not in (None, meta.get("adapter_size")):
        raise ValueError(
            f"adapter_size={adapter_size}: the pretrained adapter in {str(folder)!r} "
            f"has size {meta.get('adapter_size')}"
        )
    stackable = methods_that(lambda m: m.stackable)
    if adapter_use == "stack" and method not in stackable:
        raise ValueError(
            f"adapter_use='stack' needs a bottleneck task adapter ({', '.join(stackable)}), not method {method!r}"
        )


def source_config(task: str, settings: Mapping[str, Any], results_dir: str | None = None):
    """The single-task run that trains the source adapter of `task`: the shared settings, with `per_task`'s for
    this task over them."""
    shared = {k: v for k, v in settings.items() if k != "per_task"}
    own = (settings.get("per_task") or {}).get(task, {})
    config = validate(
        FinetuneConfig,
        {**shared, **own, "task": task, "keep_adapter": True, **({"results_dir": results_dir} if results_dir else {})},
        what="source setting",
    )
    if not method_facts(config.method).fusion_source:
        raise ValueError(
            f"source adapters are bottleneck adapters ({', '.join(methods_that(lambda m: m.fusion_source))}), not "
            f"method {config.method!r}"
        )
    return config


def source_folder(config) -> Path:
    """Where a source adapter is kept: the cache, by the run id of the single-task run that trains it."""
    return cache_root() / "adapters" / config.run_id
