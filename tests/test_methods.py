import pytest
import torch
from transformers import AutoConfig, AutoModel, AutoTokenizer

from adaptstudy.backbones import resolve_backbone
from adaptstudy.config import FinetuneConfig
from adaptstudy.data import load_task, resolve_task
from adaptstudy.methods import METHODS, count_parameters
from adaptstudy.train import build_model

H, L, FF = 384, 6, 1536  # all-MiniLM-L6-v2
HEAD = (H * H + H) + (H * 2 + 2)  # pooler + 2-way classifier
LAYER_NORMS = 2 * H * (1 + 2 * L)  # embeddings + two per layer, weight and bias


def _model(method: str, **kw):
    config = FinetuneConfig(task="rte", method=method, **kw).resolved()
    return build_model(config, resolve_task("rte"))


def test_backbone_is_the_shipped_minilm():
    cfg = AutoConfig.from_pretrained(resolve_backbone("minilm-l6"))
    assert (cfg.model_type, cfg.num_hidden_layers, cfg.hidden_size, cfg.intermediate_size) == ("bert", L, H, FF)


def test_full_trains_everything():
    counts = count_parameters(_model("full"))
    assert counts["trainable_params"] == counts["total_params"] == counts["backbone_params"] + HEAD


@pytest.mark.parametrize("size", [8, 64])
def test_houlsby_trains_adapters_layer_norms_and_head(size):
    counts = count_parameters(_model("houlsby", adapter_size=size))
    adapters = L * 2 * (H * size + size + size * H + H)  # two bottlenecks per layer
    assert counts["adapters_reported_params"] == adapters
    assert counts["trainable_params"] == adapters + LAYER_NORMS + HEAD
    assert counts["total_params"] == counts["backbone_params"] + HEAD + adapters
    if size == 64:
        assert counts["trainable_params"] / counts["total_params"] < 0.05


def test_bitfit_trains_biases_and_head():
    counts = count_parameters(_model("bitfit"))
    per_layer = 4 * H + FF + H + 2 * H  # q, k, v, attention output, intermediate, output, two layer norms
    assert counts["trainable_params"] == L * per_layer + H + HEAD  # + the embeddings' layer-norm bias


def test_houlsby_starts_near_identity(data_dir):
    """Before training, adapters change what the head sees (the pooled output) by less than 1e-2,
    and the hidden states by less than 1e-2 on average."""
    path = resolve_backbone("minilm-l6")
    tok = AutoTokenizer.from_pretrained(path)
    dev = load_task("rte", data_dir)["dev"].select(range(16))
    batch = tok(list(dev["text_a"]), list(dev["text_b"]), padding=True, truncation=True, max_length=128, return_tensors="pt")
    plain = AutoModel.from_pretrained(path).eval()
    adapted = METHODS.get("houlsby").apply(AutoModel.from_pretrained(path), FinetuneConfig(adapter_size=64, seed=1)).eval()
    with torch.inference_mode():
        a, b = plain(**batch), adapted(**batch)
    pooled = (a.pooler_output - b.pooler_output).abs().max().item()
    hidden = (a.last_hidden_state - b.last_hidden_state).abs()[batch["attention_mask"].bool()].mean().item()
    assert 0 < pooled < 1e-2  # adapters are active (not exactly 0) yet near-identity
    assert 0 < hidden < 1e-2


def test_unknown_method_lists_valid_names():
    with pytest.raises(Exception, match=r"unknown method 'houlsbi' \(did you mean 'houlsby'\?\); valid: bitfit, full, houlsby"):
        METHODS.get("houlsbi")
