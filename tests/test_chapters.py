"""Every chapter is one registration (`reporting/chapters.py`): registered, it must be a page of the book, run by
`make book` and `make smoke`, and executed by the notebook tests; and every declared claim has a chapter."""

import importlib
from pathlib import Path

import pytest

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.chapters import Chapter, book_pages, load_chapters
from adaptstudy.reporting.claims import CLAIMS

CHAPTERS = load_chapters()


def missing_places(chapter: Chapter, root: Path = PROJECT_ROOT) -> list[str]:
    """Where a registered chapter's page is not: the book's table of contents, the Makefile's `book` and `smoke`
    targets, the notebooks, the notebook tests."""
    makefile = (root / "Makefile").read_text()
    targets = {t: makefile.split(f"\n{t}:", 1)[-1].split("\n\n", 1)[0] for t in ("book", "smoke")}
    places = {
        "book/_toc.yml": chapter.page in book_pages(),
        "notebooks/": (root / "notebooks" / f"{chapter.page}.ipynb").is_file(),
        "tests/test_notebooks.py": f'"{chapter.page}.ipynb"' in (root / "tests" / "test_notebooks.py").read_text(),
        **{f"Makefile {t}": f"notebooks/{chapter.page}.ipynb" in body for t, body in targets.items()},
    }
    return [place for place, there in places.items() if not there]


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
