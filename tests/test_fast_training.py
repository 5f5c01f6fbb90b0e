"""The CPU training shortcuts change speed, not what is trained: fast dropout draws the same distribution, the
last layer at [CLS] gives the whole layer's loss and gradients, and evaluation in length order leaves training's
random stream as it was."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from transformers import (
    AutoModelForSequenceClassification,
    DataCollatorForLanguageModeling,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
)

from adaptstudy.data import load_task
from adaptstudy.data.encoding import length_order, pack_texts, tokenize_task
from adaptstudy.data.tasks import resolve_task
from adaptstudy.models.backbones import load_tokenizer, resolve_backbone
from adaptstudy.models.fast_dropout import FastDropout, attention_implementation, keep_mask, use_fast_dropout
from adaptstudy.models.last_layer import last_layer, masked_query_positions, train_last_layer_at_queries
from adaptstudy.models.methods import METHODS
from adaptstudy.models.mlm import load_mlm, prepare_mode
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.training.finetune import SortedEvalTrainer
from adaptstudy.training.starting_point import build_model


def test_fast_dropout_drops_at_rate_p_keeps_the_expectation_and_passes_the_mask_to_the_gradient():
    torch.manual_seed(0)
    x = torch.rand(64, 128, 384) + 0.5
    x.requires_grad_(True)
    drop = FastDropout(0.1).train()
    y = drop(x)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.9) < 0.002
    assert torch.allclose(y[kept], x[kept] / 0.9, rtol=1e-4)
    assert abs(y.mean().item() / x.mean().item() - 1) < 0.003
    y.backward(torch.ones_like(y))
    assert torch.equal(x.grad != 0, kept)
    assert torch.allclose(x.grad[kept], torch.full_like(x.grad[kept], 1 / 0.9), rtol=1e-4)
    assert torch.equal(drop.eval()(x), x)


def test_fast_dropout_masks_follow_torch_seed():
    torch.manual_seed(3)
    first, _ = keep_mask(torch.Size([1000]), 0.1)
    second, _ = keep_mask(torch.Size([1000]), 0.1)
    torch.manual_seed(3)
    again, _ = keep_mask(torch.Size([1000]), 0.1)
    assert torch.equal(first, again)
    assert not torch.equal(first, second)


def test_every_dropout_of_a_cpu_backbone_becomes_fast_with_attention_dropout_in_a_module():
    path = resolve_backbone("minilm-l6")
    assert attention_implementation(path) == ("sdpa" if torch.cuda.is_available() else "eager")
    assert attention_implementation(path, attention_dropout=0.0) == "sdpa"
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2, attn_implementation="eager")
    replaced = use_fast_dropout(model)
    if torch.cuda.is_available():
        assert replaced == 0
        return
    assert replaced == 1 + 6 * 3 + 1  # embeddings, per layer (attention probabilities, two outputs), classifier
    assert not any(type(m) is nn.Dropout for m in model.modules())
    assert all(m.p == pytest.approx(0.1) for m in model.modules() if isinstance(m, FastDropout))


def _mrpc_batch(n: int = 8):
    tokenizer = load_tokenizer("minilm-l6")
    train = tokenize_task(load_task("mrpc", max_train_examples=n), tokenizer, 128)["train"]
    rows = [{k: train[i][k] for k in ("input_ids", "token_type_ids", "attention_mask")} for i in range(n)]
    batch = DataCollatorWithPadding(tokenizer)(rows)
    assert (batch["attention_mask"] == 0).any()  # padding is part of what is checked
    return {**batch, "labels": torch.tensor(train["label"])}


@pytest.mark.parametrize("method", ["full", "houlsby"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_last_layer_at_cls_gives_the_whole_layers_loss_gradients_and_predictions(method, attention):
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        resolve_backbone("minilm-l6"),
        num_labels=2,
        attn_implementation=attention,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    config = FinetuneConfig(task="mrpc", method=method).resolved()
    whole = METHODS.get(method).apply(model, config).train()
    shortcut = copy.deepcopy(whole)
    assert train_last_layer_at_queries(shortcut)
    batch = _mrpc_batch()
    loss = whole(**batch).loss
    loss.backward()
    short_loss = shortcut(**batch).loss
    short_loss.backward()
    assert short_loss.item() == pytest.approx(loss.item(), abs=1e-6)
    grads = [
        (a.grad, b.grad) for a, b in zip(whole.parameters(), shortcut.parameters(), strict=True) if a.requires_grad
    ]
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in grads)
    assert sum(g.abs().sum().item() for g, _ in grads) > 0
    whole.eval(), shortcut.eval()
    with torch.no_grad():
        assert torch.equal(whole(**batch).logits, shortcut(**batch).logits)
        out = shortcut.bert(**{k: batch[k] for k in ("input_ids", "attention_mask")}).last_hidden_state
    assert out.shape[1] == batch["input_ids"].shape[1]  # evaluation runs the whole layer


@pytest.mark.parametrize(("method", "shortcut"), [("houlsby", True), ("lora", True), ("prompt_tuning", False)])
def test_the_shortcut_is_used_only_where_the_method_keeps_one_state_per_token(method, shortcut):
    config = FinetuneConfig(task="rte", method=method).resolved()
    model = build_model(config, resolve_task("rte"))
    assert ("forward" in vars(model.bert.encoder.layer[-1])) is shortcut
    assert "forward" not in vars(model.bert.encoder.layer[-2])
    if shortcut:  # a copy's last layer runs its own weights
        copied = last_layer(copy.deepcopy(model))
        assert copied.forward.__self__ is copied


@pytest.mark.parametrize("mode", ["full", "seq_bn"])
def test_mlm_last_layer_at_masked_positions_gives_the_whole_layers_loss_and_gradients(mode):
    tokenizer = load_tokenizer("minilm-l6")
    texts = load_task("imdb", max_train_examples=20)["train"]["text_a"]
    rows = pack_texts(texts, tokenizer, 64, drop_last=True)
    torch.manual_seed(0)
    batch = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)([rows[i] for i in range(6)])
    models = []
    for _ in range(2):
        torch.manual_seed(0)  # the same new head and adapter
        models.append(prepare_mode(load_mlm("minilm-l6", attention_dropout=0.0), mode, 64))
    whole, shortcut = models
    assert shortcut.last_layer_at_masked
    del vars(last_layer(whole.encoder))["forward"]
    whole.last_layer_at_masked = False
    for model in (whole, shortcut):
        model.mlm.config.hidden_dropout_prob = 0.0
        for module in model.modules():
            if isinstance(module, nn.Dropout):
                module.p = 0.0
        model.train()
        model(**batch)["loss"].backward()
    losses = [m(**batch)["loss"].item() for m in (whole, shortcut)]
    assert losses[1] == pytest.approx(losses[0], abs=1e-5)
    grads = [(a.grad, b.grad) for a, b in zip(whole.parameters(), shortcut.parameters()) if a.requires_grad]
    assert grads and all(torch.allclose(a, b, atol=1e-5) for a, b in grads)


def test_masked_query_positions_list_each_rows_masked_tokens_in_order():
    masked = torch.tensor([[False, True, False, True], [True, False, False, False], [False] * 4])
    positions, valid = masked_query_positions(masked)
    assert positions.shape == (3, 2)
    assert positions[valid].tolist() == [1, 3, 0]
    assert valid.tolist() == [[True, True], [True, False], [False, False]]


def test_evaluation_runs_in_the_sorted_eval_sets_order_and_leaves_trainings_random_stream_as_transformers_does(
    data_dir, tmp_path
):
    """RTE's dev set under transformers' length grouping: 3 random batches of up to 128, padded to their longest."""
    tokenizer = load_tokenizer("minilm-l6")
    dev = tokenize_task(load_task("rte", data_dir), tokenizer, 128)["dev"]
    dev = dev.select(length_order(dev).tolist())
    model = AutoModelForSequenceClassification.from_pretrained(resolve_backbone("minilm-l6"), num_labels=2)
    args = TrainingArguments(str(tmp_path), group_by_length=True, per_device_eval_batch_size=128, report_to=[])
    ours, stock = (
        cls(model=model, args=args, eval_dataset=dev, data_collator=DataCollatorWithPadding(tokenizer))
        for cls in (SortedEvalTrainer, Trainer)
    )
    states, padded = [], []
    for trainer in (ours, stock):
        torch.manual_seed(0)
        batches = list(trainer.get_eval_dataloader())
        padded.append(sum(int(b["input_ids"].numel()) for b in batches))
        states.append(torch.get_rng_state())
    assert torch.equal(*states)  # the same draws: dropout after an evaluation is unchanged
    ours_batches = list(ours.get_eval_dataloader())
    assert torch.cat([b["labels"] for b in ours_batches]).tolist() == dev["label"]  # the eval set's own order
    useful = sum(len(ids) for ids in dev["input_ids"])
    assert useful <= padded[0] < 0.8 * padded[1]
