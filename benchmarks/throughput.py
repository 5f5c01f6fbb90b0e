"""Throughput of our training paths against the stock recipes, and against this machine's limit.

One command, one run: for each row the stock recipe and our path train the same backbone, task,
method, batch size and number of steps, on real data from the mirror; classification rows alternate
the two paths seed by seed (stock, ours, stock, ...) so that the VM's speed drifts fall on both.
Every training runs in a process of its own: stock as a plain `python` does (glibc's malloc), ours as
`python -m adaptstudy.sweep` does (under tcmalloc where the system has it: `adaptstudy.launch.allocator`).

- Classification (SST-2, MRPC; `full`, `houlsby`): stock = `Trainer`/`AdapterTrainer` with every
  example padded to 128 tokens, as the `adapters` GLUE example does; ours = `adaptstudy.training.finetune.finetune`.
  Both train one epoch on the same examples with seeds 0, 1 and 2 and report the mean dev metric.
- MLM (IMDb review text): stock = `BertForMaskedLM` + `DataCollatorForLanguageModeling` (15%),
  one review per row, padded to the longest in the batch, logits at every position; ours = packed
  rows and the vocabulary projection at masked positions only (`adaptstudy.models.mlm`). The three variants
  (stock, ours, ours with attention dropout) run in turn, three rounds of 14 steps each.
- Machine limit: the fp32 matmul peak, and each path's model FLOP utilization (MFU).

Throughput is the median over timed steps (after warm-up steps); useful tokens are non-pad tokens.
Peak memory is the highest RSS sampled while a path runs (loading its data and model, training,
evaluating) above the RSS of its process when it started (after the imports).

    python benchmarks/throughput.py --quick   # a few minutes: step times only
    python benchmarks/throughput.py           # + the dev metric over 3 seeds (1 h on AVX512-BF16, 2 h on AVX2)

Each machine kind writes its own file: benchmarks/results/throughput-<kind>.json (avx512-bf16, avx2-fp32, avx512-fp32).
While it runs, the rows finished so far are in throughput-<kind>-partial.json (rewritten after each row, removed
once the full file is written), so a run that is stopped early keeps what it measured.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import torch
from transformers import (
    AutoModelForMaskedLM,
    AutoModelForSequenceClassification,
    DataCollatorForLanguageModeling,
    Trainer,
    TrainerCallback,
    TrainingArguments,
    default_data_collator,
    set_seed,
)
from transformers.utils import logging as hf_logging

from adaptstudy.common.files import write_json_atomic
from adaptstudy.data import load_task, resolve_task
from adaptstudy.data.encoding import pack_texts
from adaptstudy.launch.allocator import preload_env, tcmalloc_library
from adaptstudy.models.backbones import load_tokenizer, resolve_backbone
from adaptstudy.models.fast_dropout import use_fast_dropout
from adaptstudy.models.methods import METHODS
from adaptstudy.models.mlm import PRETRAIN_ATTENTION_DROPOUT, load_mlm, prepare_mode
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.training.device import native_bf16, provenance, resolve_precision, training_arguments
from adaptstudy.training.finetune import TaskScorer, finetune

hf_logging.set_verbosity_error()
BACKBONE = "minilm-l6"
STOCK_LENGTH = 128
LEARNING_RATES = {"full": 5e-5, "houlsby": 5e-4}
METRIC_SEEDS = (0, 1, 2)  # the dev metric is a mean over seeds: one run's noise exceeds the 1-point tolerance
MLM_ROUNDS = 3  # the masked-LM rows run 3 times each, alternating (33 timed steps per variant)
ROWS = ("sst2", "mrpc", "mlm")
# What approximates an AVX2 machine on an AVX512 one: torch's own kernels, oneDNN's, and MKL's, which computes the
# fp32 matmuls (without its limit, a Xeon's matmul peak measured 286 GFLOP/s under the other two, 140 with it)
ISA_LIMITS = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")


def isa_limits() -> dict[str, str]:
    """The `ISA_LIMITS` set in this environment (every benchmark's JSON records them: the page says so)."""
    return {k: os.environ[k] for k in ISA_LIMITS if k in os.environ}


class StepTimer(TrainerCallback):
    """Wall time of every optimizer step (forward, backward, update)."""

    def __init__(self):
        self.times: list[float] = []

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.times.append(time.perf_counter() - self._start)


class PeakRSS:
    """Highest resident memory of this process while the block runs (sampled every 20 ms), and that
    peak above the memory held when the block started (what the block itself needed: the process
    also holds what earlier rows loaded)."""

    def __enter__(self):
        gc.collect()
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except OSError:
            pass
        self._proc, self.peak, self._stop = psutil.Process(), 0, threading.Event()
        self.baseline = self._proc.memory_info().rss
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss)
            time.sleep(0.02)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak_mb = self.peak / 2**20
        self.added_mb = (self.peak - self.baseline) / 2**20


def matmul_peak(dtype=torch.float32, n: int = 2048, reps: int = 20) -> float:
    """FLOP/s of an n x n matmul, the best of `reps`."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(reps))
    return 2 * n**3 / best


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def non_embedding_params(model) -> tuple[int, int]:
    """(trainable, frozen) parameters outside the embeddings and the tied MLM decoder."""
    trainable = frozen = 0
    for name, p in model.named_parameters():
        if "embeddings" in name or "decoder" in name:
            continue
        if p.requires_grad:
            trainable += p.numel()
        else:
            frozen += p.numel()
    return trainable, frozen


def train_flops_per_token(model, seq_len: float, mlm_decoder: float = 0.0) -> float:
    """6 FLOPs per trainable and 4 per frozen non-embedding weight (no weight gradient), plus
    attention (12 * layers * seq_len * hidden), plus the MLM decoder at the masked share of tokens."""
    trainable, frozen = non_embedding_params(model)
    cfg = model.config
    attention = 12 * cfg.num_hidden_layers * seq_len * cfg.hidden_size
    decoder = 6 * cfg.vocab_size * cfg.hidden_size * mlm_decoder
    return 6 * trainable + 4 * frozen + attention + decoder


def _args(scratch, batch_size, lr, epochs=1.0, max_steps=-1, precision="fp32", **kw) -> TrainingArguments:
    """The stock recipe's arguments (fp32, the Trainer's defaults); our MLM path adds its own."""
    return training_arguments(
        precision,
        output_dir=scratch,
        per_device_train_batch_size=batch_size,
        per_device_eval_batch_size=64,
        learning_rate=lr,
        num_train_epochs=epochs,
        max_steps=max_steps,
        warmup_ratio=0.1,
        eval_strategy="no",
        save_strategy="no",
        logging_strategy="no",
        report_to=[],
        dataloader_num_workers=0,
        disable_tqdm=True,
        **{"seed": 42, **kw},
    )


def stock_classification(task, method, n_train, batch_size, evaluate, seed):
    """What an `adapters` user runs: pad every example to 128, Trainer/AdapterTrainer, fp32."""
    spec = resolve_task(task)
    timer = StepTimer()
    with tempfile.TemporaryDirectory() as scratch, PeakRSS() as mem:  # data, model and training, as for ours
        splits = load_task(task, max_train_examples=n_train)
        tok = load_tokenizer(BACKBONE)

        def encode(b):
            pair = b["text_b"] if "text_b" in b else None
            return tok(b["text_a"], pair, padding="max_length", truncation=True, max_length=STOCK_LENGTH)

        text_columns = [c for c in ("text_a", "text_b") if c in splits["train"].column_names]
        enc = splits.map(encode, batched=True, remove_columns=text_columns)
        config = FinetuneConfig(
            task=task, method=method, adapter_size=64 if method == "houlsby" else None, seed=seed
        ).resolved()
        set_seed(seed)  # the new head's init, as Trainer(model_init=...) would
        model = AutoModelForSequenceClassification.from_pretrained(
            resolve_backbone(BACKBONE), num_labels=spec.num_labels
        )
        model = METHODS.get(method).apply(model, config)
        trainer_cls = Trainer
        if method == "houlsby":
            from adapters import AdapterTrainer

            trainer_cls = AdapterTrainer
        trainer = trainer_cls(
            model=model,
            args=_args(scratch, batch_size, LEARNING_RATES[method], seed=seed),
            train_dataset=enc["train"],
            eval_dataset=enc[spec.eval_split],
            data_collator=default_data_collator,
            compute_metrics=TaskScorer(spec),
            callbacks=[timer],
        )
        trainer.train()
        metric = trainer.evaluate()[f"eval_{spec.main_metric}"] if evaluate else None
    useful = float(np.mean([sum(m) for m in enc["train"]["attention_mask"]]))
    return timer, mem.added_mb, metric, useful


def ours_classification(task, method, n_train, batch_size, evaluate, seed, precision="auto", backbone=BACKBONE):
    spec = resolve_task(task)
    config = FinetuneConfig(
        backbone=backbone,
        task=task,
        method=method,
        adapter_size=64 if method == "houlsby" else None,
        seed=seed,
        learning_rate=LEARNING_RATES[method],
        num_train_epochs=1,
        max_train_examples=n_train,
        batch_size=batch_size,
        precision=precision,
    )
    timer = StepTimer()
    with PeakRSS() as mem:
        record = finetune(config, write=False, callbacks=[timer])
    metric = record["metrics"][spec.main_metric] if evaluate else None
    useful = record["train_tokens_per_s"] / record["train_examples_per_s"]
    return timer, mem.added_mb, metric, useful


def imdb_texts(n: int) -> list[str]:
    path = Path(os.environ.get("ADAPTSTUDY_DATA", "data")) / "imdb" / "train.jsonl"
    with open(path) as f:
        return [json.loads(line)["text"] for _, line in zip(range(n), f)]


def stock_mlm(n_texts, max_len, steps, batch_size):
    """BertForMaskedLM + DataCollatorForLanguageModeling: one review per row, logits everywhere."""
    from datasets import Dataset

    texts = imdb_texts(n_texts)
    timer = StepTimer()
    with tempfile.TemporaryDirectory() as scratch, PeakRSS() as mem:
        tok = load_tokenizer(BACKBONE)
        model = AutoModelForMaskedLM.from_pretrained(resolve_backbone(BACKBONE), use_safetensors=True)
        ds = Dataset.from_dict({"text": texts}).map(
            lambda b: tok(b["text"], truncation=True, max_length=max_len), batched=True, remove_columns=["text"]
        )
        Trainer(
            model=model,
            args=_args(scratch, batch_size, 1e-4, max_steps=steps),
            train_dataset=ds,
            data_collator=DataCollatorForLanguageModeling(tok, mlm_probability=0.15),
            callbacks=[timer],
        ).train()
    useful_per_row = float(np.mean([len(x) for x in ds["input_ids"]]))
    return timer, mem.added_mb, None, useful_per_row


def ours_mlm(n_texts, max_len, steps, batch_size, attention_dropout=PRETRAIN_ATTENTION_DROPOUT, precision="auto"):
    """Our pretraining path (`adaptstudy.models.mlm`, mode full): packed rows, the last layer and the logits at
    masked positions only, bf16 autocast where native; on a CPU fast dropout (the training core adds it)."""
    texts = imdb_texts(n_texts)
    timer = StepTimer()
    with tempfile.TemporaryDirectory() as scratch, PeakRSS() as mem:
        tok = load_tokenizer(BACKBONE)
        model = prepare_mode(load_mlm(BACKBONE, attention_dropout), "full")
        use_fast_dropout(model)  # as the training core does
        ds = pack_texts(texts, tok, max_len, drop_last=True)
        Trainer(
            model=model,
            train_dataset=ds,
            callbacks=[timer],
            args=_args(
                scratch,
                batch_size,
                1e-4,
                max_steps=steps,
                remove_unused_columns=False,
                optim="adamw_torch_fused",
                precision=precision,
            ),
            data_collator=DataCollatorForLanguageModeling(tok, mlm_probability=0.15),
        ).train()
    return timer, mem.added_mb, None, float(max_len)


# Each run starts its own process, so that none inherits another's heap. Ours runs as the sweep runs it: under
# tcmalloc where the system has it (`adaptstudy.launch.allocator`); stock as a plain `python` does.
PATH_ENV = {
    "stock": {**os.environ, "LD_PRELOAD": "", "ADAPTSTUDY_ALLOCATOR": "system"},
    "ours": preload_env(os.environ),
}


def in_own_process(path: str, fn: str, *args, **kw) -> dict:
    """`fn(*args, **kw)` of this script in a new process with `path`'s environment: its step times, peak memory
    added (MB), dev metric and useful tokens per example."""
    job = json.dumps({"fn": fn, "args": args, "kw": kw})
    done = subprocess.run(
        [sys.executable, __file__, "--child", job], env=PATH_ENV[path], capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"{fn}{args} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    metric = f", dev {result['metric']:.1f}" if result["metric"] is not None else ""
    print(f"  {fn}{args}: median step {statistics.median(result['step_times']):.2f} s{metric}", flush=True)
    return result


def child(job: str) -> dict:
    job = json.loads(job)
    timer, peak_mb, metric, useful = globals()[job["fn"]](*job["args"], **job["kw"])
    return {"step_times": timer.times, "peak_mb": peak_mb, "metric": metric, "useful": useful}


def _allocator(env: dict) -> str:
    return "tcmalloc" if "tcmalloc" in env.get("LD_PRELOAD", "") else "glibc"


def _autocast(precision: str) -> str:
    return "fp32" if precision == "fp32" else f"{precision} autocast"


def machine_kind(precision: str) -> str:
    """The file name's machine kind: "avx512-bf16" where ours trains in bf16, else e.g. "avx2-fp32"; "-approx" where
    `ISA_LIMITS` make a faster machine stand in for this kind."""
    if precision == "bf16":
        return "avx512-bf16"
    approx = "-approx" if isa_limits() else ""
    return f"{torch.backends.cpu.get_cpu_capability().lower()}-{precision}{approx}"


def run(quick: bool, precision: str, rows: tuple[str, ...] = ROWS, checkpoint=lambda result: None) -> dict:
    """The benchmark's result; `checkpoint` gets what has finished after each row (a run of 2 h that stops early
    keeps its finished rows)."""
    torch.manual_seed(0)
    warmup = 2 if quick else 3
    reps = 5 if quick else 20
    peaks32 = [matmul_peak(torch.float32, reps=reps)]
    # Without AVX512-BF16/AMX, bf16 matmuls are emulated (about 1 GFLOP/s on an AVX2 machine): keep them small.
    peak16 = matmul_peak(torch.bfloat16, reps=reps) if native_bf16() else matmul_peak(torch.bfloat16, n=512, reps=2)
    used = resolve_precision(precision)
    out = {
        **provenance(
            kind=machine_kind(used),
            # set on an AVX512 machine to approximate AVX2 kernels (the page says so)
            isa_limits=isa_limits(),
            matmul_bf16_flops=peak16,
        ),
        "quick": quick,
        "rows": [],
        "precision": {"stock": "fp32", "ours": _autocast(used)},
        "allocator": {path: _allocator(env) for path, env in PATH_ENV.items()},
    }
    batch = 32
    sizes = {"sst2": 256 if quick else 4000, "mrpc": 256 if quick else None}
    seeds = (0,) if quick else METRIC_SEEDS
    for task in (t for t in ("sst2", "mrpc") if t in rows):
        for method in ("full", "houlsby"):
            evaluate = not quick
            peaks32.append(matmul_peak(torch.float32, reps=reps))
            paths = {"stock": ("stock_classification", {}), "ours": ("ours_classification", {"precision": precision})}
            # seed by seed, stock then ours: a slow spell of this VM falls on both paths rather than on one
            by_path = {path: [] for path in paths}
            for seed in seeds:
                for path, (fn, kw) in paths.items():
                    by_path[path].append(
                        in_own_process(path, fn, task, method, sizes[task], batch, evaluate, seed, **kw)
                    )
            results = {}
            for path, runs in by_path.items():
                steps = [t for r in runs for t in r["step_times"][warmup:]]
                metrics = [r["metric"] for r in runs] if evaluate else None
                results[path] = (steps, max(r["peak_mb"] for r in runs), metrics, runs[0]["useful"])
            model = _model_for_flops(task, method)
            _add_rows(out, f"{task}/{method}", results, batch, model, warmup)
            checkpoint(_with_utilization(out, peaks32, peak16, partial=True))
    if "mlm" in rows:
        _mlm_rows(out, quick, precision, warmup, peaks32, reps)
    peaks32.append(matmul_peak(torch.float32, reps=reps))
    out = _with_utilization(out, peaks32, peak16, partial=set(rows) != set(ROWS))  # the book leaves a partial run out
    for row in out["rows"]:
        print(_format(row), flush=True)
    print(f"matmul peak: fp32 {max(peaks32) / 1e9:.0f} GFLOP/s (best of {len(peaks32)}), bf16 {peak16 / 1e9:.0f}")
    return out


def _with_utilization(out: dict, peaks32: list[float], peak16: float, partial: bool) -> dict:
    """A copy of `out` with the machine's fp32 peak and each row's MFU against it. The peak is the best of its
    measurements through the run (this VM's matmul speed varies by up to 2x from minute to minute; a low first
    measurement would inflate every MFU)."""
    peak32 = max(peaks32)
    return {
        **out,
        "partial": partial,
        "machine": {**out["machine"], "matmul_fp32_flops": peak32, "matmul_fp32_flops_measured": list(peaks32)},
        "rows": [
            {**row, "mfu_fp32": row["model_flops_per_s"] / peak32, "mfu_bf16": row["model_flops_per_s"] / peak16}
            for row in out["rows"]
        ],
    }


def _mlm_rows(out, quick, precision, warmup, peaks32, reps):
    max_len, mlm_batch, steps = 256, 16, (8 if quick else 14)
    texts = (800 if quick else 2000, max_len, steps, mlm_batch)
    peaks32.append(matmul_peak(torch.float32, reps=reps))
    variants = (
        ("stock", "stock", "stock_mlm", {}),
        ("ours", "ours", "ours_mlm", {"precision": precision}),
        ("ours, attention dropout 0.1", "ours", "ours_mlm", {"attention_dropout": 0.1, "precision": precision}),
    )
    # round by round, as the classification rows go seed by seed: a slow spell falls on every variant
    runs = {name: [] for name, *_ in variants}
    for _ in range(1 if quick else MLM_ROUNDS):
        for name, path, fn, kw in variants:
            runs[name].append(in_own_process(path, fn, *texts, **kw))
    results = {
        name: ([t for r in rs for t in r["step_times"][warmup:]], max(r["peak_mb"] for r in rs), None, rs[0]["useful"])
        for name, rs in runs.items()
    }
    model = load_mlm(BACKBONE).mlm
    _add_rows(out, "mlm/imdb", results, mlm_batch, model, warmup, mlm=True)


def _model_for_flops(task, method, backbone=BACKBONE):
    config = FinetuneConfig(
        task=task, method=method, backbone=backbone, adapter_size=64 if method == "houlsby" else None
    ).resolved()
    model = AutoModelForSequenceClassification.from_pretrained(
        resolve_backbone(backbone), num_labels=resolve_task(task).num_labels
    )
    return METHODS.get(method).apply(model, config)


def _add_rows(out, name, results, batch, model, warmup, mlm=False):
    base = None
    for path, (steps, peak_mb, metrics, useful) in results.items():  # the first is the stock recipe
        step = statistics.median(steps)
        ex_s = batch / step
        tok_s = ex_s * useful
        flops = train_flops_per_token(model, seq_len=useful, mlm_decoder=0.15 if mlm else 0.0) * tok_s
        row = {
            "row": name,
            "path": path,
            "batch_size": batch,
            "timed_steps": len(steps),
            "median_step_s": step,
            "examples_per_s": ex_s,
            "useful_tokens_per_example": useful,
            "useful_tokens_per_s": tok_s,
            "model_flops_per_s": flops,
            "peak_rss_added_mb": peak_mb,
            "dev_metrics": metrics,
            "dev_metric": statistics.mean(metrics) if metrics else None,
            "dev_metric_sd": statistics.stdev(metrics) if metrics and len(metrics) > 1 else None,
        }
        if base is None:
            base = row
        else:
            row["speedup_examples"] = row["examples_per_s"] / base["examples_per_s"]
            row["speedup_tokens"] = row["useful_tokens_per_s"] / base["useful_tokens_per_s"]
        out["rows"].append(row)


def _format(r) -> str:
    speed = f" x{r['speedup_tokens']:.2f}" if "speedup_tokens" in r else ""
    metric = f" dev {r['dev_metric']:.1f}" if r.get("dev_metric") is not None else ""
    metric += f" ± {r['dev_metric_sd']:.1f}" if r.get("dev_metric_sd") is not None else ""
    return (
        f"{r['row']:<14} {r['path']:<28} {r['examples_per_s']:7.1f} ex/s {r['useful_tokens_per_s']:8.0f} tok/s"
        f"{speed:>7}  MFU {100 * r['mfu_fp32']:4.1f}% fp32  +RSS {r['peak_rss_added_mb']:5.0f} MB{metric}"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="step times only, a few minutes")
    parser.add_argument(
        "--precision",
        default="auto",
        choices=["auto", "fp32"],
        help="our paths' precision; fp32 with ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 "
        "MKL_ENABLE_INSTRUCTIONS=AVX2 approximates an AVX2 machine on an AVX512 one",
    )
    parser.add_argument(
        "--rows", nargs="+", choices=ROWS, default=ROWS, help="measure these rows only (a partial file: -partial)"
    )
    parser.add_argument("--out", type=Path, help="JSON path (default: benchmarks/results/throughput-<machine>.json)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("ADAPTSTUDY_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    if tcmalloc_library() is None:  # the figures would stand for glibc, not for what the sweep runs under
        print(
            "warning: tcmalloc is not installed, so our paths run under glibc's malloc, as the sweep then does; "
            "on an AVX512-BF16 machine that cost 16-21% of the speed and added 180-700 MB (apt install "
            "libtcmalloc-minimal4)",
            file=sys.stderr,
        )
    start = time.perf_counter()

    def write(result: dict, final: bool = False) -> Path:
        result["wall_s"] = time.perf_counter() - start
        path = args.out if final and args.out else _out_path(args.out, result, args.quick)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(result, path)
        return path

    checkpoints = []
    result = run(args.quick, args.precision, tuple(args.rows), checkpoint=lambda r: checkpoints.append(write(r)))
    out = write(result, final=True)
    for path in set(checkpoints) - {out}:  # the full file supersedes what the run wrote on its way
        path.unlink()
    print(f"wrote {out} in {result['wall_s']:.0f} s")
    return 0


def _out_path(out: Path | None, result: dict, quick: bool) -> Path:
    """benchmarks/results/throughput-<machine kind>[-quick][-partial].json; beside `--out` where given."""
    partial = "-partial" if result["partial"] else ""
    name = f"throughput-{result['machine']['kind']}{'-quick' if quick else ''}{partial}.json"
    return (out.parent if out else Path(__file__).parent / "results") / name


if __name__ == "__main__":
    sys.exit(main())
