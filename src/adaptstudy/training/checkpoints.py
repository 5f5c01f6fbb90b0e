"""Which checkpoint a run resumes from: the newest one written whole that also loads.

A checkpoint is complete once its marker is written (`common.files.mark_complete`). One that is complete but does not
load (a file damaged on disk, a pickle `torch.load(weights_only=True)` refuses) failed its cell on every rerun: it is
set aside beside the run's checkpoint folder (`<run folder>-unloadable-<name>`: kept for a look, never deleted, not
even when the run's folder goes as it finishes), the run says so in one line and resumes from the newest loadable
checkpoint before it, else from step 0; its record keeps where it was set aside (`restarted`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from transformers.trainer import safe_globals

from adaptstudy.common.files import is_complete, remove_folder

SET_ASIDE = "unloadable-"


def last_complete_checkpoint(folder: Path) -> str | None:
    """The newest checkpoint under `folder` that was written whole; incomplete ones are removed."""
    complete = None
    checkpoints = (
        sorted(folder.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1])) if folder.is_dir() else []
    )
    for checkpoint in checkpoints:
        if is_complete(checkpoint):
            complete = checkpoint
        else:
            remove_folder(checkpoint)
    return str(complete) if complete else None


NOT_LOADED = {"training_args.bin"}  # pickled settings the Trainer writes for people, never reads back


def checkpoint_problem(checkpoint: str | Path) -> str | None:
    """Why the checkpoint would not load (its first file that fails, and how), or None: each file the Trainer reads
    back, read as it reads it (tensors with weights_only, JSON)."""
    for path in sorted(Path(checkpoint).iterdir()):
        if path.name in NOT_LOADED:
            continue
        try:
            if path.suffix == ".safetensors":
                with safe_open(str(path), "pt") as f:
                    for key in f.keys():
                        f.get_tensor(key)
            elif path.suffix in (".pt", ".pth", ".bin"):
                with safe_globals():
                    torch.load(path, map_location="cpu", weights_only=True)
            elif path.suffix == ".json":
                json.loads(path.read_text())
        except Exception as e:  # whatever the loader raises: the Trainer would raise it too
            return f"{path.name}: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    return None


def resumable_checkpoint(folder: Path, run_id: str) -> tuple[str | None, list[dict[str, Any]]]:
    """The newest complete checkpoint under `folder` that loads, and the unloadable ones set aside on the way."""
    set_aside = []
    while (checkpoint := last_complete_checkpoint(folder)) is not None:
        problem = checkpoint_problem(checkpoint)
        if problem is None:
            return checkpoint, set_aside
        aside = folder.with_name(f"{folder.name}-{SET_ASIDE}{Path(checkpoint).name}")
        remove_folder(aside)
        Path(checkpoint).rename(aside)
        set_aside.append({"checkpoint": str(aside), "error": problem})
        print(f"WARNING {run_id}: checkpoint {checkpoint} does not load ({problem}); set aside as {aside.name}, "
              "the run resumes from the checkpoint before it, or from step 0", flush=True)  # fmt: skip
    return None, set_aside


def loadable_artifact(folder: Path, what: str) -> bool:
    """Whether a cached artifact (a source adapter) is complete and loads. One that is complete but does not load (a
    truncated or pickled weights file, a damaged config) failed every fusion run that read it with an error naming
    no folder: it is set aside (`<folder>-unloadable`, kept for a look), said in one line, and trains again."""
    folder = Path(folder)
    if not is_complete(folder):
        return False
    problem = checkpoint_problem(folder)
    if problem is None:
        return True
    aside = folder.with_name(f"{folder.name}-{SET_ASIDE.rstrip('-')}")
    remove_folder(aside)
    folder.rename(aside)
    print(f"WARNING {what} at {folder} does not load ({problem}); set aside as {aside.name}, it trains again",
          flush=True)  # fmt: skip
    return False
