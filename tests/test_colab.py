"""Colab: every notebook installs the project there from its first cell (and does nothing elsewhere), and the README
and each notebook link it to Colab, all from pyproject.toml's one Repository setting."""

import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from adaptstudy.launch import colab

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# Read here without the module under test: the setting as pyproject.toml states it.
REPOSITORY = re.search(r'^Repository\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]
OWNER_NAME = REPOSITORY.removeprefix("https://github.com/").removesuffix("/")
CLONE = "/content/adaptstudy"


def link(name: str) -> str:
    return f"https://colab.research.google.com/github/{OWNER_NAME}/blob/main/notebooks/{name}.ipynb"


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_the_setting_is_pyprojects_repository_url():
    assert colab.repository_url() == REPOSITORY
    assert colab.repository_url(Path("/nonexistent")) == REPOSITORY  # an installed copy: from its metadata
    assert colab.github_repo("https://github.com/someone/fork.git") == "someone/fork"
    with pytest.raises(ValueError, match="not a GitHub repository"):
        colab.github_repo("https://gitlab.com/someone/fork")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_has_one_colab_cell_first_of_its_code_cells_as_generated(path):
    code = [c for c in cells(path) if c["cell_type"] == "code"]
    tagged = [c for c in code if "colab" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1 and code[0] is tagged[0]
    source = "".join(tagged[0]["source"])
    assert source == colab.cell_source(REPOSITORY) and f'repository="{REPOSITORY}"' in source
    assert "!" not in source.replace("!=", "")  # plain Python: no shell magics
    parameters = next(i for i, c in enumerate(code) if "parameters" in c["metadata"].get("tags", []))
    assert parameters == 2  # after the Colab cell and the imports, where it was


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebooks_first_markdown_cell_links_it_to_colab(path):
    markdown = next(c for c in cells(path) if c["cell_type"] == "markdown")
    text = "".join(markdown["source"])
    assert f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({link(path.stem)})" in text
    assert text.startswith("# ") and text.count("colab.research.google.com/github/") == 1


def test_the_readme_links_every_notebook_to_colab():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("<!-- colab-links:start -->") : readme.index("<!-- colab-links:end -->")]
    assert all(link(p.stem) in table for p in NOTEBOOKS)
    assert table.count("colab.research.google.com/github/") == len(NOTEBOOKS)


def test_nothing_is_out_of_date():
    assert colab.sync(ROOT, check=True) == [], "run `make colab`"


def _project_copy(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    for name in ("README.md", "pyproject.toml", "book/_config.yml"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, root / name)
    return root


def test_check_lists_what_is_out_of_date_and_make_colab_rewrites_it_idempotently(tmp_path, capsys):
    root = _project_copy(tmp_path)
    nb = root / "notebooks" / "04_finetune.ipynb"
    notebook = json.loads(nb.read_text(encoding="utf-8"))
    ids = [c["id"] for c in notebook["cells"]]
    notebook["cells"] = [c for c in notebook["cells"] if c["id"] != "colab-setup"]  # a notebook without the cell
    nb.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    pyproject = root / "pyproject.toml"  # a fork: the one setting changes
    pyproject.write_text(pyproject.read_text().replace(REPOSITORY, "https://github.com/someone/fork"))

    assert colab.main(["--check", "--root", str(root)]) == 1
    listed = capsys.readouterr().err
    assert "notebooks/04_finetune.ipynb: out of date" in listed and "README.md: out of date" in listed
    assert nb.read_text(encoding="utf-8").count("colab-setup") == 0  # --check changes nothing

    assert colab.main(["--root", str(root)]) == 0
    assert colab.main(["--check", "--root", str(root)]) == 0
    before = {p: p.read_bytes() for p in [*root.glob("notebooks/*.ipynb"), root / "README.md"]}
    assert colab.sync(root) == [] and all(p.read_bytes() == b for p, b in before.items())  # idempotent
    rewritten = json.loads(nb.read_text(encoding="utf-8"))
    assert [c["id"] for c in rewritten["cells"]] == ids  # every other cell kept its id, in its place
    everything = "".join(p.read_text(encoding="utf-8") for p in before)
    assert REPOSITORY not in everything and OWNER_NAME + "/" not in everything
    assert everything.count("https://github.com/someone/fork") == len(before) - 1  # each cell, not the README
    assert "colab.research.google.com/github/someone/fork/blob/main/notebooks/04_finetune.ipynb" in everything
    book = yaml.safe_load((root / "book" / "_config.yml").read_text(encoding="utf-8"))  # the book's buttons follow
    assert book["repository"]["url"] == "https://github.com/someone/fork"


def test_the_books_repository_is_pyprojects_and_its_launch_buttons_open_the_notebooks_folder():
    book = yaml.safe_load((ROOT / "book" / "_config.yml").read_text(encoding="utf-8"))
    assert book["repository"] == {"url": REPOSITORY, "path_to_book": "book", "branch": colab.BRANCH}
    assert book["html"]["use_repository_button"] and book["launch_buttons"]["colab_url"]
    assert colab.notebook_url("generated/06_analysis_houlsby") == link("06_analysis_houlsby")
    assert colab.notebook_url("guides/claims") is None and colab.notebook_url("intro") is None
    with pytest.raises(ValueError, match="no `repository:` block"):
        colab.update_book_config("title: x\n")


def test_a_notebook_as_committed_is_rewritten_byte_for_byte(tmp_path):
    root = _project_copy(tmp_path)
    assert colab.sync(root) == []
    assert all((root / "notebooks" / p.name).read_bytes() == p.read_bytes() for p in NOTEBOOKS)


def test_the_badge_goes_below_the_title_once():
    line = colab.badge("04_finetune", REPOSITORY)
    once = colab.with_badge("# Title\n\nText.", line)
    assert once == f"# Title\n\n{line}\n\nText." and colab.with_badge(once, line) == once
    assert colab.with_badge("# Title\nText.", line) == f"# Title\n\n{line}\n\nText."


def _run_cell(monkeypatch, in_colab: bool, cloned: bool = False):
    """Execute the generated cell in a fresh namespace, with process calls recorded instead of made."""
    calls = []
    if in_colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr(subprocess, "run", lambda args, **kw: calls.append(("run", list(args), kw)))
    monkeypatch.setattr(os, "chdir", lambda path: calls.append(("chdir", path)))
    isdir = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda p: cloned if p == CLONE else isdir(p))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv("ADAPTSTUDY_DATA", raising=False)
    namespace: dict = {}
    exec(compile("".join(cells(NOTEBOOKS[0])[1]["source"]), "colab-cell", "exec"), namespace)
    assert set(namespace) == {"__builtins__"}  # no name left for the parameters check to see
    assert "ADAPTSTUDY_DATA" not in os.environ  # so data not under data/ comes from the Hub
    return calls


def test_the_colab_cell_does_nothing_outside_colab(monkeypatch):
    path = list(sys.path)
    assert _run_cell(monkeypatch, in_colab=False) == [] and sys.path == path


def test_the_colab_cell_clones_installs_and_works_from_the_project_in_colab(monkeypatch):
    calls = _run_cell(monkeypatch, in_colab=True)
    assert calls == [
        ("run", ["git", "clone", "--depth", "1", REPOSITORY, CLONE], {"check": True}),
        ("run", [sys.executable, "-m", "pip", "install", "-q", "-e", CLONE], {"check": True}),
        ("chdir", CLONE),
    ]
    assert sys.path[0] == f"{CLONE}/src"  # the running kernel imports the fresh install
    again = _run_cell(monkeypatch, in_colab=True, cloned=True)  # run all again: no second clone
    assert [c[1][:2] for c in again if c[0] == "run"] == [[sys.executable, "-m"]]
