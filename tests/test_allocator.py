"""The allocator the entry points train under: tcmalloc where installed, the C library's on request."""

import json
import subprocess
import sys

import pytest

from adaptstudy.launch import allocator
from adaptstudy.runs.base import ConfigError

INSTALLED = allocator.tcmalloc_library()


def test_auto_preloads_tcmalloc_where_installed_and_keeps_other_preloads(monkeypatch):
    monkeypatch.setattr(allocator, "tcmalloc_library", lambda: "libtcmalloc_minimal.so.4")
    env = allocator.preload_env({"LD_PRELOAD": "libother.so", "PATH": "/bin"})
    assert env["LD_PRELOAD"] == "libtcmalloc_minimal.so.4 libother.so"
    assert env["PATH"] == "/bin"
    assert allocator.preload_env(env) == env  # already preloaded: nothing to add


def test_system_never_preloads_and_auto_without_tcmalloc_changes_nothing(monkeypatch):
    monkeypatch.setattr(allocator, "tcmalloc_library", lambda: "libtcmalloc_minimal.so.4")
    assert "LD_PRELOAD" not in allocator.preload_env({"ADAPTSTUDY_ALLOCATOR": "system"})
    monkeypatch.setattr(allocator, "tcmalloc_library", lambda: None)
    assert allocator.preload_env({"HOME": "/root"}) == {"HOME": "/root"}


def test_asking_for_tcmalloc_where_it_is_missing_or_for_an_unknown_allocator_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(allocator, "tcmalloc_library", lambda: None)
    with pytest.raises(ConfigError, match="libtcmalloc-minimal4"):
        allocator.preload_env({"ADAPTSTUDY_ALLOCATOR": "tcmalloc"})
    with pytest.raises(ConfigError, match="'jemalloc'.*auto, tcmalloc, system"):
        allocator.preload_env({"ADAPTSTUDY_ALLOCATOR": "jemalloc"})


@pytest.mark.skipif(INSTALLED is None, reason="tcmalloc is not installed (apt install libtcmalloc-minimal4)")
def test_a_process_started_with_the_preload_env_runs_on_tcmalloc_and_its_records_say_so():
    code = "import json; from adaptstudy.training.device import allocator_in_use as a; print(json.dumps(a()))"
    env = allocator.preload_env({**__import__("os").environ, "ADAPTSTUDY_ALLOCATOR": "auto"})
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == "tcmalloc"
    plain = {**env, "ADAPTSTUDY_ALLOCATOR": "system", "LD_PRELOAD": ""}
    out = subprocess.run([sys.executable, "-c", code], env=plain, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == "system"
