"""Temperature sampling of tasks for multi-task batches (Hyperformer, Mahabadi et al. 2021).

Task t is drawn for each batch with probability proportional to n_t^(1/T), n_t its training examples:
between proportional (T = 1) and uniform (T -> inf); the paper uses T = 10.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np


def sampling_probabilities(sizes: list[int], temperature: float) -> np.ndarray:
    weights = np.asarray(sizes, dtype=float) ** (1.0 / temperature)
    return weights / weights.sum()


class TemperatureBatchSampler:
    """Batches of global indices into the tasks' concatenation, each from one task drawn with probability
    ∝ n_t^(1/T); within a task, examples come in a seeded shuffled order, reshuffled when used up.
    One pass yields as many batches as the tasks' examples fill (sum n_t / batch size)."""

    def __init__(self, sizes: list[int], batch_size: int, temperature: float, seed: int):
        self.sizes, self.batch_size, self.seed = list(sizes), batch_size, seed
        self.probabilities = sampling_probabilities(self.sizes, temperature)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])
        self.passes = 0

    def __len__(self) -> int:
        return math.ceil(sum(self.sizes) / self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        """The next pass is epoch `epoch`'s (a run resumed in its third epoch draws the third epoch's batches)."""
        self.passes = epoch

    def __iter__(self) -> Iterator[list[int]]:
        rng = np.random.default_rng([self.seed, self.passes])
        self.passes += 1
        orders = [rng.permutation(n) for n in self.sizes]
        cursor = [0] * len(self.sizes)
        for task in rng.choice(len(self.sizes), size=len(self), p=self.probabilities):
            batch = []
            while len(batch) < min(self.batch_size, self.sizes[task]):
                if cursor[task] == self.sizes[task]:
                    orders[task], cursor[task] = rng.permutation(self.sizes[task]), 0
                take = orders[task][cursor[task] : cursor[task] + self.batch_size - len(batch)]
                cursor[task] += len(take)
                batch.extend(int(self.offsets[task] + i) for i in take)
            yield batch
