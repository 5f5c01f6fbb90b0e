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
import sys
import textwrap
from collections.abc import Iterable
from functools import cache, cached_property
from pathlib import Path

import yaml

from adaptstudy.claims import baselines, evidence, fresh_seeds, prerequisites, resampling, shared_examples
from adaptstudy.claims import verdicts as claims
from adaptstudy.common.paths import PROJECT_ROOT

FOLLOWED = ("adaptstudy.reporting.", "adaptstudy.claims.")  # the packages whose code a chapter's arms may call


def shared_parts() -> dict[str, tuple]:
    """The parts every claim's verdict rests on, whatever its chapter."""
    return {
        "interval (evidence.py, resampling.py)": (evidence, resampling),
        "confirmatory runs and their prerequisites (fresh_seeds.py, prerequisites.py)": (fresh_seeds, prerequisites),
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
    built = {"arms and units (the chapter's verdicts and labels)": used_code(chapter.verdicts, chapter.label_runs)}
    return {**shared_parts(), **{name: tuple(objects) for name, objects in chapter.protocol.items()}, **built}


SHARED_MODULES = (
    "evidence",
    "verdicts",
    "shared_examples",
    "declarations",
    "resampling",
    "fresh_seeds",
    "prerequisites",
)  # their own parts


def used_code(*roots) -> tuple:
    """The functions and classes the roots call, followed through every module of the report and of the claims
    engine (`FOLLOWED`) but the shared parts' own, with the plain constants they read: the code that builds a
    chapter's arms and units, wherever it lives (a helper module's arm filter counts as much as the verdicts')."""
    shared = {f"adaptstudy.claims.{m}" for m in SHARED_MODULES}
    found: dict[str, object] = {}
    stack = list(roots)
    while stack:
        obj = stack.pop()
        obj = obj.func if isinstance(obj, cached_property) else obj
        name = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
        home = getattr(sys.modules.get(getattr(obj, "__module__", "")), "__file__", None)
        generated = inspect.isfunction(obj) and obj.__code__.co_filename != home  # a dataclass's __init__, __repr__
        if name in found or not name.startswith(FOLLOWED) or obj.__module__ in shared or generated:
            continue
        found[name] = obj
        if inspect.isclass(obj):
            stack += [v for v in vars(obj).values() if inspect.isfunction(v) or isinstance(v, cached_property)]
            continue
        for referenced, value in _referenced(obj):
            if inspect.isfunction(value) or inspect.isclass(value):
                stack.append(value)
            elif (statement := _assignment(sys.modules[obj.__module__], referenced)) is not None:
                found[f"{obj.__module__}.{referenced}"] = statement
    return tuple(found[k] for k in sorted(found))


def _assignment(module, name: str) -> Statement | None:
    """The statement that binds a module-level name, as written (a constant a rule reads: its value as the code
    states it, not as a run may have filled it), or None where the module binds none (an imported name)."""
    if "." in name:  # an attribute of a report module: look in that module
        owner, name = name.rsplit(".", 1)
        module = sys.modules.get(owner, module)
    for node in _tree(module).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return Statement(ast.dump(node))
    return None


class Statement(str):
    """A module-level statement's syntax tree, dumped: a constant as the code states it."""


@cache
def _tree(module) -> ast.Module:
    return ast.parse(inspect.getsource(module))


def _referenced(function) -> list[tuple[str, object]]:
    """(name, object) of every global a function's code (nested code included) reads, and of every attribute it
    reads from a module of the report it imported."""
    names, codes = set(), [function.__code__]
    while codes:
        code = codes.pop()
        names |= set(code.co_names)
        codes += [c for c in code.co_consts if inspect.iscode(c)]
    scope = {**function.__globals__, **(inspect.getclosurevars(function).nonlocals)}
    found = [(n, scope[n]) for n in names if n in scope]
    modules = [v for _, v in found if inspect.ismodule(v) and v.__name__.startswith(FOLLOWED)]
    found += [(f"{m.__name__}.{n}", getattr(m, n)) for m in modules for n in names if hasattr(m, n)]
    return sorted(found, key=lambda item: item[0])


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
    if isinstance(obj, Statement):
        return obj
    if inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isfunction(obj):
        return ast.dump(_without_docstrings(ast.parse(textwrap.dedent(inspect.getsource(obj)))))
    return json.dumps(_jsonable(obj), sort_keys=True)


def _jsonable(value):
    """Plain data in one order whatever the process (a set's order follows the string hash seed)."""
    if isinstance(value, (set, frozenset)):
        return sorted((_jsonable(v) for v in value), key=repr)
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {repr(k): _jsonable(v) for k, v in value.items()}
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


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
