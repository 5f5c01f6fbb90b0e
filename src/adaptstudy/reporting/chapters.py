"""The book's chapters, one registration each: a chapter package's `chapter.py` registers a `Chapter` (its claims'
prefix, its page, its results folder, how to label and judge its runs), and `load_chapters` finds every such module,
so the scorecard, the confirmatory verdicts and the tests read one list and no module names the chapters."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from adaptstudy.claims.fresh_seeds import fresh_verdicts
from adaptstudy.claims.verdicts import Verdict
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.common.registry import Registry

TOC = PROJECT_ROOT / "book" / "_toc.yml"


@dataclass(frozen=True)
class Chapter:
    name: str  # its claims' keys start with `name.`: houlsby, peft, dsp, fusion, hyperformer
    page: str  # the notebook that judges it, which is its page in the book
    study: str | None = None  # its records' folder under results/ (None: it reads no run records)
    label_runs: Callable[[pd.DataFrame], pd.DataFrame] = lambda runs: runs
    verdicts: Callable[[pd.DataFrame], list[Verdict]] = lambda runs: []  # none: it judges no claim
    selection_seed: int | None = 0  # the seed that chose settings on the selection split (never reported); None: none
    described: Callable[[pd.DataFrame], list[str]] = lambda runs: []  # intervals its descriptive tables state
    # what else decides its verdicts, by part (`reporting.protocol`): its grids (rates, epochs, seeds, evaluation
    # caps) and its selection and tie rules; the code building its arms and the shared parts are added there
    protocol: Mapping[str, tuple] = field(default_factory=dict)

    def fresh_verdicts(self, runs: pd.DataFrame, verdicts: list[Verdict]) -> list[Verdict]:
        """`verdicts`' claims judged on the labelled `runs` made after each claim's design alone (confirmatory)."""
        return fresh_verdicts(runs, verdicts, self.verdicts, self.selection_seed)


CHAPTERS: Registry[Chapter] = Registry("chapter")


def register(chapter: Chapter) -> Chapter:
    CHAPTERS.add(chapter.name, chapter)
    return chapter


def load_chapters() -> list[Chapter]:
    """Every chapter, in the book's order (`book/_toc.yml`; pages it does not list last): importing each chapter
    package's `chapter` module registers it."""
    import adaptstudy.reporting as reporting

    for module in pkgutil.walk_packages(reporting.__path__, f"{reporting.__name__}."):
        if module.name.rsplit(".", 1)[-1] == "chapter":
            importlib.import_module(module.name)
    order = book_pages()
    chapters = [CHAPTERS.get(name) for name in CHAPTERS.names()]
    return sorted(chapters, key=lambda c: (order.index(c.page) if c.page in order else len(order), c.name))


def book_pages(toc_file: Path = TOC) -> list[str]:
    """The book's pages executed from notebooks, in its order, as `book/_toc.yml` lists them (without `generated/`;
    the guides are plain pages)."""
    if not toc_file.is_file():
        return []
    toc = yaml.safe_load(toc_file.read_text())
    return [e["file"].rsplit("/", 1)[-1] for e in toc.get("chapters", []) if e["file"].startswith("generated/")]
