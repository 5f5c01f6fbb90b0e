"""The independence contracts find what they are about (`common/import_contracts.py`): every package holding a
`chapter.py` and every method family under `models/methods/` is under its contract the moment it exists, so a
planted cross-chapter or cross-family import in a new one breaks `make lint` with no line added anywhere."""

import pkgutil
import shutil
import subprocess
import sys

import pytest

from adaptstudy.common.import_contracts import found
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.chapters import load_chapters


def _modules(package) -> list[str]:
    return [m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]


def test_the_contracts_find_every_chapter_and_every_method_family():
    import adaptstudy.models.methods as methods
    import adaptstudy.reporting as reporting

    chapters = found(_modules(reporting), "adaptstudy.reporting", holding="chapter")
    assert len(chapters) == len(load_chapters()) and "adaptstudy.reporting.across.fusion" in chapters
    families = found(_modules(methods), "adaptstudy.models.methods", shared=["base", "registry"])
    assert {"adaptstudy.models.methods.bottleneck", "adaptstudy.models.methods.library"} <= set(families)
    assert not {"adaptstudy.models.methods.base", "adaptstudy.models.methods.registry"} & set(families)


@pytest.mark.slow
@pytest.mark.parametrize(
    "planted, broken",
    [
        ("models/methods/scaled_bias.py", "Method families are independent of each other BROKEN"),
        ("reporting/toy/chapter.py", "Chapters are independent of each other BROKEN"),
    ],
)
def test_a_new_family_or_chapter_importing_another_breaks_its_contract(tmp_path, planted, broken):
    """A copy of the project with one new module, written as a contributor would (no contract line): its import of
    another family or chapter breaks the contract; the copy without it keeps every contract."""
    shutil.copytree(PROJECT_ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path)
    lint = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"]
    env = {"PYTHONPATH": str(tmp_path / "src"), "PATH": "/usr/bin:/bin"}
    kept = subprocess.run(lint, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert kept.returncode == 0, kept.stdout[-2000:]
    module = tmp_path / "src" / "adaptstudy" / planted
    module.parent.mkdir(exist_ok=True)
    (module.parent / "__init__.py").touch()
    other = "models.methods import bottleneck" if "methods" in planted else "reporting.peft import tables"
    module.write_text(f"from adaptstudy.{other}  # noqa: F401\n")
    out = subprocess.run(lint, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode != 0 and broken in out.stdout, out.stdout[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("planted", ["data.spec import resolve_task", "models.backbones import check_backbone"])
def test_a_run_config_importing_the_data_or_the_models_breaks_the_layers(tmp_path, planted):
    """Run configs are data: one import of a registry planted in `runs/finetune_config.py` breaks the layers contract
    (the configs sit below the data, the models and training)."""
    shutil.copytree(PROJECT_ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path)
    config = tmp_path / "src" / "adaptstudy" / "runs" / "finetune_config.py"
    config.write_text(f"from adaptstudy.{planted}  # noqa: F401\n" + config.read_text())
    lint = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"]
    env = {"PYTHONPATH": str(tmp_path / "src"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(lint, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "Layers follow the data flow" in out.stdout and "BROKEN" in out.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "planted", ["reporting.houlsby import tables", "training.core import Session", "models.backbones import BACKBONES"]
)
def test_the_claims_engine_importing_a_chapter_or_the_training_stack_breaks_its_contract(tmp_path, planted):
    """The claims engine judges records alone: one import of a chapter, of training or of the models, planted in
    its verdicts' module, breaks its contract (and a chapter's, the layers')."""
    shutil.copytree(PROJECT_ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path)
    verdicts = tmp_path / "src" / "adaptstudy" / "claims" / "verdicts.py"
    verdicts.write_text(
        verdicts.read_text().replace("\nimport numpy", f"\nfrom adaptstudy.{planted}  # noqa: F401\nimport numpy", 1)
    )
    lint = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"]
    env = {"PYTHONPATH": str(tmp_path / "src"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(lint, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode != 0, out.stdout[-2000:]
    assert "The claims engine imports neither the training stack nor any chapter BROKEN" in out.stdout


def test_the_engine_lives_outside_the_report_and_no_module_outgrows_a_reading():
    """The claims engine (intervals, verdicts, ledgers) is a package of its own beside the report, which keeps the
    chapters, tables and figures: at most 35% of the source's lines, and no module over 400 lines."""
    src = PROJECT_ROOT / "src" / "adaptstudy"
    lines = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in src.rglob("*.py")}
    report = sum(n for p, n in lines.items() if "reporting" in p.relative_to(src).parts)
    assert (src / "claims" / "evidence.py").is_file() and not (src / "reporting" / "evidence.py").exists()
    assert report <= 0.35 * sum(lines.values()), f"reporting/ holds {report / sum(lines.values()):.0%} of src/"
    assert not {str(p.relative_to(src)): n for p, n in lines.items() if n > 400}
