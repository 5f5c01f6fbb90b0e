"""A run's settings checked against the registries before any work: its task, corpus and backbone names, its inputs
against the backbone's positions, its method against what the backbone can carry, and top-k's depth against the
backbone's layers. The configs are data (`runs/`) and know none of these registries; every way in (the sweep, a
notebook's parameters, `runner.run`) calls `check_config` first, so a wrong name is one clear error before any data
is read or any weight is trained."""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from pydantic import BaseModel
from transformers import AutoConfig

from adaptstudy.data.corpora import CORPORA
from adaptstudy.data.spec import resolve_task
from adaptstudy.models.backbones import BACKBONES, check_backbone, check_sequence_length, resolve_backbone
from adaptstudy.models.methods import check_runs_on
from adaptstudy.runs.base import ConfigError, validate
from adaptstudy.runs.finetune_config import FinetuneConfig, source_config
from adaptstudy.runs.multitask_config import MultiTaskConfig
from adaptstudy.runs.notebook_params import DataPrepParams
from adaptstudy.runs.pretrain_config import PretrainConfig


def check_config(config: BaseModel) -> BaseModel:
    """`config` itself, once every name it holds (and those of the runs it starts from) is known: a registry's
    error, or a `ValueError` of the checks below, becomes one `ConfigError`."""
    try:
        _check(config)
    except ConfigError:
        raise
    except (ValueError, LookupError) as error:
        raise ConfigError(str(error)) from None
    return config


@singledispatch
def _check(config: BaseModel) -> None:
    """Settings that name nothing in a registry (the analyses' parameters) need no check."""


def _backbone(backbone: str, max_seq_length: int | None = None, method: str | None = None) -> None:
    check_backbone(backbone)
    if max_seq_length is not None:
        check_sequence_length(backbone, max_seq_length)
    if method is not None:
        check_runs_on(method, backbone)


@_check.register
def _(config: FinetuneConfig) -> None:
    resolve_task(config.task)
    _backbone(config.backbone, config.max_seq_length, config.method)
    if config.method == "top_k":
        layers = num_layers(config.backbone)
        if config.top_k_layers > layers:
            raise ValueError(
                f"method 'top_k' needs top_k_layers between 1 and {layers} (the layers of {config.backbone}), "
                f"got {config.top_k_layers}"
            )
    if isinstance(config.init_from, dict):
        _check(PretrainConfig.model_validate(config.init_from))
    if config.fusion_from is not None:
        _check(config.mt_source())
    if config.source_settings is not None:
        for task in config.source_settings.get("per_task") or {}:  # one set of settings may serve several fusions
            resolve_task(task)
        for task in config.fusion_sources:
            _check(source_config(task, config.source_settings))


@_check.register
def _(config: MultiTaskConfig) -> None:
    for task in config.tasks:
        resolve_task(task)
    _backbone(config.backbone, config.max_seq_length, config.method)
    if config.transfer_from is not None:
        _check(config.source())


@_check.register
def _(config: PretrainConfig) -> None:
    if config.corpus.startswith("task:"):
        resolve_task(config.corpus.removeprefix("task:"))
    else:
        CORPORA.get(config.corpus)
    for task in config.exclude_eval_of:
        resolve_task(task)
    _backbone(config.backbone)
    if isinstance(config.init_from, dict):
        _check(PretrainConfig.model_validate(config.init_from))


@_check.register
def _(config: DataPrepParams) -> None:
    resolve_task(config.task)
    _backbone(config.backbone, config.max_seq_length)


def num_layers(backbone: str) -> int:
    """A backbone's transformer layers: the registry's where it knows them (no download), else its model config."""
    if backbone in BACKBONES and BACKBONES.get(backbone).layers is not None:
        return BACKBONES.get(backbone).layers
    return AutoConfig.from_pretrained(resolve_backbone(backbone)).num_hidden_layers


def checked(model: type[BaseModel], values: dict[str, Any], what: str = "parameter") -> BaseModel:
    """`runs.base.validate` and `check_config` in one: what a caller holding raw values wants."""
    return check_config(validate(model, values, what))
