"""AdapterFusion on real RTE/MRPC data: source adapters trained once and cached, only the fusion layers and the
head train, attention weights recorded, and a saved fusion setup reloads to identical predictions."""

import json

import pandas as pd
import pytest
import torch
from transformers import AutoTokenizer

from adaptstudy.claims.prerequisites import unaccepted
from adaptstudy.common.files import is_complete, mark_complete
from adaptstudy.data import load_task, resolve_task
from adaptstudy.models.backbones import resolve_backbone
from adaptstudy.models.methods import count_parameters
from adaptstudy.runs import frozen_artifacts
from adaptstudy.runs.base import ConfigError, validate
from adaptstudy.runs.finetune_config import FinetuneConfig, source_config, source_folder
from adaptstudy.training import runner
from adaptstudy.training.config_checks import checked
from adaptstudy.training.fusion import load_fusion, save_fusion
from adaptstudy.training.runner import run
from adaptstudy.training.starting_point import build_model

SOURCES = {
    "method": "pfeiffer",
    "adapter_size": 8,
    "learning_rate": 1e-3,
    "num_train_epochs": 1,
    "max_train_examples": 16,
    "max_seq_length": 48,
    "batch_size": 8,
    "seed": 0,
}
TINY = {
    "task": "rte",
    "method": "fusion",
    "fusion_sources": ["rte", "mrpc"],
    "source_settings": SOURCES,
    "num_train_epochs": 1,
    "max_train_examples": 16,
    "max_eval_examples": 32,
    "max_seq_length": 48,
    "batch_size": 8,
}


@pytest.fixture(scope="module")
def fused(tmp_path_factory, data_dir):
    """One tiny fusion run (it trains its two source adapters first), with its cache and results."""
    root = tmp_path_factory.mktemp("fusion")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ADAPTSTUDY_CACHE", str(root / "cache"))
        config = FinetuneConfig(**TINY, results_dir=str(root / "results"))
        record = run(config)
        model = build_model(config.resolved(), resolve_task("rte"))
        yield root, config, record, model


@pytest.mark.slow
def test_source_adapters_are_trained_once_into_the_cache_with_their_records(fused):
    root, config, record, _ = fused
    runs = [json.loads(p.read_text()) for p in (root / "results").glob("*.json")]
    sources = [r for r in runs if r["method"] == "pfeiffer"]  # written with the fusion run's record: they are ST-A runs
    assert sorted(r["task"] for r in sources) == ["mrpc", "rte"] and len(runs) == 3
    folders = list((root / "cache" / "adapters").iterdir())
    assert len(folders) == 2 and all(is_complete(f) for f in folders)


@pytest.mark.slow
def test_only_the_fusion_layers_and_the_head_train(fused):
    _, _, record, model = fused
    trained = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trained and all(".adapter_fusion_layer." in n or "classifier" in n or "pooler" in n for n in trained)
    assert any(".adapters.source_mrpc." in n for n, _ in model.named_parameters())  # loaded, frozen
    counts = count_parameters(model)
    assert counts["backbone_params"] == 22_713_216 - 384 * 384 - 384  # sources and fusion are not backbone
    assert record["trainable_params"] == counts["trainable_params"]


@pytest.mark.slow
def test_the_record_keeps_the_mean_attention_over_sources(fused):
    attention = fused[2]["fusion_attention"]
    assert set(attention) == {"rte", "mrpc"}
    assert sum(attention.values()) == pytest.approx(1.0, abs=1e-4)


@pytest.mark.slow
def test_the_n_1_control_fuses_the_targets_own_adapter_alone(fused, data_dir):
    """Same fusion layers and training over the target's adapter only: its attention is all on that adapter."""
    root, config, _, _ = fused
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ADAPTSTUDY_CACHE", str(root / "cache"))  # the RTE source adapter is already trained there
        alone = config.model_copy(update={"fusion_sources": ("rte",)})
        record = run(alone)
    assert record["status"] == "ok" and list(record["config"]["fusion_sources"]) == ["rte"]
    assert record["fusion_attention"] == pytest.approx({"rte": 1.0}, abs=1e-4)


@pytest.mark.slow
def test_a_saved_fusion_setup_reloads_to_the_same_predictions(fused, tmp_path, data_dir):
    root, config, _, model = fused
    with torch.no_grad():  # make the fusion layers and head differ from a fresh setup, as training would
        for param in model.parameters():
            if param.requires_grad:
                param.add_(torch.randn_like(param) * 0.05)
    model.eval()
    save_fusion(model, config, tmp_path / "saved")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "empty-cache"))  # the saved folder alone suffices
        reloaded = load_fusion(tmp_path / "saved")
    dev = load_task("rte", data_dir)["dev"].select(range(32))
    batch = AutoTokenizer.from_pretrained(resolve_backbone("minilm-l6"))(
        list(dev["text_a"]), list(dev["text_b"]), padding=True, truncation=True, max_length=64, return_tensors="pt"
    )
    with torch.inference_mode():
        before, after = model(**batch).logits, reloaded(**batch).logits
    assert torch.allclose(before, after, atol=1e-5)
    assert (before.argmax(-1) == after.argmax(-1)).all()


def test_bad_fusion_settings_fail_before_work():
    with pytest.raises(ConfigError, match="method 'fusion' needs fusion_sources and source_settings"):
        validate(FinetuneConfig, {"task": "rte", "method": "fusion"})
    with pytest.raises(ConfigError, match="source adapters are bottleneck adapters"):
        validate(FinetuneConfig, {**TINY, "source_settings": {**SOURCES, "method": "lora", "adapter_size": None}})
    with pytest.raises(ConfigError, match="at least two distinct tasks, or the target task alone"):
        validate(FinetuneConfig, {**TINY, "fusion_sources": ["mrpc"]})
    with pytest.raises(ConfigError, match="at least two distinct tasks"):
        validate(FinetuneConfig, {**TINY, "fusion_sources": ["rte", "rte"]})
    assert validate(FinetuneConfig, {**TINY, "fusion_sources": ["rte"]}).fusion_sources == ("rte",)  # N = 1
    assert source_folder(source_config("rte", SOURCES)).name == source_config("rte", SOURCES).run_id
    with pytest.raises(ConfigError, match=r"colla"):  # a task the registry does not know, checked before any work
        checked(FinetuneConfig, {**TINY, "source_settings": {**SOURCES, "per_task": {"colla": {"seed": 1}}}})
    alone = {**TINY, "fusion_sources": ["rte"], "source_settings": {**SOURCES, "per_task": {"cola": {"seed": 1}}}}
    assert validate(FinetuneConfig, alone).fusion_sources == ("rte",)  # settings shared with a wider fusion
    with pytest.raises(ConfigError, match="keep_adapter keeps a source adapter"):
        validate(FinetuneConfig, {"task": "rte", "method": "lora", "keep_adapter": True})


def test_a_source_takes_its_own_settings_over_the_shared_ones_and_keeps_its_run_id_as_a_plain_cell():
    """CoLA learned nothing from the 1,000 examples every source had: a source may train on more. A grid's ST-A cell
    with a source's settings and `keep_adapter` is that source (one run id): a fusion run then finds it trained."""
    settings = {**SOURCES, "per_task": {"mrpc": {"max_train_examples": 64, "num_train_epochs": 2}}}
    config = validate(FinetuneConfig, {**TINY, "source_settings": settings})
    rte, mrpc = (source_config(t, config.source_settings) for t in ("rte", "mrpc"))
    assert (rte.max_train_examples, rte.num_train_epochs) == (16, 1)
    assert (mrpc.max_train_examples, mrpc.num_train_epochs) == (64, 2) and mrpc.keep_adapter
    cell = FinetuneConfig(
        **{**SOURCES, "max_train_examples": 64, "num_train_epochs": 2}, task="mrpc", keep_adapter=True
    )
    assert cell.run_id == mrpc.run_id == cell.model_copy(update={"keep_adapter": False}).run_id
    assert config.source_adapter_folders()["mrpc"] == source_folder(cell)


@pytest.mark.slow
def test_a_source_trained_as_a_cell_of_its_own_is_the_one_fusion_uses(tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    cell = source_config("mrpc", SOURCES, str(tmp_path / "results"))
    assert run(cell)["run_id"] == cell.run_id and is_complete(source_folder(cell))

    def trained_again(*args, **kwargs):
        raise AssertionError("the source adapter was trained a second time")

    monkeypatch.setattr(runner, "finetune", trained_again)  # what trains a prerequisite
    alone = FinetuneConfig(
        **{**TINY, "task": "mrpc", "fusion_sources": ["mrpc"]}, results_dir=str(tmp_path / "results")
    )
    assert run(alone)["fusion_attention"] == pytest.approx({"mrpc": 1.0}, abs=1e-4)


@pytest.mark.parametrize("damage", ["truncated weights", "pickled weights", "garbage config"])
def test_a_damaged_cached_source_adapter_is_named_set_aside_and_trained_again(tmp_path, monkeypatch, damage, capsys):
    """A truncated or pickled `pytorch_adapter.bin` or a garbage `adapter_config.json` in the cache failed every
    fusion run with a bare OSError or JSONDecodeError naming no folder, rerun after rerun."""
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    config = FinetuneConfig(**TINY, results_dir=str(tmp_path / "r"))
    source = source_config("mrpc", config.source_settings, str(tmp_path / "r"))
    folder = source_folder(source)
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{not json" if damage == "garbage config" else "{}")
    weights = {"truncated weights": b"PK\x03\x04trunc", "pickled weights": b"\x80\x04cos\nsystem\n."}
    (folder / "pytorch_adapter.bin").write_bytes(weights.get(damage, b""))
    mark_complete(folder, {"kind": "adapter", "run_id": source.run_id})
    assert source.run_id in runner.pending_prerequisites(config)  # to train again
    out = capsys.readouterr().out
    assert f"the source adapter of mrpc at {folder} does not load" in out and "set aside" in out
    assert not folder.exists() and folder.with_name(f"{folder.name}-unloadable").is_dir()


@pytest.mark.slow
def test_frozen_source_adapters_travel_with_the_project_and_one_changed_byte_stops_their_runs(
    fused, tmp_path, monkeypatch
):
    """A confirmatory run builds on the frozen weights on every machine: on a machine whose cache is empty the
    frozen copies are used (nothing trains again), the record names their hash, a frozen copy changed by one byte
    is refused before any run starts from it, and a run on weights of another hash is no confirmatory run."""
    root, config, _, _ = fused
    monkeypatch.setattr(frozen_artifacts, "FROZEN", tmp_path / "frozen")
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(root / "cache"))
    sources = [source_config(t, config.source_settings, str(root / "results")) for t in config.fusion_sources]
    hashes = {s.run_id: frozen_artifacts.freeze(s.run_id, source_folder(s), "fusion", "a source") for s in sources}
    assert frozen_artifacts.main(["check"]) == 0

    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "new machine"))  # an empty cache

    def trained_again(*args, **kwargs):
        raise AssertionError("a frozen source adapter was trained again")

    monkeypatch.setattr(runner, "finetune", trained_again)  # what trains a prerequisite
    elsewhere = config.model_copy(update={"results_dir": str(tmp_path / "results")})
    record = run(elsewhere)
    assert {n["run_id"]: n["sha256"] for n in record["prerequisites"]} == hashes

    weights = next((tmp_path / "frozen" / sources[0].run_id).glob("*.bin"), None) or next(
        (tmp_path / "frozen" / sources[0].run_id).glob("*.safetensors")
    )
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(frozen_artifacts.FrozenArtifactError, match=sources[0].run_id):
        run(elsewhere.model_copy(update={"seed": 1}))
    assert frozen_artifacts.main(["check"]) == 2

    needs = [
        {**n, "record": json.loads((root / "results" / f"{n['run_id']}.json").read_text())}
        for n in record["prerequisites"]
    ]
    other = [{**needs[0], "sha256": "0" * 64}, *needs[1:]]
    runs = pd.DataFrame(
        {"run_id": ["frozen", "other"], "finished_at": [record["finished_at"]] * 2, "prerequisites": [needs, other]}
    )
    left_out = unaccepted(runs, since=pd.Timestamp(record["finished_at"]))
    assert list(left_out) == ["other"] and "another treatment" in left_out["other"]


@pytest.mark.slow
def test_a_grid_s_prerequisites_are_frozen_once_and_checked_after(fused, tmp_path, monkeypatch, capsys):
    """`launch.freeze_prerequisites` freezes each source adapter a confirmatory grid's cells start from once (from
    the cache where it is there), checks a frozen one against its hash the next time, and names a damaged one."""
    import yaml

    from adaptstudy.launch import freeze_prerequisites

    root, config, _, _ = fused
    monkeypatch.setattr(frozen_artifacts, "FROZEN", tmp_path / "frozen")
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(root / "cache"))
    monkeypatch.setattr(runner, "finetune", lambda *a, **k: pytest.fail("a cached source was trained again"))
    grid = tmp_path / "grid.yaml"
    fixed = {k: v for k, v in TINY.items() if k != "seed"}
    grid.write_text(yaml.safe_dump({"study": "fusion", "fixed": fixed, "axes": {"seed": [4, 5]}}))
    assert freeze_prerequisites.main([str(grid)]) == 0
    frozen = frozen_artifacts.manifest()
    assert len(frozen) == 2 and {e["study"] for e in frozen.values()} == {"fusion"}
    assert "2 prerequisites frozen" in capsys.readouterr().out
    assert freeze_prerequisites.main([str(grid)]) == 0 and frozen_artifacts.manifest() == frozen  # kept as they were
    (tmp_path / "frozen" / next(iter(frozen)) / "adapter_config.json").write_text("{}")
    assert freeze_prerequisites.main([str(grid)]) == 2
    assert f"the frozen prerequisite {next(iter(frozen))}" in capsys.readouterr().err
