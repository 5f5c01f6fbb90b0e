"""A ledger's dates are facts: an entry is dated no later than the commit that added it and no earlier than the
file's commit before that one (the amend command dates an entry when it writes it, against the file as last
committed). Entries in a declaration file's first commit may be older: they came from the commits that declared or
changed each claim before the ledgers existed (`declarations` says so)."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import yaml


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _when(value) -> datetime:
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _entries(text: str) -> list[tuple[str, dict]]:
    claims = (yaml.safe_load(text) or {}).get("claims") or {}
    return [(name, entry) for name, claim in claims.items() for entry in claim.get("ledger", [])]


def _key(name: str, entry: dict) -> tuple:
    return name, entry["event"], entry["fingerprint"], str(entry["date"])


def misdated_entries(path: str | os.PathLike) -> list[str]:
    """The ledger entries of the declaration at `path` whose date lies outside the commits around the one that
    added them (an entry not yet committed: before the file's last commit, or in the future), each named with its
    claim, date and commit; [] where it has none. Raises `subprocess.CalledProcessError` outside a git work tree."""
    path = Path(path).resolve()
    top = Path(_git(path.parent, "rev-parse", "--show-toplevel").strip())
    relative = path.relative_to(top).as_posix()
    commits = [line.split() for line in _git(top, "log", "--reverse", "--format=%H %cI", "--", relative).splitlines()]
    added: dict[
        tuple, tuple[str, datetime | None, datetime]
    ] = {}  # entry -> (commit, the file's commit before, its own)
    previous: datetime | None = None
    for commit, date in commits:
        committed = datetime.fromisoformat(date)
        for name, entry in _entries(_git(top, "show", f"{commit}:{relative}")):
            added.setdefault(_key(name, entry), (commit[:10], previous, committed))
        previous = committed
    now = datetime.now(timezone.utc)
    wrong = []
    for name, entry in _entries(path.read_text(encoding="utf-8")):
        commit, after, before = added.get(_key(name, entry), ("not yet committed", previous, now))
        when = _when(entry["date"])
        if when > before or (after is not None and when < after):
            lower = f"after {after:%Y-%m-%d %H:%M} and " if after else ""
            wrong.append(
                f"{name}: {entry['event']} {when:%Y-%m-%d %H:%M}, added by {commit} of {before:%Y-%m-%d %H:%M}: "
                f"its date must lie {lower}no later than that"
            )
    return wrong
