"""The refactor rule: a change to fingerprinted code whose every effect, interval and verdict (exploratory and
confirmatory) comes out identical on the committed records is recorded in the ledger as a refactor and keeps the
freeze; a change that moves any of them is an amendment, which moves the confirmatory runs to after it."""

import inspect

import pytest

from adaptstudy.claims import evidence
from adaptstudy.claims import protocol as protocol_module
from adaptstudy.claims.declarations import Entry, load_declaration
from adaptstudy.claims.freeze import confirmatory_since
from adaptstudy.claims.ledgers import amend
from adaptstudy.claims.protocol import protocol
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.chapters import CHAPTERS, load_chapters
from adaptstudy.reporting.houlsby_base import claims as base_claims
from adaptstudy.reporting.outcomes import chapter_outcomes

load_chapters()
DECLARATION = PROJECT_ROOT / "src/adaptstudy/reporting/houlsby_base/claims.yaml"
RESULTS = PROJECT_ROOT / "results"


def _planted(monkeypatch, target, *edits: tuple[str, str]) -> None:
    """`inspect.getsource` reads `target` as if each (old, new) of `edits` were made in its file (the fingerprint's
    view; the code that runs is unchanged unless the test also changes it)."""
    source = inspect.getsource(target)
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    real = inspect.getsource
    monkeypatch.setattr(protocol_module.inspect, "getsource", lambda o: source if o is target else real(o))


def _judged(chapter: str = "houlsby_base") -> tuple[dict[str, str], dict[str, str]]:
    """Each claim's outcome line and its verdicts as shown, by claim name."""
    found = chapter_outcomes(RESULTS, chapter)
    names = {key: key.split(".", 1)[1] for key in found}
    return {names[k]: v["line"] for k, v in found.items()}, {names[k]: v["shown"] for k, v in found.items()}


def _amend_with(tmp_path, before, after, now) -> dict:
    path = tmp_path / "claims.yaml"
    path.write_text(DECLARATION.read_text())
    lines = {name: (before[0][name], after[0][name]) for name in after[0]}
    shown = {name: (before[1][name], after[1][name]) for name in after[1]}
    amend(path, load_declaration(DECLARATION), "a test", 0, protocol=now, verdicts=shown, outcomes=lines)
    return load_declaration(path).claims


def test_a_pure_rename_of_a_fingerprinted_function_is_a_refactor_and_keeps_every_freeze(tmp_path, monkeypatch):
    chapter = CHAPTERS.get("houlsby_base")
    before, recorded = _judged(), protocol(chapter)
    _planted(monkeypatch, base_claims.parity_units, ("def cells(", "def arm_of_cell("), ("cells(t,", "arm_of_cell(t,"))
    now = protocol(chapter)
    moved = [part for part in now if now[part] != recorded[part]]
    assert moved == ["arms and units (the chapter's verdicts and labels)"]  # the rename is seen
    claims = _amend_with(tmp_path, before, _judged(), now)
    frozen = load_declaration(DECLARATION).claims
    for name, claim in claims.items():
        last = claim.ledger[-1]
        assert (last.event, list(last.protocol_was)) == ("refactor", moved), name
        assert last.outcomes_fingerprint and claim.unamended(now) == ""
        assert confirmatory_since(claim) == confirmatory_since(frozen[name])  # the freeze holds


def test_a_semantic_change_is_an_amendment_with_its_verdicts_before_and_after(tmp_path, monkeypatch):
    chapter = CHAPTERS.get("houlsby_base")
    before = _judged()
    _planted(monkeypatch, evidence, ("LEVEL = 0.95", "LEVEL = 0.90"))
    monkeypatch.setattr(evidence, "LEVEL", 0.90)  # what the planted source says, run
    now = protocol(chapter)
    after = _judged()
    assert any(before[0][n] != after[0][n] for n in after[0])
    claims = _amend_with(tmp_path, before, after, now)
    frozen = load_declaration(DECLARATION).claims
    moved = {name for name in after[0] if before[0][name] != after[0][name]}
    assert {"parity-64", "ablation-one"} <= moved
    for name, claim in claims.items():
        last = claim.ledger[-1]
        if name not in moved:  # no run yet: nothing the change could move, so a refactor, its freeze kept
            assert last.event == "refactor" and confirmatory_since(claim) == confirmatory_since(frozen[name]), name
            continue
        assert last.event == "amended" and "interval (evidence.py, resampling.py)" in last.protocol_was, name
        assert last.before == before[1][name] and last.after == after[1][name]
        assert confirmatory_since(claim) > confirmatory_since(frozen[name])  # the fresh seeds before it are spent


def test_a_refactor_entry_changes_no_design_field_and_keeps_its_outcomes():
    ok = {"event": "refactor", "date": "2026-12-06T00:00:00Z", "reason": "a rename", "fingerprint": "0" * 16}
    entry = Entry(**ok, protocol={"a": "1" * 16}, protocol_was={"a": "2" * 16}, outcomes_fingerprint="3" * 16)
    assert entry.event == "refactor"
    with pytest.raises(ValueError, match="refactor"):
        Entry(**ok, protocol={"a": "1" * 16}, protocol_was={"a": "2" * 16})  # no outcomes: not shown identical
    with pytest.raises(ValueError, match="refactor"):
        Entry(**ok, protocol={"a": "1" * 16}, outcomes_fingerprint="3" * 16, was={"units": ["cola"]})


def test_every_refactor_in_a_ledger_follows_a_freeze_it_keeps():
    """A refactor never moves a claim's confirmatory runs: they start at its freeze or a later amendment."""
    for path in sorted((PROJECT_ROOT / "src" / "adaptstudy" / "reporting").rglob("claims.yaml")):
        for name, claim in load_declaration(path).claims.items():
            for entry in claim.ledger:
                if entry.event == "refactor":
                    assert entry.outcomes_fingerprint and entry.protocol_was, (path.parent.name, name)
                    assert confirmatory_since(claim) != entry.date, (path.parent.name, name)


def test_the_amend_command_judges_the_code_at_a_revision_and_now_alike_on_an_unchanged_tree():
    """`amend` judges the claims with the code at the revision (a temporary git worktree) and with the code now, on
    the same records: where the code did not change, every claim's outcomes come out identical, the refactor
    rule's premise; the worktree is removed after."""
    import subprocess

    from adaptstudy.reporting.amend import _judged_around

    dirty = subprocess.run(
        ["git", "status", "--porcelain", "src"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    ).stdout
    if dirty:
        pytest.skip("src/ has uncommitted changes: the revision's code and the code now differ")
    now = {**protocol(CHAPTERS.get("houlsby_base")), "a part": "0" * 16}  # a moved part: the command judges
    shown, lines = _judged_around(DECLARATION, "HEAD", RESULTS / "houlsby_base", now)
    assert set(lines) == {
        "parity-64",
        "parity-64-glue",
        "parity-64-l3",
        "ablation-one",
        "ablation-all",
        "ablation-lower",
    }
    assert all(before == after and before.startswith("exploratory: ") for before, after in lines.values())
    assert all(b == a and "on fresh seeds alone" in a for b, a in shown.values())
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=PROJECT_ROOT, capture_output=True, text=True).stdout
    assert "adaptstudy-before-" not in worktrees
