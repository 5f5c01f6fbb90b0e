"""Hyperformer's hypernetworks on the real minilm-l6 encoder and real MRPC/RTE sentences."""

import pytest
import torch
from transformers import AutoModel, AutoTokenizer, Trainer, TrainingArguments

from adaptstudy.data import load_task
from adaptstudy.models.backbones import resolve_backbone
from adaptstudy.models.methods.hyperformer import POSITIONS, HyperConfig, Hypernetworks, at_own_rate, insert_adapters
from adaptstudy.runs.base import ConfigError, validate
from adaptstudy.runs.multitask_config import MultiTaskConfig
from adaptstudy.training.multitask import build_multitask_model, own_rate_optimizer

L, H = 6, 384
TASKS = ("rte", "mrpc")


@pytest.fixture(scope="module")
def batch(data_dir):
    dev = load_task("rte", data_dir)["dev"].select(range(8))
    tokenizer = AutoTokenizer.from_pretrained(resolve_backbone("minilm-l6"))
    return tokenizer(
        list(dev["text_a"]), list(dev["text_b"]), padding=True, truncation=True, max_length=96, return_tensors="pt"
    )


def _encoder_with_adapters(config: HyperConfig, seed: int = 0):
    torch.manual_seed(seed)
    encoder = AutoModel.from_pretrained(resolve_backbone("minilm-l6"))
    return encoder, insert_adapters(encoder, config)


@pytest.mark.parametrize("shared", [False, True], ids=["hyperformer", "hyperformer++"])
def test_generated_weights_have_the_adapter_shapes_for_every_layer_and_position(shared):
    hyper = Hypernetworks(HyperConfig(tasks=TASKS, shared=shared, adapter_size=24), num_layers=L, hidden=H)
    weights = hyper.generate("rte")
    assert set(weights) == {(layer, p) for layer in range(L) for p in range(len(POSITIONS))}
    for w in weights.values():
        assert w.down_weight.shape == (24, H) and w.down_bias.shape == (24,)
        assert w.up_weight.shape == (H, 24) and w.up_bias.shape == (H,)
        assert w.norm_weight.shape == (H,) and w.norm_bias.shape == (H,)
    # Hyperformer++ still gives each layer and position its own adapter, through their embeddings
    assert not torch.equal(weights[0, 0].down_weight, weights[1, 0].down_weight)
    assert not torch.equal(weights[0, 0].down_weight, weights[0, 1].down_weight)


def test_hyperformer_plus_plus_shares_one_hypernetwork_and_is_far_smaller():
    def count(shared):
        return sum(p.numel() for p in Hypernetworks(HyperConfig(tasks=TASKS, shared=shared), L, H).parameters())

    per_layer, shared = count(False), count(True)
    assert len(Hypernetworks(HyperConfig(tasks=TASKS, shared=True), L, H).generators) == 1
    assert len(Hypernetworks(HyperConfig(tasks=TASKS, shared=False), L, H).generators) == L * len(POSITIONS)
    assert 8 < per_layer / shared < 12  # 12 generator sets against one (+ embeddings and projector)


def test_two_tasks_get_different_adapters():
    hyper = Hypernetworks(HyperConfig(tasks=TASKS), L, H)
    a, b = hyper.generate("rte")[2, 1], hyper.generate("mrpc")[2, 1]
    for x, y in zip(a, b):
        assert not torch.allclose(x, y)


def test_adapters_start_near_identity_and_follow_the_selected_task(batch):
    plain = AutoModel.from_pretrained(resolve_backbone("minilm-l6")).eval()
    encoder, hyper = _encoder_with_adapters(HyperConfig(tasks=TASKS))
    encoder.eval()
    with torch.inference_mode():
        reference = plain(**batch).last_hidden_state
        hyper.select("rte")
        rte = encoder(**batch).last_hidden_state
        hyper.select("mrpc")
        mrpc = encoder(**batch).last_hidden_state
    mask = batch["attention_mask"].bool()
    change = (rte - reference).abs()[mask].mean().item() / reference.abs()[mask].mean().item()
    assert 1e-4 < change < 2e-2  # active, yet within 2% of the backbone
    assert not torch.allclose(rte, mrpc)  # the selected task's adapters are the ones applied


def test_a_training_step_reaches_the_hypernetworks_and_the_task_embedding(batch):
    encoder, hyper = _encoder_with_adapters(HyperConfig(tasks=TASKS, shared=True))
    hyper.select("rte")
    encoder(**batch).last_hidden_state.pow(2).mean().backward()
    assert hyper.generators[0].up.weight.grad.abs().sum() > 0
    assert hyper.task_embeddings["rte"].grad.abs().sum() > 0
    assert hyper.task_embeddings["mrpc"].grad is None  # not selected: untouched


@pytest.mark.parametrize("switch", ["conditional_layer_norm", "task_projector"])
def test_ablations_remove_what_they_name(switch):
    config = HyperConfig(tasks=TASKS, **{switch: False})
    hyper = Hypernetworks(config, L, H)
    w = hyper.generate("rte")[0, 0]
    if switch == "conditional_layer_norm":
        assert w.norm_weight is None and hyper.generators[0].norm is None
    else:
        assert isinstance(hyper.projector, torch.nn.Identity)
        assert hyper.embedding_norm.normalized_shape == (3 * config.task_embedding_dim,)


def test_bad_settings_fail_before_work():
    with pytest.raises(ValueError, match="at least one task"):
        HyperConfig(tasks=())
    with pytest.raises(ValueError, match="distinct"):
        HyperConfig(tasks=("rte", "rte"))
    hyper = Hypernetworks(HyperConfig(tasks=TASKS), L, H)
    with pytest.raises(ValueError, match="unknown task 'cb'; this hypernetwork knows: mrpc, rte"):
        hyper.generate("cb")
    with pytest.raises(RuntimeError, match="no task selected"):
        hyper.refresh()


def test_a_new_task_embedding_can_be_added_for_few_shot_transfer():
    hyper = Hypernetworks(HyperConfig(tasks=TASKS), L, H)
    hyper.add_task("cb", like="rte")
    assert torch.equal(hyper.generate("cb")[0, 0].down_weight, hyper.generate("rte")[0, 0].down_weight)
    with pytest.raises(ValueError, match="already"):
        hyper.add_task("rte")


def test_the_search_knobs_set_the_hypernetworks_init_and_their_own_learning_rate(tmp_path):
    """CoLA stayed at Matthews 0 for every rate of both hypernetwork methods: the search varies the
    hypernetworks' initial scale and gives them a rate apart from the heads'. Both leave earlier runs' ids alone."""
    plain = MultiTaskConfig(tasks=TASKS, method="hyperformer++", learning_rate=1e-4)
    config = plain.model_copy(update={"hypernetwork_init_std": 1e-2, "hypernetwork_learning_rate": 1e-3})
    assert "hypernetwork_init_std" not in plain.identity() and config.run_id != plain.run_id
    with pytest.raises(ConfigError, match="hypernetwork_learning_rate=0.001 does not apply to method 'houlsby'"):
        validate(MultiTaskConfig, {"tasks": TASKS, "method": "houlsby", "hypernetwork_learning_rate": 1e-3})
    model = build_multitask_model(config.resolved())
    generator = model.bert.hypernetworks.generators[0].down.weight
    assert generator.std().item() == pytest.approx(1e-2, rel=0.05)
    args = TrainingArguments(output_dir=str(tmp_path), learning_rate=1e-4, report_to=[], use_cpu=True)
    optimizer = own_rate_optimizer(Trainer(model=model, args=args), 1e-3, at_own_rate)
    rates = {}
    for group in optimizer.param_groups:
        rates[group["lr"]] = rates.get(group["lr"], 0) + sum(p.numel() for p in group["params"])
    hyper = sum(p.numel() for n, p in model.named_parameters() if n.startswith("bert.hypernetworks."))
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert rates == {1e-3: hyper, 1e-4: trained - hyper} and 0 < hyper < trained
