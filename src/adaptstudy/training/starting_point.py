"""The model a fine-tuning run starts from: the backbone or a pretraining artifact, with a head for the task,
the method applied, and a pretrained adapter put in place (continued, or frozen under the task adapter)."""

from __future__ import annotations

from pathlib import Path

from adapters.composition import Stack
from torch import nn
from transformers import AutoModelForSequenceClassification
from transformers.utils import logging as hf_logging

from adaptstudy.data.spec import TaskSpec
from adaptstudy.models.backbones import resolve_backbone
from adaptstudy.models.fast_dropout import attention_implementation
from adaptstudy.models.last_layer import train_last_layer_at_queries
from adaptstudy.models.methods import ADAPTER_NAME, METHODS, PRETRAINED_ADAPTER, check_runs_on
from adaptstudy.runs.artifacts import FULL_MODES, artifact_base
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.pretrain_config import artifact_folder, reference_meta


def build_model(config: FinetuneConfig, spec: TaskSpec) -> nn.Module:
    """The run's model, ready to train: which weights train is set by the method."""
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the head is new by design; don't warn that it is untrained
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            initial_weights(config),
            num_labels=spec.num_labels,
            problem_type="regression" if spec.is_regression else "single_label_classification",
            use_safetensors=True,
            attn_implementation=attention_implementation(initial_weights(config)),
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    check_runs_on(config.method, config.backbone, model.config.model_type)  # a Hub id's type is known once loaded
    method = METHODS.get(config.method)
    model = method.prepare(model, config)
    attach_pretrained_adapter(model, config)
    if not method.changes_sequence:
        train_last_layer_at_queries(model)
    return method.set_trainable(model, config)


def attach_pretrained_adapter(model: nn.Module, config: FinetuneConfig) -> None:
    """Put an adapter artifact's weights in place: as the task adapter itself (continue), or frozen under it (stack)."""
    if config.init_from is None or reference_meta(config.init_from)["mode"] in FULL_MODES:
        return
    folder = str(artifact_folder(config.init_from))
    if config.adapter_use == "continue":
        model.delete_adapter(ADAPTER_NAME)
        model.load_adapter(folder, load_as=ADAPTER_NAME)
        model.train_adapter(ADAPTER_NAME)
    else:
        model.load_adapter(folder, load_as=PRETRAINED_ADAPTER)
        model.train_adapter(ADAPTER_NAME)
        model.active_adapters = Stack(PRETRAINED_ADAPTER, ADAPTER_NAME)


def initial_weights(config) -> str:
    """The folder or Hub id whose weights a fine-tuning run starts from."""
    if getattr(config, "fusion_from", None) is not None:
        return str(config.mt_source().encoder_folder())
    if config.init_from is None:
        return resolve_backbone(config.backbone)
    base = artifact_base(artifact_folder(config.init_from))
    return base if Path(base).is_dir() else resolve_backbone(base)
