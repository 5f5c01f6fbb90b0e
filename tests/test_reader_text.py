"""The book is for readers of a published report: no issue number and no commit hash in the pages' sources, the
claims' declarations (their sentences and ledger reasons), the README, the grids, or the code's prose."""

from pathlib import Path

import pytest

from adaptstudy.common.development_refs import development_references

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = {".py", ".yaml", ".yml", ".md", ".ipynb", ".txt", ".csv"}
TREES = ("src", "notebooks", "params", "scripts", "benchmarks")
GIT = ROOT if (ROOT / ".git").exists() else None


def _files() -> list[Path]:
    files = [
        ROOT / "README.md",
        ROOT / "Makefile",
        *sorted((ROOT / "book").glob("*.md")),
        *sorted((ROOT / "book" / "guides").glob("*.md")),
        ROOT / "book" / "_toc.yml",
    ]
    for tree in TREES:
        files += sorted(p for p in (ROOT / tree).rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    return [f for f in files if f.is_file()]


def test_the_check_finds_an_issue_number_and_a_commit_but_not_a_run_id():
    assert development_references("as issue 67 moved it; Issue #63; issue-64") == ["issue 67", "Issue #63", "issue-64"]
    assert development_references("run 82aef5e794a071cd, fingerprint 39841b59c61257c4") == []
    if GIT:
        import subprocess

        log = subprocess.run(["git", "log", "-n", "30", "--format=%h"], cwd=GIT, capture_output=True, text=True)
        short = next(h[:7] for h in log.stdout.split() if not h[:7].isdigit())  # an all-digit one reads as a number
        assert development_references(f"committed next, in `{short}`", GIT) == [short]


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_issue_number_or_commit_hash_in_what_readers_read(path):
    found = development_references(path.read_text(encoding="utf-8", errors="ignore"), GIT)
    assert not found, f"{path.relative_to(ROOT)}: {found}"
