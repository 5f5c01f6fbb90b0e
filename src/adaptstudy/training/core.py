"""The one training core: fine-tuning, pretraining and multi-task training all run through here.

A run starts (settings validated and resolved, the record's identity taken before training, a fresh
peak-memory window), trains with the `transformers.Trainer` in a `Session` (arguments built from the run's
settings: optimizer, schedule, precision, checkpointing; resumed from the last complete checkpoint; stopped on
a non-finite loss), and finishes (costs, device and precision added to the record, written atomically).
"""

from __future__ import annotations

import math
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch
from transformers import Trainer, TrainingArguments

from adaptstudy.common.files import read_marker, remove_folder
from adaptstudy.models.fast_dropout import use_fast_dropout
from adaptstudy.models.methods import METHODS
from adaptstudy.runs.base import TrainingRun, validate
from adaptstudy.runs.identity import base_record
from adaptstudy.runs.records import peak_rss_mb, reset_peak_rss, resolve_results_dir, write_record
from adaptstudy.training.callbacks import (
    NonFiniteLossError,
    StopOnDivergence,
    StopOnNonFiniteLoss,
    TimedCheckpoints,
    WarnIfAllWarmup,
)
from adaptstudy.training.checkpoints import resumable_checkpoint
from adaptstudy.training.device import machine_description, machine_kind, resolve_precision, training_arguments
from adaptstudy.training.epoch_order import EPOCH_ORDER, KEPT, OrderKeeper


def pad_to_multiple_of() -> int | None:
    """Batches pad to their longest example; on a GPU rounded up to a multiple of 8 (tensor-core tiles). On a CPU
    rounding only adds work: with lengths rounded to 16, a step took 1.43x as long on SST-2 (13 tokens per
    example) and 1.15x on MRPC (minilm-l6, fp32, AVX2, length-grouped batches of 32)."""
    return 8 if torch.cuda.is_available() else None


LOSS_SUM = "loss_sum"  # in a checkpoint's marker: the training losses summed over its steps
SECONDS = "seconds"  # in a checkpoint's marker: the seconds `trainer.train()` ran up to it, over every session
SINCE_LOG = "since_log"  # in a checkpoint's marker: [the loss summed since the last log, the step of that log]
SESSIONS = "sessions"  # in a checkpoint's marker: each session's precision and CPU kernels up to it (`here`)
FIRST_LOSS = "first_loss"  # in a checkpoint's marker: each task's first loss, the divergence rule's references


@dataclass
class Run:
    """A run under way: its resolved settings and the record it will write."""

    config: TrainingRun
    record: dict[str, Any]
    peak_rss_scope: str


def start(config: TrainingRun | Mapping[str, Any], kind: type[TrainingRun]) -> Run:
    """Validate and resolve the settings, and take the record's identity (the commit and versions that this run
    starts from) before anything trains."""
    if not isinstance(config, kind):
        config = validate(kind, config)
    config = config.resolved()
    resolve_precision(config.precision)  # fp16 without a GPU: one clear error before any data is read
    record = base_record(config)
    if config.method in METHODS:  # what the method trains, for the report (which reads records only)
        record["method_description"] = METHODS.get(config.method).description
    return Run(config, record, reset_peak_rss())


class Session:
    """One Trainer run: in `checkpoint_dir` (checkpoints every `checkpoint_every_s` seconds, resumed from the last
    complete one), or in a temporary folder that goes when the session ends."""

    def __init__(self, config: TrainingRun, checkpoint_dir: str | os.PathLike | None = None):
        self.config, self.checkpointing = config, checkpoint_dir is not None
        self._scratch = None if self.checkpointing else tempfile.TemporaryDirectory(prefix="adaptstudy-")
        self.output_dir = Path(checkpoint_dir) if self.checkpointing else Path(self._scratch.name)
        self.resume, self.set_aside = (
            resumable_checkpoint(self.output_dir, config.run_id) if self.checkpointing else (None, [])
        )
        self.marker = read_marker(self.resume) if self.resume else {}  # what the resumed checkpoint kept
        self.seconds = 0.0  # this session's
        self.seconds_before = 0.0  # the sessions' before the resume; None where the checkpoint predates the ledger
        self._steps = 0
        self.precision = self._precision()
        if self.resume and (saved := self._checkpoint_precision()) not in (None, self.precision):
            self._start_again(saved)
        self.sessions = [
            this_session(self.precision)
        ]  # the machine of every session that trained the run, this one last
        self.diverged: dict[str, Any] | None = None  # the divergence rule's evidence, where the run tripped it
        self.resumed_order: str | None = None  # a resumed run's: were its batches in the uninterrupted run's order

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()

    def _precision(self) -> str:
        """The precision this session trains in: the run's setting on this machine, except that a run resumed on the
        kind of machine its checkpoint was saved on continues in the checkpoint's precision."""
        resolved = resolve_precision(self.config.precision)
        last = (self.marker.get(SESSIONS) or [{}])[-1]
        if last.get("machine") == machine_kind() and last.get("precision"):
            return last["precision"]
        return resolved

    def _checkpoint_precision(self) -> str | None:
        """The precision the resumed checkpoint's last session trained in (None where its marker predates it)."""
        return (self.marker.get(SESSIONS) or [{}])[-1].get("precision")

    def _start_again(self, saved: str) -> None:
        """A run never resumes in another precision than its checkpoint's (bf16 steps then fp32 steps would be a
        treatment no other run had): its checkpoints go and it trains from step 0 here; its record says so
        (`restarted`)."""
        for checkpoint in self.output_dir.glob("checkpoint-*"):
            remove_folder(checkpoint)
        why = f"saved in {saved}, this machine trains in {self.precision}: started again from step 0"
        self.set_aside.append({"checkpoint": self.resume, "error": why, "removed": True})
        print(f"WARNING {self.config.run_id}: checkpoint {self.resume} was {why}", flush=True)
        self.resume, self.marker = None, {}

    @property
    def resumed_step(self) -> int | None:
        return int(Path(self.resume).name.split("-")[-1]) if self.resume else None

    @property
    def run_seconds(self) -> float:
        """The seconds `trainer.train()` ran over the whole run (every session up to a resume included), so that a
        resumed run's record costs what the run cost; this session's alone where the checkpoint predates the
        ledger (`seconds_before` None)."""
        return self.seconds + (self.seconds_before or 0.0)

    @property
    def run_share_here(self) -> float:
        """The share of the run's steps that `run_seconds` covers: 1, or after the steps of a resume whose earlier
        seconds are unknown."""
        return 1.0 if self.seconds_before is not None else 1.0 - (self.resumed_step or 0) / max(self._steps, 1)

    def arguments(self, **overrides: Any) -> TrainingArguments:
        """`TrainingArguments` from the run's settings (the same optimizer, schedule and checkpointing for every
        kind of run); `overrides` say what a kind of run does differently (evaluation, logging, ...)."""
        c = self.config
        common = dict(
            output_dir=str(self.output_dir),
            learning_rate=c.learning_rate,
            num_train_epochs=c.num_train_epochs,
            per_device_train_batch_size=c.batch_size,
            warmup_ratio=c.warmup_ratio,
            weight_decay=c.weight_decay,
            adam_beta2=c.adam_beta2,
            adam_epsilon=c.adam_epsilon,
            lr_scheduler_type="linear",
            optim="adamw_torch_fused",  # one fused kernel: ~8x faster than the per-tensor loop on CPU
            logging_nan_inf_filter=False,  # a NaN loss must fail the run, not vanish from the average
            save_strategy="steps" if self.checkpointing else "no",
            save_steps=10**9,  # checkpoints come from TimedCheckpoints, by wall time
            save_total_limit=2,  # the Trainer deletes the older checkpoint before the newer gets its marker
            seed=c.seed,
            report_to=[],
            dataloader_num_workers=0,
        )
        return training_arguments(self.precision, **{**common, **overrides})

    def train(self, trainer: Trainer, keep: Callable[[], dict] = dict):
        """`trainer.train()`, resumed where a checkpoint says; the training loss must be finite. On a CPU the
        model's dropout draws its masks fast (`use_fast_dropout`).

        The Trainer's `training_loss` of a resumed run sums the losses of the steps after the resume only (and
        divides by all steps), and its clock starts at the resume: each checkpoint keeps the sum of the losses
        and the seconds so far, and the resumed run adds them. `keep` gives more for each checkpoint to keep
        (JSON), which a resumed run reads back from `marker`. The epoch resumed in draws its batches' order as the
        uninterrupted run did (`epoch_order`)."""
        trainer.add_callback(StopOnNonFiniteLoss())
        trainer.add_callback(WarnIfAllWarmup(self.config.run_id))
        order = OrderKeeper(trainer, self.marker.get(EPOCH_ORDER, {}) if self.resume else None)
        use_fast_dropout(trainer.model)
        marker = self.marker if self.resume else {LOSS_SUM: 0.0, SECONDS: 0.0}
        guard = StopOnDivergence(trainer, marker.get(FIRST_LOSS), self.config.run_id)
        trainer.add_callback(guard)
        before = _sum_or_none(marker.get(LOSS_SUM))
        pending = marker.get(SINCE_LOG) if self.resume and before is not None else None
        if pending is not None:  # the steps since the last log before the resume join the next log: not counted twice
            before -= pending[0]
        self.seconds_before = _sum_or_none(marker.get(SECONDS))
        self.sessions = [*marker.get(SESSIONS, []), this_session(self.precision)]
        if before is None:
            warnings.warn(f"{self.resume} predates loss sums: train_loss leaves out the steps before it", stacklevel=2)
        if self.seconds_before is None:
            warnings.warn(f"{self.resume} predates its time ledger: the record's seconds start there", stacklevel=2)
        start = time.perf_counter()
        if self.checkpointing:
            ledger = RunLedger(trainer, before, self.seconds_before, start, pending)
            trainer.add_callback(
                TimedCheckpoints(
                    self.config.checkpoint_every_s,
                    lambda: {
                        **keep(),
                        **ledger.at_save(),
                        **order.at_save(),
                        SESSIONS: self.sessions,
                        FIRST_LOSS: guard.first,
                    },
                )
            )
        output = trainer.train(resume_from_checkpoint=self.resume)
        self.seconds = time.perf_counter() - start
        self.diverged = guard.evidence
        self.resumed_order = (order.order or KEPT) if self.resume else None
        self._steps = output.global_step
        if not math.isfinite(output.training_loss):
            raise NonFiniteLossError(f"training loss is {output.training_loss}")
        if self.resume and before is not None:
            loss = output.training_loss + before / max(output.global_step, 1)
            output = output._replace(training_loss=loss, metrics={**output.metrics, "train_loss": loss})
        return output


def this_session(precision: str) -> dict[str, str]:
    """What a session trains with on this machine: a run resumed on another machine kind (AVX2 after AVX512-BF16)
    trains its later steps in another precision, and its record has to say so."""
    return {
        "precision": precision,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "machine": machine_kind(),
    }


def _sum_or_none(value: float | None) -> float | None:
    """A marker's sum, None where it is missing or NaN (a checkpoint resumed from one that predates the ledger)."""
    return None if value is None or math.isnan(value) else float(value)


class RunLedger:
    """The sum of the training losses and the seconds up to each checkpoint (the run's steps before a resume
    included; NaN where a resume's checkpoint predates the ledger), and the loss summed since the last log with that
    log's step (`SINCE_LOG`).

    The Trainer keeps the steps' loss in a local tensor until it logs, and saves right after: this wraps the
    instance's `_maybe_log_save_evaluate` (transformers 4.57) to read it when a save is due. A resumed Trainer starts
    that tensor at zero and its next log averages the steps since the resume alone (an epoch's loss after a resume
    mid-epoch covered only its end): with `pending` (a checkpoint's `SINCE_LOG`), the first step after the resume
    adds the kept sum to it and dates the last log back, so the log covers the steps an uninterrupted run's would."""

    def __init__(
        self,
        trainer: Trainer,
        loss_before: float | None,
        seconds_before: float | None,
        start: float,
        pending: list | None = None,
    ):
        self.loss_before = math.nan if loss_before is None else loss_before
        self.seconds_before = math.nan if seconds_before is None else seconds_before
        self.start, self.sum, self.seconds, self.trainer = start, math.nan, math.nan, trainer
        self.tr_loss = None
        inner = trainer._maybe_log_save_evaluate

        def log_save_evaluate(tr_loss, *args, **kwargs):
            nonlocal pending
            if pending is not None:
                tr_loss += pending[0]  # in place: the Trainer's own running sum
                trainer._globalstep_last_logged = pending[1]
                pending = None
            self.tr_loss = tr_loss  # zeroed in place when the Trainer logs
            if trainer.control.should_save:
                self.sum = self.loss_before + trainer._total_loss_scalar + tr_loss.item()
                self.seconds = self.seconds_before + time.perf_counter() - self.start
            return inner(tr_loss, *args, **kwargs)

        trainer._maybe_log_save_evaluate = log_save_evaluate

    def at_save(self) -> dict[str, Any]:
        """What a checkpoint's marker keeps, read as it is saved (after the step's log, if it logged)."""
        since = [self.tr_loss.item(), self.trainer._globalstep_last_logged] if self.tr_loss is not None else None
        return {LOSS_SUM: self.sum, SECONDS: self.seconds, SINCE_LOG: since}


def finish(run: Run, session: Session, write: bool = True, **fields: Any) -> dict[str, Any]:
    """Complete the record with the run's results and costs, and write it to the run's results folder."""
    config = run.config
    run.record.update(
        status="ok",
        **fields,
        peak_rss_mb=peak_rss_mb(),
        peak_rss_scope=run.peak_rss_scope,
        device="cuda" if torch.cuda.is_available() else "cpu",
        precision_used=" then ".join(dict.fromkeys(s["precision"] for s in session.sessions)),
        sessions=session.sessions,
        torch_threads=torch.get_num_threads(),
        machine=machine_description(),
        resumed_from_step=session.resumed_step,
        resumed_order=session.resumed_order,
        diverged=session.diverged,
        restarted=session.set_aside or None,
        train_runtime_covers="whole run"
        if session.seconds_before is not None
        else f"after step {session.resumed_step}",
        finished_at=datetime.now(timezone.utc).isoformat(),
    )
    if write:
        write_record(run.record, resolve_results_dir(config.results_dir, config.STUDY))
    return run.record
