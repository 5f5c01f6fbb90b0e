"""`python -m adaptstudy.reporting.amend PATH --reason ... --results-dir DIR [--against REV]`: record as amendments
the changes made to a chapter's declaration file since git revision REV (default HEAD) and to its protocol since its
ledger last wrote it down (`reporting.protocol`), and declare the claims written without a ledger; with `--freeze`,
freeze every claim of the file for confirmation (`reporting.freeze`). Every entry is dated when it is written.

Where the protocol changed, the refactor rule decides each claim: its effects, intervals and verdicts (exploratory
and confirmatory) are judged on the committed records by the code at REV (a temporary git worktree) and by the code
now (`reporting.outcomes`); a claim whose every one is identical gets a `refactor` entry (its freeze kept), any
other an amendment keeping both verdicts."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from adaptstudy.claims.catalog import DECLARATIONS
from adaptstudy.claims.declarations import Declaration, load_declaration, one_line
from adaptstudy.claims.freeze import confirmatory_since, freeze, frozen_at
from adaptstudy.claims.ledgers import amend
from adaptstudy.claims.protocol import protocol
from adaptstudy.common import strict_yaml
from adaptstudy.common.files import locked_file, write_text_atomic
from adaptstudy.reporting.chapters import load_chapters
from adaptstudy.runs.records import made_at, read_records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m adaptstudy.reporting.amend", description=__doc__)
    parser.add_argument("path", help="a chapter's claims.yaml, edited")
    parser.add_argument("--reason", required=True, help="why the claims changed (the ledger keeps it)")
    parser.add_argument("--results-dir", required=True, help="the chapter's records: how many existed is recorded")
    parser.add_argument("--against", default="HEAD", help="the git revision holding the file as it was")
    parser.add_argument(
        "--freeze", action="store_true", help="freeze claims for confirmation (their ledgers must be up to date)"
    )
    parser.add_argument(
        "--spend",
        action="store_true",
        help="amend frozen claims all the same: their records made since the freeze stop confirming them",
    )
    parser.add_argument("--claims", help="with --freeze: the claims to freeze, comma-separated (default: every one)")
    parser.add_argument(
        "--refreeze",
        action="store_true",
        help="with --freeze: freeze claims frozen already (their runs since that freeze stop confirming them)",
    )
    args = parser.parse_args(argv)
    path = Path(args.path).resolve()
    try:
        loose = [flag for flag, given in (("--claims", args.claims), ("--refreeze", args.refreeze)) if given]
        if loose and not args.freeze:
            raise ValueError(f"{' and '.join(loose)} only go with --freeze, which is not given: nothing is done")
        if args.spend and args.freeze:
            raise ValueError("--spend goes with an amendment, not with --freeze (whose --refreeze says as much)")
        results = _checked(path, args.reason, Path(args.results_dir))
        records = _records(path, results)
        with locked_file(path):  # one writer of the file at a time, from its first read to its last write
            original = path.read_text(encoding="utf-8")
            try:
                names = _run(args, path, results, records)
            except BaseException:  # a failing command leaves the file as it found it (new claims declared first)
                if path.read_text(encoding="utf-8") != original:
                    write_text_atomic(original, path)
                raise
    except (subprocess.CalledProcessError, ValueError, ValidationError) as error:
        detail = getattr(error, "stderr", "") or (one_line(error) if isinstance(error, ValidationError) else error)
        print(f"error: {str(detail).strip()}", file=sys.stderr)
        return 2
    if names is not None:
        print(f"amended, recorded or declared: {', '.join(names) or 'nothing changed'}")
    return 0


def _run(args, path: Path, results: Path, records: int) -> list[str] | None:
    """The command's work on the declaration at `path`, its input checked: the names amended, recorded or declared
    (None for a freeze, which prints its own lines)."""
    if args.freeze:
        chosen = [n.strip() for n in args.claims.split(",")] if args.claims else None
        before = {n: frozen_at(c) for n, c in load_declaration(path).claims.items()}
        names = freeze(path, args.reason, records, protocol_of(path), names=chosen, refreeze=args.refreeze)
        print(f"frozen: {', '.join(names)}")
        for name in (n for n in names if before[n] is not None):
            leaving = _leaving(results, before[name])
            print(
                f"{name}: {len(leaving)} records of {results.name}, made since its freeze of "
                f"{before[name]:%Y-%m-%d %H:%M}, no longer confirm it: {', '.join(leaving) or 'none'}"
            )
        return None
    previous = _declared_in(_as_committed(path, args.against))
    gone = sorted(set(previous.claims) - set(_declared_in(path.read_text(encoding="utf-8")).claims))
    if gone:
        raise ValueError(
            f"{path}: {', '.join(gone)} declared at {args.against} but gone now (renamed or deleted): a declared "
            "claim keeps its name and ledger; restore it, and declare a new claim beside it if its name must change"
        )
    names = _declare_new(path, args.reason, records)  # so the chapter loads, for its protocol
    since = _declared_in(path.read_text(encoding="utf-8")).claims  # declared after the revision: as they are
    previous.claims |= {n: c for n, c in since.items() if n in names or n not in previous.claims}
    now = protocol_of(path)
    shown, lines = _judged_around(path, args.against, Path(args.results_dir), now)
    spent = _spending(previous, results, args.spend)
    names += amend(
        path, previous, args.reason, records, protocol=now, verdicts=shown, outcomes=lines, before_writing=spent
    )
    return names


def _spending(previous: Declaration, results: Path, spend: bool):
    """The check `amend` runs before it writes: an amendment of a frozen claim moves its confirmatory runs to after
    now, so the records made since its freeze stop confirming it. Refused, naming each claim with the count,
    unless `spend` (the user means it); with it, said before the file is written."""

    def check(changed: dict) -> None:
        lines = []
        for name, claim in changed.items():
            since = confirmatory_since(previous.claims[name]) if name in previous.claims else None
            if since is None or claim.ledger[-1].event != "amended":
                continue
            made = _leaving(results, since)
            lines.append(
                f"{name} (frozen {since:%Y-%m-%d %H:%M}): {len(made)} records of {results.name} made since no longer "
                "confirm it"
            )
        if lines and not spend:
            raise ValueError(
                f"amending spends fresh seeds: {'; '.join(lines)}; amend with --spend if that is meant, or undo the "
                "change"
            )
        for line in lines:
            print(f"spent: {line}")

    return check


def chapter_of(path: Path):
    """The chapter whose declaration is at `path`, or whose claims a copy of it declares (a test's, a draft's);
    None for a file of no chapter."""
    chapters = {c.name: c for c in load_chapters()}
    for name, file in DECLARATIONS.items():
        if file.resolve() == path.resolve() and name in chapters:
            return chapters[name]
    claims = set(_declared_in(path.read_text(encoding="utf-8")).claims)
    holding = {n: set(load_declaration(f).claims) for n, f in DECLARATIONS.items() if n in chapters}
    candidates = [n for n, names in holding.items() if claims and claims <= names]
    exact = [n for n in candidates if holding[n] == claims]
    chosen = exact if exact else candidates
    return chapters[chosen[0]] if len(chosen) == 1 else None  # a copy no one chapter's claims hold: unchecked


def _records(path: Path, results: Path) -> int:
    """How many records the chapter's folder holds, each read first: a folder holding a record that is not one (a
    truncated file) stops the command before it writes, and so does a folder whose records another study wrote
    (each record's `study`; the folder's name for records written before they kept it), or an empty one where the
    chapter has runs."""
    read = read_records(results, None)  # InvalidRecordsError (a ValueError) names every file that is not a record
    chapter = chapter_of(path)
    if chapter is not None and chapter.study is not None:
        expected = f"results/{chapter.study}"
        # each record names the study that wrote it; one written before records kept it is the folder's
        wrote = sorted({r.get("study") or results.resolve().name for r in read}) or [results.resolve().name]
        if wrote != [chapter.study]:
            raise ValueError(
                f"--results-dir {results}: the {chapter.name} chapter's records are its study's, {expected}, not "
                f"those of {', '.join(map(repr, wrote))}"
            )
        if not read:
            raise ValueError(
                f"--results-dir {results}: holds no record, where the {chapter.name} chapter's are ({expected}): "
                "the ledger would count none"
            )
    return len(list(results.glob("*.json")))


def _checked(path: Path, reason: str, results: Path) -> Path:
    """The command's input, refused before anything is written: a declaration file that exists and whose ledger
    entries are not dated in the future, a reason, and a results folder that exists."""
    if not path.is_file():
        raise ValueError(f"{path}: no such declaration file; the chapters' are {_listed(DECLARATIONS.values())}")
    if isinstance(raw := strict_yaml.load(path.read_text(encoding="utf-8")), dict) and "arms" in raw:
        raise ValueError(
            f"{path}: a declaration of your own claims (it defines `arms`), which this command does not write: "
            f"freeze it with `python -m adaptstudy.reporting.user_claims {path} --freeze`"
        )
    if not reason.strip():
        raise ValueError("--reason is empty: the ledger keeps why the claims changed, so say why")
    if not results.is_dir():
        folders = sorted(p for p in (Path.cwd() / "results").glob("*") if p.is_dir())
        raise ValueError(f"--results-dir {results}: no such folder; the records' folders: {_listed(folders)}")
    now = datetime.now(timezone.utc)
    future = [
        f"{name} ({entry.event} {entry.date:%Y-%m-%d %H:%M})"
        for name, claim in _declared_in(path.read_text(encoding="utf-8")).claims.items()  # a new claim has none yet
        for entry in claim.ledger
        if entry.date > now
    ]
    if future:
        raise ValueError(f"{path}: ledger entries dated in the future: {', '.join(future)}; a ledger records when")
    return results


def _listed(paths) -> str:
    return ", ".join(str(p.relative_to(Path.cwd())) if p.is_relative_to(Path.cwd()) else str(p) for p in paths)


def _leaving(results: Path, since: datetime) -> list[str]:
    """The run ids of the folder's records a second freeze takes out of the confirmatory column: those made after
    `since`."""
    records = pd.DataFrame({"record": list(read_records(results))})
    if records.empty:
        return []
    made = pd.to_datetime(made_at(records), utc=True, format="ISO8601") >= pd.Timestamp(since)
    return sorted(r["run_id"] for r in records.loc[made, "record"])


def _judged_around(
    path: Path, revision: str, results_dir: Path, now: dict[str, str] | None
) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    """Where the protocol of some claim of the file moved from its ledger: each claim's verdicts as shown and its
    outcome lines (`reporting.outcomes`), before (the code at `revision`) and after (the code now), by claim name;
    ({}, {}) where nothing moved."""
    declared = _declared_in(path.read_text(encoding="utf-8"))
    if now is None or all(not c.recorded_protocol or c.recorded_protocol == now for c in declared.claims.values()):
        return {}, {}
    chapter = next(name for name, file in DECLARATIONS.items() if file.resolve() == path.resolve())
    root = results_dir.resolve().parent  # the chapter's records are results/<study>
    top = _git(path.parent, "rev-parse", "--show-toplevel")
    with tempfile.TemporaryDirectory(prefix="adaptstudy-before-") as tmp:
        tree = Path(tmp) / "tree"
        _git(Path(top), "worktree", "add", "--detach", str(tree), revision)
        try:
            before = _outcomes(tree / "src", root, chapter)
        finally:
            _git(Path(top), "worktree", "remove", "--force", str(tree))
    after = _outcomes(Path(top) / "src", root, chapter)
    prefix = f"{chapter}."
    names = {k.removeprefix(prefix) for k in {*before, *after}}
    empty = {"line": "", "shown": ""}
    pairs = {n: (before.get(prefix + n, empty), after.get(prefix + n, empty)) for n in names}
    return {n: (b["shown"], a["shown"]) for n, (b, a) in pairs.items()}, {
        n: (b["line"], a["line"]) for n, (b, a) in pairs.items()
    }


def _outcomes(src: Path, root: Path, chapter: str) -> dict[str, dict[str, str]]:
    """`reporting.outcomes` run with the `adaptstudy` under `src` (this file's reading of a verdict, that code's
    verdicts)."""
    script = Path(__file__).with_name("outcomes.py")
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, str(script), str(root), chapter], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def _declare_new(path: Path, reason: str, records: int) -> list[str]:
    """Declare the claims written without a ledger (the others as they are): the names declared."""
    raw = strict_yaml.load(path.read_text(encoding="utf-8"))
    if all("ledger" in claim for claim in raw["claims"].values()):
        return []
    return amend(path, _declared_in(path.read_text(encoding="utf-8")), reason, records)


def _declared_in(text: str | None) -> Declaration:
    """A declaration file's text as it was, with only the claims it had declared (those with a ledger); an empty
    chapter for a file that did not exist."""
    raw = strict_yaml.load(text) if text else {"paper": "", "claims": {}}
    claims = {n: c for n, c in raw["claims"].items() if "ledger" in c}
    return Declaration.model_validate({**raw, "claims": claims, "findings": []}, context={"as_it_was": True})


def _as_committed(path: Path, revision: str) -> str | None:
    """The file's text at a git revision; None where the revision does not hold it (a new chapter's file)."""
    found = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path.parent, capture_output=True, text=True)
    if found.returncode:
        raise ValueError(f"{path} is in no git repository: the command reads the file as it was at a revision")
    top = found.stdout.strip()
    relative = path.relative_to(top).as_posix()
    listed = subprocess.run(
        ["git", "ls-tree", "--name-only", revision, relative], cwd=top, capture_output=True, text=True, check=True
    ).stdout.strip()
    if not listed:
        return None
    return subprocess.run(
        ["git", "show", f"{revision}:{relative}"], cwd=top, capture_output=True, text=True, check=True
    ).stdout


def protocol_of(path: Path) -> dict[str, str] | None:
    """The protocol fingerprints of the chapter whose declaration is at `path` (None for a file no chapter reads)."""
    chapters = {c.name: c for c in load_chapters()}
    owner = [name for name, file in DECLARATIONS.items() if file.resolve() == path.resolve() and name in chapters]
    return protocol(chapters[owner[0]]) if owner else None


if __name__ == "__main__":
    raise SystemExit(main())
