"""Which attention kernel our training paths should use on this CPU: each candidate's forward and backward through
one layer's attention, at the shapes our paths train at, timed side by side.

- masked LM (packed rows of 256 tokens, batch 16, no attention dropout during pretraining): scaled-dot-product
  attention's flash kernel (what `attn_implementation="sdpa"` runs there, the one in use), its math kernel, and
  eager attention (matmul, softmax, matmul);
- classification (MRPC: batch 32 of about 70 tokens, attention dropout 0.1): eager attention with our fast dropout
  (the one in use: `adaptstudy.models.fast_dropout`), and scaled-dot-product attention with its own dropout.

Heads and head size are `minilm-l6`'s (12 of 32). Kernels take turns call by call over `ROUNDS` rounds, so a slow
spell of the VM falls on all of them; each figure is the median.

    python benchmarks/attention_kernels.py   # about a minute; writes benchmarks/results/attention_kernels.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from adaptstudy.common.files import write_json_atomic
from adaptstudy.models.fast_dropout import FastDropout
from adaptstudy.training.device import provenance

HEADS, HEAD_SIZE, ROUNDS, WARMUP = 12, 32, 15, 2
SHAPES = {"masked LM": (16, 256, 0.0), "MRPC classification": (32, 70, 0.1)}  # batch, tokens, attention dropout


def eager(q, k, v, p: float, dropout: torch.nn.Module):
    scores = (q @ k.transpose(-1, -2)) * HEAD_SIZE**-0.5
    return dropout(scores.softmax(-1)) @ v


def sdpa(backend: SDPBackend):
    def attend(q, k, v, p: float, dropout: torch.nn.Module):
        with sdpa_kernel(backend):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p)

    return attend


def kernels(p: float) -> dict[str, tuple]:
    """Name: (attention function, the dropout module it applies, in use by our path)."""
    if p == 0:
        return {
            "SDPA flash": (sdpa(SDPBackend.FLASH_ATTENTION), None, True),
            "SDPA math": (sdpa(SDPBackend.MATH), None, False),
            "eager": (eager, torch.nn.Identity(), False),
        }
    return {
        "eager, fast dropout": (eager, FastDropout(p), True),
        "SDPA with its own dropout": (sdpa(SDPBackend.MATH), None, False),
    }


def measure(batch: int, tokens: int, p: float) -> list[dict]:
    torch.manual_seed(0)
    q, k, v = (torch.randn(batch, HEADS, tokens, HEAD_SIZE, requires_grad=True) for _ in range(3))
    grad = torch.randn(batch, HEADS, tokens, HEAD_SIZE)
    candidates = kernels(p)
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for round_ in range(WARMUP + ROUNDS):
        for name, (attend, dropout, _) in candidates.items():
            if dropout is not None:
                dropout.train()
            start = time.perf_counter()
            attend(q, k, v, p, dropout).backward(grad)
            if round_ >= WARMUP:
                times[name].append(time.perf_counter() - start)
    in_use = next(statistics.median(times[n]) for n, (*_, used) in candidates.items() if used)
    return [
        {
            "kernel": name,
            "in_use": used,
            "median_ms": 1000 * statistics.median(times[name]),
            "speedup_vs_in_use": in_use / statistics.median(times[name]),
        }
        for name, (*_, used) in candidates.items()
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "attention_kernels.json")
    args = parser.parse_args(argv)
    from throughput import isa_limits

    result = {
        **provenance(isa_limits=isa_limits()),
        "protocol": {"heads": HEADS, "head_size": HEAD_SIZE, "rounds": ROUNDS, "warmup_rounds": WARMUP},
        "workloads": {},
    }
    for workload, (batch, tokens, p) in SHAPES.items():
        rows = measure(batch, tokens, p)
        result["workloads"][workload] = {"batch": batch, "tokens": tokens, "attention_dropout": p, "rows": rows}
        for r in rows:
            print(f"{workload:<22} {r['kernel']:<26} {r['median_ms']:7.1f} ms  x{r['speedup_vs_in_use']:.2f}")
    write_json_atomic(result, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
