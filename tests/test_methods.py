import re

import adapters
import pytest
import torch
from adapters import SeqBnConfig
from transformers import AutoConfig, AutoModel, AutoTokenizer

from adaptstudy.data import load_task, resolve_task
from adaptstudy.models.backbones import resolve_backbone
from adaptstudy.models.methods import METHODS, adapters_removed, count_parameters, is_head
from adaptstudy.models.methods.base import Method, check_adapter_widths, is_added, layer_index
from adaptstudy.runs.base import ConfigError, validate
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.method_catalog import METHOD_FACTS, MethodFacts
from adaptstudy.runs.method_settings import HypernetworkSettings, TopK
from adaptstudy.training.config_checks import checked
from adaptstudy.training.runner import run
from adaptstudy.training.starting_point import build_model

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


@pytest.mark.parametrize("method", ["houlsby", "pfeiffer", "task_adapters"])
@pytest.mark.parametrize("size", [13, 1000])
def test_the_adapters_built_are_as_wide_as_asked(method, size):
    """`adapters` builds int(hidden // reduction_factor): 384 / 13 used to build 12, 384 / 1000 built 999."""
    counts = count_parameters(_model(method, adapter_size=size))
    assert counts["adapter_widths"] == [size]
    per_layer = 2 if method == "houlsby" else 1
    assert counts["adapters_reported_params"] == L * per_layer * (H * size + size + size * H + H)


def test_an_adapter_built_narrower_than_asked_stops_before_training():
    model = _model("full")
    adapters.init(model)
    model.add_adapter("task", config=SeqBnConfig(reduction_factor=H / 13))  # the old rounding: 12 wide
    with pytest.raises(ValueError, match="adapter_size 13: the adapters built are 12 wide on hidden size 384"):
        check_adapter_widths(model, 13)
    check_adapter_widths(_model("full"), 13)  # no adapters: nothing to check


def test_a_method_taking_a_setting_it_cannot_serve_is_refused_when_defined(monkeypatch):
    """Multi-task training asks the method for a transfer and its own-rate parameters: one that takes the settings
    without giving them is an error at registration, not a crash mid-run; an undeclared method is refused by name."""
    monkeypatch.setitem(METHOD_FACTS, "half", MethodFacts("half", "?", settings=(HypernetworkSettings,)))
    with pytest.raises(
        ValueError, match=r"takes transfer_from but no `transfer`; takes hypernetwork_learning_rate but no"
    ):
        Method("half", trainable=lambda *_: True)
    with pytest.raises(ConfigError, match="unknown method 'undeclared'; valid: full, houlsby"):
        Method("undeclared", trainable=lambda *_: True)
    assert METHODS.get("hyperformer++").transfer is not None and METHODS.get("hyperformer").own_rate is not None


def test_bitfit_trains_biases_and_head():
    counts = count_parameters(_model("bitfit"))
    per_layer = 4 * H + FF + H + 2 * H  # q, k, v, attention output, intermediate, output, two layer norms
    assert counts["trainable_params"] == L * per_layer + H + HEAD  # + the embeddings' layer-norm bias


def _backbone_and_adapted(data_dir, n: int, config: FinetuneConfig):
    """A batch of `n` real RTE dev pairs, the plain backbone, and the backbone with Houlsby adapters."""
    path = resolve_backbone("minilm-l6")
    dev = load_task("rte", data_dir)["dev"].select(range(n))
    batch = AutoTokenizer.from_pretrained(path)(
        list(dev["text_a"]), list(dev["text_b"]), padding=True, truncation=True, max_length=128, return_tensors="pt"
    )
    adapted = METHODS.get("houlsby").apply(AutoModel.from_pretrained(path), config)
    return batch, AutoModel.from_pretrained(path).eval(), adapted.eval()


def test_houlsby_starts_near_identity(data_dir):
    """Before training, adapters change what the head sees (the pooled output) by less than 1e-2,
    and the hidden states by less than 1e-2 on average."""
    batch, plain, adapted = _backbone_and_adapted(data_dir, 16, FinetuneConfig(adapter_size=64, seed=1))
    with torch.inference_mode():
        a, b = plain(**batch), adapted(**batch)
    pooled = (a.pooler_output - b.pooler_output).abs().max().item()
    hidden = (a.last_hidden_state - b.last_hidden_state).abs()[batch["attention_mask"].bool()].mean().item()
    assert 0 < pooled < 1e-2  # adapters are active (not exactly 0) yet near-identity
    assert 0 < hidden < 1e-2


def test_unknown_method_lists_valid_names():
    with pytest.raises(
        Exception,
        match=r"unknown method 'houlsbi' \(did you mean 'houlsby'\?\); valid: bitfit, compacter, embeddings_only, "
        r"encoder_only, full, fusion, head_only, houlsby, hyperformer, hyperformer\+\+, ia3, layernorm, lora, "
        r"pfeiffer, "
        r"prefix_tuning, prompt_tuning, task_adapters, top_k, unipelt",
    ):
        METHODS.get("houlsbi")


def test_pfeiffer_trains_one_adapter_per_layer_and_head():
    counts = count_parameters(_model("pfeiffer", adapter_size=64))
    adapters = L * (H * 64 + 64 + 64 * H + H)  # one bottleneck per layer, after the feed-forward block
    assert counts["adapters_reported_params"] == adapters
    assert counts["trainable_params"] == adapters + HEAD


@pytest.mark.parametrize("k", [1, 3, L])
def test_top_k_trains_exactly_the_top_k_layers_and_head(k):
    model = _model("top_k", top_k_layers=k)
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    expected = {n for n, _ in model.named_parameters() if any(f".layer.{i}." in n for i in range(L - k, L))}
    assert trained - expected == {n for n in trained if n.startswith(("bert.pooler.", "classifier."))}
    assert expected <= trained
    per_layer = 4 * (H * H + H) + (H * FF + FF) + (FF * H + H) + 2 * 2 * H
    assert count_parameters(model)["trainable_params"] == k * per_layer + HEAD


def test_layernorm_trains_only_layer_norms_and_head():
    model = _model("layernorm")
    trained = [n for n, p in model.named_parameters() if p.requires_grad]
    assert all("LayerNorm" in n or n.startswith(("bert.pooler.", "classifier.")) for n in trained)
    assert count_parameters(model)["trainable_params"] == LAYER_NORMS + HEAD


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"method": "top_k"}, r"method 'top_k' needs top_k_layers"),
        ({"method": "top_k", "top_k_layers": 7}, r"between 1 and 6 .* got 7"),
        (
            {"method": "full", "top_k_layers": 2},
            r"top_k_layers=2 does not apply to method 'full'; methods that take it: top_k",
        ),
        (
            {"method": "layernorm", "adapter_init_std": 1e-3},
            r"adapter_init_std=0.001 does not apply to method 'layernorm'",
        ),
    ],
)
def test_method_settings_that_do_not_fit_are_rejected(settings, message):
    with pytest.raises(Exception, match=message):
        checked(FinetuneConfig, {"task": "rte", **settings})


def test_adapter_init_std_sets_the_scale_of_adapter_weights():
    for std in (1e-4, 1e-1):
        model = _model("houlsby", adapter_size=64, adapter_init_std=std)
        weights = torch.cat(
            [p.flatten() for n, p in model.named_parameters() if ".adapters." in n and n.endswith("weight")]
        )
        assert weights.abs().max() <= 2 * std + 1e-12
        assert weights.std().item() == pytest.approx(0.88 * std, rel=0.05)  # N(0, std) truncated at 2 std
        assert all(p.abs().max() == 0 for n, p in model.named_parameters() if ".adapters." in n and n.endswith("bias"))


def test_removing_adapters_at_evaluation_restores_the_backbone_in_those_layers(data_dir):
    """With every adapter removed, a trained-looking adapter model computes exactly the backbone;
    with some removed, the hidden states of the layers below the first kept adapter match it too."""
    batch, plain, adapted = _backbone_and_adapted(data_dir, 8, FinetuneConfig(adapter_size=8, adapter_init_std=0.5))
    with torch.inference_mode():
        base = plain(**batch, output_hidden_states=True).hidden_states
        changed = adapted(**batch, output_hidden_states=True).hidden_states
        with adapters_removed(adapted, range(L)):
            removed = adapted(**batch).last_hidden_state
        with adapters_removed(adapted, range(3)):
            lower = adapted(**batch, output_hidden_states=True).hidden_states
        restored = adapted(**batch).last_hidden_state
    assert (changed[-1] - base[-1]).abs().max() > 0.1  # large adapters really change the output
    assert torch.allclose(removed, base[-1], atol=1e-5)
    assert torch.allclose(lower[3], base[3], atol=1e-5) and not torch.allclose(lower[4], base[4], atol=1e-3)
    assert torch.equal(restored, changed[-1])


@pytest.mark.parametrize("variant", ["layer_norm_inside", "two_layer", "tanh", "attention_only", "parallel"])
def test_houlsby_variants_add_what_they_say_and_train_only_adapters_norms_and_head(variant):
    model = _model("houlsby", adapter_size=8, adapter_variant=variant)
    adapter_names = [n for n, _ in model.named_parameters() if ".adapters." in n]
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    assert set(adapter_names) <= trained
    assert all(".adapters." in n or "LayerNorm" in n or n.startswith(("bert.pooler.", "classifier.")) for n in trained)
    plain = count_parameters(_model("houlsby", adapter_size=8))["adapters_reported_params"]
    reported = count_parameters(model)["adapters_reported_params"]
    expected = {
        "layer_norm_inside": plain + 2 * L * 2 * H,
        "two_layer": plain + 2 * L * (8 * 8 + 8),
        "tanh": plain,
        "attention_only": plain // 2,
        "parallel": plain,
    }[variant]
    assert reported == expected
    if variant == "attention_only":
        assert not any(re.search(r"layer\.\d+\.output\.adapters\.", n) for n in adapter_names)  # none after the FFN


EMBEDDINGS = 30522 * H + 512 * H + 2 * H + 2 * H  # word, position, token type, layer norm
LAYER = 4 * (H * H + H) + (H * FF + FF) + (FF * H + H) + 2 * 2 * H


def _trained(model) -> set[str]:
    return {n for n, p in model.named_parameters() if p.requires_grad}


def test_embeddings_only_trains_the_embedding_layer_and_head():
    model = _model("embeddings_only")
    assert count_parameters(model)["trainable_params"] == EMBEDDINGS + HEAD
    assert all(".embeddings." in n or re.search(r"(classifier|pooler)\.", n) for n in _trained(model))


def test_encoder_only_trains_every_layer_but_not_the_embeddings():
    model = _model("encoder_only")
    assert count_parameters(model)["trainable_params"] == L * LAYER + HEAD
    assert not any(".embeddings." in n for n in _trained(model))


@pytest.mark.parametrize(
    "method, added",
    [
        ("prompt_tuning", 20 * H),  # 20 soft tokens
        ("lora", L * 2 * (8 * H + H * 8)),  # A and B on query and value, r 8
        ("ia3", L * (H + H + FF)),  # key, value and feed-forward scaling vectors
        ("compacter", None),
        ("prefix_tuning", None),
        ("unipelt", None),
    ],
)
def test_library_methods_train_only_what_they_add_and_the_head(method, added):
    model = _model(method)
    counts = count_parameters(model)
    extra = counts["total_params"] - counts["backbone_params"] - HEAD
    assert counts["backbone_params"] == EMBEDDINGS + L * LAYER  # nothing added is counted as backbone
    assert counts["trainable_params"] == extra + HEAD  # every added weight trains, no backbone weight does
    if added is not None:
        assert extra == added
    assert 0 < extra < counts["backbone_params"] / 5


@pytest.mark.parametrize("method, generators", [("hyperformer", 2 * L), ("hyperformer++", 1)])
def test_hyperformer_trains_hypernetworks_layer_norms_and_head(method, generators):
    model = _model(method)
    counts = count_parameters(model)
    r, d = 24, 64  # bottleneck, task embedding (= projected) width
    per_generator = (d + 1) * (2 * (r * H) + r + H) + (d + 1) * 2 * H  # down, up, conditional layer norm
    embeddings = d + (L * d + 2 * d if method == "hyperformer++" else 0)  # one task; layer and position ids for ++
    projector_in = 3 * d if method == "hyperformer++" else d
    projector = (projector_in + 1) * 128 + (128 + 1) * d + 2 * d  # two-layer MLP, then a layer norm
    added = generators * per_generator + embeddings + projector
    assert counts["total_params"] == counts["backbone_params"] + HEAD + added  # hypernetworks are not backbone
    assert counts["trainable_params"] == added + LAYER_NORMS + HEAD
    assert model.bert.hypernetworks.current_task == "rte"


@pytest.mark.parametrize(
    "method",
    ["embeddings_only", "prompt_tuning", "lora", "ia3", "prefix_tuning", "compacter", "unipelt", "hyperformer++"],
)
def test_a_training_step_moves_only_the_trained_weights(method, data_dir):
    model = _model(method, seed=3)
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    trained = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    dev = load_task("rte", data_dir)["dev"].select(range(8))
    batch = AutoTokenizer.from_pretrained(resolve_backbone("minilm-l6"))(
        list(dev["text_a"]), list(dev["text_b"]), padding=True, truncation=True, max_length=64, return_tensors="pt"
    )
    model.train()
    loss = model(**batch, labels=torch.tensor(dev["label"])).loss
    loss.backward()
    torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1.0).step()
    params = dict(model.named_parameters())
    assert all(torch.equal(params[n], v) for n, v in frozen.items())
    moved = [n for n, v in trained.items() if not torch.equal(params[n], v)]
    assert any(not re.search(r"(classifier|pooler)\.", n) for n in moved), f"{method}: only the head moved"


def test_a_method_registered_from_a_test_alone_trains_through_the_notebooks_code_path(tmp_path, data_dir, monkeypatch):
    """The whole cost of a new method: its facts and one `Method`, registered. This one trains the biases of the top
    `top_k_layers` layers (a setting its facts declare, so it takes it and `full` still refuses it) and the head."""

    def top_biases(name, model, config):
        index = layer_index(name)
        top = index is not None and index >= model.config.num_hidden_layers - config.top_k_layers
        return is_head(name) or (top and name.endswith(".bias") and not is_added(name))

    monkeypatch.setitem(METHOD_FACTS, "toy", MethodFacts("toy", "biases of the top layers + head", settings=(TopK,)))
    toy = Method("toy", trainable=top_biases)
    monkeypatch.setitem(METHODS._entries, toy.name, toy)
    config = FinetuneConfig(
        task="rte",
        method="toy",
        top_k_layers=2,
        num_train_epochs=1,
        max_train_examples=16,
        max_eval_examples=16,
        max_seq_length=32,
        batch_size=8,
        data_dir=str(data_dir),
        results_dir=str(tmp_path),
    )
    record = run(config)
    assert record["status"] == "ok" and record["method"] == "toy" and record["metrics"]
    per_layer = 4 * H + FF + H + 2 * H  # q, k, v, attention output, intermediate, output, two layer norms
    assert record["trainable_params"] == 2 * per_layer + HEAD
    with pytest.raises(
        ConfigError, match="top_k_layers=2 does not apply to method 'full'; methods that take it: top_k, toy"
    ):
        validate(FinetuneConfig, {"method": "full", "top_k_layers": 2})


def test_each_setting_is_declared_once_by_its_family_and_the_run_configs_inherit_it():
    """A method's settings are models beside it (`models/methods`); fine-tuning and multi-task configs offer the
    fields of the families their runs take, each once, with the family's bounds."""
    from adaptstudy.models.methods import settings_for
    from adaptstudy.runs.multitask_config import MultiTaskConfig

    for config, kind in ((FinetuneConfig, "finetune"), (MultiTaskConfig, "multitask")):
        for model in settings_for(kind):
            assert issubclass(config, model)
            assert all(repr(config.model_fields[n]) == repr(f) for n, f in model.model_fields.items())
    assert (
        "hypernetwork_init_std" not in FinetuneConfig.model_fields
        and "top_k_layers" not in MultiTaskConfig.model_fields
    )
    assert METHODS.get("houlsby").takes >= {"adapter_size", "adapter_variant", "layer_ablation"}
    with pytest.raises(ConfigError, match="adapter_size: Input should be greater than or equal to 1"):
        validate(MultiTaskConfig, {"tasks": ["rte"], "method": "task_adapters", "adapter_size": 0})


SINGLE_TASK = [  # every method a plain fine-tuning config builds (fusion needs trained sources; the rest multi-task)
    n for n in METHODS.names() if n not in {"fusion", "task_adapters", "hyperformer", "hyperformer++"}
]


@pytest.mark.parametrize("method", SINGLE_TASK)
def test_every_weight_a_method_adds_is_counted_as_added(method):
    """A method's added weights are what its registration declares (`Method.adds`): every parameter the method puts
    beside the backbone's is `is_added`, so `backbone_params` is the backbone's own size whatever the method."""
    plain = {n for n, _ in _model("full").named_parameters()}
    model = _model(method, **({"top_k_layers": 2} if method == "top_k" else {}))
    new = [n for n, _ in model.named_parameters() if n not in plain]
    assert all(is_added(n) for n in new), [n for n in new if not is_added(n)][:3]
    assert bool(new) == bool(METHODS.get(method).adds)
    assert count_parameters(model)["backbone_params"] == count_parameters(_model("full"))["backbone_params"]


def test_a_new_family_declares_the_weights_it_adds_and_every_count_follows(monkeypatch):
    """A toy family (a learned scale per attention output) whose facts declare `adds`: its weights are added, not
    backbone; forgetting `adds` would count them into the backbone (22,567,680 for 22,565,376)."""
    from torch import nn

    def add_scales(model, config):
        for layer in model.bert.encoder.layer:
            layer.attention.output.scaled_bias = nn.Linear(1, H, bias=False)
        return model

    model = _model("full")
    backbone = count_parameters(model)["backbone_params"]
    monkeypatch.setitem(METHOD_FACTS, "scaled_bias_forgotten", MethodFacts("scaled_bias_forgotten", "?"))
    assert count_parameters(add_scales(_model("full"), None))["backbone_params"] == backbone + L * H  # miscounted
    scales = MethodFacts("scaled_bias", "a learned scale per attention output", adds=("scaled_bias",))
    monkeypatch.setitem(METHOD_FACTS, "scaled_bias", scales)
    counts = count_parameters(add_scales(_model("full"), None))
    assert counts["backbone_params"] == backbone and counts["total_params"] == backbone + HEAD + L * H


@pytest.mark.slow
def test_the_guides_new_family_is_one_module_and_one_registration_and_runs_through_04_finetune(tmp_path, monkeypatch):
    """The extending guide's worked example, as a contributor follows it in a copy of the project: its facts in the
    catalog, its module, its import in the registry and its line in the methods' list; `04_finetune` trains it, and
    the record counts its scales as trained and added (6 layers × 384), the backbone as the backbone's own."""
    import shutil
    import textwrap

    import papermill as pm
    import yaml

    from adaptstudy.common.paths import PROJECT_ROOT
    from adaptstudy.runs.records import read_records

    guide = (PROJECT_ROOT / "book" / "guides" / "extending.md").read_text(encoding="utf-8")
    blocks = dict(re.findall(r"<!-- example: (\S+) -->\n\s*```python\n(.*?)\n\s*```", guide, flags=re.S))
    module, registration = textwrap.dedent(blocks["src/adaptstudy/models/methods/scaled_bias.py"]), blocks["registry"]
    shutil.copytree(PROJECT_ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "src/adaptstudy/models/methods/scaled_bias.py").write_text(module)
    registry = tmp_path / "src/adaptstudy/models/methods/registry.py"
    text = registry.read_text()
    text = text.replace(
        "from adaptstudy.common.registry import Registry\n",
        f"from adaptstudy.common.registry import Registry\n{registration.strip()}\n",
    )
    text = text.replace("):\n    METHODS.add(_m.name, _m)", "    SCALED_BIAS,\n):\n    METHODS.add(_m.name, _m)")
    registry.write_text(text)
    catalog = tmp_path / "src/adaptstudy/runs/method_catalog.py"
    facts = textwrap.indent(textwrap.dedent(blocks["facts"]), "    ")
    assert "\n)\n\nMETHOD_FACTS" in catalog.read_text()
    catalog.write_text(catalog.read_text().replace("\n)\n\nMETHOD_FACTS", f"\n{facts}\n)\n\nMETHOD_FACTS"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "src"))  # the kernel papermill starts imports the copy
    smoke = yaml.safe_load((PROJECT_ROOT / "params/smoke/finetune.yaml").read_text())
    parameters = {k: v for k, v in smoke.items() if k != "adapter_size"} | {"method": "scaled_bias"}
    results = tmp_path / "results"
    pm.execute_notebook(
        PROJECT_ROOT / "notebooks/04_finetune.ipynb",
        tmp_path / "out.ipynb",
        parameters={**parameters, "results_dir": str(results)},
        cwd=PROJECT_ROOT,
        kernel_name="python3",
        progress_bar=False,
    )
    (record,) = read_records(results)
    backbone = count_parameters(_model("full"))["backbone_params"]
    assert record["method"] == "scaled_bias" and record["backbone_params"] == backbone
    assert record["trainable_params"] == L * H + HEAD and record["total_params"] == backbone + HEAD + L * H


def test_the_catalog_says_what_the_adapters_package_attaches_and_a_config_builds_without_torch():
    """A method's facts are data a run config reads without torch; the library methods' `attaches` in the catalog
    are what the `adapters` package reads from their configs."""
    import subprocess
    import sys

    from adaptstudy.models.methods.library import attached
    from adaptstudy.runs.method_catalog import PROMPT_TOKENS

    library = {
        "prompt_tuning": ("PromptTuningConfig", {"prompt_length": PROMPT_TOKENS}),
        "lora": ("LoRAConfig", {}),
        "ia3": ("IA3Config", {}),
        "prefix_tuning": ("PrefixTuningConfig", {}),
        "compacter": ("CompacterConfig", {}),
        "unipelt": ("UniPELTConfig", {}),
    }
    for name, (config_class, options) in library.items():
        assert METHOD_FACTS[name].attaches == attached(config_class, **options), name
    code = (
        "import sys; from adaptstudy.runs.finetune_config import FinetuneConfig; "
        "c = FinetuneConfig(task='mrpc', method='houlsby', adapter_size=64).resolved(); "
        "print(c.learning_rate, 'torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0.001", "False"]
