"""Freezing a chapter's claims for confirmation: a `frozen` ledger entry per claim, once its ledger accounts for its
design and protocol. Correct, then freeze, then confirm: only runs made after the freeze (and after any amendment
that follows it) give a claim its confirmatory verdict (`confirmatory_since`)."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from adaptstudy.claims.declarations import Declared, Entry, load_declaration
from adaptstudy.claims.ledgers import write_ledgers
from adaptstudy.common.files import locked_file


def frozen_at(claim: Declared) -> datetime | None:
    """When the claim was last frozen for confirmation (None: never)."""
    return next((e.date for e in reversed(claim.ledger) if e.event == "frozen"), None)


def first_freeze(root: Path) -> datetime | None:
    """The earliest freeze of any claim (every chapter's `claims.yaml` under `root`, the report's folder): from then
    on, what trains is paid for confirmation. A folder holding no declaration is an error, not 'never frozen'."""
    paths = sorted(Path(root).rglob("claims.yaml"))
    if not paths:
        raise ValueError(f"{root} holds no claims.yaml: first_freeze reads the chapters' declarations")
    claims = [c for path in paths for c in load_declaration(path).claims.values()]
    return min((t for t in map(frozen_at, claims) if t is not None), default=None)


def confirmatory_since(claim: Declared) -> datetime | None:
    """The time after which a run confirms the claim: its freeze, or an amendment after it (which spends the fresh
    seeds made before it); None for a claim never frozen, which no run confirms."""
    frozen = frozen_at(claim)
    return None if frozen is None else max(frozen, claim.last_change)


def spent_by_amendment(claim: Declared) -> str:
    """Why a frozen claim has no fresh runs since an amendment that followed its freeze ('' where none did)."""
    frozen = frozen_at(claim)
    if frozen is None or claim.last_change <= frozen:
        return ""
    return (
        f"none since its amendment of {claim.last_change:%-d %B %Y}, after its freeze: the fresh seeds made before it "
        "are spent (the amendments table says why), and a confirmatory verdict needs seeds run after it"
    )


def freeze(
    path: str | os.PathLike,
    reason: str,
    records: int,
    protocol: dict[str, str],
    when: datetime | None = None,
    names: list[str] | None = None,
    refreeze: bool = False,
) -> list[str]:
    """Append a `frozen` entry (the design's and the protocol's fingerprints now) to the named claims of the
    declaration at `path` (default: every one); refused, naming the claim, where the ledger does not account for the
    design or the protocol (amend first: correct, then freeze, then confirm), and where a claim is frozen already,
    unless `refreeze` (a second freeze moves its confirmatory runs to after now). Rewrites the file, keeping its
    leading comment, whole (locked, replaced atomically: two freezes at once take turns, and the second sees the
    first's entries); returns the names."""
    path = Path(path)
    with locked_file(path):
        return _freeze(path, reason, records, protocol, when, names, refreeze)


def _freeze(path, reason, records, protocol, when, names, refreeze) -> list[str]:
    when = when or datetime.now(timezone.utc).replace(microsecond=0)
    chapter = load_declaration(path)
    unknown = [n for n in names or [] if n not in chapter.claims]
    if unknown:
        raise ValueError(f"{path}: no claim named {', '.join(unknown)}; its claims: {', '.join(chapter.claims)}")
    chosen = {n: c for n, c in chapter.claims.items() if names is None or n in names}
    problems = [f"{name}: {why}" for name, c in chosen.items() if (why := c.unamended(protocol))]
    if problems:
        raise ValueError(f"{path}: not frozen, amend first: {' | '.join(problems)}")
    frozen = {n: t for n, c in chosen.items() if (t := frozen_at(c)) is not None}
    if frozen and not refreeze:
        listed = ", ".join(f"{n} (frozen {t:%Y-%m-%d %H:%M})" for n, t in frozen.items())
        raise ValueError(
            f"{path}: already frozen: {listed}; a second freeze moves their confirmatory runs to after now. Name the "
            "claims to freeze, or ask for it explicitly (--refreeze)"
        )
    for name, claim in chosen.items():
        entry = Entry(
            event="frozen",
            date=when,
            reason=reason,
            records=records,
            fingerprint=claim.design.fingerprint(),
            protocol=protocol,
        )
        chapter.claims[name] = claim.model_copy(update={"ledger": [*claim.ledger, entry]})
    write_ledgers(path, {name: chapter.claims[name] for name in chosen})
    return list(chosen)
