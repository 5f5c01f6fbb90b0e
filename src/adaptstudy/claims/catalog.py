"""Every declared claim, by key (`CLAIMS`: `chapter.name`): each chapter registers its declaration file's claims
(`declare_chapter`), and the scorecard, the verdicts and the plans look them up here."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from adaptstudy.claims.declarations import Declared, Design, load_declaration
from adaptstudy.claims.evidence import Rule
from adaptstudy.common.registry import Registry


@dataclass(frozen=True)
class Claim:
    """One declared claim: `key` (chapter.name), the source, and its declaration (design and ledger)."""

    key: str
    paper: str
    declared: Declared

    @property
    def chapter(self) -> str:
        return self.key.split(".")[0]

    @property
    def design(self) -> Design:
        return self.declared.design

    @property
    def sentence(self) -> str:
        return self.declared.sentence

    @property
    def where(self) -> str:
        return self.declared.where

    @property
    def published(self) -> str:
        return self.declared.published

    @property
    def effect(self) -> str:
        return self.declared.effect

    @property
    def rule(self) -> Rule:
        return self.declared.decision


CLAIMS: Registry[Claim] = Registry("claim")
DECLARATIONS: dict[str, Path] = {}  # chapter -> its declaration file


class DeclaredClaims(dict):
    """A chapter's claims by name; a name its code judges that the file does not declare (renamed or deleted there)
    is one error naming the file and the names it declares."""

    def __init__(self, path: Path):
        super().__init__()
        self.path = path

    def __missing__(self, name: str):
        raise ValueError(
            f"{self.path} declares no claim {name!r}, which its chapter's code judges; it declares: {', '.join(self)}"
        )


def declare_chapter(path: str | os.PathLike, chapter: str) -> dict[str, Claim]:
    """Register every claim of the declaration file at `path` under `chapter.name`; the chapter's claims by name."""
    declaration = load_declaration(path)
    DECLARATIONS[chapter] = Path(path)
    claims = DeclaredClaims(Path(path))
    for name, declared in declaration.claims.items():
        key = f"{chapter}.{name}"
        if key in CLAIMS:
            raise ValueError(f"claim {key!r} is declared twice")
        claims[name] = CLAIMS.add(key, Claim(key, declared.paper or declaration.paper, declared))
    return claims


def declaration_path(module_file: str) -> Path:
    """A chapter's declaration file: `claims.yaml` beside its code."""
    return Path(module_file).with_name("claims.yaml")
