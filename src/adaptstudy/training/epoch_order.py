"""The order of an epoch's batches, the same in a resumed run as in an uninterrupted one.

transformers' `LengthGroupedSampler` (fine-tuning's `group_by_length`) draws each epoch's permutation from torch's
global generator when the epoch's first batch is fetched; the Trainer restores a checkpoint's RNG state only after
that draw (for dropout). A run resumed inside its first epoch drew from the same state as the uninterrupted run (set
by the seed), but one resumed in a later epoch drew from the state right after the model was built, not from the
state that epoch began with: another order, other losses, other predictions, and no word of it.

`EpochOrder` keeps the generator's state as each epoch's permutation is drawn (each checkpoint stores it), and a
resumed run sets the generator back to it before drawing the permutation of the epoch it resumes in. Uninterrupted
runs draw exactly as before. Samplers with a generator of their own (multi-task batches, seeded per epoch;
accelerate's seedable random sampler) need nothing and are left as they are.
"""

from __future__ import annotations

import base64
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from transformers.trainer_pt_utils import LengthGroupedSampler

EPOCH_ORDER = "epoch_order"  # in a checkpoint's marker: {"epoch": e, "torch_rng": the state e's order was drawn from}
KEPT, LOST = "kept", "lost"  # a resumed run's `resumed_order`: its epoch's batches came as uninterrupted, or not


class EpochOrder(torch.utils.data.Sampler):
    """`sampler`'s epochs, each drawn from the generator state it had when the epoch began; with `resume` (a
    checkpoint's `EPOCH_ORDER`, {} for a checkpoint from before it was kept), the epoch resumed in is drawn from the
    state kept for it. `order` says whether the resumed epoch's order is the uninterrupted run's."""

    def __init__(self, sampler: torch.utils.data.Sampler, resume: dict[str, Any] | None):
        self.sampler, self.resume, self.epoch = sampler, resume, 0
        self.drawn: dict[str, Any] | None = None
        self.order: str | None = None

    def __len__(self) -> int:
        return len(self.sampler)

    def set_epoch(self, epoch: int) -> None:
        """The Trainer (through accelerate's loader) names each epoch before its draw, a resumed one included."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        if self.resume is not None:
            self.order = self._restore(self.resume)
            self.resume = None
        self.drawn = {"epoch": self.epoch, "torch_rng": encode(torch.get_rng_state())}
        return iter(self.sampler)

    def _restore(self, kept: dict[str, Any]) -> str:
        if kept.get("epoch") == self.epoch:  # resumed inside the epoch whose draw the checkpoint kept
            torch.set_rng_state(decode(kept["torch_rng"]))
            return KEPT
        if kept or self.epoch == 0:  # a new epoch (the Trainer restored the state it starts from), or the first
            return KEPT
        warnings.warn(
            f"the checkpoint predates the epoch order it resumes in (epoch {self.epoch + 1}): its batches come in "
            "another order than the uninterrupted run's, and the record says so (resumed_order: lost)",
            stacklevel=2,
        )
        return LOST


class OrderKeeper:
    """Installs `EpochOrder` on a Trainer whose training sampler draws from the global generator (fine-tuning's
    length-grouped batches); the checkpoints keep its state (`at_save`) and the record its `order`."""

    def __init__(self, trainer, resume: dict[str, Any] | None):
        self.sampler: EpochOrder | None = None
        inner = trainer._get_train_sampler

        def get_train_sampler(*args, **kwargs):
            sampler = inner(*args, **kwargs)
            if isinstance(sampler, LengthGroupedSampler) and sampler.generator is None:
                sampler = self.sampler = EpochOrder(sampler, resume)
            return sampler

        trainer._get_train_sampler = get_train_sampler

    def at_save(self) -> dict[str, Any]:
        drawn = self.sampler.drawn if self.sampler is not None else None
        return {EPOCH_ORDER: drawn} if drawn else {}

    @property
    def order(self) -> str | None:
        """KEPT or LOST for a resumed run whose sampler needed keeping; None otherwise."""
        return self.sampler.order if self.sampler is not None else None


def encode(state: torch.Tensor) -> str:
    return base64.b64encode(state.numpy().tobytes()).decode("ascii")


def decode(text: str) -> torch.Tensor:
    return torch.from_numpy(np.frombuffer(base64.b64decode(text), dtype=np.uint8).copy())
