"""MLM pieces on real review text: packing keeps every token, masked-only logits give the stock loss."""

import json

import pytest
import torch
from transformers import DataCollatorForLanguageModeling

from adaptstudy.backbones import load_tokenizer
from adaptstudy.pretrain import load_mlm, pack_texts


@pytest.fixture(scope="module")
def reviews(data_dir):
    with open(data_dir / "imdb" / "train.jsonl") as f:
        return [json.loads(line)["text"] for _, line in zip(range(12), f)]


def test_packing_keeps_every_token_in_full_rows(reviews):
    tok = load_tokenizer("minilm-l6")
    rows = pack_texts(reviews, tok, 128)["input_ids"]
    assert all(len(r) == 128 for r in rows[:-1]) and 0 < len(rows[-1]) <= 128
    body = [t for r in rows for t in r[1:]]  # each row starts with [CLS]
    expected = [t for ids in tok(reviews, add_special_tokens=False)["input_ids"] for t in ids + [tok.sep_token_id]]
    assert body == expected
    assert len(pack_texts(reviews, tok, 128, drop_last=True)) == len(rows) - 1


def test_masked_only_logits_give_the_same_loss_as_logits_everywhere(reviews):
    tok = load_tokenizer("minilm-l6")
    model = load_mlm("minilm-l6").eval()
    rows = pack_texts(reviews, tok, 64, drop_last=True)
    torch.manual_seed(0)
    batch = DataCollatorForLanguageModeling(tok, mlm_probability=0.15)([rows[i] for i in range(4)])
    with torch.inference_mode():
        ours = model(**batch)["loss"]
        stock = model.mlm(**batch).loss
    assert ours.item() == pytest.approx(stock.item(), rel=1e-5)
    assert model.mlm.config.attention_probs_dropout_prob == 0.0
    assert load_mlm("minilm-l6", attention_dropout=None).mlm.config.attention_probs_dropout_prob == 0.1
