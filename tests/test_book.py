"""The book is built from committed files alone: the report imports nothing that trains, and `make book` runs with
the data mirror pointing at an empty folder."""

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from adaptstudy.common.development_refs import development_references
from adaptstudy.reporting.chapters import book_pages

ROOT = Path(__file__).resolve().parents[1]

IMPORT_EVERY_REPORT_MODULE = """
import importlib, pkgutil, sys
import adaptstudy.reporting as reporting
for module in pkgutil.walk_packages(reporting.__path__, "adaptstudy.reporting."):
    importlib.import_module(module.name)
print(" ".join(m for m in ("torch", "transformers", "adapters", "peft", "evaluate", "datasets") if m in sys.modules))
"""

PAGE_IMPORTS = """
import sys
exec(compile(sys.stdin.read(), "page", "exec"))
print(" ".join(m for m in ("torch", "transformers", "adapters", "peft", "evaluate", "datasets") if m in sys.modules))
"""


def test_the_report_loads_no_training_library():
    """import-linter sees our imports only; this sees what the libraries we import bring in (`evaluate` brought in
    transformers and torch until it was imported where training needs it)."""
    out = subprocess.run([sys.executable, "-c", IMPORT_EVERY_REPORT_MODULE], capture_output=True, text=True, check=True)
    assert out.stdout.split() == []


@pytest.mark.parametrize("page", book_pages())
def test_a_page_of_the_book_imports_no_training_or_data_library(page):
    """What each analysis notebook imports (its cells up to its parameters cell, the Colab cell aside): the pages run
    on the committed records alone, so they load neither the training stack nor `datasets`."""
    cells = [
        c for c in nbformat.read(ROOT / "notebooks" / f"{page}.ipynb", as_version=4).cells if c.cell_type == "code"
    ]
    before = [c.source for c in cells if "colab" not in c.metadata.get("tags", [])]
    at = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
    source = "\n".join(c.source for c in cells[:at] if "colab" not in c.metadata.get("tags", []))
    assert before and "import" in source
    out = subprocess.run([sys.executable, "-c", PAGE_IMPORTS], input=source, capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == []


@pytest.mark.parametrize("page", book_pages())
def test_a_page_of_the_book_shows_its_readers_no_code(page):
    """A published report shows what the code found, not the code: every code cell of a page is hidden behind a
    toggle or removed (the Colab link opens the notebook with its code)."""
    shown = [
        c.source.split("\n")[0]
        for c in nbformat.read(ROOT / "notebooks" / f"{page}.ipynb", as_version=4).cells
        if c.cell_type == "code" and not {"hide-input", "remove-input", "remove-cell"} & set(c.metadata.get("tags", []))
    ]
    assert not shown, shown


@pytest.mark.slow
def test_make_book_builds_with_an_empty_data_folder(built_book):
    assert (built_book / "index.html").is_file()
    # the pages speak of the study: no issue number or commit hash in any page's text
    pages = sorted(built_book.rglob("*.html"))
    git = ROOT if (ROOT / ".git").exists() else None
    found = {p.name: refs for p in pages if (refs := development_references(_visible_text(p), git))}
    assert len(pages) >= 7 and not found, found


@pytest.mark.slow
@pytest.mark.parametrize("page", book_pages())
def test_every_notebook_page_opens_its_own_notebook_in_colab_and_links_the_repository(built_book, page):
    """The theme's launch button, as the reader clicks it, opens notebooks/<page>.ipynb (the page is an executed copy
    in book/generated/, which the repository does not hold), and the repository button links pyproject's address."""
    from adaptstudy.launch.colab import colab_url, repository_url

    html = (built_book / "generated" / f"{page}.html").read_text(encoding="utf-8")
    links = re.findall(r'<a\b[^>]*href="([^"]+)"[^>]*>', html)
    launch = [h for h in re.findall(r'<a href="([^"]+)"[^>]*class="btn btn-sm dropdown-item"', html) if "colab" in h]
    assert launch == [colab_url(page)], launch  # the header's launch button
    assert repository_url() in links
    assert not [h for h in links if "/generated/" in h and h.startswith("https://")]


RAW = {"None", "True", "False", "nan", "NaN", "<NA>"}


def _tables(page: Path) -> list[tuple[list[str], list[list[str]]]]:
    """A built page's tables (folded ones too): each as its column headings and its rows' cell texts."""
    import html as markup

    def text(cell: str) -> str:
        return markup.unescape(re.sub(r"<[^>]+>", "", cell)).strip()

    out = []
    for table in re.findall(r"<table\b.*?</table>", page.read_text(encoding="utf-8"), re.S):
        head = re.search(r"<thead>(.*?)</thead>", table, re.S)
        heads = [text(c) for c in re.findall(r"<th\b[^>]*>(.*?)</th>", head[1] if head else "", re.S)]
        body = re.search(r"<tbody>(.*?)</tbody>", table, re.S)
        rows = [
            [text(c) for c in re.findall(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", row, re.S)]
            for row in re.findall(r"<tr\b.*?</tr>", body[1] if body else "", re.S)
        ]
        out.append((heads, rows))
    return out


@pytest.mark.slow
def test_no_table_shows_a_raw_python_value_or_a_count_as_a_float(built_book):
    """Cells as readers write them: yes/no, `3` epochs, `5e-5`, a dash for nothing; never `None`, `True`/`False`,
    `nan`, `5e-05`, or a count such as epochs or seeds written `3.0` (`reporting.folding.readable`, `short_number`)."""
    from adaptstudy.reporting.folding import is_count

    found = []
    for page in sorted((built_book / "generated").glob("*.html")):
        for heads, rows in _tables(page):
            for row in rows:
                named = zip(heads[-len(row) :], row) if len(heads) >= len(row) else zip([""] * len(row), row)
                found += [
                    f"{page.stem}: {head!r} = {cell!r}"
                    for head, cell in named
                    if cell in RAW
                    or re.fullmatch(r"-?\d+(\.\d+)?e[+-]0\d", cell)  # Python's 5e-05 for a reader's 5e-5
                    or (re.fullmatch(r"-?\d+\.0", cell) and is_count(head))
                ]
    assert not found, "\n".join(sorted(set(found)))


def _visible_text(page: Path) -> str:
    """A built page's text as a reader sees it: scripts, styles and tags removed."""
    html = page.read_text(encoding="utf-8")
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S | re.I)
    return re.sub(r"<[^>]+>", " ", html)


def test_the_pages_state_no_more_than_their_verdicts(built_book):
    """Prose a review found stating more than its verdict stays out of the built pages: the Houlsby claims were never
    confirmed by the extended selection's stage 2, an object's repr is no text for a reader, and the DSP chapter
    judges the draft's questions rather than answering them (several are not testable or inconclusive); no page
    speaks of this or the next session, or shows a raw six-decimal float."""
    pages = {p.name: _visible_text(p) for p in sorted(built_book.rglob("*.html"))}
    assert not [n for n, text in pages.items() if "confirmed by the stage 2" in text]
    assert not [n for n, text in pages.items() if "IPython.core.display" in text or "object at 0x" in text]
    # the study's pages speak of the study, not of how it was worked on; a count or a score is no six-decimal float
    assert not {n: m for n, text in pages.items() if (m := re.findall(r"\b(?:this|next|last) session\b", text, re.I))}
    assert not {n: m for n, text in pages.items() if (m := re.findall(r"\b\d+\.\d{6}\b", text))}
    dsp = pages["06_analysis_dsp.html"]
    assert not re.search(r"\banswer(s|ed)\b", dsp), re.findall(r".{60}\banswer(?:s|ed)\b.{60}", dsp)
