"""Tests run offline against the local data mirror (`ADAPTSTUDY_DATA`, default ../shared/data)."""

import json
import os
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("ADAPTSTUDY_DATA", str((ROOT / ".." / "shared" / "data").resolve()))
os.environ["ADAPTSTUDY_DATA"] = str(Path(os.environ["ADAPTSTUDY_DATA"]).resolve())
for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ[var] = "1"  # a missing file must fail at once, not after minutes of retries

# after the environment above: the task registry imports `datasets`, which reads it once, on import
import adaptstudy.models.methods  # noqa: E402, F401  (registers the methods' facts, which run configs read)
from adaptstudy.data.tasks import resolve_task  # noqa: E402
from adaptstudy.runs.finetune_config import FinetuneConfig  # noqa: E402
from adaptstudy.runs.identity import base_record  # noqa: E402
from adaptstudy.runs.multitask_config import MultiTaskConfig  # noqa: E402
from adaptstudy.runs.predictions import stored_labels  # noqa: E402
from adaptstudy.runs.records import write_record  # noqa: E402
from adaptstudy.training.splits import finetune_splits, multitask_splits  # noqa: E402


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = Path(os.environ["ADAPTSTUDY_DATA"])
    if not (path / "glue").is_dir():
        pytest.fail(f"the data mirror is not at {path}: set ADAPTSTUDY_DATA")
    return path


@pytest.fixture(scope="session")
def committed_verdicts(data_dir):
    """Every chapter's verdicts on the committed records and the runs' seconds (`scorecard.chapter_verdicts`), computed
    once for the tests that read them (about a minute on 2 cores)."""
    from adaptstudy.common.paths import PROJECT_ROOT
    from adaptstudy.reporting.scorecard import chapter_runs, chapter_verdicts

    return chapter_verdicts(chapter_runs(PROJECT_ROOT / "results"))


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> Path:
    """The HTML book as `make book` builds it (`-W -n --keep-going`) with the data mirror pointing at an empty
    folder: built once for the tests that read its pages (about a minute)."""
    import subprocess
    import sys

    empty = tmp_path_factory.mktemp("no-data")
    venv = Path(sys.prefix)
    env = {**os.environ, "ADAPTSTUDY_DATA": str(empty)}
    # this interpreter's environment, taken as set up: `make setup` would reinstall into it
    command = ["make", "book", f"VENV={venv}", "-o", str(venv / ".installed")]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return ROOT / "book" / "_build" / "html"


def _over_built(verdicts):
    """Each verdict judged over the units its records built (synthetic records cover a few tasks; a claim's declared
    units would leave the others 'not run')."""
    rejudged = []
    for v in verdicts:
        names = [n for n in v.design.comparisons if n in v.comparisons] or list(v.comparisons)
        built = list(dict.fromkeys(u.name for n in names for u in v.comparisons[n]))
        units = [u for u in built if u not in v.design.versus_units]
        versus = [u for u in v.design.versus_units if u in built]
        update = {"units": units, "versus_units": versus, "comparisons": names}
        rejudged.append(v.under(v.design.model_copy(update=update)))
    return rejudged


def _claims_table(chapter, runs):
    """A chapter module's verdict table over the units its records built (`over_built`)."""
    from adaptstudy.reporting.verdict_tables import verdict_table

    return verdict_table(_over_built(chapter.verdicts(runs)))


@pytest.fixture
def over_built():
    """`over_built(verdicts)`: each verdict judged over the units its (synthetic) records built."""
    return _over_built


@pytest.fixture
def claims_table():
    """`claims_table(chapter_module, runs)`: the chapter's verdict table over the units its records built."""
    return _claims_table


@pytest.fixture
def fake_record(tmp_path):
    """Factory of finished runs' records with made-up numbers, shaped as our runs write them, for the reports' tests.

    `fake_record(config, score, **fields)` is the record of `config` (fine-tuning, multi-task or pretraining) scoring
    `score` on its task's main metric (`metric` to name another; a multi-task config takes one score per task), with
    `fields` set on top (costs, parameters, history, ...). It is written into `folder` (default the test's
    `tmp_path`; None: not written) and returned.
    """

    def make(config, score=60.0, metric=None, folder=tmp_path, **fields) -> dict:
        record = base_record(config)
        if hasattr(config, "tasks"):  # multi-task: per-task test scores under task/metric, their mean as main metric
            scores = dict(zip(config.tasks, score))
            metrics = {f"{t}/{metric or resolve_task(t).main_metric}": s for t, s in scores.items()}
            record.update(tasks=list(config.tasks), main_metric="mean over tasks")
            score = sum(scores.values()) / len(scores)
        else:
            metric = metric or (resolve_task(config.task).main_metric if hasattr(config, "task") else "perplexity")
            metrics = {metric: score}
            record["main_metric"] = metric
        record.update(
            status="ok",
            metrics=metrics,
            main_metric_value=score,
            trainable_params=1,
            total_params=1,
            train_runtime_s=1.0,
            train_examples_per_s=1.0,
            peak_rss_mb=1.0,
            device="cpu",
            finished_at="2026-11-25T00:00:00+00:00",
        )
        if "labels" not in fields and (hasattr(config, "tasks") or hasattr(config, "task")):
            record["labels"] = kept_labels(config)
        record.update(fields)
        if folder is not None:
            write_record(record, folder)
        return record

    return make


FINETUNE_DATA = ("task", "data_dir", "data_seed", "resplit_train_share", "max_eval_examples", "selection_split")
MULTITASK_DATA = ("tasks", "data_dir", "data_seed", "max_eval_examples", "selection_split")


def kept_labels(config) -> dict:
    """The labels a run of `config` keeps in its record (`labels`), cut from the mirror as the run cuts them."""
    multitask = hasattr(config, "tasks")
    fields = MULTITASK_DATA if multitask else FINETUNE_DATA
    return _kept_labels(multitask, json.dumps({k: getattr(config, k) for k in fields}, sort_keys=True, default=str))


@cache
def _kept_labels(multitask: bool, data: str) -> dict:
    settings = json.loads(data)
    if multitask:
        splits = multitask_splits(MultiTaskConfig(**settings))
        return {
            f"{t}/{s}": stored_labels(splits[t][s]["label"], resolve_task(t).is_regression)
            for t in settings["tasks"]
            for s in ("validation", "test")
        }
    config = FinetuneConfig(**settings)
    spec = resolve_task(config.task)
    splits = finetune_splits(config, cap=False)
    return {
        s: stored_labels(splits[s]["label"], spec.is_regression) for s in (spec.eval_split, "selection") if s in splits
    }
