"""What candidate changes do to our fp32 masked-LM step on this CPU, measured side by side.

Every variant trains its own copy of `minilm-l6` under our pretraining path (`adaptstudy.models.mlm`, mode full:
packed rows of 256 tokens, the last layer and the vocabulary projection at masked positions only, fast dropout,
fused AdamW, batch 16) on the same batches of packed IMDb reviews with the same masks. Steps of the variants are
interleaved (batch 1 on every variant, then batch 2, ...), so a slow spell of the VM falls on all of them alike.

- `ours`: the path as the sweep runs it;
- `+ compiled layers`: `torch.compile` (inductor, static shapes) of each encoder layer but the last, whose queries
  are the masked positions (their number varies from batch to batch); compile time is reported apart.

    python benchmarks/mlm_candidates.py      # about 5 minutes; writes benchmarks/results/mlm_candidates.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
from transformers import DataCollatorForLanguageModeling
from transformers.utils import logging as hf_logging

from adaptstudy.common.files import write_json_atomic
from adaptstudy.data.encoding import pack_texts
from adaptstudy.models.backbones import load_tokenizer
from adaptstudy.models.fast_dropout import use_fast_dropout
from adaptstudy.models.mlm import load_mlm, prepare_mode
from adaptstudy.training.device import provenance

hf_logging.set_verbosity_error()
BATCH, LENGTH, BATCHES, WARMUP, PASSES = 16, 256, 8, 2, 3


def batches() -> list[dict]:
    """`BATCHES` batches of packed IMDb review text, masked once (every variant sees the same masks)."""
    path = Path(os.environ["ADAPTSTUDY_DATA"]) / "imdb" / "train.jsonl"
    with open(path) as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(400), f)]
    tokenizer = load_tokenizer("minilm-l6")
    rows = pack_texts(texts, tokenizer, LENGTH, drop_last=True)
    torch.manual_seed(0)
    collate = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    return [collate([rows[i] for i in range(start, start + BATCH)]) for start in range(0, BATCH * BATCHES, BATCH)]


def variant(compiled: bool) -> dict:
    torch.manual_seed(0)
    model = prepare_mode(load_mlm("minilm-l6"), "full").train()
    use_fast_dropout(model)
    if compiled:
        for layer in model.encoder.encoder.layer[:-1]:
            layer.compile(dynamic=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def step(batch):
        model(**batch)["loss"].backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return {"step": step, "times": [], "warmup_s": 0.0}


VARIANTS = {"ours": False, "+ compiled layers": True}


def measure() -> list[dict]:
    data = batches()
    runs = {name: variant(compiled) for name, compiled in VARIANTS.items()}
    for run in runs.values():
        start = time.perf_counter()
        for batch in data[:WARMUP]:
            run["step"](batch)
        run["warmup_s"] = time.perf_counter() - start
    for _ in range(PASSES):
        for batch in data:
            for run in runs.values():
                start = time.perf_counter()
                run["step"](batch)
                run["times"].append(time.perf_counter() - start)
    first = statistics.median(next(iter(runs.values()))["times"])
    rows = []
    for name, run in runs.items():
        median = statistics.median(run["times"])
        rows.append(
            {
                "variant": name,
                "median_step_s": median,
                "timed_steps": len(run["times"]),
                "speedup_vs_first": first / median,
                "tokens_per_s": BATCH * LENGTH / median,
                "warmup_s": run["warmup_s"],
            }
        )
        print(f"{name:20} {1000 * median:6.0f} ms/step  x{first / median:.3f}  warm-up {run['warmup_s']:.0f} s")
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "mlm_candidates.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("ADAPTSTUDY_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    result = {
        **provenance(),
        "protocol": {"batch_size": BATCH, "length": LENGTH, "batches": BATCHES, "warmup_steps": WARMUP},
        "rows": measure(),
    }
    write_json_atomic(result, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
