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
from adaptstudy.models.methods.library import PROMPT_TOKENS, from_library
from adaptstudy.models.methods.task_adapters import add_task_adapters
from adaptstudy.runs.method_settings import (
    BOTTLENECK,
    FusionSettings,
    HoulsbyVariant,
    HypernetworkSettings,
    TopK,
)


def _in_top_layers(name: str, model, config) -> bool:
    index = layer_index(name)
    return index is not None and index >= model.config.num_hidden_layers - config.top_k_layers


METHODS: Registry[Method] = Registry("method")
BOTTLENECK_KIND = frozenset({"bottleneck"})


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
    Method("full", "every weight of the backbone and the head", trainable=lambda n, *_: True),
    Method(
        "houlsby",
        "Houlsby adapters (two per layer, GELU, near-identity init) + all layer norms + head",
        trainable=lambda n, *_: is_adapter(n) or is_layer_norm(n) or is_head(n),
        prepare=add_houlsby,
        default_learning_rate=1e-3,
        adds=("adapters",),
        attaches=BOTTLENECK_KIND,
        settings=(*BOTTLENECK, HoulsbyVariant),
        default_adapter_size=64,
        stackable=True,
        fusion_source=True,
    ),
    Method(
        "pfeiffer",
        "one adapter per layer after the feed-forward block (seq_bn: ReLU, original layer norms frozen) + head",
        trainable=lambda n, *_: is_adapter(n) or is_head(n),
        prepare=add_pfeiffer,
        default_learning_rate=1e-3,
        adds=("adapters",),
        attaches=BOTTLENECK_KIND,
        settings=BOTTLENECK,
        default_adapter_size=64,
        continues="seq_bn",
        pretraining_adapter=pretraining_seq_bn,
        stackable=True,
        fusion_source=True,
    ),
    Method(
        "head_only",
        "only the head (pooler and classifier); the whole encoder frozen (AdapterFusion's 'Head')",
        trainable=lambda n, *_: is_head(n),
        default_learning_rate=1e-3,
    ),
    Method(
        "fusion",
        "AdapterFusion (Pfeiffer et al. 2021): frozen single-task adapters of `fusion_sources`, combined by a trained "
        "attention per layer (dynamic Fuse, value initialised to the identity) + head",
        trainable=lambda n, *_: ".adapter_fusion_layer." in n or is_head(n),
        prepare=add_fusion,
        default_learning_rate=5e-5,
        adds=("adapters", "adapter_fusion_layer"),
        attaches=frozenset({"bottleneck", "fusion"}),
        settings=(FusionSettings,),
    ),
    Method(
        "task_adapters",
        "AdapterFusion's multi-task adapters (MT-A): one seq_bn adapter per task and every weight of the encoder, "
        "trained jointly (each batch through its task's adapter) + heads",
        trainable=lambda n, *_: True,
        prepare=add_task_adapters,
        default_learning_rate=1e-4,
        adds=("adapters",),
        attaches=BOTTLENECK_KIND,
        settings=BOTTLENECK,
        default_adapter_size=24,
        per_task_adapters=True,
    ),
    Method(
        "top_k",
        "variable fine-tuning: every weight of the top `top_k_layers` transformer layers + head",
        trainable=lambda n, model, config: _in_top_layers(n, model, config) or is_head(n),
        default_learning_rate=5e-5,
        settings=(TopK,),
    ),
    Method(
        "layernorm",
        "only the layer-norm parameters (embeddings and every layer) + head",
        trainable=lambda n, *_: is_layer_norm(n) or is_head(n),
        default_learning_rate=1e-3,
    ),
    Method(
        "bitfit",
        "every bias term (BitFit, Ben Zaken et al. 2022) + head",
        trainable=lambda n, *_: is_bias(n) or is_head(n),
        default_learning_rate=1e-3,
    ),
    Method(
        "embeddings_only",
        "the embedding layer (word, position, token-type embeddings and their layer norm) + head",
        trainable=lambda n, *_: is_embedding(n) or is_head(n),
        default_learning_rate=1e-3,
    ),
    Method(
        "encoder_only",
        "every transformer layer + head; the embedding layer frozen",
        trainable=lambda n, *_: is_encoder_layer(n) or is_head(n),
        default_learning_rate=5e-5,
    ),
    *(
        Method(
            name,
            f"{name} (Mahabadi et al. 2021): Houlsby-placed adapters whose weights and inner layer norms "
            f"{detail} generate from a task embedding; hypernetworks + task embeddings + all layer norms + head",
            trainable=lambda n, *_: is_added(n) or is_layer_norm(n) or is_head(n),
            prepare=hypernetwork_method(shared),
            default_learning_rate=3e-4,
            adds=("hypernetworks",),
            attaches=frozenset({"bert_sublayers"}),  # the attention and feed-forward outputs of BERT-style layers
            settings=(*BOTTLENECK, HypernetworkSettings),
            default_adapter_size=24,
            own_rate=at_own_rate,
            transfer=transfer_to,
        )
        for name, shared, detail in (
            ("hyperformer", False, "hypernetworks per layer and position"),
            ("hyperformer++", True, "one hypernetwork shared over layers and positions"),
        )
    ),
    from_library(
        "prompt_tuning",
        f"{PROMPT_TOKENS} soft-prompt tokens prepended to the input embeddings (Lester et al. 2021)",
        "PromptTuningConfig",
        3e-2,
        ("prompt_tuning",),
        changes_sequence=True,
        prompt_length=PROMPT_TOKENS,
    ),
    from_library(
        "lora",
        "LoRA (Hu et al. 2022) on the query and value projections, r 8, alpha 8 (adapters' defaults)",
        "LoRAConfig",
        1e-3,
        ("loras",),
    ),
    from_library(
        "ia3",
        "IA3 (Liu et al. 2022): learned scaling of keys, values and the feed-forward activations",
        "IA3Config",
        3e-3,
        ("loras",),
    ),
    from_library(
        "prefix_tuning",
        "prefix tuning (Li & Liang 2021): 30 prefix tokens per layer through the "
        "reparameterising MLP (adapters' defaults; the MLP trains and counts)",
        "PrefixTuningConfig",
        1e-3,
        ("prefix_tuning",),
        changes_sequence=True,
    ),
    from_library(
        "compacter",
        "Compacter (Mahabadi et al. 2021): Kronecker-factored low-rank adapters, reduction "
        "factor 32, n 4 (adapters' defaults)",
        "CompacterConfig",
        3e-3,
        ("adapters", "shared_parameters"),
    ),
    from_library(
        "unipelt",
        "UniPELT (Mao et al. 2022), adapters' definition: gated LoRA (r 8), prefix tuning "
        "(10 tokens) and a seq_bn adapter (reduction factor 16)",
        "UniPELTConfig",
        1e-3,
        ("loras", "prefix_tuning", "adapters"),
        changes_sequence=True,
        continues="unipelt",
    ),
):
    METHODS.add(_m.name, _m)
