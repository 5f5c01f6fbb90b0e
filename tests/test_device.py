"""Precision: each run autocasts exactly as its own setting says, even after a bf16 run in the same process, and
`auto` picks bf16, fp16 or fp32 by what the GPU or CPU computes natively."""

import json
import os
import re

import pytest
import torch
from datasets import Dataset
from torch import nn
from transformers import Trainer

from adaptstudy.common.files import mark_complete
from adaptstudy.runs.base import ConfigError
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.training import core, device, runner
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


# Which precision `auto` picks, on GPUs we cannot test on here: CUDA's answers mocked as Colab's GPUs give them.
# torch (>= 2.3) calls bf16 "supported" on a T4 by emulation; only including_emulation=False says it is not native.
GPUS = {"T4": (7, 5), "V100": (7, 0), "L4": (8, 9), "A100": (8, 0)}


@pytest.fixture
def gpu(monkeypatch):
    """`gpu("T4")` makes this process see that GPU; the environment variable training_arguments sets is restored."""
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "no")

    def use(name: str):
        major, minor = GPUS[name]
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (major, minor))
        monkeypatch.setattr(
            torch.cuda, "is_bf16_supported", lambda including_emulation=True: major >= 8 or including_emulation
        )

    return use


@pytest.mark.parametrize(
    "name, used, tf32", [("T4", "fp16", False), ("V100", "fp16", False), ("L4", "bf16", True), ("A100", "bf16", True)]
)
def test_auto_picks_bf16_where_the_gpu_has_it_and_fp16_with_loss_scaling_where_not(gpu, monkeypatch, name, used, tf32):
    gpu(name)
    assert device.resolve_precision("auto") == used and device.use_bf16("auto") is (used == "bf16")
    assert device.trainer_device_args("auto") == {
        "use_cpu": False,
        "bf16": used == "bf16",
        "fp16": used == "fp16",  # the Trainer's fp16 is autocast with a dynamic loss scale (GradScaler)
        "tf32": tf32,
    }
    monkeypatch.setattr(device, "TrainingArguments", dict)  # building real ones would set up the (absent) GPU
    assert device.training_arguments("auto", output_dir="x")["output_dir"] == "x"
    assert os.environ["ACCELERATE_MIXED_PRECISION"] == used
    assert device.training_arguments("fp32")["bf16"] is False and os.environ["ACCELERATE_MIXED_PRECISION"] == "no"
    assert device.training_arguments("fp16")["fp16"] is True and os.environ["ACCELERATE_MIXED_PRECISION"] == "fp16"


def test_the_record_says_fp16_when_a_t4_trained_in_it(gpu, tmp_path):
    gpu("T4")
    run = core.start({"task": "rte", "method": "bitfit", "results_dir": str(tmp_path)}, FinetuneConfig)
    with core.Session(run.config) as session:
        record = core.finish(run, session, write=False, metrics={"accuracy": 50.0})
    assert (record["device"], record["precision_used"]) == ("cuda", "fp16")


@pytest.mark.parametrize(
    "flags, speedup, used",
    [
        ({"avx2", "fma"}, 2.0, "fp32"),
        ({"avx512f", "avx512_bf16"}, 2.0, "bf16"),
        ({"avx512f", "avx512_bf16"}, 0.55, "fp32"),  # an Intel Xeon VM with the flag, 28 Nov 2026
    ],
)
def test_auto_on_a_cpu_is_bf16_only_where_native_and_measured_faster(monkeypatch, flags, speedup, used):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(device, "cpu_flags", lambda: frozenset(flags))
    monkeypatch.setattr(device, "cpu_bf16_speedup", lambda: speedup)
    assert device.resolve_precision("auto") == used
    assert device.trainer_device_args("auto") == {"use_cpu": True, "bf16": used == "bf16", "fp16": False}


def test_fp16_on_a_cpu_is_one_clear_error_before_any_data_is_read(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    message = r"precision 'fp16' needs a CUDA GPU.*Valid here: auto, fp32, bf16"
    with pytest.raises(ConfigError, match=message):
        device.trainer_device_args("fp16")
    config = FinetuneConfig(task="rte", precision="fp16", data_dir=str(tmp_path / "no-data"), results_dir=str(tmp_path))
    with pytest.raises(ConfigError, match=message):  # not a missing-data error: nothing was read
        runner.run(config)
    with pytest.raises(ConfigError, match=message):
        core.start(config, FinetuneConfig)
    assert not any(tmp_path.iterdir())


def test_a_benchmark_header_names_the_machine_with_its_extra_fields_the_versions_and_the_commit():
    header = device.provenance(cores=7, matmul_bf16_flops=1.5e11)
    assert header["machine"]["cores"] == 7  # a benchmark's own count wins over os.cpu_count()
    assert header["machine"]["matmul_bf16_flops"] == 1.5e11
    assert header["machine"]["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert header["versions"]["torch"] == torch.__version__
    assert header["git_commit"] is None or re.fullmatch(r"[0-9a-f]{40}(-dirty)?", header["git_commit"])


def test_the_bf16_speedup_is_measured_on_this_cpu():
    """A ratio of two timings of the same layer; where the CPU only emulates bf16 (AVX2: several times slower than
    fp32) it must come out below the bar, or `auto` would have picked bf16 there had the flags said otherwise."""
    speedup = device.measure_bf16_speedup(rounds=2, calls=1)
    assert 0.0 < speedup < 50.0
    if not device.NATIVE_BF16_CPU_FLAGS & device.cpu_flags():
        assert speedup < device.BF16_MIN_SPEEDUP
    described = device.machine_description()
    assert ("bf16_speedup" in described) is (device.native_bf16() and not torch.cuda.is_available())


def test_the_bf16_speedup_is_measured_once_per_machine_kind_and_kept(monkeypatch, tmp_path):
    """A later process under load (its stopwatch would say 0.5x) reads the kept figure: one precision per machine."""
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(device, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    for measured in (2.1, 0.5):  # the second as a process would time it beside two busy loops
        monkeypatch.setattr(device, "measure_bf16_speedup", lambda: measured)
        device.cpu_bf16_speedup.cache_clear()  # a new process
        assert device.cpu_bf16_speedup() == 2.1 and device.resolve_precision("auto") == "bf16"
    kept = json.loads(next((tmp_path / "machines").glob("*.json")).read_text())
    assert kept["kind"] == device.machine_kind() and kept["bf16_speedup"] == 2.1 and kept["measured_at"]
    monkeypatch.setattr(device, "machine_kind", lambda: "another machine")
    device.cpu_bf16_speedup.cache_clear()
    assert device.cpu_bf16_speedup() == 0.5  # another kind of machine is measured for itself
    device.cpu_bf16_speedup.cache_clear()


@pytest.mark.parametrize("same_machine", [True, False])
def test_a_resumed_run_keeps_its_checkpoint_precision_on_the_same_kind_of_machine(monkeypatch, tmp_path, same_machine):
    monkeypatch.setattr(core, "resolve_precision", lambda precision: "bf16")
    config = FinetuneConfig(task="rte")
    checkpoint = tmp_path / "checkpoint-4"
    checkpoint.mkdir()
    machine = device.machine_kind() if same_machine else "another machine"
    mark_complete(checkpoint, {"step": 4, core.SESSIONS: [{"precision": "fp32", "machine": machine}]})
    with core.Session(config, tmp_path) as session:
        assert session.precision == ("fp32" if same_machine else "bf16")
        assert session.sessions[-1]["precision"] == session.precision
