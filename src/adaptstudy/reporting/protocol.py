"""A claim's protocol: what decides its verdict outside its YAML design — the grids that chose its arms' settings
and fixed their seeds and evaluation sets, the selection and tie rules, the code that builds its arms and units (its
arm filters), the evaluation set an arm is scored on, the set-aside rule, the regime and the interval. Each part is
fingerprinted from the objects the code uses (a module's, class's or function's syntax tree without its docstrings,
so a comment or a docstring is no change; a grid's parsed YAML), and the ledger keeps the fingerprints, so a part
changed without an amendment fails the ledger test naming the claim and the part (`Declared.unamended`)."""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import textwrap
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

import yaml

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting import baselines, claims, evidence, selection, shared_examples

CHOOSING = (selection.choose_learning_rates, selection.at_learning_rates)  # the rate (and epoch) rule, its tie rule


def shared_parts() -> dict[str, tuple]:
    """The parts every claim's verdict rests on, whatever its chapter."""
    return {
        "interval (evidence.py)": (evidence,),
        "evaluation set (claims.arm, shared_examples.py)": (claims.arm, claims.out_of_order, shared_examples),
        "regime for runs that learned nothing (claims.Verdict)": (claims._regime, claims.Verdict._judged),
        "set-aside rule (baselines.py)": (
            baselines.Z,
            baselines.CONCENTRATED,
            baselines.baseline,
            baselines._baseline,
            baselines.noise_margin,
            baselines.learned_nothing,
            baselines.selection_baseline,
            baselines.validation_learned,
            baselines.learned_on_selection,
            baselines.selection_failures,
            baselines._on_selection,
        ),
    }


def parts(chapter) -> dict[str, tuple]:
    """Every part of a chapter's claims' protocol: the shared ones, its own (`Chapter.protocol`: grids, selection
    and tie rules), and the code that labels its runs and builds its arms and units."""
    built = {
        "arms and units (the chapter's verdicts and labels)": (
            inspect.getmodule(chapter.verdicts),
            chapter.label_runs,
        )
    }
    return {**shared_parts(), **{name: tuple(objects) for name, objects in chapter.protocol.items()}, **built}


def protocol(chapter) -> dict[str, str]:
    """The fingerprint of each part of the chapter's protocol (16 hex digits each)."""
    return {name: fingerprint(objects) for name, objects in parts(chapter).items()}


def fingerprint(objects: Iterable) -> str:
    """One hash over the objects' canonical forms."""
    text = "\n".join(_canonical(o) for o in objects)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def grid(name: str) -> Path:
    """A committed grid under params/ (`cpu/houlsby_select.yaml`), checked to exist: a part names a real file."""
    path = PROJECT_ROOT / "params" / name
    if not path.is_file():
        raise FileNotFoundError(f"protocol part names {path}, which does not exist")
    return path


def _canonical(obj) -> str:
    if isinstance(obj, Path):  # its content, parsed: a comment in a grid is no change
        return json.dumps(yaml.safe_load(obj.read_text(encoding="utf-8")), sort_keys=True, default=str)
    if isinstance(obj, cached_property):
        obj = obj.func
    if inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isfunction(obj):
        return ast.dump(_without_docstrings(ast.parse(textwrap.dedent(inspect.getsource(obj)))))
    return json.dumps(obj, sort_keys=True, default=repr)


def _without_docstrings(tree: ast.AST) -> ast.AST:
    """The tree with every module, class and function docstring removed: prose is not protocol."""
    for node in ast.walk(tree):
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, kinds) and node.body and _is_docstring(node.body[0]):
            node.body = node.body[1:] or [ast.Pass()]
    return tree


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )
