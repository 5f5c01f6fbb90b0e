"""One run at a glance, for the notebooks that make a run (`02_dapt`, `03_tapt`, `04_finetune`)."""

from __future__ import annotations

import pandas as pd

from adaptstudy.reporting.common import method_label


def record_summary(record: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One run at a glance: its metrics and costs, and its per-epoch history."""
    summary = {
        "run_id": record["run_id"],
        "task": record["task"],
        "method": method_label(record["method"], record["config"].get("adapter_size")),
        **{f"dev {k}": round(v, 2) for k, v in record["metrics"].items()},
        "trainable": f"{record['trainable_params']:,} of {record['total_params']:,} "
        f"({100 * record['trainable_params'] / record['total_params']:.2f}%)",
        "train seconds": round(record["train_runtime_s"], 1),
        "train examples/s": round(record["train_examples_per_s"], 1),
        "peak RSS (MB)": round(record["peak_rss_mb"]),
    }
    return pd.Series(summary).to_frame("value"), pd.DataFrame(record["history"])


def pretrain_summary(record: dict) -> pd.DataFrame:
    """One pretraining run at a glance: corpus, held-out perplexity before and after, and its costs."""
    rows = {
        "run_id": record["run_id"],
        "corpus": record["task"].removeprefix("mlm:"),
        "mode": record["method"],
        "documents (words)": f"{record['corpus_documents']:,} ({record['corpus_words']:,})",
        "evaluation texts left out": record["excluded_eval_documents"],
        "held-out perplexity before → after": (
            f"{record['perplexity_before']:.1f} → {record['metrics']['perplexity']:.1f}"
            if record["metrics"]
            else "– (no held-out text)"
        ),
        "steps": record["steps"],
        "trainable": f"{record['trainable_params']:,} of {record['total_params']:,}",
        "train seconds": round(record["train_runtime_s"], 1),
        "tokens/s": round(record["train_tokens_per_s"]),
        "peak RSS (MB)": round(record["peak_rss_mb"]),
        "artifact": record["artifact"],
    }
    return pd.Series(rows).to_frame("value")
