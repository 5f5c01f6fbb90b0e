"""Run training under tcmalloc where the system has it (`ADAPTSTUDY_ALLOCATOR`: auto, tcmalloc or system).

torch's CPU tensors come straight from the C allocator. glibc's malloc fragments when batch shapes vary from step
to step, as length-grouped batches do: fine-tuning Houlsby adapters on MRPC (minilm-l6, fp32, batch 32), its
resident memory climbed to 560 MB above tcmalloc's within 30 steps, at the same speed (`benchmarks/allocator.py`
measures both). A preload has to be in place before the process starts, so the entry points (the sweep, the
notebook runner) re-execute themselves once with `LD_PRELOAD`; a Jupyter or Colab kernel keeps what it started with.
Debian and Ubuntu ship tcmalloc as `libtcmalloc-minimal4`.
"""

from __future__ import annotations

import ctypes.util
import os
import sys
from collections.abc import Mapping

from adaptstudy.runs.base import ConfigError

VARIABLE = "ADAPTSTUDY_ALLOCATOR"
CHOICES = ("auto", "tcmalloc", "system")


def tcmalloc_library() -> str | None:
    """The name the dynamic loader resolves tcmalloc by (its minimal build first), or None if it is not installed."""
    for name in ("tcmalloc_minimal", "tcmalloc"):
        found = ctypes.util.find_library(name)
        if found:
            return found
    return None


def allocator_choice(environ: Mapping[str, str] = os.environ) -> str:
    choice = environ.get(VARIABLE, "auto").strip().lower() or "auto"
    if choice not in CHOICES:
        raise ConfigError(f"{VARIABLE}={environ[VARIABLE]!r} is not one of {', '.join(CHOICES)}")
    return choice


def preload_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """`environ` with tcmalloc added to `LD_PRELOAD` as `ADAPTSTUDY_ALLOCATOR` asks: `auto` where it is installed,
    `tcmalloc` or an error, `system` never."""
    env = dict(environ)
    choice = allocator_choice(environ)
    if choice == "system" or "tcmalloc" in env.get("LD_PRELOAD", ""):
        return env
    library = tcmalloc_library()
    if library is None:
        if choice == "tcmalloc":
            raise ConfigError(f"{VARIABLE}=tcmalloc, but tcmalloc is not installed (apt install libtcmalloc-minimal4)")
        return env
    env["LD_PRELOAD"] = " ".join(p for p in (library, env.get("LD_PRELOAD", "")) if p)
    return env


def reexec_with_allocator(module: str, argv: list[str]) -> None:
    """Replace this process by `python -m module argv...` under `preload_env`, unless that changes nothing."""
    env = preload_env()
    if env.get("LD_PRELOAD") != os.environ.get("LD_PRELOAD"):
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, "-m", module, *argv], env)
