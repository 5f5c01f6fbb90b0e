"""Every chapter is one registration (`reporting/chapters.py`): registered, it must be a page of the book, run by
`make book` and `make smoke`, and executed by the notebook tests; and every declared claim has a chapter."""

import importlib
import subprocess
from functools import cache
from pathlib import Path

import pytest

from adaptstudy.claims.catalog import CLAIMS
from adaptstudy.claims.declarations import load_declaration
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.chapters import Chapter, book_pages, load_chapters
from adaptstudy.reporting.published import published_frame

CHAPTERS = load_chapters()


def missing_places(chapter: Chapter, root: Path = PROJECT_ROOT) -> list[str]:
    """Where a registered chapter's page is not: the book's table of contents, its notebook, and what `make book`
    and `make smoke` run (both run every page the table of contents lists; the notebook tests run every notebook)."""
    pages = book_pages(root / "book" / "_toc.yml")
    places = {
        "book/_toc.yml": chapter.page in pages,
        "notebooks/": (root / "notebooks" / f"{chapter.page}.ipynb").is_file(),
        "Makefile book": f"notebooks/{chapter.page}.ipynb book/generated/{chapter.page}.ipynb"
        in commands(root, "book"),
        "Makefile smoke": "notebooks/$page.ipynb" in commands(root, "smoke") and chapter.page in pages,
    }
    return [place for place, there in places.items() if not there]


@cache
def commands(root: Path, target: str) -> str:
    """What `make <target>` would run (`make -n`: printed, not run; a recursive make prints its commands too)."""
    return subprocess.run(["make", "-n", "-C", str(root), target], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_a_registered_chapter_is_in_the_book_the_makefile_and_the_notebook_tests(chapter):
    assert not missing_places(chapter), (
        f"chapter {chapter.name}: page {chapter.page} missing from {missing_places(chapter)}"
    )


def test_a_new_chapter_is_its_files_and_one_line_of_the_table_of_contents(tmp_path):
    """A toy chapter in a copy of the project: with its notebook and no line in the table of contents it is missing
    from the book and the Makefile's targets; the one line puts it in each (its contract finds it by itself)."""
    import shutil

    for name in ("Makefile", "pyproject.toml", "book/_toc.yml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT_ROOT / name, tmp_path / name)
    shutil.copytree(PROJECT_ROOT / "notebooks", tmp_path / "notebooks")
    shutil.copy(PROJECT_ROOT / "notebooks" / "06_analysis_dsp.ipynb", tmp_path / "notebooks" / "06_analysis_toy.ipynb")
    toy = Chapter("toy", page="06_analysis_toy", study="toy")
    assert missing_places(toy, tmp_path) == ["book/_toc.yml", "Makefile book", "Makefile smoke"]
    with (tmp_path / "book" / "_toc.yml").open("a") as toc:
        toc.write("  - file: generated/06_analysis_toy\n")
    commands.cache_clear()
    assert missing_places(toy, tmp_path) == []


def test_a_chapter_missing_from_the_book_is_caught():
    ghost = Chapter("ghost", page="06_analysis_ghost", study="ghost")
    assert missing_places(ghost) == ["book/_toc.yml", "notebooks/", "Makefile book", "Makefile smoke"]


def test_every_claim_has_a_registered_chapter_and_the_chapters_follow_the_book():
    names = [c.name for c in CHAPTERS]
    assert {CLAIMS.get(k).chapter for k in CLAIMS} <= set(names)
    pages = book_pages()
    assert [pages.index(c.page) for c in CHAPTERS] == sorted(pages.index(c.page) for c in CHAPTERS)  # the book's order


def test_every_chapter_that_judges_claims_has_the_same_files():
    """Its registration, its paper's numbers, its tables, its claims and their declaration: one place to look."""
    for chapter in CHAPTERS:
        if chapter.study is None:
            continue
        package = Path(importlib.import_module(type(chapter).__module__).__file__).parent  # reporting/
        folder = next(p.parent for p in package.rglob("chapter.py") if f'"{chapter.name}"' in p.read_text())
        present = {p.name for p in folder.iterdir()}
        assert {"chapter.py", "tables.py", "claims.py", "claims.yaml"} <= present, chapter.name
        paper = load_declaration(folder / "claims.yaml").paper  # its paper's numbers: its own, or a sibling's
        assert "published.py" in present or not published_frame()[lambda p: p["paper"].str.startswith(paper)].empty
