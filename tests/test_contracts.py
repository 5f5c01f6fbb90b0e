"""The import contracts cover what they are about, read from the code rather than listed twice: every method family
under `models/methods/` is in the families' independence contract, and every registered chapter's package in the
chapters'. A family or chapter added without its line in pyproject.toml fails here, not silently outside the
contract."""

import pkgutil

import tomllib

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.chapters import load_chapters

SHARED_BY_FAMILIES = {"base", "registry", "settings"}  # what every family may import: not a family


def _contract(name_starts: str) -> set[str]:
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["name"].startswith(name_starts)]
    return set(contract["modules"])


def test_every_method_family_is_in_the_families_independence_contract():
    import adaptstudy.models.methods as methods

    families = {
        f"adaptstudy.models.methods.{m.name}"
        for m in pkgutil.iter_modules(methods.__path__)
        if m.name not in SHARED_BY_FAMILIES
    }
    assert families and _contract("Method families are independent") == families


def test_every_chapter_package_is_in_the_chapters_independence_contract():
    """A chapter is the package whose `chapter.py` registers it (`chapters.load_chapters` finds them so)."""
    import adaptstudy.reporting as reporting

    packages = {
        m.name.rsplit(".", 1)[0]
        for m in pkgutil.walk_packages(reporting.__path__, "adaptstudy.reporting.")
        if m.name.endswith(".chapter")
    }
    assert len(packages) == len(load_chapters()) and _contract("Chapters are independent") == packages
