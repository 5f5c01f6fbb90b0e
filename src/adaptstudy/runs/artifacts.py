"""What a pretraining run leaves behind: a folder with a full masked-LM model (modes head, full) or an adapter
in the `adapters` format (seq_bn, unipelt), and a marker naming the run, its mode, the model it sits on and
the registered backbone the chain started from.

Other runs refer to one by its folder or by the settings of the run that makes it (`pretrain_config`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from adaptstudy.common.files import MARKER, is_complete, read_marker

KIND = "pretrained"  # the marker's kind for a pretraining artifact
FULL_MODES = ("head", "full")  # modes whose artifact is a whole model; the others are an adapter


def artifact_meta(folder: str | os.PathLike) -> dict[str, Any]:
    """The marker an artifact folder carries: run id, mode, base model, root backbone."""
    meta = read_marker(folder) if is_complete(folder) else {}
    if meta.get("kind") != KIND:
        raise ValueError(f"init_from={str(folder)!r} is not a pretraining artifact (no {MARKER} of one there)")
    return meta


def artifact_base(folder: str | os.PathLike) -> str:
    """The full model an artifact belongs on: itself for a full checkpoint, else the model its adapter was
    trained on."""
    meta = artifact_meta(folder)
    return str(folder) if meta["mode"] in FULL_MODES else meta["base"]


def is_artifact(folder: Path) -> bool:
    return is_complete(folder) and read_marker(folder).get("kind") == KIND
