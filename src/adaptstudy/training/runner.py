"""Run any run, training first what it needs and does not have yet, once: the pretraining chain an `init_from`
names, a fusion run's source adapters (or the multi-task run whose adapters it fuses), a transfer run's
multi-task source. Sweeps and notebooks call `run`.

A prerequisite's record goes where its own settings say, else: a pretraining's beside the run's results in
`<results_dir>_pretrain` (a pretraining grid: its own folder), a source adapter's and MT-A's with the fusion run's,
a transfer source's in `<results_dir>_sources`. Its checkpoints go beside the run's, and are removed once done.
Artifacts live in a per-machine cache, records in the project: a prerequisite whose record exists but whose artifact
is gone (a new clone, another machine) is trained again, and its record stays as it was when the retrained metrics
are the same (the same config and seed give the same metrics), the second training's cost listed under `retrained`;
where they differ (bf16 kernels differ between processors), the new record replaces it and lists the earlier training
under `retrained` with its scores. A retraining that diverged where the reported training did not is neither: the
record stays, the diverged model is removed, and what needs it stops (`refuse_if_diverged`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adaptstudy.common.files import is_complete, remove_folder, run_lock
from adaptstudy.common.paths import cache_root
from adaptstudy.runs.artifacts import is_artifact
from adaptstudy.runs.base import RunConfig
from adaptstudy.runs.finetune_config import FinetuneConfig, source_config, source_folder
from adaptstudy.runs.frozen_artifacts import folder_hash, provide
from adaptstudy.runs.multitask_config import MultiTaskConfig
from adaptstudy.runs.pretrain_config import PretrainConfig
from adaptstudy.runs.records import check_writable, read_ok_record, resolve_results_dir, write_record
from adaptstudy.training.checkpoints import loadable_artifact
from adaptstudy.training.config_checks import check_config
from adaptstudy.training.device import resolve_precision
from adaptstudy.training.finetune import finetune
from adaptstudy.training.multitask import train_multitask
from adaptstudy.training.pretrain import pretrain


@dataclass
class Prerequisite:
    """A run that another run needs, how to tell it is done, and how to do it (given its checkpoint folder)."""

    config: RunConfig
    done: Callable[[], bool]
    train: Callable[[Path | None, bool], dict[str, Any]]  # (checkpoint folder, write the record) -> the record
    what: str
    artifact: Callable[[], Path]  # where its trained weights live in this machine's cache

    def record_path(self) -> Path:
        return resolve_results_dir(self.config.results_dir, self.config.STUDY) / f"{self.config.run_id}.json"

    def kept_record(self) -> dict[str, Any] | None:
        """Its record with status ok, if one is kept (its artifact may still be missing: see the module's note)."""
        return read_ok_record(self.record_path())


def prerequisites(config: RunConfig) -> Iterator[Prerequisite]:
    """What `config` needs before it can run, in order (each may need more: see `ensure`)."""
    results = resolve_results_dir(config.results_dir, config.STUDY)
    if isinstance(config, (FinetuneConfig, PretrainConfig)) and isinstance(config.init_from, dict):
        pretraining = PretrainConfig.model_validate(config.init_from)
        if pretraining.results_dir is None:
            folder = results if isinstance(config, PretrainConfig) else results.with_name(f"{results.name}_pretrain")
            pretraining = pretraining.model_copy(update={"results_dir": str(folder)})
        yield Prerequisite(
            pretraining,
            done=lambda: is_artifact(pretraining.artifact_dir()),
            train=lambda checkpoints, write: pretrain(pretraining, write, checkpoint_dir=checkpoints),
            what=f"pretraining ({pretraining.corpus}, {pretraining.mode})",
            artifact=pretraining.artifact_dir,
        )
    if isinstance(config, FinetuneConfig) and config.fusion_from is not None:
        mt = config.mt_source().model_copy(update={"results_dir": str(results)})
        yield Prerequisite(
            mt,
            done=lambda: is_complete(mt.artifact_dir()),
            train=lambda checkpoints, write: train_multitask(mt, write, checkpoint_dir=checkpoints, save=True),
            what=f"the multi-task adapters ({mt.task_name})",
            artifact=mt.artifact_dir,
        )
    elif isinstance(config, FinetuneConfig) and config.fusion_sources is not None:
        for task in config.fusion_sources:
            source = source_config(task, config.source_settings, str(results))
            yield Prerequisite(
                source,
                done=lambda source=source, task=task: (
                    provide(source.run_id, source_folder(source))
                    or loadable_artifact(source_folder(source), f"the source adapter of {task}")
                ),
                train=lambda checkpoints, write, source=source: finetune(
                    source, write, checkpoint_dir=checkpoints, save_adapter_to=source_folder(source)
                ),
                what=f"the source adapter of {task}",
                artifact=lambda source=source: source_folder(source),
            )
    if isinstance(config, MultiTaskConfig) and config.transfer_from is not None:
        source = config.source().model_copy(update={"results_dir": str(results)})  # a cell of the study: stage 1's
        yield Prerequisite(
            source,
            done=lambda: is_complete(source.artifact_dir()),
            train=lambda checkpoints, write: train_multitask(source, write, checkpoint_dir=checkpoints, save=True),
            what=f"the transfer source ({source.task_name}, {source.method})",
            artifact=source.artifact_dir,
        )


def ensure(config: RunConfig, checkpoint_root: Path | None = None, only: str | None = None) -> None:
    """Train every prerequisite of `config` that is not done yet (theirs first), once: under a lock in the cache, so
    that two processes needing the same one train it once (the second waits, then finds it done). `only`: the run id
    of the one prerequisite to train (with its own), as a sweep's prerequisite cell does."""
    for needed in prerequisites(config):
        if needed.done() or only not in (None, needed.config.run_id):
            continue
        ensure(needed.config, checkpoint_root)
        with run_lock(cache_root(), needed.config.run_id):
            if needed.done():
                continue
            checkpoints = Path(checkpoint_root) / needed.config.run_id if checkpoint_root else None
            kept = needed.kept_record()
            again = " again: its record is kept, its artifact is not in this cache" if kept else ""
            print(f"  training {needed.what} first{again}: {needed.config.run_id}", flush=True)
            record = needed.train(checkpoints, kept is None)
            remove_folder(checkpoints)
            if kept is not None:
                refuse_if_diverged(needed, kept, record)
                keep_or_replace(kept, record, needed.record_path())


class PrerequisiteDiverged(RuntimeError):
    """A prerequisite trained again (its artifact missing here) diverged where its record had not."""


def refuse_if_diverged(needed: Prerequisite, kept: dict[str, Any], record: dict[str, Any]) -> None:
    """A retrained prerequisite that diverged where its kept record did not is no copy of it: what needs it would
    start from a broken model, and its record would trade reported scores for a failure. Keep the record (the
    training's cost joins its `retrained` list, marked), remove the artifact, and stop what needs it."""
    if not record.get("diverged") or kept.get("diverged"):
        return
    entry = training_costs(record, why=DIVERGED_AGAIN, diverged=record["diverged"])
    write_record({**kept, "retrained": [*kept.get("retrained", []), entry]}, needed.record_path().parent)
    remove_folder(needed.artifact())
    raise PrerequisiteDiverged(
        f"{needed.config.run_id}: {needed.what}, trained again because this cache lacked it, diverged at step "
        f"{record['diverged'].get('step')} ({record['diverged'].get('rule')}) where its record did not: the record is "
        "kept, the diverged model removed, and nothing that needs it trains on it. Run the sweep again (a processor's "
        "bf16 kernels can differ from the one that trained it), or copy its artifact from a cache that has it."
    )


def same_metrics(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Equal to float32's precision (a relative 1e-6, 1e-4 points on a score of 100; one example of 500 is 0.2): a
    record written before correlations were computed in float64 may hold a float32-rounded one."""
    return before.keys() == after.keys() and all(
        a == b or (isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=1e-6))
        for a, b in ((before[k], after[k]) for k in before)
    )


DIVERGED_AGAIN = "trained again, diverged: not used"
RETRAINED_FIELDS = ("train_runtime_s", "eval_runtime_s", "finished_at", "machine", "sessions")
REPLACED_FIELDS = ("metrics", "validation_metrics", "selection_metrics", "main_metric_value", "selection_metric_value")
REPLACED_FIELDS += ("train_loss",)


def training_costs(record: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A training's entry in a kept record's `retrained` list: what it cost, where and when, with `extra`."""
    return {**{k: record[k] for k in RETRAINED_FIELDS if k in record}, **extra}


def keep_or_replace(kept: dict[str, Any], record: dict[str, Any], path: Path, why: str | None = None) -> str:
    """After a run with a kept record trained again (a prerequisite whose artifact this cache lacked; a run resumed
    out of order, rerun): keep that record where the metrics are the same (its costs stay those of the run that first
    reported; the second training's, paid too, join its `retrained` list, which a chapter's cost counts), else write
    the new one, with the replaced training (its costs, scores and resume) joining the same list: every training of
    a run stays paid and in sight. `why` says why it trained again. Returns "kept" or "replaced"."""
    earlier = kept.get("retrained", [])
    reason = {"why": why} if why else {}
    if same_metrics(kept["metrics"], record["metrics"]):
        write_record({**kept, "retrained": [*earlier, training_costs(record, **reason)]}, path.parent)
        print(
            f"  {record['run_id']}: the same metrics as its record, which is kept (cost under 'retrained')", flush=True
        )
        return "kept"
    print(
        f"  WARNING {record['run_id']}: trained again to other metrics ({kept['metrics']} in its record, "
        f"{record['metrics']} now); the new record replaces it",
        flush=True,
    )
    replaced = {k: kept[k] for k in (*RETRAINED_FIELDS, *REPLACED_FIELDS, "resumed_from_step") if k in kept}
    write_record({**record, "retrained": [*earlier, {**replaced, **reason}]}, path.parent)
    return "replaced"


def prerequisite_waves(configs: list[RunConfig]) -> list[list[tuple[RunConfig, RunConfig]]]:
    """The prerequisites of `configs` not done yet, in waves that can each train in parallel: a wave's runs need
    only runs of the waves before. Each entry is (prerequisite, a run that needs it), once per prerequisite."""
    level: dict[str, int] = {}
    needers: dict[str, tuple[RunConfig, RunConfig]] = {}

    def depth(config: RunConfig) -> int:  # 1 + the deepest of its pending prerequisites (0: needs none)
        deepest = 0
        for needed in prerequisites(config):
            run_id = needed.config.run_id
            if run_id not in level:
                if needed.done():
                    continue
                level[run_id] = depth(needed.config)
                needers[run_id] = (needed.config, config)
            deepest = max(deepest, level[run_id] + 1)
        return deepest

    for config in configs:
        depth(config)
    waves: list[list[tuple[RunConfig, RunConfig]]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for run_id, k in level.items():
        waves[k].append(needers[run_id])
    return waves


def pending_prerequisites(config: RunConfig) -> set[str]:
    """The run ids of what `config` needs directly and is not done yet: a sweep starts it once none of them is still
    to train."""
    return {needed.config.run_id for needed in prerequisites(config) if not needed.done()}


RUNNERS: dict[type[RunConfig], Callable[..., dict[str, Any]]] = {
    FinetuneConfig: finetune,
    PretrainConfig: pretrain,
    MultiTaskConfig: train_multitask,
}


def run(config: RunConfig, checkpoint_dir: str | os.PathLike | None = None, write: bool = True) -> dict[str, Any]:
    """Train `config` (its prerequisites first) and return its record; see `finetune`, `pretrain`, `train_multitask`."""
    check_config(config)  # every name it holds known, before anything is read or trained
    resolve_precision(config.precision)  # a precision this machine cannot run fails before any prerequisite trains
    check_writable(resolve_results_dir(config.results_dir, config.STUDY))  # before training, not after it
    ensure(config, Path(checkpoint_dir).parent if checkpoint_dir else None)
    if isinstance(config, FinetuneConfig) and config.keep_adapter:
        record = finetune(config, write=write, checkpoint_dir=checkpoint_dir, save_adapter_to=source_folder(config))
    else:
        record = RUNNERS[type(config)](config, write=write, checkpoint_dir=checkpoint_dir)
    return with_prerequisites(config, record, write)


def artifact_hash(folder: Path) -> dict[str, str]:
    """`{"sha256": ...}` of the artifact a run started from (`frozen_artifacts.folder_hash`), where it is there."""
    return {"sha256": folder_hash(folder)} if is_complete(folder) else {}


def with_prerequisites(config: RunConfig, record: dict[str, Any], write: bool) -> dict[str, Any]:
    """The record naming what the run started from (`prerequisites`: each one's run id, the study folder of its
    record and the hash of the weights it used), written again where it was written: a confirmatory verdict checks
    them against its claim's freeze and the frozen copies' hashes (`runs.frozen_artifacts`)."""
    needs = [
        {"run_id": n.config.run_id, "study": n.record_path().parent.name, **artifact_hash(n.artifact())}
        for n in prerequisites(config)
    ]
    if not needs:
        return record
    record = {**record, "prerequisites": needs}
    if write:
        write_record(record, resolve_results_dir(config.results_dir, config.STUDY))
    return record
