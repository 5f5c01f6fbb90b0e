"""Faults a user meets, each run for real on smoke data: what the project says, and that no result is lost.

Which fix each test guards (revert the fix and the test fails): the record schema (`runs.records.Record`,
`load_record`), the sweep's full-disk stop (`launch.cells.out_of_space`, `Plan.stopped`), the failure guard
(`cells._failed`), the early results-folder check (`runner.run` -> `check_writable`), the name and length checks
(`Grid._inside_results`, `resolve_results_dir`, `backbones.check_sequence_length`), one-line command errors
(`launch.sweep.main`), the divergence rule (`callbacks.StopOnDivergence`, `baselines.learned_nothing`), an unloadable
checkpoint set aside (`training.checkpoints.resumable_checkpoint`); the resumed epoch's loss and precision are
`tests/test_sweep.py`'s resume test.
"""

import errno
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from adaptstudy.claims.baselines import learned_nothing, task_of
from adaptstudy.data.tasks import resolve_task
from adaptstudy.launch import cells, cli
from adaptstudy.launch import sweep as sw
from adaptstudy.reporting.common import load_runs
from adaptstudy.runs import records
from adaptstudy.runs.base import ConfigError
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.predictions import constant_predictions
from adaptstudy.runs.pretrain_config import PretrainConfig
from adaptstudy.runs.records import InvalidRecordsError, read_records, resolve_results_dir
from adaptstudy.training import runner
from adaptstudy.training.callbacks import DIVERGENCE_FACTOR, DIVERGENCE_RULE
from adaptstudy.training.checkpoints import last_complete_checkpoint
from adaptstudy.training.config_checks import check_config
from adaptstudy.training.finetune import finetune

ROOT = Path(__file__).resolve().parents[1]

TINY = {
    "task": "rte",
    "backbone": "minilm-l6",
    "method": "houlsby",
    "adapter_size": 8,
    "num_train_epochs": 1,
    "max_train_examples": 16,
    "max_eval_examples": 16,
    "max_seq_length": 32,
    "batch_size": 8,
}


def grid_file(path: Path, seeds: list[int], **extra) -> Path:
    path.write_text(yaml.safe_dump({"study": "faults", "fixed": TINY, "axes": {"seed": seeds}, **extra}))
    return path


def corrupt_records(folder: Path, fake_record) -> dict[str, Path]:
    """A valid record beside a truncated one, a JSON list and a hollow one (status ok, no metrics)."""
    folder.mkdir(parents=True, exist_ok=True)
    good = fake_record(FinetuneConfig(**TINY, seed=1), folder=folder)
    text = (folder / f"{good['run_id']}.json").read_text()
    hollow = fake_record(FinetuneConfig(**TINY, seed=2), folder=None) | {"metrics": {}}
    paths = {"truncated": folder / "0123456789abcdef.json", "list": folder / "fedcba9876543210.json"}
    paths["truncated"].write_text(text[:300])
    paths["list"].write_text("[1, 2]")
    paths["hollow"] = folder / f"{hollow['run_id']}.json"
    paths["hollow"].write_text(json.dumps(hollow))
    return paths


def test_the_report_names_every_invalid_record_in_one_line_each(tmp_path, fake_record):
    paths = corrupt_records(tmp_path / "r", fake_record)
    with pytest.raises(InvalidRecordsError) as raised:
        load_runs(tmp_path / "r")
    lines = str(raised.value).splitlines()
    assert lines[0].startswith("3 invalid record(s)")
    assert [line.split(": ", 1)[0].strip() for line in lines[1:]] == sorted(str(p) for p in paths.values())
    said = dict(line.strip().split(": ", 1) for line in lines[1:])
    assert "not valid JSON" in said[str(paths["truncated"])]
    assert "a JSON list, where a record is an object" in said[str(paths["list"])]
    assert "hollow record" in said[str(paths["hollow"])] and "metrics" in said[str(paths["hollow"])]


def test_check_records_lists_the_invalid_ones(tmp_path, fake_record, capsys):
    paths = corrupt_records(tmp_path / "r", fake_record)
    assert cli.main(["check-records", str(tmp_path / "r")]) == 1
    out, err = capsys.readouterr()
    assert sorted(line.split(": ", 1)[0] for line in out.splitlines()) == sorted(str(p) for p in paths.values())
    assert "3 invalid of 4 records" in err
    for path in paths.values():
        path.unlink()
    assert cli.main(["check-records", str(tmp_path / "r")]) == 0


def test_a_record_under_another_run_id_is_invalid(tmp_path, fake_record):
    record = fake_record(FinetuneConfig(**TINY), folder=tmp_path)
    (tmp_path / f"{record['run_id']}.json").rename(tmp_path / "aaaaaaaaaaaaaaaa.json")
    with pytest.raises(InvalidRecordsError, match="is not its file's name"):
        read_records(tmp_path)


def test_a_hollow_record_is_never_written_but_a_pretraining_that_held_nothing_out_is(tmp_path, fake_record):
    hollow = fake_record(FinetuneConfig(**TINY), folder=None) | {"metrics": {}}
    with pytest.raises(ValueError, match="hollow record"):
        records.write_record(hollow, tmp_path)
    assert list(tmp_path.iterdir()) == []
    unscored = fake_record(PretrainConfig(corpus="task:rte"), folder=None) | {"metrics": {}, "main_metric": None}
    with pytest.raises(ValueError, match="hollow record"):  # without its artifact it is no result either
        records.write_record(unscored, tmp_path)
    records.write_record(unscored | {"artifact": "/cache/pretrain/x"}, tmp_path)


@pytest.mark.slow
def test_the_sweep_retrains_a_cell_whose_record_is_hollow(tmp_path, data_dir, fake_record, capsys):
    grid = grid_file(tmp_path / "g.yaml", [2])
    results = tmp_path / "r"
    hollow = corrupt_records(results, fake_record)["hollow"]
    p = sw.plan(grid, results)
    assert p.cells[0].run_id == hollow.stem and p.cells[0].status == "todo"
    assert f"invalid record {hollow}" in capsys.readouterr().err
    sw.run(p, progress=False)
    assert p.cells[0].status == "ok" and records.read_ok_record(hollow)["metrics"]


def full_disk(monkeypatch) -> None:
    """Every record write fails as on a full disk (ENOSPC), as `write_json_atomic` would."""

    def no_space(data, target):
        raise OSError(errno.ENOSPC, "No space left on device", str(target))

    monkeypatch.setattr(records, "write_json_atomic", no_space)


@pytest.mark.slow
def test_a_full_disk_stops_the_sweep_in_one_line_and_the_next_run_resumes(tmp_path, data_dir, fake_record, monkeypatch):
    grid = grid_file(tmp_path / "g.yaml", [0, 1, 2, 3])
    results = tmp_path / "r"
    p = sw.plan(grid, results)
    earlier = fake_record(p.cells[3].config, folder=results)  # a finished run's record: it must stay as it is
    before = (results / f"{earlier['run_id']}.json").read_bytes()
    p = sw.plan(grid, results)
    with monkeypatch.context() as m:
        full_disk(m)
        sw.run(p, progress=False)
    assert [c.status for c in p.cells] == ["todo", "todo", "todo", "skipped"]
    assert p.stopped.startswith(f"out of space under {results}") and "No space left on device" in p.stopped
    summary = p.summary()
    assert "\n" not in summary and "3 not run" in summary and "STOPPED" in summary
    assert not (results / cells.CHECKPOINTS).exists()  # no empty checkpoint folder left behind
    assert (results / f"{earlier['run_id']}.json").read_bytes() == before
    again = sw.run(sw.plan(grid, results), progress=False)
    assert [c.status for c in again.cells] == ["ok", "ok", "ok", "skipped"] and again.stopped is None


def test_a_completely_full_disk_in_the_lock_is_no_crash(tmp_path, monkeypatch):
    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cells, "run_lock", no_space)
    status, error = cells.attempt(FinetuneConfig(**TINY), tmp_path)
    assert status == cells.NOSPACE and "No space left on device" in error


def test_the_cell_guard_holds_when_the_failure_record_cannot_be_written(tmp_path, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("the model exploded")

    def unwritable(config, error):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(cells, "run_cell", broken)
    monkeypatch.setattr(cells, "write_failure", unwritable)
    assert cells.attempt(FinetuneConfig(**TINY), tmp_path) == ("failed", "RuntimeError: the model exploded")
    err = capsys.readouterr().err
    assert "its failure record could not be written either (PermissionError" in err


@pytest.mark.parametrize("where", ["under-a-file", "read-only"])
def test_a_run_refuses_an_unwritable_results_folder_before_training(tmp_path, monkeypatch, where):
    if where == "under-a-file":
        (tmp_path / "f").write_text("")
        folder, message = tmp_path / "f" / "r", "is a file"
    else:
        folder, message = tmp_path / "ro", "is not writable"
        folder.mkdir()
        monkeypatch.setattr(records.os, "access", lambda path, mode: Path(path) != folder)  # root ignores chmod
    monkeypatch.setattr(runner, "ensure", lambda *a, **k: pytest.fail("trained before checking the results folder"))
    with pytest.raises(ConfigError, match=message):
        runner.run(FinetuneConfig(**TINY, results_dir=str(folder)))


@pytest.mark.parametrize("study", ["..", ".", "../x", "/abs"])
def test_a_study_name_that_leaves_results_is_refused(tmp_path, study):
    grid = tmp_path / "g.yaml"
    grid.write_text(yaml.safe_dump({"study": study, "fixed": TINY, "axes": {"seed": [0]}}))
    with pytest.raises(ConfigError, match="study"):
        sw.plan(grid)
    with pytest.raises(ConfigError, match="not a folder name under results/"):
        resolve_results_dir(None, study)


def test_the_pages_that_read_every_study_default_to_results_itself():
    """06_scorecard, 06_analysis_dsp and 06_analysis_across read results/ whole (`resolve_results_dir(None, "")`)."""
    assert resolve_results_dir(None, "") == ROOT / "results"
    assert resolve_results_dir(None, "fusion") == ROOT / "results" / "fusion"


def test_a_sequence_longer_than_the_backbone_positions_is_refused_naming_the_limit():
    with pytest.raises(ValueError, match="max_seq_length 4096 is above the 512 positions of backbone 'minilm-l6'"):
        check_config(FinetuneConfig(**{**TINY, "max_seq_length": 4096}))
    check_config(FinetuneConfig(**{**TINY, "max_seq_length": 512}))


@pytest.mark.parametrize(
    "content, message",
    [
        ("study: [unclosed", "is not valid YAML"),
        (yaml.safe_dump({"study": "s", "fixed": {**TINY, "method": "houlsbi"}, "axes": {"seed": [0]}}), "houlsby"),
    ],
)
def test_command_line_errors_are_one_line(tmp_path, capsys, content, message):
    grid = tmp_path / "g.yaml"
    grid.write_text(content)
    assert sw.main([str(grid), "--results-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and message in err
    assert "Traceback" not in err
    with pytest.raises(ConfigError):
        sw.main([str(grid), "--results-dir", str(tmp_path / "r"), "--debug"])


def test_no_committed_run_comes_near_the_divergence_rule():
    """The rule compares each step's loss with the first step's; records keep epoch means, the finest they have. A
    fresh classification head starts at ln(classes) >= ln 2, so an epoch mean at 10x ln 2 would be near the rule;
    regression and MLM runs are compared with their first epoch."""
    checked = 0
    for record in read_records(ROOT / "results"):
        losses = [h["train_loss"] for h in record.get("history", []) if "train_loss" in h]
        if not losses:
            continue
        single = "tasks" not in record and not record["task"].startswith("mlm:")
        classifying = single and not resolve_task(task_of(record)).is_regression
        first = math.log(2) if classifying else losses[0]
        assert max(losses) < DIVERGENCE_FACTOR * first, (record["run_id"], losses)
        checked += 1
    assert checked > 700


@pytest.mark.slow
@pytest.mark.parametrize("method", ["full", "houlsby"])
def test_a_diverged_run_is_flagged_stopped_and_counted_as_learning_nothing(data_dir, method, capsys):
    smoke = yaml.safe_load((ROOT / "params" / "smoke" / "finetune.yaml").read_text())
    smoke = {**smoke, "method": method, "learning_rate": 1e3, **({} if method == "houlsby" else {"adapter_size": None})}
    smoke["num_train_epochs"] = 3  # 12 steps planned: the run stops in its first epoch
    record = finetune(FinetuneConfig(**smoke), write=False)
    assert record["diverged"]["rule"] == DIVERGENCE_RULE
    assert record["diverged"]["loss"] > DIVERGENCE_FACTOR * record["diverged"]["first_loss"]
    assert record["diverged"]["step"] < 12 and len(record["history"]) == 1  # stopped early, scored as it stood
    assert f"WARNING {record['run_id']} diverged" in capsys.readouterr().out
    assert learned_nothing(record)
    # the flag alone decides: a diverged run counts as learning nothing whatever it scored
    scored_well = {**record, "predictions": None, "metrics": {k: 100.0 for k in record["metrics"]}}
    assert learned_nothing(scored_well)
    assert not learned_nothing({k: v for k, v in scored_well.items() if k != "diverged"})
    records.Record.model_validate(record)


def test_constant_predictions_are_evidence_and_varied_ones_are_not():
    assert constant_predictions(np.zeros(5, dtype=int), "dev") == {"value": 0, "examples": 5, "split": "dev"}
    assert constant_predictions(np.array([0, 1, 0]), "dev") is None
    assert constant_predictions(np.full(4, 2.5), "validation")["value"] == 2.5


@pytest.mark.slow
def test_an_unloadable_checkpoint_is_set_aside_kept_after_its_cell_and_the_run_resumes_before_it(
    tmp_path, data_dir, capsys
):
    """Set aside inside the run's checkpoint folder, it went with that folder when the cell finished, and the
    record's `restarted` named a path that was gone."""
    config = FinetuneConfig(**{**TINY, "max_train_examples": 32, "checkpoint_every_s": 0})
    results = tmp_path / "r"
    folder = results / sw.CHECKPOINTS / config.run_id
    first = finetune(config, write=False, checkpoint_dir=folder)  # a finished run keeps its last two checkpoints
    newest = Path(last_complete_checkpoint(folder))
    (newest / "optimizer.pt").write_bytes(b"not a pickle")  # damaged on disk
    assert cells.attempt(config.model_copy(update={"results_dir": str(results)}), results) == ("ok", None)
    again = json.loads((results / f"{config.run_id}.json").read_text())
    (aside,) = again["restarted"]
    assert Path(aside["checkpoint"]).name == f"{config.run_id}-unloadable-{newest.name}"
    assert Path(aside["checkpoint"]).is_dir() and not folder.exists()  # kept; the run's own folder went
    assert aside["error"].startswith("optimizer.pt: UnpicklingError")
    assert f"checkpoint {newest} does not load" in capsys.readouterr().out
    assert again["resumed_from_step"] < int(newest.name.split("-")[1])
    assert again["metrics"] == pytest.approx(first["metrics"], abs=1e-6)
    records.Record.model_validate(again)


@pytest.mark.parametrize("planted", ["lock", "checkpoints", "locks folder"])
def test_a_link_planted_in_the_results_folder_leaves_its_target_untouched_and_stops_the_cell(tmp_path, planted):
    """A `.locks/<id>.lock` link pointing outside was truncated and overwritten with the host and pid, and a
    `.checkpoints/<id>` link got a checkpoint written at its target."""
    config = FinetuneConfig(**TINY)
    results, outside = tmp_path / "r", tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    link = {
        "lock": results / ".locks" / f"{config.run_id}.lock",
        "checkpoints": results / sw.CHECKPOINTS / config.run_id,
        "locks folder": results / ".locks",
    }[planted]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside / "precious.txt" if planted == "lock" else outside)
    status, error = cells.attempt(config, results)
    assert status == "failed" and str(link) in error and "outside" in error
    assert (outside / "precious.txt").read_text() == "keep me" and sorted(outside.iterdir()) == [
        outside / "precious.txt"
    ]
    assert not list(results.glob("*.json"))


def test_a_study_folder_that_is_a_link_is_refused_for_what_it_is(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "PROJECT_ROOT", tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "houlsby").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ConfigError, match=r"results/houlsby is a symbolic link \(to .*elsewhere\)"):
        resolve_results_dir(None, "houlsby")


def test_a_run_whose_steps_all_fall_within_its_warmup_says_so(data_dir, capsys):
    """Warmup starts at rate 0: a one-step run trained at rate 0, so learning rate 1000 'ran ok' with the untrained
    model, and nothing said so."""
    config = FinetuneConfig(**{**TINY, "max_steps": 1, "learning_rate": 1e3, "warmup_ratio": 0.1})
    finetune(config, write=False)
    out = capsys.readouterr().out
    assert (
        f"WARNING {config.run_id}: its 1 steps all fall within its 1 warmup steps (its only step trains at rate 0)"
        in out
    )
    finetune(config.model_copy(update={"max_steps": 3}), write=False)  # 1 warmup step of 3: no warning
    assert "warmup" not in capsys.readouterr().out


def _steps(losses_and_tasks, first=None):
    """Feed (loss, task index or None) steps through `StopOnDivergence` as the Trainer would; its evidence."""
    from types import SimpleNamespace

    import torch

    from adaptstudy.training.callbacks import StopOnDivergence

    feed = iter(losses_and_tasks)
    trainer = SimpleNamespace(training_step=lambda model, inputs, n=None: torch.tensor(inputs["loss"]))
    guard = StopOnDivergence(trainer, first)
    control = SimpleNamespace(should_training_stop=False)
    for step, (loss, task) in enumerate(feed, start=1):
        inputs = {"loss": loss} | ({} if task is None else {"task_ids": torch.full((8,), task)})
        trainer.training_step(None, inputs, None)
        guard.on_step_end(None, SimpleNamespace(global_step=step), control)
    return guard.evidence, control.should_training_stop, guard.first


def test_each_task_is_held_to_its_own_first_loss():
    """The retraining of a five-task Hyperformer++ run (CoLA, SST-2, MRPC, STS-B, RTE) was stopped at step 27: its
    first batch was a classification task's (0.70) and STS-B's squared error starts near 9. Each task now has its
    own reference; a task whose own loss rises tenfold for two steps still stops the run."""
    healthy = [(0.70, 0), (0.69, 2), (9.4, 3), (9.3, 3), (0.68, 0), (8.1, 3), (7.9, 3), (0.6, 4)]
    assert _steps(healthy)[:2] == (None, False)
    assert _steps([(loss, None) for loss, _ in healthy])[0]["step"] == 4  # one reference: the old false alarm
    evidence, stopped, first = _steps([*healthy, (100.0, 3), (120.0, 3)])
    assert stopped and evidence["task_index"] == 3 and evidence["step"] == 10
    assert evidence["first_loss"] == pytest.approx(9.4)
    assert first == pytest.approx({"0": 0.70, "2": 0.69, "3": 9.4, "4": 0.6})


def test_a_resumed_run_keeps_its_references_old_markers_included():
    assert _steps([(0.7, 0), (8.0, 0)], first={"0": 0.5})[0] is None  # one step above: not yet
    evidence = _steps([(6.0, None), (7.0, None)], first=0.5)[0]  # a marker from before references by task
    assert evidence["step"] == 2 and evidence["first_loss"] == 0.5 and "task_index" not in evidence
