"""Writing a declaration file's ledgers, every other line as the file has it (`write_ledgers`; `amend`: one
entry per claim whose design or protocol moved — an amendment, a refactor the refactor rule allows, a recording — or
the entry that declares a new claim). The claims and their ledgers as data are `declarations`."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import yaml
from pydantic import ValidationError

from adaptstudy.claims.declarations import (
    DESIGN_FIELDS,
    ENTRY_ADDED,
    Declaration,
    Declared,
    Design,
    Entry,
)
from adaptstudy.common import strict_yaml
from adaptstudy.common.files import locked_file, write_text_atomic


def entry_written(entry: dict) -> dict:
    """A ledger entry as its file keeps it: added fields left out where empty, each protocol part named beside its
    fingerprint (an earlier part's as its fingerprint, or as words where none was recorded)."""
    kept = {k: v for k, v in entry.items() if v or k not in ENTRY_ADDED}
    if kept.get("protocol"):
        kept["protocol"] = [{"part": k, "fingerprint": v} for k, v in kept["protocol"].items()]
    if kept.get("protocol_was"):
        kept["protocol_was"] = [
            {"part": k, ("fingerprint" if re.fullmatch(r"[0-9a-f]{16}", v) else "was"): v}
            for k, v in kept["protocol_was"].items()
        ]
    return kept


def amend(
    path: str | os.PathLike,
    previous: Declaration,
    reason: str,
    records: int,
    when: datetime | None = None,
    protocol: dict[str, str] | None = None,
    verdicts: dict[str, tuple[str, str]] | None = None,
    outcomes: dict[str, tuple[str, str]] | None = None,
    before_writing: Callable[[dict[str, Declared]], None] | None = None,
) -> list[str]:
    """Append an amendment to every claim of the declaration at `path` whose design differs from `previous` (the
    file as it was, e.g. at HEAD) or, given `protocol` (the fingerprints now), whose protocol differs from its
    ledger's: `was` and `protocol_was` hold the changed fields' and parts' earlier values, and `verdicts` (by claim
    name) the verdicts before and after, where the caller judged them. The refactor rule: a claim whose design is
    unchanged, whose protocol changed, and whose `outcomes` (by claim name: `reporting.outcomes`' lines, every
    effect, interval and verdict, exploratory and confirmatory) are identical before and after gets a `refactor`
    entry instead, which keeps its freeze. A claim whose ledger never wrote its protocol down gets a `recorded`
    entry (or its amendment records it). A claim written without a ledger is new: it gets the entry that declares
    it. Rewrites the file, keeping its leading comment; returns the names of the claims amended, refactored,
    recorded or declared. A claim changed again after an amendment not yet in `previous` (the command run twice
    before a commit) gets one amendment from `previous`, its reasons joined: the design between the two is not
    kept anywhere, so a second entry's `was` could not be right. The file is written whole (locked, replaced
    atomically) and only when an entry was added; `before_writing`, given, sees each claim changed (with its new
    ledger) first, and may stop the write by raising (an amendment that would spend a freeze's fresh seeds)."""
    path = Path(path)
    with locked_file(path):
        return _amend(path, previous, reason, records, when, protocol, verdicts, outcomes, before_writing)


def _amend(path, previous, reason, records, when, protocol, verdicts, outcomes, before_writing) -> list[str]:
    when = when or datetime.now(timezone.utc).replace(microsecond=0)
    raw = strict_yaml.load(path.read_text(encoding="utf-8"))
    amended = []
    for name, claim in (raw.get("claims") or {}).items():
        if isinstance(claim, dict) and "ledger" not in claim:
            if name in previous.claims:
                raise ValueError(f"{path}: claim {name!r} lost its ledger; restore it (a declared claim keeps it)")
            try:
                design = Design(**{k: v for k, v in claim.items() if k not in ("paper", "margin_reason")})
            except ValidationError as error:
                raise ValueError(f"{path}: claim {name!r} is not a valid design: {error}") from None
            entry = Entry(
                event="declared",
                date=when,
                reason=reason,
                records=records,
                fingerprint=design.fingerprint(),
                protocol=protocol or {},
            )
            claim["ledger"] = [entry.model_dump(mode="json")]
            amended.append(name)
    try:
        current = Declaration.model_validate(raw)
    except ValidationError as error:
        raise ValueError(f"{path}: not a valid claim declaration: {error}") from None
    for name, claim in current.claims.items():
        before = previous.claims.get(name)
        if before is None or name in amended:
            continue
        old, new = before.design.model_dump(), claim.design.model_dump()
        was = {f: old[f] for f in DESIGN_FIELDS if old[f] != new[f]}
        since = claim.ledger[len(before.ledger) :] if claim.ledger[: len(before.ledger)] == before.ledger else []
        entry_reason = reason
        if since and claim.ledger[-1].fingerprint == claim.fingerprint():
            was = {}  # written down since `previous` (the command run twice before a commit): not a second change
        elif since:  # changed again since an entry `previous` lacks: one amendment from `previous`
            frozen = [e for e in since if e.event == "frozen"]
            if frozen:
                raise ValueError(
                    f"{path}: {name} was frozen on {frozen[-1].date:%Y-%m-%d %H:%M}, after the file as it was, and "
                    "changed since: commit the file with its freeze, then amend it (an amendment's `was` is read "
                    "from the file as committed)"
                )
            entry_reason = "; ".join(dict.fromkeys([*(e.reason for e in since if e.reason), reason]))
            claim = claim.model_copy(update={"ledger": list(before.ledger)})
            current.claims[name] = claim
            amended.append(name)  # its entries since `previous` are replaced, even where nothing is left to record
        recorded = claim.recorded_protocol
        changed = sorted(k for k in {*(protocol or {}), *recorded} if (protocol or {}).get(k) != recorded.get(k))
        protocol_was = {k: recorded.get(k, "") for k in changed} if protocol and recorded else {}
        if not (was or protocol_was or (protocol and not recorded)):
            continue
        amended = [n for n in amended if n != name]
        before_after = (verdicts or {}).get(name, ("", ""))
        lines = (outcomes or {}).get(name, ("", ""))
        refactor = bool(protocol_was and not was and lines[0] and lines[0] == lines[1])
        if refactor:  # the verdicts are those of the freeze it keeps: the digest says they stayed so
            before_after = ("", "")
        entry = Entry(
            event="refactor" if refactor else "amended" if was or protocol_was else "recorded",
            date=when,
            reason=entry_reason,
            records=records,
            was=was,
            fingerprint=claim.fingerprint(),
            protocol=protocol or {},
            protocol_was=protocol_was,
            before=before_after[0],
            after=before_after[1],
            outcomes_fingerprint=hashlib.sha256(lines[1].encode()).hexdigest()[:16] if refactor else "",
        )
        current.claims[name] = claim.model_copy(update={"ledger": [*claim.ledger, entry]})
        amended.append(name)
    if amended and before_writing is not None:
        before_writing({name: current.claims[name] for name in amended})
    if amended:  # nothing changed: the file is left as it is, byte for byte
        write_ledgers(path, {name: current.claims[name] for name in amended})
    return amended


def write_ledgers(path: Path, claims: dict) -> None:
    """Write the named claims' ledgers into the file at `path`, atomically, every other line as it was: an amendment
    or a freeze adds ledger entries and nothing else, so the file's order, comments and spellings stay."""
    ledgers = {name: [entry_written(e.model_dump(mode="json")) for e in c.ledger] for name, c in claims.items()}
    write_text_atomic(ledger_text(path.read_text(encoding="utf-8"), ledgers), path)


def ledger_text(text: str, ledgers: dict[str, list[dict]]) -> str:
    """The file's text with the ledgers written in (`with_ledgers`); a file whose claims are written in flow style
    (`{sentence: ..., ...}`), which no ledger block fits, is written again whole, its leading comment kept."""
    try:
        return with_ledgers(text, ledgers)
    except ValueError:
        raw = strict_yaml.load(text)
        for name, ledger in ledgers.items():
            raw["claims"][name]["ledger"] = ledger
        header = "".join(line for line in text.splitlines(True) if line.startswith("#"))
        return header + yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=120)


def with_ledgers(text: str, ledgers: dict[str, list[dict]]) -> str:
    """The YAML text of a declaration with the named claims' `ledger` blocks written in (replaced where they are,
    appended to the claim where it has none), every other line as it was: a user's layout, comments and number
    spellings (`1.0e-3`) stay. Checked by reading the result back: it holds the same data but the ledgers; a file
    whose claims are not block mappings (flow style) is a ValueError naming the claim."""
    root = yaml.compose(text, Loader=strict_yaml.StrictLoader)
    claims = next((v for k, v in root.value if k.value == "claims"), None) if root is not None else None
    if not isinstance(claims, yaml.MappingNode):
        raise ValueError("the file has no `claims` mapping to write ledgers into")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    edits = []  # (first line, last line + 1, new lines)
    for key, claim in claims.value:
        if key.value not in ledgers:
            continue
        if not isinstance(claim, yaml.MappingNode) or claim.flow_style or not claim.value:
            raise ValueError(f"claim {key.value!r} is not written as a block mapping: its ledger cannot be written in")
        indent = " " * claim.value[0][0].start_mark.column
        block = yaml.safe_dump({"ledger": ledgers[key.value]}, sort_keys=False, allow_unicode=True, width=120)
        new = [indent + line if line.strip() else line for line in block.splitlines(keepends=True)]
        ledger = next(((k, v) for k, v in claim.value if k.value == "ledger"), None)
        if ledger is None:
            end = _last_line(claim) + 1
            edits.append((end, end, new))
        else:
            edits.append((ledger[0].start_mark.line, _last_line(ledger[1]) + 1, new))
    for first, stop, new in sorted(edits, reverse=True):
        lines[first:stop] = new
    written = "".join(lines)
    expected = strict_yaml.load(text)
    for name, ledger in ledgers.items():
        expected["claims"][name]["ledger"] = ledger
    if strict_yaml.load(written) != expected:  # never a file that says other than it should
        raise ValueError("the ledgers could not be written into the file's layout")
    return written


def _last_line(node: yaml.Node) -> int:
    """The last line (0-based) holding text of `node`: that of its last scalar's end (a block scalar ends at the
    start of the line after it)."""
    if isinstance(node, yaml.ScalarNode):
        end = node.end_mark
        return end.line - 1 if end.column == 0 and end.line > node.start_mark.line else end.line
    children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else node.value
    return max((_last_line(c) for c in children), default=node.start_mark.line)
