"""What each candidate change does to an fp32 training step on this CPU, measured side by side.

Every variant trains its own copy of `minilm-l6` (full fine-tuning, AdamW, batch 32) on the same length-grouped
batches of real SST-2 or MRPC examples; steps of the variants are interleaved (batch 1 on every variant, then
batch 2, ...), so a noisy neighbour slows all of them alike. Each variant adds one change to the one before:

- `before`: the path before the fast path (scaled-dot-product attention, torch's dropout, lengths rounded up to 16);
- `+ fast dropout`: masks from numpy's SFC64 (`adaptstudy.models.fast_dropout`), eager attention to route the
  attention dropout through it;
- `+ no length rounding`: pad to the batch's longest example only;
- `+ last layer at [CLS]`: `adaptstudy.models.last_layer` (the path now).

`--compile` adds `torch.compile` (inductor, dynamic shapes) of the `before` model, compile time reported apart.

    python benchmarks/fp32_candidates.py            # about 10 minutes; writes benchmarks/results/fp32_candidates.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding
from transformers.utils import logging as hf_logging

from adaptstudy.common.files import write_json_atomic
from adaptstudy.data import load_task
from adaptstudy.data.encoding import tokenize_task
from adaptstudy.models.backbones import load_tokenizer, resolve_backbone
from adaptstudy.models.fast_dropout import use_fast_dropout
from adaptstudy.models.last_layer import train_last_layer_at_queries
from adaptstudy.training.device import provenance

hf_logging.set_verbosity_error()
BATCH, BATCHES, WARMUP, PASSES = 32, 16, 2, 2
VARIANTS = {  # name: (attention, fast dropout, pad to a multiple of, last layer at [CLS], compile)
    "before": ("sdpa", False, 16, False, False),
    "+ fast dropout": ("eager", True, 16, False, False),
    "+ no length rounding": ("eager", True, None, False, False),
    "+ last layer at [CLS]": ("eager", True, None, True, False),
}
COMPILED = {"before, torch.compile": ("sdpa", False, 16, False, True)}


def batches(task: str, pad: int | None) -> list[dict]:
    """`BATCHES` batches as the Trainer's length grouping forms them: a random sample, sorted by length, cut in 32s."""
    tokenizer = load_tokenizer("minilm-l6")
    train = tokenize_task(load_task(task), tokenizer, 128)["train"]
    lengths = np.array([len(ids) for ids in train["input_ids"]])
    sample = np.random.RandomState(0).permutation(len(train))[: BATCH * BATCHES]
    sample = sample[np.argsort(-lengths[sample], kind="stable")]
    collate = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=pad)
    out = []
    for start in range(0, len(sample), BATCH):
        rows = [train[int(i)] for i in sample[start : start + BATCH]]
        batch = collate([{k: r[k] for k in ("input_ids", "token_type_ids", "attention_mask")} for r in rows])
        out.append({**batch, "labels": torch.tensor([r["label"] for r in rows])})
    return out


def variant(task: str, attention: str, fast: bool, pad: int | None, cls: bool, compiled: bool) -> dict:
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        resolve_backbone("minilm-l6"), num_labels=2, attn_implementation=attention
    ).train()
    if fast:
        use_fast_dropout(model)
    if cls:
        train_last_layer_at_queries(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, fused=True)
    forward = torch.compile(model, dynamic=True) if compiled else model

    def step(batch):
        forward(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    data = batches(task, pad)
    start = time.perf_counter()
    for batch in data[:WARMUP]:
        step(batch)
    return {"step": step, "data": data, "warmup_s": time.perf_counter() - start, "times": []}


def measure(task: str, variants: dict) -> list[dict]:
    runs = {name: variant(task, *spec) for name, spec in variants.items()}
    for _ in range(PASSES):
        for i in range(BATCHES):
            for run in runs.values():
                start = time.perf_counter()
                run["step"](run["data"][i])
                run["times"].append(time.perf_counter() - start)
    first = statistics.mean(next(iter(runs.values()))["times"])
    rows = []
    for name, run in runs.items():
        mean = statistics.mean(run["times"])
        tokens = statistics.mean(int(b["input_ids"].numel()) for b in run["data"])
        useful = statistics.mean(int(b["attention_mask"].sum()) for b in run["data"])
        rows.append(
            {
                "task": task,
                "variant": name,
                "mean_step_s": mean,
                "speedup_vs_first": first / mean,
                "tokens_per_step_with_padding": tokens,
                "useful_tokens_per_step": useful,
                "warmup_s": run["warmup_s"],
            }
        )
        print(f"{task:5} {name:24} {1000 * mean:6.0f} ms/step  x{first / mean:.2f}  {tokens:5.0f} tokens", flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compile", action="store_true", help="also torch.compile the first variant")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "fp32_candidates.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("ADAPTSTUDY_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    variants = {**VARIANTS, **(COMPILED if args.compile else {})}
    result = {
        **provenance(),
        "protocol": {"batch_size": BATCH, "batches": BATCHES, "warmup_steps": WARMUP, "passes": PASSES},
        "rows": [row for task in ("sst2", "mrpc") for row in measure(task, variants)],
    }
    write_json_atomic(result, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
