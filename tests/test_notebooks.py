"""The notebooks, run headless by papermill on smoke parameters, as a user would run them."""

import ast
import json
import re
from pathlib import Path

import nbformat
import papermill as pm
import pytest
import yaml
from pydantic_core import PydanticUndefined

from adaptstudy.data import resolve_task
from adaptstudy.data.metrics import compute_metrics, task_metric
from adaptstudy.launch import sweep
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.dsp import tables as dr
from adaptstudy.runs.base import ConfigError
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.notebook_params import AnalysisParams, BenchmarkParams, DataPrepParams, SweepParams
from adaptstudy.runs.predictions import decode, examples_sha256
from adaptstudy.runs.pretrain_config import PretrainConfig
from adaptstudy.runs.records import REQUIRED_FIELDS, read_records
from adaptstudy.training.splits import finetune_splits

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def run(name: str, out: Path, **parameters):
    return pm.execute_notebook(
        ROOT / "notebooks" / name, out, parameters=parameters, cwd=ROOT, kernel_name="python3", progress_bar=False
    )


def shown(nb) -> str:
    """Everything a reader sees in the outputs of an executed notebook: its HTML tables and Markdown notes."""
    return "".join(
        str(o.get("data", {}).get(kind, "")) for c in nb.cells for o in c.get("outputs", []) for kind in HTML_OR_MD
    )


HTML_OR_MD = ("text/html", "text/markdown")


def smoke(name: str) -> dict:
    return yaml.safe_load((ROOT / "params" / "smoke" / name).read_text())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebooks_have_no_outputs_and_one_parameters_cell(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert sum("parameters" in c.metadata.get("tags", []) for c in nb.cells) == 1


# A Styler `.format(precision=1)` followed by `.format({column: ...})` resets every other column to the default
# six decimals (pandas applies the second call to all columns): the rate tables showed 48.995984.
CHAINED_FORMAT = re.compile(r"\.format\([^{)]*precision=[^)]*\)\s*\.format\(")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_table_sets_a_precision_that_a_later_format_call_undoes(path):
    code = "".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    assert not CHAINED_FORMAT.search(code), CHAINED_FORMAT.search(code).group(0)


def test_the_chained_format_pattern_catches_the_styler_reset_it_names():
    import pandas as pd

    frame = pd.DataFrame({"rate": [1e-3], "score": [48.995984]})
    assert "48.995984" in frame.style.format(precision=1).format({"rate": "{:g}"}).to_html()
    assert "49.0" in frame.style.format({"rate": "{:g}"}, precision=1).to_html()
    assert CHAINED_FORMAT.search('x.style.format(precision=1, na_rep="–").format({"a": "{:g}"})')
    assert not CHAINED_FORMAT.search('x.style.format({"a": "{:g}"}, precision=1).hide(axis="index")')


# The model each notebook validates its parameters against, as its own parameters cell names it (every setting of
# it can be given to the notebook): a new notebook or page needs no line here.
PARAMETER_MODELS = {m.__name__: m for m in (DataPrepParams, PretrainConfig, FinetuneConfig, SweepParams)}
PARAMETER_MODELS |= {m.__name__: m for m in (AnalysisParams, BenchmarkParams)}


def parameters_model(path: Path) -> type:
    code = "".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    named = re.search(r"nb\.parameters\(globals\(\), _declared, (\w+)", code)
    assert named, f"{path.name}: no `nb.parameters(globals(), _declared, Model)` call"
    return PARAMETER_MODELS[named.group(1)]


MODELS = {p.name: parameters_model(p) for p in NOTEBOOKS}

# A valid value for each setting, away from its default where that is possible, with what it needs beside it
# (as papermill would inject them: plain literals). A setting missing here is given its default.
SETTINGS = {
    FinetuneConfig: {
        "task": {"task": "mrpc"},
        "method": {"method": "lora"},
        "backbone": {"backbone": "minilm-l3"},
        "seed": {"seed": 1},
        "learning_rate": {"learning_rate": 1e-3},
        "num_train_epochs": {"num_train_epochs": 2.0},
        "max_steps": {"max_steps": 10},
        "max_train_examples": {"max_train_examples": 64},
        "max_seq_length": {"max_seq_length": 64},
        "batch_size": {"batch_size": 8},
        "adapter_size": {"adapter_size": 16},
        "data_dir": {"data_dir": "/elsewhere/data"},
        "results_dir": {"results_dir": "/elsewhere/results"},
        "data_seed": {"data_seed": 1},
        "warmup_ratio": {"warmup_ratio": 0.06},
        "weight_decay": {"weight_decay": 0.01},
        "adam_beta2": {"adam_beta2": 0.98},
        "adam_epsilon": {"adam_epsilon": 1e-6},
        "eval_batch_size": {"eval_batch_size": 64},
        "precision": {"precision": "fp32"},
        "train_fraction": {"train_fraction": 0.5},
        "checkpoint_every_s": {"checkpoint_every_s": 0.0},
        "top_k_layers": {"method": "top_k", "top_k_layers": 2},
        "adapter_init_std": {"adapter_init_std": 1e-3},
        "layer_ablation": {"layer_ablation": True},
        "init_from": {"init_from": {"corpus": "news", "mode": "full"}},
        "adapter_use": {"init_from": {"corpus": "news", "mode": "seq_bn"}, "adapter_use": "stack"},
        "resplit_train_share": {"resplit_train_share": 0.8},
        "max_eval_examples": {"max_eval_examples": 64},
        "adapter_variant": {"adapter_variant": "parallel"},
        "fusion_sources": {
            "method": "fusion",
            "fusion_sources": ["rte", "mrpc"],
            "source_settings": {"method": "pfeiffer"},
        },
        "source_settings": {
            "method": "fusion",
            "fusion_sources": ["rte", "mrpc"],
            "source_settings": {"method": "houlsby", "adapter_size": 8},
        },
    },
    PretrainConfig: {
        "corpus": {"corpus": "news"},
        "mode": {"mode": "head"},
        "backbone": {"backbone": "minilm-l3"},
        "init_from": {"init_from": {"corpus": "general", "mode": "head"}},
        "exclude_eval_of": {"exclude_eval_of": ["imdb", "helpfulness"]},
        "adapter_size": {"mode": "seq_bn", "adapter_size": 16},
        "mlm_probability": {"mlm_probability": 0.2},
        "max_steps": {"max_steps": 5},
        "num_train_epochs": {"num_train_epochs": 2.0},
        "corpus_fraction": {"corpus_fraction": 0.5},
        "held_out_fraction": {"held_out_fraction": 0.1},
        "max_seq_length": {"max_seq_length": 64},
        "batch_size": {"batch_size": 8},
        "learning_rate": {"learning_rate": 5e-5},
        "warmup_ratio": {"warmup_ratio": 0.1},
        "weight_decay": {"weight_decay": 0.0},
        "adam_beta2": {"adam_beta2": 0.999},
        "adam_epsilon": {"adam_epsilon": 1e-8},
        "seed": {"seed": 1},
        "precision": {"precision": "fp32"},
        "data_dir": {"data_dir": "/elsewhere/data"},
        "results_dir": {"results_dir": "/elsewhere/results"},
        "output_dir": {"output_dir": "/elsewhere/artifact"},
        "checkpoint_every_s": {"checkpoint_every_s": 0.0},
    },
    DataPrepParams: {
        "task": {"task": "mrpc"},
        "backbone": {"backbone": "minilm-l3"},
        "max_seq_length": {"max_seq_length": 64},
        "data_dir": {"data_dir": "/elsewhere/data"},
    },
    SweepParams: {
        "sweep": {"sweep": "params/smoke/dsp.yaml"},
        "results_dir": {"results_dir": "/elsewhere/results"},
        "data_dir": {"data_dir": "/elsewhere/data"},
        "dry_run": {"dry_run": True},
    },
    AnalysisParams: {"results_dir": {"results_dir": "/elsewhere/results"}},
    BenchmarkParams: {"benchmark_dir": {"benchmark_dir": "/elsewhere/results"}},
}

# A misspelt setting per model, and the setting it should be taken for.
TYPOS = {
    FinetuneConfig: ("lerning_rate", "learning_rate"),
    PretrainConfig: ("lerning_rate", "learning_rate"),
    DataPrepParams: ("max_seq_lenght", "max_seq_length"),
    SweepParams: ("dryrun", "dry_run"),
    AnalysisParams: ("results_dri", "results_dir"),
    BenchmarkParams: ("benchmark_dri", "benchmark_dir"),
}


def check_parameters(name: str, **injected):
    """What papermill does, without a kernel: the cells up to the parameters cell, the injected values, then the
    validation cell up to its `parameters()` call; returns what that call returned."""
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    at = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    namespace: dict = {}
    for cell in code[: at + 1]:
        exec(compile(cell.source, name, "exec"), namespace)
    namespace.update(injected)
    body = ast.parse(code[at + 1].source).body
    call = next(i for i, s in enumerate(body) if isinstance(s, ast.Assign) and ".parameters(" in ast.unparse(s))
    exec(compile(ast.Module(body[: call + 1], type_ignores=[]), name, "exec"), namespace)
    return namespace[body[call].targets[0].id]


def test_every_notebook_has_a_parameters_model():
    assert set(MODELS) == {p.name for p in NOTEBOOKS}
    assert all(set(SETTINGS[model]) <= set(model.model_fields) for model in SETTINGS)


def _settings(name: str, field: str) -> dict:
    model = MODELS[name]
    if field in SETTINGS[model]:
        return SETTINGS[model][field]
    default = model.model_fields[field].default
    assert default is not PydanticUndefined, f"{model.__name__}.{field} has no default: add a value to SETTINGS"
    return {field: default}


@pytest.mark.parametrize(
    "name, field",
    [(name, field) for name, model in MODELS.items() for field in model.model_fields],
    ids=lambda v: v.removesuffix(".ipynb"),
)
def test_every_setting_of_the_model_can_be_given_to_the_notebook(name, field):
    settings = _settings(name, field)
    if name == "03_tapt.ipynb" and field == "corpus":  # TAPT's corpus is its task's training texts: set from `task`
        with pytest.raises(ConfigError, match=r"'corpus': this notebook sets it .*'task:acl-arc'"):
            check_parameters(name, **settings)
        return
    config = check_parameters(name, **settings)
    assert isinstance(config, MODELS[name])
    given = config.model_dump(mode="json")
    assert {k: given[k] for k in settings} == settings


@pytest.mark.parametrize("name", MODELS, ids=lambda v: v.removesuffix(".ipynb"))
def test_an_unknown_setting_fails_with_a_did_you_mean(name):
    typo, meant = TYPOS[MODELS[name]]
    with pytest.raises(ConfigError, match=rf"unknown notebook parameter '{typo}' \(did you mean '{meant}'\?\)"):
        check_parameters(name, **{typo: 1})


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    out = tmp_path_factory.mktemp("out") / "04.ipynb"
    run("04_finetune.ipynb", out, **smoke("finetune.yaml"), results_dir=str(results))
    return results, out


def test_finetune_notebook_writes_one_valid_record(smoke_run):
    results, _ = smoke_run
    files = list(results.glob("*.json"))
    assert len(files) == 1
    record = json.loads(files[0].read_text())
    assert set(REQUIRED_FIELDS) <= set(record)
    params = smoke("finetune.yaml")
    assert record["run_id"] == FinetuneConfig(**params).run_id == files[0].stem
    assert (record["status"], record["task"], record["method"]) == ("ok", "rte", "houlsby")
    assert 0 <= record["metrics"]["accuracy"] <= 100
    assert record["train_examples"] == params["max_train_examples"]
    assert record["trainable_params"] < 0.05 * record["total_params"]
    assert record["train_examples_per_s"] > 0 and record["peak_rss_mb"] > 0
    assert record["versions"]["adapters"] and len(record["history"]) == 1


def test_finetune_record_stores_predictions_that_give_its_metrics_again(smoke_run):
    results, _ = smoke_run
    record = json.loads(next(results.glob("*.json")).read_text())
    config = FinetuneConfig(**smoke("finetune.yaml"))
    dev = finetune_splits(config)[record["eval_split"]]
    stored = record["predictions"]
    assert (stored["split"], stored["examples"]) == ("dev", len(dev)) == ("dev", record["eval_examples"])
    assert stored["examples_sha256"] == examples_sha256(dev)
    recomputed = compute_metrics(resolve_task("rte").metrics, decode(stored), dev["label"])
    assert recomputed == pytest.approx(record["metrics"], abs=1e-9)
    shipped = task_metric(regression=False).compute(
        predictions=decode(stored), references=dev["label"], metric_names=resolve_task("rte").metrics
    )
    assert shipped == recomputed  # the `evaluate` module training scores with, on a real run's predictions


def test_finetune_notebook_shows_the_result(smoke_run):
    _, out = smoke_run
    nb = nbformat.read(out, as_version=4)
    shown = "".join(str(o.get("data", {}).get("text/plain", "")) for c in nb.cells for o in c.get("outputs", []))
    assert "train examples/s" in shown and "dev accuracy" in shown


def test_finetune_notebook_takes_settings_its_parameters_cell_does_not_declare(tmp_path):
    extra = {"max_eval_examples": 64, "precision": "fp32", "data_seed": 1}
    results = tmp_path / "r"
    run("04_finetune.ipynb", tmp_path / "04.ipynb", **smoke("finetune.yaml"), **extra, results_dir=str(results))
    (record,) = [json.loads(p.read_text()) for p in results.glob("*.json")]
    assert record["status"] == "ok" and {k: record["config"][k] for k in extra} == extra
    assert record["eval_examples"] == 64


def test_parameters_and_validation_cells_rerun_in_a_live_kernel(tmp_path):
    """In Jupyter the validation cell is re-run after later cells assigned names (`params`, `plan`), and the
    parameters cell is re-run to change a value: neither is an unknown parameter."""
    from nbclient import NotebookClient
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = load_notebook_node(str(ROOT / "notebooks" / "05_sweep.ipynb"))
    nb = parameterize_notebook(
        nb, {"sweep": "params/smoke/sweep.yaml", "results_dir": str(tmp_path / "s"), "dry_run": True}
    )
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    check = at + 2  # after the cell papermill injected
    assert "injected-parameters" in nb.cells[at + 1].metadata.tags and ".parameters(" in nb.cells[check].source
    client = NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(ROOT)}})
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                client.execute_cell(cell, i)  # raises on an error in the cell
        client.execute_cell(nb.cells[check], check)
        assert "study smoke_sweep: 4 cells" in _outputs(nb.cells[check])
        for i in (at, check):
            client.execute_cell(nb.cells[i], i)
    assert not (tmp_path / "s").exists()


def _outputs(cell) -> str:
    return "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)


@pytest.mark.parametrize(
    "parameters, message",
    [
        ({"lerning_rate": 1e-3}, r"unknown notebook parameter 'lerning_rate' \(did you mean 'learning_rate'\?\)"),
        ({"num_train_epochs": "many"}, r"notebook parameter num_train_epochs"),
        ({"method": "lora2"}, r"unknown method 'lora2'"),
    ],
)
def test_bad_notebook_parameters_fail_before_training(tmp_path, parameters, message):
    with pytest.raises(pm.PapermillExecutionError, match=message) as err:
        run("04_finetune.ipynb", tmp_path / "out.ipynb", results_dir=str(tmp_path / "r"), **parameters)
    assert err.value.ename == "ConfigError"
    assert not (tmp_path / "r").exists()


def test_data_prep_notebook_describes_a_task(tmp_path):
    nb = run("01_data_prep.ipynb", tmp_path / "01.ipynb", **smoke("data_prep.yaml"))
    shown = "".join(str(o.get("data", {}).get("text/plain", "")) for c in nb.cells for o in c.get("outputs", []))
    assert "3668" in shown and "408" in shown  # MRPC train and dev sizes
    assert any("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))


def test_analysis_notebook_renders_records_beside_published(smoke_run, tmp_path):
    results, _ = smoke_run
    nb = run("06_analysis.ipynb", tmp_path / "06.ipynb", results_dir=str(results))
    html = "".join(str(o.get("data", {}).get("text/html", "")) for c in nb.cells for o in c.get("outputs", []))
    assert "70.1" in html and "89.3" in html  # Houlsby et al.'s published numbers


@pytest.mark.slow
def test_sweep_notebook_runs_a_grid_then_skips_it_and_lists_it_dry(tmp_path):
    results = tmp_path / "s"
    first = run("05_sweep.ipynb", tmp_path / "a.ipynb", sweep="params/smoke/sweep.yaml", results_dir=str(results))
    records = [json.loads(p.read_text()) for p in results.glob("*.json")]
    assert len(records) >= 4 and {r["status"] for r in records} == {"ok"}
    assert "ran 4 ok" in _text(first)
    again = run("05_sweep.ipynb", tmp_path / "b.ipynb", sweep="params/smoke/sweep.yaml", results_dir=str(results))
    assert "ran 0 ok, skipped 4 already done, 0 failed" in _text(again)
    dry = run(
        "05_sweep.ipynb",
        tmp_path / "c.ipynb",
        sweep="params/smoke/sweep.yaml",
        results_dir=str(tmp_path / "d"),
        dry_run=True,
    )
    assert all(r["run_id"] in _text(dry) for r in records) and not (tmp_path / "d").exists()


def _text(nb) -> str:
    return "".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        for o in c.get("outputs", [])
    )


@pytest.mark.slow
def test_houlsby_chapter_renders_published_rows_with_and_without_records(smoke_run, tmp_path):
    results, _ = smoke_run
    for folder in (results, tmp_path / "none"):
        nb = run("06_analysis_houlsby.ipynb", tmp_path / "h.ipynb", results_dir=str(folder))
        html = shown(nb)
        assert "60.5" in html and "QQP, MNLI-M, MNLI-MM, QNLI: not run offline" in html  # CoLA full FT, published


@pytest.mark.slow
def test_peft_chapter_renders_ours_beside_the_report_from_a_smoke_sweep(tmp_path):
    results = tmp_path / "peft"
    done = sweep.run(sweep.plan(ROOT / "params/smoke/peft_imdb.yaml", results))
    assert done.counts()["ok"] == 8
    records = [json.loads(p.read_text()) for p in results.glob("*.json")]
    assert {r["backbone"] for r in records} == {"minilm-l6", "minilm-l3"}
    assert all(len(r["history"]) == 2 and r["history"][0]["train_epoch_s"] > 0 for r in records)
    assert {r["train_examples"] for r in records} == {32} and {r["eval_examples"] for r in records} == {64}
    nb = run("06_analysis_peft.ipynb", tmp_path / "p.ipynb", results_dir=str(results))
    html = "".join(str(o.get("data", {}).get("text/html", "")) for c in nb.cells for o in c.get("outputs", []))
    assert "published (TinyRoBERTa)" in html and "ours (minilm-l3)" in html
    assert html.count("(1)") >= 4  # ours: full and bitfit, seed 1 (seed 0 chose), on both backbones (90%/10%)


@pytest.mark.slow
def test_dapt_then_tapt_then_finetune_chain_through_the_notebooks(tmp_path, monkeypatch):
    """DAPT+TAPT as a user chains it: each notebook's artifact is the next one's init_from."""
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    records = tmp_path / "pretrain"
    run("02_dapt.ipynb", tmp_path / "02.ipynb", **smoke("dapt.yaml"), results_dir=str(records))
    (dapt,) = [json.loads(p.read_text()) for p in records.glob("*.json")]
    assert (
        dapt["status"] == "ok"
        and dapt["task"] == "mlm:news"
        and dapt["steps"] == 2
        and dapt["metrics"]["perplexity"] > 1
    )
    run(
        "03_tapt.ipynb",
        tmp_path / "03.ipynb",
        **smoke("tapt.yaml"),
        init_from=dapt["artifact"],
        results_dir=str(records),
    )
    (tapt,) = [json.loads(p.read_text()) for p in records.glob("*.json") if p.stem != dapt["run_id"]]
    assert tapt["task"] == "mlm:task:acl-arc" and tapt["config"]["init_from"] == dapt["artifact"]
    finetuned = tmp_path / "finetune"
    run(
        "04_finetune.ipynb",
        tmp_path / "04.ipynb",
        task="acl-arc",
        method="full",
        max_train_examples=32,
        num_train_epochs=1,
        max_seq_length=64,
        batch_size=16,
        init_from=tapt["artifact"],
        results_dir=str(finetuned),
    )
    (record,) = [json.loads(p.read_text()) for p in finetuned.glob("*.json")]
    assert record["status"] == "ok" and record["config"]["init_from"] == tapt["artifact"]
    assert FinetuneConfig(**record["config"]).identity()["init_from"] == tapt["run_id"]


def test_dsp_chapter_renders_the_papers_table_without_records(tmp_path):
    nb = run("06_analysis_dsp.ipynb", tmp_path / "d.ipynb", results_dir=str(tmp_path / "none"))
    html = shown(nb)
    assert "84.4 (0.4)" in html and "RCT: not in the mirror" in html  # ChemProt DAPT+TAPT, published; RCT's note


@pytest.mark.slow
def test_dsp_smoke_grid_runs_each_pretraining_once_and_the_chapter_reads_every_condition(tmp_path, monkeypatch):
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    results = tmp_path / "dsp"
    done = sweep.run(sweep.plan(ROOT / "params/smoke/dsp.yaml", results))
    assert done.counts()["ok"] == 9, done.table()
    pretraining = read_records(tmp_path / "dsp_pretrain")
    assert sorted(r["task"] for r in pretraining) == sorted(
        [
            "mlm:general",
            "mlm:neutral",
            "mlm:reviews",
            "mlm:news",
            "mlm:task:helpfulness",
            "mlm:task:helpfulness",
            "mlm:reviews",
        ]
    )
    assert all(r["excluded_eval_documents"] > 0 for r in pretraining if r["task"] == "mlm:reviews")
    runs = dr.label_runs(load_runs(results))
    assert set(runs["condition"]) == {"baseline", "control", "dapt", "not-dapt", "tapt", "dapt+tapt"}
    assert set(runs["adaptation"]) == {
        "full model",
        "pfeiffer adapter",
        "pfeiffer adapter, seq_bn pretrained (continue)",
        "pfeiffer adapter, seq_bn pretrained (stack)",
    }
    nb = run("06_analysis_dsp.ipynb", tmp_path / "d.ipynb", results_dir=str(tmp_path))
    html = "".join(str(o.get("data", {}).get("text/html", "")) for c in nb.cells for o in c.get("outputs", []))
    assert re.search(r"\d\.\d \(1\)", html) and "68.7 (1.8)" in html  # ours (one seed) beside the paper's


def test_across_chapter_renders_the_papers_numbers_without_records(tmp_path):
    nb = run("06_analysis_across.ipynb", tmp_path / "a.ipynb", results_dir=str(tmp_path / "none"))
    html = shown(nb)
    assert "76.82" in html and "63.73" in html and "81.77" in html  # fusion RTE, Hyperformer++ CoLA, IMDb k=4
    assert "BoolQ has no training data offline" in html
