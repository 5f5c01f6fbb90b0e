"""The second backbone: paraphrase-MiniLM-L3-v2 converted from its ONNX file must compute what the file computes."""

import numpy as np
import pytest
import torch

from adaptstudy.data import load_task
from adaptstudy.models.backbones import MINILM_L3_PACKAGE, load_tokenizer, resolve_backbone


@pytest.fixture(scope="module")
def mrpc_pairs(data_dir):
    dev = load_task("mrpc", str(data_dir))["dev"]
    return dev.select(range(24))


@pytest.fixture(scope="module")
def l3():
    from transformers import AutoModel

    return AutoModel.from_pretrained(resolve_backbone("minilm-l3")).eval(), load_tokenizer("minilm-l3")


def _onnx_session():
    from importlib import metadata

    import onnxruntime

    path = next(f for f in metadata.files(MINILM_L3_PACKAGE) if str(f).endswith(".onnx")).locate()
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def test_converted_hidden_states_match_onnxruntime_on_real_sentences(l3, mrpc_pairs):
    model, tokenizer = l3
    batch = tokenizer(list(mrpc_pairs["text_a"]), padding=True, truncation=True, max_length=128, return_tensors="np")
    session = _onnx_session()
    names = [o.name for o in session.get_outputs()]
    outputs = dict(
        zip(names, session.run(None, {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}))
    )
    expected = next(v for v in outputs.values() if v.ndim == 3)  # the token embeddings (last hidden state)
    with torch.no_grad():
        ours = model(
            input_ids=torch.from_numpy(batch["input_ids"]), attention_mask=torch.from_numpy(batch["attention_mask"])
        ).last_hidden_state
    mask = batch["attention_mask"].astype(bool)
    assert model.config.num_hidden_layers == 3 and model.config.hidden_size == 384
    assert np.abs(ours.numpy()[mask] - expected[mask]).max() < 1e-4


def test_the_shared_vocabulary_fits_the_converted_weights(l3, mrpc_pairs):
    """With the right tokenizer the paraphrase model puts each MRPC paraphrase closer to its partner than to others."""
    model, tokenizer = l3
    pairs = mrpc_pairs.filter(lambda r: r["label"] == 1)

    def embed(texts):
        batch = tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1)
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)

    similarity = embed(list(pairs["text_a"])) @ embed(list(pairs["text_b"])).T
    matched, mismatched = similarity.diag().mean(), similarity[~torch.eye(len(pairs), dtype=bool)].mean()
    assert matched > mismatched + 0.2
    assert (similarity.argmax(dim=1) == torch.arange(len(pairs))).float().mean() > 0.8
