"""The book speaks of the study, not of how it was built: this finds what a reader cannot follow — the word "issue"
followed by a number, or an abbreviated hash naming a commit of this repository — in a text, so a test can keep both
out of the pages, the notebooks, the declarations and the code's prose."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

ISSUE = re.compile(r"\bissues?[ _-]?#?\d+\b", re.IGNORECASE)
HEX = re.compile(r"(?<![0-9A-Za-z_/#.=-])[0-9a-f]{7,40}(?![0-9A-Za-z_])")


def development_references(text: str, repository: Path | None = None) -> list[str]:
    """The issue numbers in `text`, and, given a git work tree, the hexadecimal words that name one of its commits
    (a run id or a fingerprint names none)."""
    found = [m.group(0) for m in ISSUE.finditer(text)]
    if repository is not None:
        words = {m.group(0) for m in HEX.finditer(text) if re.search(r"[a-f]", m.group(0))}
        found += sorted(w for w in words if _is_commit(str(repository), w))
    return found


@cache
def _is_commit(repository: str, word: str) -> bool:
    done = subprocess.run(["git", "cat-file", "-t", word], cwd=repository, capture_output=True, text=True)
    return done.stdout.strip() == "commit"
