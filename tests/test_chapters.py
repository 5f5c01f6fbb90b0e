"""Every chapter is one registration (`reporting/chapters.py`): registered, it must be a page of the book, run by
`make book` and `make smoke`, and executed by the notebook tests; and every declared claim has a chapter."""

import importlib
import subprocess
from functools import cache
from pathlib import Path

import pytest

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.chapters import Chapter, book_pages, load_chapters
from adaptstudy.reporting.claims import CLAIMS

CHAPTERS = load_chapters()


def missing_places(chapter: Chapter, root: Path = PROJECT_ROOT) -> list[str]:
    """Where a registered chapter's page is not: the book's table of contents, what `make book` executes (the pages
    the table of contents lists), the Makefile's `smoke` target, the notebooks, the notebook tests."""
    smoke = (root / "Makefile").read_text().split("\nsmoke:", 1)[-1].split("\n\n", 1)[0]
    places = {
        "book/_toc.yml": chapter.page in book_pages(),
        "notebooks/": (root / "notebooks" / f"{chapter.page}.ipynb").is_file(),
        "tests/test_notebooks.py": f'"{chapter.page}.ipynb"' in (root / "tests" / "test_notebooks.py").read_text(),
        "Makefile book": f"notebooks/{chapter.page}.ipynb book/generated/{chapter.page}.ipynb" in book_commands(root),
        "Makefile smoke": f"notebooks/{chapter.page}.ipynb" in smoke,
    }
    return [place for place, there in places.items() if not there]


@cache
def book_commands(root: Path) -> str:
    """What `make book` would run (`make -n`: printed, not run; its recursive make prints the pages' commands)."""
    return subprocess.run(["make", "-n", "-C", str(root), "book"], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_a_registered_chapter_is_in_the_book_the_makefile_and_the_notebook_tests(chapter):
    assert not missing_places(chapter), (
        f"chapter {chapter.name}: page {chapter.page} missing from {missing_places(chapter)}"
    )


def test_a_chapter_missing_from_the_book_is_caught():
    ghost = Chapter("ghost", page="06_analysis_ghost", study="ghost")
    assert missing_places(ghost) == [
        "book/_toc.yml",
        "notebooks/",
        "tests/test_notebooks.py",
        "Makefile book",
        "Makefile smoke",
    ]


def test_every_claim_has_a_registered_chapter_and_the_chapters_follow_the_book():
    names = [c.name for c in CHAPTERS]
    assert {CLAIMS.get(k).chapter for k in CLAIMS} <= set(names)
    assert names == ["houlsby", "peft", "dsp", "fusion", "hyperformer", "efficiency"]  # the order of book/_toc.yml


def test_every_chapter_that_judges_claims_has_the_same_files():
    """Its registration, its paper's numbers, its tables, its claims and their declaration: one place to look."""
    for chapter in CHAPTERS:
        if chapter.study is None:
            continue
        package = Path(importlib.import_module(type(chapter).__module__).__file__).parent  # reporting/
        folder = next(p.parent for p in package.rglob("chapter.py") if f'"{chapter.name}"' in p.read_text())
        present = {p.name for p in folder.iterdir()}
        assert {"chapter.py", "published.py", "tables.py", "claims.py", "claims.yaml"} <= present, chapter.name
