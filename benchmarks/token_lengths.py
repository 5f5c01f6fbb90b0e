"""The token lengths the chapters describe their data by, kept so the book is built from committed files alone.

- `imdb-train-5000`: IMDb's training reviews, 5,000 drawn with `shuffle(seed=0)` (the PEFT chapter's truncation
  table: what `max_seq_length` 128 and 256 cut);
- `reviews-corpus`: every document of the reviews corpus DAPT reads (the DSP chapter's packing table).

Lengths are untruncated, [CLS] and [SEP] included, by the `minilm-l6` tokenizer; kept as a histogram.

    ADAPTSTUDY_DATA=../shared/data python benchmarks/token_lengths.py   # writes benchmarks/results/token_lengths.json
"""

from __future__ import annotations

import argparse
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from adaptstudy.common.files import write_json_atomic
from adaptstudy.data import load_task, resolve_task
from adaptstudy.data.corpora import load_corpus
from adaptstudy.data.describe import token_lengths
from adaptstudy.models.backbones import load_tokenizer
from adaptstudy.runs.identity import git_commit

TOKENIZER = "minilm-l6"
OUT = Path(__file__).resolve().parent / "results" / "token_lengths.json"


def sets() -> dict[str, tuple[str, list[str]]]:
    """Name -> (what it is, its texts)."""
    imdb = load_task(resolve_task("imdb"))["train"].shuffle(seed=0).select(range(5000))["text_a"]
    return {
        "imdb-train-5000": ("IMDb's training reviews, 5,000 drawn with shuffle(seed=0)", imdb),
        "reviews-corpus": ("every document of the reviews corpus DAPT reads", load_corpus("reviews").documents),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    tokenizer = load_tokenizer(TOKENIZER)
    out = {"tokenizer": TOKENIZER, "git_commit": git_commit(), "made_at": datetime.now(timezone.utc).isoformat()}
    out["sets"] = {}
    for name, (what, texts) in sets().items():
        histogram = Counter(token_lengths(texts, tokenizer).tolist())
        out["sets"][name] = {
            "what": what,
            "texts": len(texts),
            "histogram": {str(k): histogram[k] for k in sorted(histogram)},
        }
        print(f"{name}: {len(texts)} texts")
    write_json_atomic(out, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
