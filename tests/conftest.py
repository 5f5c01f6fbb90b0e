"""Tests run offline against the local data mirror (`ADAPTSTUDY_DATA`, default ../shared/data)."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("ADAPTSTUDY_DATA", str((ROOT / ".." / "shared" / "data").resolve()))
os.environ["ADAPTSTUDY_DATA"] = str(Path(os.environ["ADAPTSTUDY_DATA"]).resolve())
for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ[var] = "1"  # a missing file must fail at once, not after minutes of retries


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = Path(os.environ["ADAPTSTUDY_DATA"])
    if not (path / "glue").is_dir():
        pytest.fail(f"the data mirror is not at {path}: set ADAPTSTUDY_DATA")
    return path
