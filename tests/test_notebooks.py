"""The notebooks, run headless by papermill on smoke parameters, as a user would run them."""

import json
from pathlib import Path

import nbformat
import papermill as pm
import pytest
import yaml

from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.records import REQUIRED_FIELDS

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def run(name: str, out: Path, **parameters):
    return pm.execute_notebook(
        ROOT / "notebooks" / name, out, parameters=parameters, cwd=ROOT, kernel_name="python3", progress_bar=False
    )


def smoke(name: str) -> dict:
    return yaml.safe_load((ROOT / "params" / "smoke" / name).read_text())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebooks_have_no_outputs_and_one_parameters_cell(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert sum("parameters" in c.metadata.get("tags", []) for c in nb.cells) == 1


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


def test_finetune_notebook_shows_the_result(smoke_run):
    _, out = smoke_run
    nb = nbformat.read(out, as_version=4)
    shown = "".join(str(o.get("data", {}).get("text/plain", "")) for c in nb.cells for o in c.get("outputs", []))
    assert "train examples/s" in shown and "dev accuracy" in shown


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


def test_houlsby_chapter_renders_published_rows_with_and_without_records(smoke_run, tmp_path):
    results, _ = smoke_run
    for folder in (results, tmp_path / "none"):
        nb = run("06_analysis_houlsby.ipynb", tmp_path / "h.ipynb", results_dir=str(folder))
        html = "".join(str(o.get("data", {}).get("text/html", "")) for c in nb.cells for o in c.get("outputs", []))
        assert "60.5" in html and "not run offline" in html  # CoLA full fine-tuning, published; QQP here


def test_peft_chapter_renders_ours_beside_the_report_from_a_smoke_sweep(tmp_path):
    from adaptstudy.launch import sweep

    results = tmp_path / "peft"
    done = sweep.run(sweep.plan(ROOT / "params/smoke/peft_imdb.yaml", results))
    assert done.counts()["ok"] == 4
    records = [json.loads(p.read_text()) for p in results.glob("*.json")]
    assert {r["backbone"] for r in records} == {"minilm-l6", "minilm-l3"}
    assert all(len(r["history"]) == 2 and r["history"][0]["train_epoch_s"] > 0 for r in records)
    assert {r["train_examples"] for r in records} == {32} and {r["eval_examples"] for r in records} == {64}
    nb = run("06_analysis_peft.ipynb", tmp_path / "p.ipynb", results_dir=str(results))
    html = "".join(str(o.get("data", {}).get("text/html", "")) for c in nb.cells for o in c.get("outputs", []))
    assert "published (TinyRoBERTa)" in html and "ours (minilm-l3)" in html
    assert html.count("(1)") >= 4  # ours: full and bitfit, one seed, on both backbones (90%/10%)


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
    html = "".join(str(o.get("data", {}).get("text/html", "")) for c in nb.cells for o in c.get("outputs", []))
    assert "84.4 (0.4)" in html and "not run offline" in html  # ChemProt DAPT+TAPT, published; RCT here


def test_dsp_smoke_grid_runs_each_pretraining_once_and_the_chapter_reads_every_condition(tmp_path, monkeypatch):
    from adaptstudy.launch import sweep
    from adaptstudy.reporting import dsp as dr
    from adaptstudy.runs.records import read_records, records_frame

    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    results = tmp_path / "dsp"
    done = sweep.run(sweep.plan(ROOT / "params/smoke/dsp.yaml", results))
    assert done.counts()["ok"] == 8, done.table()
    pretraining = read_records(tmp_path / "dsp_pretrain")
    assert sorted(r["task"] for r in pretraining) == sorted(
        ["mlm:general", "mlm:reviews", "mlm:news", "mlm:task:helpfulness", "mlm:task:helpfulness", "mlm:reviews"]
    )
    assert all(r["excluded_eval_documents"] > 0 for r in pretraining if r["task"] == "mlm:reviews")
    runs = dr.label_runs(records_frame(results), read_records(results))
    assert set(runs["condition"]) == {"baseline", "dapt", "not-dapt", "tapt", "dapt+tapt"}
    assert set(runs["adaptation"]) == {
        "full model",
        "pfeiffer adapter",
        "pfeiffer adapter, seq_bn pretrained (continue)",
        "pfeiffer adapter, seq_bn pretrained (stack)",
    }
    nb = run("06_analysis_dsp.ipynb", tmp_path / "d.ipynb", results_dir=str(tmp_path))
    html = "".join(str(o.get("data", {}).get("text/html", "")) for c in nb.cells for o in c.get("outputs", []))
    assert "± 0.0 (1)" in html and "68.7 (1.8)" in html  # ours (one seed) beside the paper's helpfulness DAPT+TAPT


def test_across_chapter_renders_the_papers_numbers_without_records(tmp_path):
    nb = run("06_analysis_across.ipynb", tmp_path / "a.ipynb", results_dir=str(tmp_path / "none"))
    html = "".join(str(o.get("data", {}).get("text/html", "")) for c in nb.cells for o in c.get("outputs", []))
    assert "76.82" in html and "63.73" in html and "81.77" in html  # fusion RTE, Hyperformer++ CoLA, IMDb k=4
    assert "not run offline" in html  # BoolQ
