"""The README names every registered task, method, backbone and corpus, so a reader can find each one."""

import re

import pytest

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.data import TASKS
from adaptstudy.data.corpora import CORPORA
from adaptstudy.models.backbones import BACKBONES
from adaptstudy.models.methods import METHODS

README = (PROJECT_ROOT / "README.md").read_text()
# what the project ships, read when the tests are collected: before any test registers a name of its own
SHIPPED = {r.kind: set(r.names()) for r in (TASKS, METHODS, BACKBONES, CORPORA)}


def quoted(text: str) -> set[str]:
    """Every whitespace-separated word inside backticks, outside fenced code blocks."""
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return {word for span in re.findall(r"`([^`]+)`", prose) for word in span.split()}


@pytest.mark.parametrize("kind", sorted(SHIPPED))
def test_the_readme_names_every_registered_name(kind):
    missing = sorted(SHIPPED[kind] - quoted(README))
    assert not missing, f"{kind}s registered but not named in README.md: {', '.join(missing)}"


def test_the_check_can_fail():
    assert "no-such-method" not in quoted(README)
    assert quoted("methods `full`, `houlsby` and `lora ia3`") == {"full", "houlsby", "lora", "ia3"}
    assert quoted("```\nblock `x` here\n```\nthen `y`") == {"y"}


def test_the_readme_layout_names_every_module():
    layout = README[README.index("## Layout") :]
    words = set(re.findall(r"[a-z_0-9]+", layout))
    modules = {p.stem for p in (PROJECT_ROOT / "src" / "adaptstudy").rglob("*.py") if p.stem != "__init__"}
    assert not sorted(modules - words), f"modules missing from the README's layout: {sorted(modules - words)}"
