"""Attaching the `adapters` package to a backbone: the model types it pre-supports as they are, the others through
its plugin interface (`AdapterModelInterface`), which carries fewer kinds of method (no prefix tuning, no fusion).

A method says which kinds it attaches (`Method.attaches`: the package's `AdapterMethod` names, or a structure of its
own); a backbone offers all of them or its interface's list, and a run of a method its backbone does not offer
stops before training, naming the methods that can run there (`models.methods.registry.check_runs_on`).
"""

from __future__ import annotations

import adapters
from adapters import AdapterModelInterface
from torch import nn

# model type -> how `adapters` reaches into it: the names of its embeddings, layers and projections
PLUGGED: dict[str, AdapterModelInterface] = {
    "mpnet": AdapterModelInterface(
        adapter_methods=["bottleneck", "lora"],
        model_embeddings="embeddings",
        model_layers="encoder.layer",
        layer_self_attn="attention",
        layer_cross_attn=None,
        attn_q_proj="attn.q",
        attn_k_proj="attn.k",
        attn_v_proj="attn.v",
        attn_o_proj="attn.o",
        layer_intermediate_proj="intermediate.dense",
        layer_output_proj="output.dense",
        base_model="mpnet",
    ),
}


def offered(model_type: str) -> frozenset[str] | None:
    """The kinds of method a model type offers: its interface's list where it is plugged in; None (every kind) where
    the package supports it as it is."""
    interface = PLUGGED.get(model_type)
    return None if interface is None else frozenset(interface.adapter_methods)


def init_adapters(model: nn.Module) -> None:
    """`adapters.init`, through the model type's plugin interface where it has one; a second call is a no-op (a
    model a run has already prepared)."""
    interface = PLUGGED.get(model.config.model_type)
    adapters.init(model, interface=interface)
