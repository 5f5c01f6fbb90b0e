"""The guides name every registered task, method, backbone and corpus, so a reader can find each one, and their
layout names every module."""

import re

import pytest

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.data import TASKS
from adaptstudy.data.corpora import CORPORA
from adaptstudy.models.backbones import BACKBONES
from adaptstudy.models.methods import METHODS

GUIDES = PROJECT_ROOT / "book" / "guides"
NAMES = (GUIDES / "notebooks.md").read_text()  # the registered names, where a notebook's parameters are listed
LAYOUT = (GUIDES / "extending.md").read_text()
# what the project ships, read when the tests are collected: before any test registers a name of its own
SHIPPED = {r.kind: set(r.names()) for r in (TASKS, METHODS, BACKBONES, CORPORA)}


def quoted(text: str) -> set[str]:
    """Every whitespace-separated word inside backticks, outside fenced code blocks."""
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return {word for span in re.findall(r"`([^`]+)`", prose) for word in span.split()}


@pytest.mark.parametrize("kind", sorted(SHIPPED))
def test_the_guide_names_every_registered_name(kind):
    missing = sorted(SHIPPED[kind] - quoted(NAMES))
    assert not missing, f"{kind}s registered but not named in book/guides/notebooks.md: {', '.join(missing)}"


def test_the_check_can_fail():
    assert "no-such-method" not in quoted(NAMES)
    assert quoted("methods `full`, `houlsby` and `lora ia3`") == {"full", "houlsby", "lora", "ia3"}
    assert quoted("```\nblock `x` here\n```\nthen `y`") == {"y"}


def test_the_layout_names_every_module():
    layout = LAYOUT[LAYOUT.index("## Layout") :]
    words = set(re.findall(r"[a-z_0-9]+", layout))
    modules = {p.stem for p in (PROJECT_ROOT / "src" / "adaptstudy").rglob("*.py") if p.stem != "__init__"}
    assert not sorted(modules - words), (
        f"modules missing from the layout in book/guides/extending.md: {sorted(modules - words)}"
    )
