"""Precision: each run autocasts exactly as its own setting says, even after a bf16 run in the same process."""

import pytest
import torch
from datasets import Dataset
from torch import nn
from transformers import Trainer

from adaptstudy.training.device import training_arguments, use_bf16


class _Probe(nn.Module):
    """Records whether its forward ran under CPU autocast."""

    def __init__(self):
        super().__init__()
        self.linear, self.autocast = nn.Linear(4, 1), []

    def forward(self, x, labels=None):
        self.autocast.append(torch.is_autocast_enabled("cpu"))
        return {"loss": self.linear(x).pow(2).mean()}


def _autocast_seen(tmp_path, precision: str) -> bool:
    probe = _Probe()
    args = training_arguments(
        precision,
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=2,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
    )
    Trainer(model=probe, args=args, train_dataset=Dataset.from_dict({"x": [[1.0] * 4] * 2, "labels": [0, 0]})).train()
    return probe.autocast[0]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks CPU autocast")
def test_an_fp32_run_after_a_bf16_run_does_not_autocast(tmp_path):
    assert _autocast_seen(tmp_path, "bf16") is True
    assert _autocast_seen(tmp_path, "fp32") is False  # transformers alone would leave bf16 on (env leak)
    assert _autocast_seen(tmp_path, "auto") is use_bf16("auto")


def test_explicit_precisions_mean_what_they_say():
    assert use_bf16("bf16") and not use_bf16("fp32")
