"""The book's guides (`book/guides/`) run as written: every code block is run here, written as a file a later block
reads, the output a run block prints, a worked example `tests/test_methods.py` runs, or says why it does not run;
and the README's example is the guides' own."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from adaptstudy.common.paths import PROJECT_ROOT

GUIDES = sorted((PROJECT_ROOT / "book" / "guides").glob("*.md"))
MARKER = re.compile(r"<!-- (run|output|file: \S+|example: \S+|not run: .+?) -->")
BLOCK = re.compile(r"^(?P<indent> *)```(?P<lang>[^\n`]*)\n(?P<code>.*?)^(?P=indent)```", re.M | re.S)
LINKED = ("notebooks", "sweeps", "records", "claims", "extending")


def blocks(text: str) -> list[tuple[str, str, str]]:
    """(marker, language, code) of every fenced block, the marker being the comment on the line before it ('' where
    there is none)."""
    out = []
    for m in BLOCK.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marker = MARKER.fullmatch(before)
        out.append((marker.group(1) if marker else "", m.group("lang").strip(), m.group("code")))
    return out


def test_the_marker_check_can_fail():
    text = "<!-- run -->\n```bash\nls\n```\n\n```bash\nrm -rf /\n```\n<!-- not run: -->\n```text\nx\n```\n"
    assert [b[0] for b in blocks(text)] == ["run", "", ""]


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_every_block_of_a_guide_is_run_or_says_why_not(guide):
    found = blocks(guide.read_text(encoding="utf-8"))
    unmarked = [code.splitlines()[0] if code.strip() else "(empty)" for marker, _, code in found if not marker]
    assert not unmarked, f"{guide.name}: blocks with no run/output/file/example/not-run marker: {unmarked}"
    outputs = [i for i, (marker, *_) in enumerate(found) if marker == "output"]
    assert all(i > 0 and found[i - 1][0] == "run" for i in outputs), f"{guide.name}: an output follows no run block"


def test_the_guides_are_the_book_s_and_the_readme_links_each():
    toc = (PROJECT_ROOT / "book" / "_toc.yml").read_text(encoding="utf-8")
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    assert {p.stem for p in GUIDES} == {*LINKED, "index"}
    assert all(f"guides/{name}" in toc and f"(book/guides/{name}.md)" in readme for name in LINKED)
    assert len(readme.splitlines()) <= 150


def _commands(code: str) -> list[str]:
    """A shell block's commands, continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [re.sub(r"\s+#.*$", "", c).strip() for c in joined.splitlines() if c.strip() and not c.startswith("#")]


def test_the_readme_example_is_run_by_the_guides():
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    ran = {
        c for g in GUIDES for m, _, code in blocks(g.read_text(encoding="utf-8")) if m == "run" for c in _commands(code)
    }
    example = readme[readme.index("## An example") : readme.index("## Guides")]
    commands = [c for _, _, code in blocks(example) for c in _commands(code)]
    assert commands and not [c for c in commands if c not in ran]


# `/tmp/` where the guide writes it: a path of its own, not the tail of a longer one (a clone under /tmp, say)
GUIDE_TMP = re.compile(r"(?<![\w./~-])/tmp/")


def as_run_here(code: str, bin_dir: Path, scratch: Path, data: str) -> str:
    """A guide's block with the places it names moved to this test's: the guide's own `/tmp/` to `scratch`, then
    `.venv/bin/` to `bin_dir` and the data mirror to `data`. The guide's paths are rewritten before any of ours is put
    in, and only where the guide wrote them, so a clone, a venv or a mirror under /tmp keeps its path."""
    script = GUIDE_TMP.sub(f"{scratch}/", code)
    script = re.sub(r"(?<![\w./-])\.venv/bin/", f"{bin_dir}/", script)
    return script.replace("ADAPTSTUDY_DATA=../shared/data", f"ADAPTSTUDY_DATA={data}")


def test_a_guide_s_paths_are_moved_where_a_clone_under_tmp_runs_them():
    code = (
        ".venv/bin/papermill nb.ipynb out.ipynb -p results_dir /tmp/r\n"
        "ADAPTSTUDY_DATA=../shared/data .venv/bin/python -m adaptstudy.sweep grid.yaml --results-dir=/tmp/s\n"
        "ls /tmp/s /var/tmp/x a/tmp/b"
    )
    bin_dir, scratch = Path("/tmp/clone/.venv/bin"), Path("/tmp/pytest-7/test0/scratch")
    assert as_run_here(code, bin_dir, scratch, "/tmp/mirror").splitlines() == [
        "/tmp/clone/.venv/bin/papermill nb.ipynb out.ipynb -p results_dir /tmp/pytest-7/test0/scratch/r",
        "ADAPTSTUDY_DATA=/tmp/mirror /tmp/clone/.venv/bin/python -m adaptstudy.sweep grid.yaml"
        " --results-dir=/tmp/pytest-7/test0/scratch/s",
        "ls /tmp/pytest-7/test0/scratch/s /var/tmp/x a/tmp/b",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("guide", [g for g in GUIDES if "<!-- run -->" in g.read_text()], ids=lambda p: p.name)
def test_a_guide_s_commands_run_as_written(guide, tmp_path):
    """In a fresh folder holding the project's notebooks, grids and records (as a clone has them), each block marked
    to run runs with bash and exits 0, after the files the guide writes; an output block is what its run printed.
    Only where things live differs: `.venv/bin/` is this interpreter's, `/tmp/` the test's folder, and the data
    mirror the one the tests read (`as_run_here`: wherever the clone is, /tmp included)."""
    for name in ("notebooks", "params", "results", "src"):
        (tmp_path / name).symlink_to(PROJECT_ROOT / name)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    printed = ""
    for marker, _, code in blocks(guide.read_text(encoding="utf-8")):
        if marker.startswith("file: "):
            (tmp_path / marker.removeprefix("file: ")).write_text(code, encoding="utf-8")
        elif marker == "run":
            script = as_run_here(code, bin_dir, tmp_path / "scratch", os.environ["ADAPTSTUDY_DATA"])
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, f"{guide.name}: {code}\n{done.stderr[-3000:]}"
            printed = done.stdout
        elif marker == "output":
            assert printed.strip() == code.strip(), f"{guide.name}: printed\n{printed}"
