"""AdapterFusion (Pfeiffer et al. 2021): single-task adapters, trained apart and frozen, combined for a
target task by a learned attention in every layer (the `adapters` package's `Fuse`, its "dynamic"
configuration: query, key and value, the value matrix initialised to the identity and pulled back to it
by the paper's regularisation).

Source adapters are named by their task and the settings of the single-task run that trains them
(`source_settings`, e.g. method `pfeiffer`, its size and learning rate). Each is trained once, when first
needed, saved in the `adapters` format under the cache (`<cache>/adapters/<run_id>`, with a marker), and
its run's record written with the fusion run's records: it is also that task's single-task adapter (ST-A) run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

SOURCE_MARKER = "adaptstudy-adapter.json"
SOURCE_METHODS = ("pfeiffer", "houlsby")  # bottleneck adapters: what Fuse combines


def source_config(task: str, settings: Mapping[str, Any], results_dir: str | None = None):
    """The single-task run that trains the source adapter of `task`."""
    from adaptstudy.config import FinetuneConfig, validate

    config = validate(FinetuneConfig, {**settings, "task": task, **({"results_dir": results_dir} if results_dir else {})},
                      what="source setting")  # fmt: skip
    if config.method not in SOURCE_METHODS:
        raise ValueError(f"source adapters are bottleneck adapters ({', '.join(SOURCE_METHODS)}), not method {config.method!r}")
    return config


def source_folder(config) -> Path:
    from adaptstudy.onnx_bert import cache_root

    return cache_root() / "adapters" / config.run_id


def save_source_adapter(model: nn.Module, config, folder: Path) -> Path:
    """The trained task adapter alone (no head) in the `adapters` format, with a marker; atomic."""
    from adaptstudy.methods import ADAPTER_NAME
    from adaptstudy.results import atomic_folder

    with atomic_folder(folder) as scratch:
        model.save_adapter(str(scratch), ADAPTER_NAME, with_head=False)
        (scratch / SOURCE_MARKER).write_text(json.dumps({"run_id": config.run_id, "task": config.task_name}))
    return folder


def ensure_sources(config, checkpoint_root: Path | None = None) -> dict[str, Path]:
    """Per source task, the folder of its trained adapter; adapters not in the cache are trained first."""
    import shutil

    from adaptstudy.results import resolve_results_dir
    from adaptstudy.train import finetune

    results = resolve_results_dir(config.results_dir)
    folders = {}
    for task in config.fusion_sources:
        source = source_config(task, config.source_settings, str(results))
        folder = source_folder(source)
        if not (folder / SOURCE_MARKER).is_file():
            checkpoints = Path(checkpoint_root) / source.run_id if checkpoint_root else None
            print(f"  training the source adapter of {task} ({source.run_id}) first", flush=True)
            finetune(source, checkpoint_dir=checkpoints, save_adapter_to=folder)
            if checkpoints is not None:
                shutil.rmtree(checkpoints, ignore_errors=True)
        folders[task] = folder
    return folders


def fusion_name(sources: Iterable[str]) -> str:
    return ",".join(sources)


def add_fusion(model: nn.Module, config) -> nn.Module:
    """`prepare` of method `fusion`: the source adapters loaded and frozen, a dynamic Fuse over them trains."""
    import adapters
    from adapters.composition import Fuse

    adapters.init(model)
    folders = {task: source_folder(source_config(task, config.source_settings)) for task in config.fusion_sources}
    missing = [task for task, folder in folders.items() if not (folder / SOURCE_MARKER).is_file()]
    if missing:
        raise FileNotFoundError(f"no trained source adapter for {', '.join(missing)}: fine-tune runs train them first "
                                "(adaptstudy.fusion.ensure_sources)")  # fmt: skip
    for task, folder in folders.items():
        model.load_adapter(str(folder), load_as=_adapter_name(task), with_head=False)
    fuse = Fuse(*(_adapter_name(t) for t in config.fusion_sources))
    torch.manual_seed(config.seed)
    model.add_adapter_fusion(fuse, "dynamic")
    model.train_adapter_fusion(fuse)
    return model


def _adapter_name(task: str) -> str:
    return f"source_{task}"


def is_fusion(name: str) -> bool:
    return ".adapter_fusion_layer." in name


def regularization_callback():
    """The paper's pull of every value matrix towards the identity (0.01 x squared distance), added after each
    step as the `adapters` package's own trainer does."""
    from transformers import TrainerCallback

    class _Regularize(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            loss = model.base_model.get_fusion_regularization_loss()
            if loss is not None:
                loss.backward()

    return _Regularize()


def mean_attention(model: nn.Module, dataloader, sources: list[str], layer: int | None = None) -> dict[str, float]:
    """Mean softmax weight of each source adapter over the tokens (padding excluded) of every batch, in `layer`
    (default the last; the paper's Figure 4), both fusion positions of the layer averaged."""
    model.eval()
    layer = model.config.num_hidden_layers - 1 if layer is None else layer
    # In fp32: the library hands attentions over as numpy arrays, which have no bf16, so the forward pass is the
    # one from before the Trainer wrapped it in bf16 autocast (where it did).
    forward = getattr(model, "_original_forward", model)
    total, count = np.zeros(len(sources)), 0
    with torch.inference_mode():
        for batch in dataloader:
            batch = {k: v for k, v in batch.items() if k != "labels"}
            outputs = forward(**batch, output_adapter_fusion_attentions=True)
            mask = batch["attention_mask"].bool().numpy()
            for probs in outputs.adapter_fusion_attentions[fusion_name(_adapter_name(t) for t in sources)][layer].values():
                total += probs[mask].sum(axis=0)
                count += int(mask.sum())
    return dict(zip(sources, (total / max(count, 1)).tolist()))


def save_fusion(model: nn.Module, config, folder: str | Path) -> Path:
    """Everything a trained fusion model needs, to reload it elsewhere: each source adapter, the fusion layers,
    the head, and the run's settings; atomic."""
    from safetensors.torch import save_file

    from adaptstudy.methods import is_head
    from adaptstudy.results import atomic_folder

    names = [_adapter_name(t) for t in config.fusion_sources]
    with atomic_folder(folder) as scratch:
        for name in names:
            model.save_adapter(str(scratch / name), name, with_head=False)
        model.save_adapter_fusion(str(scratch / "fusion"), fusion_name(names))
        save_file({k: v.contiguous() for k, v in model.state_dict().items() if is_head(k)}, str(scratch / "head.safetensors"))
        (scratch / "run.json").write_text(config.model_dump_json())
    return Path(folder)


def load_fusion(folder: str | Path) -> nn.Module:
    """A model saved by `save_fusion`, ready to predict (evaluation mode)."""
    import adapters
    from safetensors.torch import load_file

    from adaptstudy.config import FinetuneConfig
    from adaptstudy.data import resolve_task
    from adaptstudy.train import build_model

    folder = Path(folder)
    config = FinetuneConfig.model_validate_json((folder / "run.json").read_text())
    plain = config.model_copy(update={"method": "head_only", "fusion_sources": None, "source_settings": None})
    model = build_model(plain, resolve_task(config.task))
    adapters.init(model)
    names = [_adapter_name(t) for t in config.fusion_sources]
    for name in names:
        model.load_adapter(str(folder / name), load_as=name, with_head=False)
    model.load_adapter_fusion(str(folder / "fusion"), set_active=True)
    head = load_file(str(folder / "head.safetensors"))
    missing = set(head) - set(model.state_dict())
    if missing:
        raise ValueError(f"{folder}: head weights {sorted(missing)} have no place in the model")
    model.load_state_dict(head, strict=False)
    return model.eval()
