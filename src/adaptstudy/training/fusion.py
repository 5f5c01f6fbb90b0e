"""AdapterFusion's files: a source adapter saved for the fusion runs that read it, and a whole trained fusion
model saved and loaded again elsewhere."""

from __future__ import annotations

from pathlib import Path

from safetensors.torch import load_file, save_file
from torch import nn

from adaptstudy.common.files import atomic_folder, mark_complete, read_marker
from adaptstudy.data.spec import resolve_task
from adaptstudy.models.adapter_interfaces import init_adapters
from adaptstudy.models.methods import ADAPTER_NAME, is_head
from adaptstudy.models.methods.base import adapter_name
from adaptstudy.models.methods.fusion import fusion_name
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.training.starting_point import build_model


def save_source_adapter(model: nn.Module, config: FinetuneConfig, folder: Path) -> Path:
    """The trained task adapter alone (no head) in the `adapters` format, with its marker; atomic."""
    with atomic_folder(folder) as scratch:
        model.save_adapter(str(scratch), ADAPTER_NAME, with_head=False)
        mark_complete(scratch, {"kind": "adapter", "run_id": config.run_id, "task": config.task_name})
    return folder


def save_fusion(model: nn.Module, config: FinetuneConfig, folder: str | Path) -> Path:
    """Everything a trained fusion model needs, to reload it elsewhere: each source adapter, the fusion layers,
    the head, and the run's settings (in the marker); atomic."""
    names = [adapter_name(t) for t in config.fusion_sources]
    with atomic_folder(folder) as scratch:
        for name in names:
            model.save_adapter(str(scratch / name), name, with_head=False)
        model.save_adapter_fusion(str(scratch / "fusion"), fusion_name(names))
        head = {k: v.contiguous() for k, v in model.state_dict().items() if is_head(k)}
        save_file(head, str(scratch / "head.safetensors"))
        mark_complete(scratch, {"kind": "fusion model", "run_id": config.run_id, "config": config.model_dump()})
    return Path(folder)


def load_fusion(folder: str | Path) -> nn.Module:
    """A model saved by `save_fusion`, ready to predict (evaluation mode)."""
    folder = Path(folder)
    config = FinetuneConfig.model_validate(read_marker(folder)["config"])
    plain = config.model_copy(update={"method": "head_only", "fusion_sources": None, "source_settings": None})
    model = build_model(plain, resolve_task(config.task))
    init_adapters(model)
    names = [adapter_name(t) for t in config.fusion_sources]
    for name in names:
        model.load_adapter(str(folder / name), load_as=name, with_head=False)
    model.load_adapter_fusion(str(folder / "fusion"), set_active=True)
    head = load_file(str(folder / "head.safetensors"))
    missing = set(head) - set(model.state_dict())
    if missing:
        raise ValueError(f"{folder}: head weights {sorted(missing)} have no place in the model")
    model.load_state_dict(head, strict=False)
    return model.eval()
