"""What a pretraining run leaves behind, and how other runs start from it.

An artifact is a folder: a full masked-LM model (modes head, full) or an adapter in the `adapters` format
(seq_bn, unipelt), with a marker naming the run, its mode, the model it sits on and the registered backbone
the chain started from. Other runs refer to one by its folder or by the settings of the run that makes it
(a mapping: the artifact is then found in the cache by run id, and made first by `ensure_artifact`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from torch import nn

ARTIFACT_MARKER = "adaptstudy-pretrained.json"


def root_backbone(config) -> str:
    """The registered backbone a chain of pretraining runs started from."""
    return reference_meta(config.init_from)["backbone"] if config.init_from else config.backbone


Reference = str | os.PathLike | dict


def reference_meta(ref: Reference) -> dict[str, Any]:
    """What an `init_from` names: its run id, mode, root backbone (and adapter size), from the artifact's
    marker (a folder) or from the settings of the run that makes it (a mapping; no file needed)."""
    from adaptstudy.pretrain import PretrainConfig

    if isinstance(ref, dict):
        config = PretrainConfig.model_validate(ref)
        meta = {"run_id": config.run_id, "mode": config.mode, "backbone": root_backbone(config)}
        if config.mode == "seq_bn":
            meta["adapter_size"] = config.adapter_size or round(_hidden_size(config.backbone) / 16)
        return meta
    return artifact_meta(ref)


def artifact_folder(ref: Reference) -> Path:
    """The folder of the artifact `ref` names; one clear error if that pretraining has not run (here) yet."""
    from adaptstudy.pretrain import PretrainConfig

    if not isinstance(ref, dict):
        return Path(ref)
    config = PretrainConfig.model_validate(ref)
    folder = config.artifact_dir()
    if not (folder / ARTIFACT_MARKER).is_file():
        raise FileNotFoundError(f"no artifact of pretraining run {config.run_id} ({config.corpus}, {config.mode}) at {folder}: "
                                "run its pretraining grid (or 02_dapt / 03_tapt with these settings) first")  # fmt: skip
    return folder


def ensure_artifact(ref: Reference, checkpoint_root: Path | None = None, results_dir: Path | None = None) -> Path:
    """The artifact `ref` names, pretraining it first when `ref` is a run's settings and its artifact is not in the
    cache yet (its own `init_from` first), so one fine-tuning grid can name every pretraining it starts from.

    Pretraining records go to the settings' `results_dir`, else `results_dir`; checkpoints under `checkpoint_root`.
    """
    import shutil

    from adaptstudy.pretrain import PretrainConfig, pretrain

    if not isinstance(ref, dict):
        return artifact_folder(ref)
    config = PretrainConfig.model_validate(ref)
    folder = config.artifact_dir()
    if (folder / ARTIFACT_MARKER).is_file():
        return folder
    if config.init_from is not None:
        ensure_artifact(config.init_from, checkpoint_root, results_dir)
    if config.results_dir is None and results_dir is not None:
        config = config.model_copy(update={"results_dir": str(results_dir)})
    checkpoints = Path(checkpoint_root) / config.run_id if checkpoint_root else None
    print(f"  pretraining {config.run_id} ({config.corpus}, {config.mode}) first", flush=True)
    pretrain(config, checkpoint_dir=checkpoints)
    if checkpoints is not None:
        shutil.rmtree(checkpoints, ignore_errors=True)
    return folder


def _hidden_size(backbone: str) -> int:
    from transformers import AutoConfig

    from adaptstudy.backbones import resolve_backbone

    return AutoConfig.from_pretrained(resolve_backbone(backbone)).hidden_size


def save_artifact(model, tokenizer, config, folder: Path) -> Path:
    """A full MLM checkpoint (modes head, full) or the adapter alone in the `adapters` format; atomic."""
    from adaptstudy.pretrain import ADAPTER_NAME
    from adaptstudy.results import atomic_folder

    with atomic_folder(folder) as scratch:
        if config.mode in ("head", "full"):
            model.save_pretrained(scratch, safe_serialization=True)
            tokenizer.save_pretrained(scratch)
        else:
            model.mlm.save_adapter(str(scratch), ADAPTER_NAME)
        base = artifact_base(artifact_folder(config.init_from)) if config.init_from else config.backbone
        meta = {"run_id": config.run_id, "mode": config.mode, "base": base, "backbone": root_backbone(config)}
        if config.mode == "seq_bn":
            meta["adapter_size"] = config.adapter_size or round(model.config.hidden_size / 16)
        (scratch / ARTIFACT_MARKER).write_text(json.dumps(meta))
    return folder


ADAPTER_FAMILY = {"seq_bn": "pfeiffer", "unipelt": "unipelt"}  # pretrained adapter mode -> the method that continues it


STACKABLE = ("pfeiffer", "houlsby")  # task adapters that can sit on top of a pretrained one (adapters' Stack)


def artifact_meta(folder: str | os.PathLike) -> dict[str, Any]:
    """The marker an artifact folder carries: run id, mode, base model, root backbone."""
    marker = Path(folder) / ARTIFACT_MARKER
    if not marker.is_file():
        raise ValueError(f"init_from={str(folder)!r} is not a pretraining artifact (no {ARTIFACT_MARKER} there)")
    return json.loads(marker.read_text())


def check_full_artifact(folder: Reference, backbone: str) -> None:
    """`folder` holds (or names) a full pretrained model made from `backbone` (pretraining continues from its weights)."""
    meta = reference_meta(folder)
    if meta["mode"] not in ("head", "full"):
        raise ValueError(f"init_from={str(folder)!r} holds a {meta['mode']} adapter, not a full model")
    if meta["backbone"] != backbone:
        raise ValueError(f"init_from={str(folder)!r} was pretrained from {meta['backbone']!r}, not from backbone {backbone!r}")


def check_init_from(folder: Reference, backbone: str, method: str, adapter_use: str | None, adapter_size: int | None = None) -> None:
    """Fine-tuning from a pretraining artifact: a full model, or an adapter to continue or to stack a task adapter on."""
    meta = reference_meta(folder)
    if meta["backbone"] != backbone:
        raise ValueError(f"init_from={str(folder)!r} was pretrained from {meta['backbone']!r}, not from backbone {backbone!r}")
    if meta["mode"] in ("head", "full"):
        if adapter_use is not None:
            raise ValueError(f"adapter_use={adapter_use!r} applies to an adapter artifact; {str(folder)!r} is a full model")
        return
    if adapter_use is None:
        raise ValueError(f"init_from={str(folder)!r} holds a {meta['mode']} adapter: say adapter_use='continue' (train it on) "
                         "or 'stack' (freeze it, train a new task adapter on top)")  # fmt: skip
    if adapter_use == "continue" and method != ADAPTER_FAMILY[meta["mode"]]:
        raise ValueError(f"a pretrained {meta['mode']} adapter is continued by method {ADAPTER_FAMILY[meta['mode']]!r}, not {method!r}")
    if adapter_use == "continue" and adapter_size not in (None, meta.get("adapter_size")):
        raise ValueError(f"adapter_size={adapter_size}: the pretrained adapter in {str(folder)!r} has size {meta.get('adapter_size')}")
    if adapter_use == "stack" and method not in STACKABLE:
        raise ValueError(f"adapter_use='stack' needs a bottleneck task adapter ({', '.join(STACKABLE)}), not method {method!r}")


def initial_weights(config) -> str:
    """The folder or Hub id whose weights a fine-tuning run starts from."""
    from adaptstudy.backbones import resolve_backbone

    if config.init_from is None:
        return resolve_backbone(config.backbone)
    base = artifact_base(artifact_folder(config.init_from))
    return base if Path(base).is_dir() else resolve_backbone(base)


def attach_pretrained_adapter(model: nn.Module, config, task_adapter: str) -> None:
    """Put an adapter artifact's weights in place: as the task adapter itself (continue), or frozen under it (stack)."""
    from adaptstudy.methods import PRETRAINED_ADAPTER

    if config.init_from is None or reference_meta(config.init_from)["mode"] in ("head", "full"):
        return
    folder = str(artifact_folder(config.init_from))
    if config.adapter_use == "continue":
        model.delete_adapter(task_adapter)
        model.load_adapter(folder, load_as=task_adapter)
        model.train_adapter(task_adapter)
    else:
        from adapters.composition import Stack

        model.load_adapter(folder, load_as=PRETRAINED_ADAPTER)
        model.train_adapter(task_adapter)
        model.active_adapters = Stack(PRETRAINED_ADAPTER, task_adapter)


def artifact_base(folder: str | os.PathLike) -> str:
    """The full model an artifact belongs on: itself for a full checkpoint, else the model its adapter was trained on."""
    meta = json.loads((Path(folder) / ARTIFACT_MARKER).read_text())
    return str(folder) if meta["mode"] in ("head", "full") else meta["base"]
