"""The Trainer callbacks of our runs, one style: a `TrainerCallback` subclass per concern."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

from transformers import TrainerCallback

from adaptstudy.common.files import mark_complete


class NonFiniteLossError(RuntimeError):
    """Training diverged: the loss became NaN or infinite."""


class StopOnNonFiniteLoss(TrainerCallback):
    """Fail the run as soon as a logged training loss is NaN or infinite (every run has it)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(loss):
            raise NonFiniteLossError(f"training loss is {loss} at step {state.global_step}")


class WarnIfAllWarmup(TrainerCallback):
    """Say in one line when a run's steps all fall within its warmup: the linear schedule starts at rate 0, so such a
    run never reaches its learning rate, and a one-step run trains at rate 0 (learning rate 1000 "ran ok", untrained).
    """

    def __init__(self, name: str = "run"):
        self.name = name

    def on_train_begin(self, args, state, control, **kwargs):
        warmup = args.get_warmup_steps(state.max_steps)
        if 0 < state.max_steps <= warmup:
            only = " (its only step trains at rate 0)" if state.max_steps == 1 else ""
            print(
                f"WARNING {self.name}: its {state.max_steps} steps all fall within its {warmup} warmup steps"
                f"{only}: it never trains at learning rate {args.learning_rate:g}; lower warmup_ratio or train longer",
                flush=True,
            )


DIVERGENCE_FACTOR = 10.0  # a step's loss this many times the first step's ...
DIVERGENCE_STEPS = 2  # ... this many steps in a row: the run diverged
DIVERGENCE_RULE = (
    f"training loss above {DIVERGENCE_FACTOR:g}x the first step's of the same task for {DIVERGENCE_STEPS} steps "
    "in a row"
)


class StopOnDivergence(TrainerCallback):
    """The one declared rule for a diverged run (`DIVERGENCE_RULE`): it is said in one line as it happens, and the run
    stops there to save the CPU; `evidence` (step, loss, first loss, rule; the task in multi-task training) goes into
    its record as `diverged`, whose score is the score at the stop. A fresh classification head starts near
    ln(classes) (0.69 on two), and no committed run's epoch loss came near 10x that (`tests/test_faults.py`);
    learning rate 1e3 gives 1e4-1e5.

    Each step's loss is compared with the first loss of its own task (the batch's `task_ids`; one task per batch in
    multi-task training): a regression task's squared error starts near its targets' mean square (about 9 on
    STS-B's 0-5 scores), more than 10x a classification task's first 0.69, so one reference for all tasks stopped
    healthy runs. Each step's loss is read where the Trainer computes it (`training_step`, wrapped on this
    instance); the first losses are kept in checkpoints (`first`, by task), so a resumed run keeps its references."""

    def __init__(self, trainer, first: dict[str, float] | float | None = None, name: str = "run"):
        self.first = first if isinstance(first, dict) else ({} if first is None else {SINGLE: first})
        self.name, self.step_loss, self.step_task, self.above, self.evidence = name, None, SINGLE, 0, None
        inner = trainer.training_step

        def training_step(model, inputs, *args, **kwargs):
            self.step_task = task_of_batch(inputs)  # read first: the step may consume its inputs
            loss = inner(model, inputs, *args, **kwargs)
            self.step_loss = float(loss.detach().float())
            return loss

        trainer.training_step = training_step

    def on_step_end(self, args, state, control, **kwargs):
        loss, self.step_loss = self.step_loss, None
        if loss is None or not math.isfinite(loss) or self.evidence is not None:
            return
        task = self.step_task
        if task not in self.first:
            self.first[task] = loss
            return
        first = self.first[task]
        self.above = self.above + 1 if loss > DIVERGENCE_FACTOR * first else 0
        if self.above >= DIVERGENCE_STEPS:
            self.evidence = {"step": state.global_step, "loss": loss, "first_loss": first, "rule": DIVERGENCE_RULE}
            self.evidence |= {} if task == SINGLE else {"task_index": int(task)}
            print(
                f"WARNING {self.name} diverged: training loss {loss:.4g} at step {state.global_step}, "
                f"{loss / first:.3g}x the first step's {first:.4g}; it stops here, scored as it stands",
                flush=True,
            )
            control.should_training_stop = True


SINGLE = ""  # the reference's key in single-task training


def task_of_batch(inputs) -> str:
    """The task a multi-task batch is drawn from (its `task_ids`, one task per batch), as a JSON key; `SINGLE`
    for a batch without them."""
    ids = inputs.get("task_ids") if hasattr(inputs, "get") else None
    return SINGLE if ids is None else str(int(ids.reshape(-1)[0]))


class TimedCheckpoints(TrainerCallback):
    """Save a checkpoint every `every_s` seconds of training (0: every step), and only then.

    The Trainer also saves at the last step; that save is skipped (the record follows at once). A
    checkpoint gets its marker once the Trainer has written all of it, so a kill in the middle
    of a save never leaves a checkpoint that a rerun would try to resume from. The Trainer removes
    old checkpoints before the new one gets its marker, so runs keep two (`save_total_limit=2`):
    with one, a kill in that gap left nothing to resume from. A save that falls due on an epoch's last step waits
    one step: the epoch's scoring comes after that step's save, and a run resumed from it would never score the
    epoch.
    """

    def __init__(self, every_s: float, extra: Callable[[], dict] = dict):
        self.every_s, self.extra = every_s, extra  # `extra`: more for the marker (the loss sum so far)
        self.last = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        due = time.monotonic() - self.last >= self.every_s
        control.should_save = due and state.global_step < state.max_steps and not _ends_epoch(state, kwargs)
        if control.should_save:
            self.last = time.monotonic()

    def on_save(self, args, state, control, **kwargs):
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        mark_complete(folder, {"kind": "checkpoint", "step": state.global_step, **self.extra()})


def _ends_epoch(state, kwargs) -> bool:
    loader = kwargs.get("train_dataloader")
    try:
        return state.global_step % len(loader) == 0
    except TypeError:  # no loader, or one without a length (pretraining by steps): no epoch to end
        return False


class EpochTimer(TrainerCallback):
    """Training seconds of each epoch (evaluation excluded: the Trainer evaluates after `on_epoch_end`)."""

    def __init__(self):
        self.seconds: dict[float, float] = {}

    def on_epoch_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()

    def on_epoch_end(self, args, state, control, **kwargs):
        self.seconds[round(state.epoch, 4)] = time.perf_counter() - self.start


class FusionRegularization(TrainerCallback):
    """AdapterFusion's pull of every value matrix towards the identity (0.01 x squared distance), added after
    each step as the `adapters` package's own trainer does."""

    def on_step_end(self, args, state, control, model=None, **kwargs):
        loss = model.base_model.get_fusion_regularization_loss()
        if loss is not None:
            loss.backward()


class ScoreEachEpoch(TrainerCallback):
    """Call `score(state)` at the end of every `every`-th epoch and after the last (multi-task runs score
    validation and test themselves: one dataset per task)."""

    def __init__(self, score: Callable, every: int, epochs: float):
        self.score, self.every, self.epochs = score, every, epochs

    def on_epoch_end(self, args, state, control, **kwargs):
        epoch = round(state.epoch)
        if epoch % self.every and epoch < math.ceil(self.epochs):
            return
        self.score(state)
