"""The corpus registry: unlabelled text for masked-LM pretraining (DAPT, TAPT, the MLM head's warm-up).

A corpus is a list of documents read from the local mirror. `load_corpus` can leave out every document
whose text is an evaluation text of given tasks (compared after collapsing whitespace), so that adaptive
pretraining never sees what a task is scored on; it says how many it left out. `task:<name>` is the
TAPT corpus of a task: the texts of its training split.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from adaptstudy.common.registry import Registry
from adaptstudy.data.builders import blitzer_reviews
from adaptstudy.data.errors import DataNotFoundError
from adaptstudy.data.tasks import load_task, resolve_data_dir


@dataclass(frozen=True)
class Corpus:
    name: str
    domain: str
    description: str
    files: tuple[str, ...]  # folders or files in the mirror that must exist
    read: Callable[[Path], list[str]]


@dataclass(frozen=True)
class LoadedCorpus:
    name: str
    documents: list[str]
    excluded: int  # documents left out because a task evaluates on them

    @property
    def words(self) -> int:
        return sum(len(d.split()) for d in self.documents)


def _normal(text: str) -> str:
    return " ".join(text.split()).lower()


def _brown(root: Path, categories: str = "a-r") -> list[str]:
    """Brown corpus paragraphs with the part-of-speech tags taken off (`The/at jury/nn` -> `The jury`), from the
    files of `categories` (a character class of Brown's category letters)."""
    docs = []
    for path in sorted((root / "nltk" / "brown").glob(f"c[{categories}][0-9][0-9]")):
        for paragraph in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            words = [w.rsplit("/", 1)[0] for w in paragraph.split()]
            if words:
                docs.append(" ".join(words))
    return docs


def _lines_in_blocks(paths: Iterable[Path], lines_per_doc: int = 20) -> list[str]:
    """Plain-text files of one sentence or utterance per line, grouped into documents of `lines_per_doc` lines."""
    docs = []
    for path in paths:
        lines = [ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
        docs += [" ".join(lines[i : i + lines_per_doc]) for i in range(0, len(lines), lines_per_doc)]
    return docs


def _abc(root: Path) -> list[str]:
    return _lines_in_blocks(sorted((root / "nltk" / "abc").glob("*.txt")))


def _webtext(root: Path) -> list[str]:
    return _lines_in_blocks(sorted((root / "nltk" / "webtext").glob("*.txt")))


def _product_reviews(root: Path) -> list[str]:
    """Hu & Liu's product reviews: a review starts at `[t]` (its title); sentences follow `##` after their
    annotations."""
    docs = []
    for folder in ("product_reviews_1", "product_reviews_2"):
        for path in sorted((root / "nltk" / folder).glob("*.txt")):
            if path.name.lower() == "readme.txt":
                continue
            current: list[str] = []
            for line in path.read_text(encoding="latin-1").splitlines():
                if line.startswith("*"):
                    continue
                if line.startswith("[t]"):
                    if current:
                        docs.append(" ".join(current))
                    current = [line[3:].strip()]
                elif "##" in line:
                    current.append(line.split("##", 1)[1].strip())
            if current:
                docs.append(" ".join(current))
    return [d for d in docs if d.strip()]


def _blitzer(root: Path) -> list[str]:
    return [r["review_text"] for r in blitzer_reviews(root) if r.get("review_text")]


CORPORA: Registry[Corpus] = Registry("corpus")

for _c in (
    Corpus(
        "general",
        "general",
        "NLTK brown (tags removed), abc and webtext: for warming up the MLM head",
        ("nltk/brown", "nltk/abc", "nltk/webtext"),
        lambda root: _brown(root) + _abc(root) + _webtext(root),
    ),
    Corpus(
        "reviews",
        "reviews",
        "the Blitzer multi-domain Amazon reviews (review text; books, dvd, electronics, kitchen) "
        "and NLTK's product reviews (Hu & Liu)",
        ("amazon_blitzer", "nltk/product_reviews_1", "nltk/product_reviews_2"),
        lambda root: _blitzer(root) + _product_reviews(root),
    ),
    Corpus(
        "neutral",
        "general",
        "NLTK brown without its press categories (A-C: reportage, editorials, reviews): general text from neither "
        "DAPT domain, for the matched control (continued MLM on text of no task's domain)",
        ("nltk/brown",),
        lambda root: _brown(root, "d-r"),
    ),
    Corpus(
        "news",
        "news",
        "NLTK abc: Australian Broadcasting Commission rural and science news transcripts (small)",
        ("nltk/abc",),
        _abc,
    ),
):
    CORPORA.add(_c.name, _c)


@functools.lru_cache(maxsize=8)
def _read(name: str, root: Path) -> tuple[str, ...]:
    """A corpus's documents, read once per process (a sweep pretrains on the same corpus many times)."""
    return tuple(CORPORA.get(name).read(root))


def load_corpus(name: str, data_dir=None, exclude_eval_of: Iterable[str] = ()) -> LoadedCorpus:
    """The documents of a registered corpus, or `task:<name>` (the task's training texts), without the
    evaluation texts of the tasks in `exclude_eval_of`."""
    root = resolve_data_dir(data_dir)
    if name.startswith("task:"):
        splits = load_task(name.removeprefix("task:"), data_dir)
        documents = [
            t for col in ("text_a", "text_b") if col in splits["train"].column_names for t in splits["train"][col]
        ]
    else:
        corpus = CORPORA.get(name)
        missing = [f for f in corpus.files if not (root / f).exists()]
        if missing:
            raise DataNotFoundError(
                f"corpus {name!r}: missing {', '.join(str(root / f) for f in missing)} in the data "
                "directory; set ADAPTSTUDY_DATA or the data_dir parameter to the local mirror"
            )
        documents = list(_read(name, root))
    held_out = set()
    for task in exclude_eval_of:
        splits = load_task(task, data_dir)
        held_out |= {
            _normal(t)
            for split in splits
            if split != "train"
            for col in ("text_a", "text_b")
            if col in splits[split].column_names
            for t in splits[split][col]
        }
    kept = [d for d in documents if _normal(d) not in held_out]
    return LoadedCorpus(name, kept, excluded=len(documents) - len(kept))
