"""MLM pieces on real review text: packing keeps every token, masked-only logits give the stock loss."""

import json

import pytest
import torch
from transformers import DataCollatorForLanguageModeling

from adaptstudy.data import resolve_task
from adaptstudy.data.encoding import pack_texts
from adaptstudy.models.backbones import load_tokenizer, resolve_backbone
from adaptstudy.models.mlm import load_mlm
from adaptstudy.runs.base import ConfigError, validate
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.pretrain_config import PretrainConfig
from adaptstudy.training.pretrain import build_pretraining_model, pretrain
from adaptstudy.training.starting_point import build_model, initial_weights


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


TINY_MLM = {"corpus_fraction": 0.01, "held_out_fraction": 0.01, "batch_size": 8, "max_seq_length": 64}


@pytest.mark.slow
def test_head_warmup_trains_only_the_head_and_learns(tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    model = build_pretraining_model(PretrainConfig(corpus="general", mode="head"))
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trained and all(n.startswith("mlm.cls.") for n in trained)
    assert not any("decoder.weight" in n for n in trained)  # tied to the frozen word embeddings
    record = pretrain(
        PretrainConfig(
            corpus="general", mode="head", max_steps=12, learning_rate=3e-3, results_dir=str(tmp_path / "r"), **TINY_MLM
        ),
        write=True,
    )
    assert record["metrics"]["held_out_loss"] < record["held_out_loss_before"] - 1.0
    assert record["corpus_documents"] > 100 and record["held_out_documents"] > 100
    assert (tmp_path / "r" / f"{record['run_id']}.json").is_file()


def test_finetuning_starts_from_a_full_artifact_and_names_it_by_run(tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    record = pretrain(PretrainConfig(corpus="task:acl-arc", mode="full", max_steps=2, **TINY_MLM), write=False)
    config = FinetuneConfig(task="acl-arc", method="full", init_from=record["artifact"])
    assert config.identity()["init_from"] == record["run_id"]
    adapted = build_model(config, resolve_task("acl-arc")).state_dict()
    plain = build_model(FinetuneConfig(task="acl-arc", method="full"), resolve_task("acl-arc")).state_dict()
    name = "bert.encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(adapted[name], plain[name])  # the pretrained weights, not the backbone's
    with pytest.raises(Exception, match="not a pretraining artifact"):
        FinetuneConfig(task="acl-arc", method="full", init_from=str(tmp_path))


@pytest.mark.slow
def test_a_killed_pretraining_run_resumes_from_its_checkpoint(tmp_path, data_dir):
    import signal
    import subprocess
    import sys
    import time

    import yaml

    fixed = {"corpus": "news", "mode": "full", "max_steps": 12, "checkpoint_every_s": 0, **TINY_MLM}
    grid = tmp_path / "g.yaml"
    grid.write_text(yaml.safe_dump({"study": "t", "kind": "pretrain", "fixed": fixed, "axes": {"seed": [3]}}))
    results = tmp_path / "r"
    env = {**__import__("os").environ, "ADAPTSTUDY_CACHE": str(tmp_path / "cache")}

    def start():
        return subprocess.Popen(
            [sys.executable, "-m", "adaptstudy.sweep", str(grid), "--results-dir", str(results)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    proc = start()
    deadline = time.time() + 300
    while not any(results.glob(".checkpoints/*/checkpoint-*/adaptstudy.json")):
        assert proc.poll() is None and time.time() < deadline, "no checkpoint before the run ended"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not list(results.glob("*.json"))
    assert start().wait() == 0
    (path,) = results.glob("*.json")
    record = json.loads(path.read_text())
    assert record["status"] == "ok" and record["resumed_from_step"] >= 1 and record["steps"] == 12


@pytest.fixture(scope="module")
def pretrained_adapter(tmp_path_factory, data_dir):
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ADAPTSTUDY_CACHE", str(tmp_path_factory.mktemp("cache")))
        return pretrain(
            PretrainConfig(corpus="task:acl-arc", mode="seq_bn", adapter_size=32, max_steps=2, **TINY_MLM), write=False
        )


def _weights(model, adapter):
    return {
        n.replace(f".{adapter}.", "."): p.detach().clone()
        for n, p in model.named_parameters()
        if f".adapters.{adapter}." in n
    }


def test_a_pretrained_adapter_is_continued_or_stacked_under_a_new_task_adapter(pretrained_adapter, data_dir):
    import adapters
    from adapters.composition import Stack
    from transformers import AutoModelForMaskedLM

    artifact = pretrained_adapter["artifact"]
    saved = AutoModelForMaskedLM.from_pretrained(resolve_backbone("minilm-l6"))
    adapters.init(saved)
    saved.load_adapter(artifact, load_as="x")
    expected = _weights(saved, "x")

    spec = resolve_task("acl-arc")
    cont = FinetuneConfig(task="acl-arc", method="pfeiffer", init_from=artifact, adapter_use="continue")
    assert cont.resolved().adapter_size == 32  # the pretrained adapter's size, not the method's default 64
    model = build_model(cont.resolved(), spec)
    ours = _weights(model, "task")
    assert ours.keys() == expected.keys() and all(torch.equal(ours[k], expected[k]) for k in ours)
    assert all(p.requires_grad for n, p in model.named_parameters() if ".adapters.task." in n)

    stacked = build_model(
        FinetuneConfig(
            task="acl-arc", method="pfeiffer", adapter_size=8, init_from=artifact, adapter_use="stack"
        ).resolved(),
        spec,
    )
    assert isinstance(stacked.active_adapters, Stack) and list(stacked.active_adapters) == ["pretrained", "task"]
    trained = {n for n, p in stacked.named_parameters() if p.requires_grad}
    assert not any(".pretrained." in n for n in trained) and any(".adapters.task." in n for n in trained)
    frozen = _weights(stacked, "pretrained")
    assert all(torch.equal(frozen[k], expected[k]) for k in expected)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"method": "pfeiffer"}, "say adapter_use='continue'"),
        ({"method": "houlsby", "adapter_use": "continue"}, "continued by method 'pfeiffer', not 'houlsby'"),
        ({"method": "lora", "adapter_use": "stack"}, "needs a bottleneck task adapter"),
        ({"method": "pfeiffer", "adapter_size": 16, "adapter_use": "continue"}, "has size 32"),
    ],
)
def test_adapter_artifacts_need_a_matching_use(pretrained_adapter, settings, message):
    with pytest.raises(ConfigError, match=message):
        validate(FinetuneConfig, {"task": "acl-arc", "init_from": pretrained_adapter["artifact"], **settings})


def test_an_adapters_mlm_training_continues_from_its_artifact(pretrained_adapter, tmp_path, monkeypatch):
    """An adapter's DAPT+TAPT: the second run starts from the first's adapter (its weights, width and base model),
    trains it on, and leaves an artifact that fine-tuning continues like any other."""
    from adaptstudy.runs.artifacts import artifact_meta

    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    first = pretrained_adapter["artifact"]
    config = PretrainConfig(corpus="task:acl-arc", mode="seq_bn", init_from=first, max_steps=2, **TINY_MLM)
    assert config.continues_adapter and config.adapter_width(384) == 32
    model = build_pretraining_model(config)
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    head = {n for n in trained if n.startswith("mlm.cls.predictions.transform.")}  # trains, is not kept (docstring)
    assert head and all(".adapters.mlm." in n for n in trained - head)
    saved = _weights(model.mlm, "mlm")
    parent = PretrainConfig(corpus="task:acl-arc", mode="seq_bn", adapter_size=32, **TINY_MLM)
    fresh = _weights(build_pretraining_model(parent).mlm, "mlm")
    assert saved.keys() == fresh.keys() and not all(torch.equal(saved[k], fresh[k]) for k in saved)

    record = pretrain(config, write=False)
    meta = artifact_meta(record["artifact"])
    assert meta["mode"] == "seq_bn" and meta["adapter_size"] == 32 and meta["base"] == artifact_meta(first)["base"]
    assert config.identity()["init_from"] == pretrained_adapter["run_id"]
    again = PretrainConfig(corpus="task:acl-arc", mode="seq_bn", init_from=record["artifact"], **TINY_MLM)
    trained = _weights(build_pretraining_model(again).mlm, "mlm")
    assert not all(torch.equal(trained[k], saved[k]) for k in saved)
    task = build_model(
        FinetuneConfig(
            task="acl-arc", method="pfeiffer", init_from=record["artifact"], adapter_use="continue"
        ).resolved(),
        resolve_task("acl-arc"),
    )
    ours = _weights(task, "task")
    assert all(torch.equal(ours[k], trained[k]) for k in trained)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"mode": "full"}, "only mode 'seq_bn' continues it, not 'full'"),
        ({"mode": "unipelt"}, "only mode 'seq_bn' continues it, not 'unipelt'"),
        ({"mode": "seq_bn", "adapter_size": 16}, "has size 32"),
    ],
)
def test_a_pretraining_run_continues_an_adapter_only_in_its_mode_and_width(pretrained_adapter, settings, message):
    with pytest.raises(ConfigError, match=message):
        validate(PretrainConfig, {"corpus": "task:rte", "init_from": pretrained_adapter["artifact"], **settings})


def test_init_from_may_name_a_pretraining_run_by_its_settings(tmp_path, data_dir, monkeypatch):
    """Grids chain runs by settings, not by machine-specific paths: the settings name the artifact in the cache."""
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    settings = {"corpus": "task:acl-arc", "mode": "full", "max_steps": 1, **TINY_MLM}
    config = FinetuneConfig(task="acl-arc", method="full", init_from=settings)  # valid before the pretraining has run
    with pytest.raises(FileNotFoundError, match="run its pretraining grid"):
        initial_weights(config)
    record = pretrain(PretrainConfig(**settings), write=False)
    assert config.identity()["init_from"] == record["run_id"]
    assert initial_weights(config) == record["artifact"]
    chained = PretrainConfig(corpus="task:acl-arc", mode="full", max_steps=1, init_from=settings, **TINY_MLM)
    assert chained.identity()["init_from"] == record["run_id"]


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"mode": "lora"}, "mode 'lora' is not a pretraining mode; valid: head, full, seq_bn, unipelt"),
        ({"mode": "unipelt", "adapter_size": 32}, "adapter_size=32 applies only to mode 'seq_bn', not 'unipelt'"),
    ],
)
def test_pretraining_modes_are_full_head_and_the_adapters_methods_continue(settings, message):
    """The adapter modes come from the methods that continue them (`Method.continues`), not from a list here."""
    with pytest.raises(ConfigError, match=message):
        validate(PretrainConfig, {"corpus": "task:rte", **settings})
    assert PretrainConfig(corpus="task:rte", mode="seq_bn", adapter_size=32).sized
    assert not PretrainConfig(corpus="task:rte", mode="unipelt").sized


def test_a_method_that_continues_a_pretraining_mode_says_which_adapter_it_trains(monkeypatch):
    from adaptstudy.models.methods import Method
    from adaptstudy.runs.method_catalog import METHOD_FACTS, MethodFacts

    monkeypatch.setitem(METHOD_FACTS, "mine", MethodFacts("mine", "a toy", continues="seq_bn"))
    with pytest.raises(ValueError, match="continues pretraining mode 'seq_bn' but has no `pretraining_adapter`"):
        Method("mine", trainable=lambda *_: True)
