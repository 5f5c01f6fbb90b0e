"""Import contracts whose modules are found, not listed: `make lint`'s independence contracts for the book's
chapters (every package holding a `chapter.py`) and the method families (every module of `models/methods` but the
ones they share), so a new chapter or family is under its contract the moment it exists."""

from __future__ import annotations

from importlinter.contracts.independence import IndependenceContract
from importlinter.domain import fields
from importlinter.domain.imports import ModuleExpression


class FoundIndependence(IndependenceContract):
    """Independence among the children of `parent` that hold a module named `holding` (a chapter's `chapter.py`),
    or, without `holding`, among the modules directly under `parent` but `shared`."""

    modules = fields.SetField(subfield=fields.ModuleExpressionField(), required=False)
    parent = fields.StringField()
    holding = fields.StringField(required=False)
    shared = fields.ListField(subfield=fields.StringField(), required=False)

    def check(self, graph, verbose: bool):
        self.modules = {ModuleExpression(name) for name in found(graph.modules, self.parent, self.holding, self.shared)}
        return super().check(graph, verbose)


def found(names, parent: str, holding: str | None = None, shared=None) -> list[str]:
    """The independent units under `parent` among the module `names` (see `FoundIndependence`)."""
    if holding:
        return sorted({n.rsplit(".", 1)[0] for n in names if n.startswith(f"{parent}.") and n.endswith(f".{holding}")})
    children = {n for n in names if n.startswith(f"{parent}.") and n.count(".") == parent.count(".") + 1}
    return sorted(children - {f"{parent}.{s}" for s in shared or []})
