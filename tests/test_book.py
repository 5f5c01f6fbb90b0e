"""The book is built from committed files alone: the report imports nothing that trains, and `make book` runs with
the data mirror pointing at an empty folder."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from adaptstudy.common.development_refs import development_references

ROOT = Path(__file__).resolve().parents[1]

IMPORT_EVERY_REPORT_MODULE = """
import importlib, pkgutil, sys
import adaptstudy.reporting as reporting
for module in pkgutil.walk_packages(reporting.__path__, "adaptstudy.reporting."):
    importlib.import_module(module.name)
print(" ".join(m for m in ("torch", "transformers", "adapters", "peft", "evaluate") if m in sys.modules))
"""


def test_the_report_loads_no_training_library():
    """import-linter sees our imports only; this sees what the libraries we import bring in (`evaluate` brought in
    transformers and torch until it was imported where training needs it)."""
    out = subprocess.run([sys.executable, "-c", IMPORT_EVERY_REPORT_MODULE], capture_output=True, text=True, check=True)
    assert out.stdout.split() == []


@pytest.mark.slow
def test_make_book_builds_with_an_empty_data_folder(built_book):
    assert (built_book / "index.html").is_file()
    # the pages speak of the study: no issue number or commit hash in any page's text
    pages = sorted(built_book.rglob("*.html"))
    git = ROOT if (ROOT / ".git").exists() else None
    found = {p.name: refs for p in pages if (refs := development_references(_visible_text(p), git))}
    assert len(pages) >= 7 and not found, found


def _visible_text(page: Path) -> str:
    """A built page's text as a reader sees it: scripts, styles and tags removed."""
    html = page.read_text(encoding="utf-8")
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S | re.I)
    return re.sub(r"<[^>]+>", " ", html)
