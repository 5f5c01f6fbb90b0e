"""AdapterFusion (Pfeiffer et al. 2021): single-task adapters, trained apart and frozen, combined for a
target task by a learned attention in every layer (the `adapters` package's `Fuse`, its "dynamic"
configuration: query, key and value, the value matrix initialised to the identity and pulled back to it
by the paper's regularisation, which `training.callbacks.FusionRegularization` adds).

The source adapters are named by their task and the settings of the single-task run that trains them; the
run's config says where each one is (`config.source_adapter_folders()`), and training makes them first.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
from adapters.composition import Fuse
from torch import nn

from adaptstudy.common.files import is_complete
from adaptstudy.models.adapter_interfaces import init_adapters
from adaptstudy.models.methods.base import adapter_name


def fusion_name(sources: Iterable[str]) -> str:
    return ",".join(sources)


def add_fusion(model: nn.Module, config) -> nn.Module:
    """`prepare` of method `fusion`: the source adapters loaded and frozen, a dynamic Fuse over them trains."""
    init_adapters(model)
    folders = config.source_adapter_folders()
    missing = [task for task, folder in folders.items() if not is_complete(folder)]
    if missing:
        raise FileNotFoundError(
            f"no trained source adapter for {', '.join(missing)}: a fusion run trains them first "
            "(adaptstudy.training.runner.run, or a sweep)"
        )
    for task, folder in folders.items():
        try:
            model.load_adapter(str(folder), load_as=adapter_name(task), with_head=False)
        except Exception as e:  # whatever the loader raises (truncated weights, a damaged config): name the folder
            raise ValueError(
                f"the source adapter of {task} at {folder} does not load ({type(e).__name__}: {e}); a sweep or "
                "adaptstudy.training.runner.run sets it aside and trains it again"
            ) from e
    fuse = Fuse(*(adapter_name(t) for t in config.fusion_sources))
    torch.manual_seed(config.seed)
    model.add_adapter_fusion(fuse, "dynamic")
    model.train_adapter_fusion(fuse)
    return model


def mean_attention(model: nn.Module, dataloader, sources: list[str], layer: int | None = None) -> dict[str, float]:
    """Mean softmax weight of each source adapter over the tokens (padding excluded) of every batch, in `layer`
    (default the last; the paper's Figure 4), both fusion positions of the layer averaged."""
    model.eval()
    layer = model.config.num_hidden_layers - 1 if layer is None else layer
    # In fp32: the library hands attentions over as numpy arrays, which have no bf16, so the forward pass is the
    # one from before the Trainer wrapped it in bf16 or fp16 autocast (where it did).
    forward = getattr(model, "_original_forward", model)
    total, count = np.zeros(len(sources)), 0
    with torch.inference_mode():
        for batch in dataloader:
            batch = {k: v for k, v in batch.items() if k != "labels"}
            outputs = forward(**batch, output_adapter_fusion_attentions=True)
            mask = batch["attention_mask"].bool().cpu().numpy()  # batches are on the GPU there
            for probs in outputs.adapter_fusion_attentions[fusion_name(adapter_name(t) for t in sources)][
                layer
            ].values():
                total += probs[mask].sum(axis=0)
                count += int(mask.sum())
    return dict(zip(sources, (total / max(count, 1)).tolist()))
