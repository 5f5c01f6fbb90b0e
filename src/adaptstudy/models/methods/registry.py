"""The method registry: each method prepares a model and says which of its weights train.

Selective methods (which backbone weights train: full, top-k, layer norms, biases, ...) are rows of the table
below; the others have a module per family, as in `peft`'s tuners: `bottleneck` (Houlsby and Pfeiffer adapters),
`library` (the `adapters` package's other methods), `fusion` (AdapterFusion), `task_adapters` (its MT-A) and
`hyperformer`.
"""

from __future__ import annotations

from adaptstudy.common.registry import Registry
from adaptstudy.models.adapter_interfaces import offered
from adaptstudy.models.backbones import backbone_model_type
from adaptstudy.models.methods.base import (
    Method,
    is_adapter,
    is_added,
    is_bias,
    is_embedding,
    is_encoder_layer,
    is_head,
    is_layer_norm,
    layer_index,
)
from adaptstudy.models.methods.bottleneck import (
    add_houlsby,
    add_pfeiffer,
    pretraining_seq_bn,
)
from adaptstudy.models.methods.fusion import add_fusion
from adaptstudy.models.methods.hyperformer import at_own_rate, hypernetwork_method, transfer_to
from adaptstudy.models.methods.library import from_library
from adaptstudy.models.methods.task_adapters import add_task_adapters
from adaptstudy.runs.method_catalog import METHOD_FACTS, PROMPT_TOKENS


def _in_top_layers(name: str, model, config) -> bool:
    index = layer_index(name)
    return index is not None and index >= model.config.num_hidden_layers - config.top_k_layers


METHODS: Registry[Method] = Registry("method")


def runs_on(method: str, model_type: str) -> bool:
    """Whether a backbone of `model_type` offers every kind of method `method` attaches."""
    offers = offered(model_type)
    return offers is None or METHODS.get(method).attaches <= offers


def check_runs_on(method: str, backbone: str, model_type: str | None = None) -> None:
    """One error before training for a method its backbone cannot carry, naming the methods that can run there.
    `model_type`: the loaded model's, for a Hub id (else the registered backbone's or the folder's config)."""
    model_type = model_type or backbone_model_type(backbone)
    if model_type is None or runs_on(method, model_type):
        return
    missing = sorted(METHODS.get(method).attaches - offered(model_type))
    raise ValueError(
        f"method {method!r} cannot run on backbone {backbone!r}: the adapters package reaches {model_type} through "
        f"its plugin interface, which carries {', '.join(sorted(offered(model_type)))}, not {', '.join(missing)}; "
        f"methods that run on it: {', '.join(name for name in METHODS if runs_on(name, model_type))}"
    )


for _m in (
    Method("full", trainable=lambda n, *_: True),
    Method("houlsby", trainable=lambda n, *_: is_adapter(n) or is_layer_norm(n) or is_head(n), prepare=add_houlsby),
    Method(
        "pfeiffer",
        trainable=lambda n, *_: is_adapter(n) or is_head(n),
        prepare=add_pfeiffer,
        pretraining_adapter=pretraining_seq_bn,
    ),
    Method("head_only", trainable=lambda n, *_: is_head(n)),
    Method("fusion", trainable=lambda n, *_: ".adapter_fusion_layer." in n or is_head(n), prepare=add_fusion),
    Method("task_adapters", trainable=lambda n, *_: True, prepare=add_task_adapters),
    Method("top_k", trainable=lambda n, model, config: _in_top_layers(n, model, config) or is_head(n)),
    Method("layernorm", trainable=lambda n, *_: is_layer_norm(n) or is_head(n)),
    Method("bitfit", trainable=lambda n, *_: is_bias(n) or is_head(n)),
    Method("embeddings_only", trainable=lambda n, *_: is_embedding(n) or is_head(n)),
    Method("encoder_only", trainable=lambda n, *_: is_encoder_layer(n) or is_head(n)),
    *(
        Method(
            name,
            trainable=lambda n, *_: is_added(n) or is_layer_norm(n) or is_head(n),
            prepare=hypernetwork_method(shared),
            own_rate=at_own_rate,
            transfer=transfer_to,
        )
        for name, shared in (("hyperformer", False), ("hyperformer++", True))
    ),
    from_library("prompt_tuning", "PromptTuningConfig", prompt_length=PROMPT_TOKENS),
    from_library("lora", "LoRAConfig"),
    from_library("ia3", "IA3Config"),
    from_library("prefix_tuning", "PrefixTuningConfig"),
    from_library("compacter", "CompacterConfig"),
    from_library("unipelt", "UniPELTConfig"),
):
    METHODS.add(_m.name, _m)

_unimplemented = [name for name in METHOD_FACTS if name not in METHODS]
if _unimplemented:  # declared facts with no implementation: one error at import, naming them
    raise ImportError(f"methods declared in runs/method_catalog.py with no implementation: {', '.join(_unimplemented)}")
