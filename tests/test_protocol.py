"""A claim's protocol is part of its design: the grids, the selection and tie rules, the evaluation caps, the arm
filters and the interval are fingerprinted from the code and grids the chapters use, and a change to any of them
without a ledger entry fails the ledger check naming the claim and the part."""

import dataclasses
import inspect

import pytest

from adaptstudy.claims import protocol as protocol_module
from adaptstudy.claims.declarations import load_declaration
from adaptstudy.claims.protocol import protocol
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.chapters import CHAPTERS, load_chapters
from adaptstudy.reporting.houlsby import choices
from adaptstudy.reporting.houlsby import claims as houlsby_claims

load_chapters()  # registers every chapter


def _houlsby_parity_unamended(chapter) -> str:
    return _unamended(chapter, "parity")


def _unamended(chapter, claim: str) -> str:
    """Why the chapter's claim no longer matches its ledger under the chapter's protocol as given ('' if it does)."""
    declared = load_declaration(PROJECT_ROOT / f"src/adaptstudy/reporting/{chapter.name}/claims.yaml").claims[claim]
    return declared.unamended(protocol(chapter))


def _with_grid(tmp_path, chapter, part: str, name: str, old: str, new: str):
    """The chapter with one of its grids (`name`, under params/cpu/) replaced by an edited copy."""
    source = PROJECT_ROOT / "params" / "cpu" / name
    assert old in source.read_text(), (name, old)
    copy = tmp_path / name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(source.read_text().replace(old, new, 1))
    edited = tuple(copy if p == source else p for p in chapter.protocol[part])
    assert copy in edited, f"{name} is not in the part {part!r}"
    return dataclasses.replace(chapter, protocol={**chapter.protocol, part: edited})


@pytest.mark.parametrize(
    "part, grid, old, new",
    [
        ("selection grids (rates, epochs)", "houlsby_select.yaml", "learning_rate: [", "learning_rate: [3.0e-5, "),
        ("selection grids (rates, epochs)", "houlsby_select.yaml", "num_train_epochs: 3", "num_train_epochs: 4"),
        (
            "report grid (seeds, evaluation caps)",
            "houlsby_report.yaml",
            "max_train_examples: [20000]",
            "max_train_examples: [20000]\n  max_eval_examples: [500]",
        ),
    ],
    ids=["rate grid", "epoch options", "evaluation cap"],
)
def test_an_edited_grid_fails_the_ledger_naming_the_part(tmp_path, part, grid, old, new):
    houlsby = CHAPTERS.get("houlsby")
    assert _houlsby_parity_unamended(houlsby) == ""
    why = _houlsby_parity_unamended(_with_grid(tmp_path, houlsby, part, grid, old, new))
    assert why.startswith("its protocol changed without an amendment") and part in why


@pytest.mark.parametrize(
    "chapter, claim, part, grid, old, new",
    [
        (
            "houlsby",
            "size",
            "confirmation grids (the power plan, its addendum and the later plan for the headlines)",
            "confirm/power/houlsby_power.yaml",
            "  adam_epsilon:\n",
            "  max_eval_examples:\n  - 500\n  adam_epsilon:\n",
        ),
        (
            "houlsby",
            "top-k",
            "confirmation grids (the power plan, its addendum and the later plan for the headlines)",
            "confirm/power/houlsby_power_units.yaml",
            "  adam_epsilon:\n",
            "  max_eval_examples:\n  - 500\n  adam_epsilon:\n",
        ),
        (
            "houlsby_base",
            "parity-64",
            "report grid (seeds, evaluation caps)",
            "houlsby_base_report.yaml",
            "selection_split: true,",
            "selection_split: true, max_eval_examples: 200,",
        ),
        (
            "dsp",
            "dapt",
            "confirmation grid (the power plan)",
            "confirm/power/dsp_power.yaml",
            "  adam_epsilon:\n",
            "  max_eval_examples:\n  - 250\n  adam_epsilon:\n",
        ),
    ],
    ids=["power plan", "its addendum", "base-size report grid", "dsp power plan"],
)
def test_an_evaluation_cap_added_to_a_grid_that_made_confirmatory_runs_fails_the_ledger(
    tmp_path, chapter, claim, part, grid, old, new
):
    registered = CHAPTERS.get(chapter)
    assert _unamended(registered, claim) == ""
    why = _unamended(_with_grid(tmp_path, registered, part, grid, old, new), claim)
    assert why.startswith("its protocol changed without an amendment") and part in why


def test_every_grid_of_a_chapter_s_study_is_in_its_protocol():
    """A grid that made a chapter's runs (selection, report, extension, confirmation plan, addendum) is fingerprinted,
    whichever part names it: a new plan's grid joins its chapter's protocol as it is written."""
    import yaml

    for chapter in CHAPTERS.names():
        registered = CHAPTERS.get(chapter)
        if not registered.study:
            continue
        named = {p for objects in registered.protocol.values() for p in objects if hasattr(p, "suffix")}
        for path in sorted((PROJECT_ROOT / "params" / "cpu").rglob("*.yaml")):
            if (yaml.safe_load(path.read_text()) or {}).get("study") == registered.study:
                assert path in named, f"{path.relative_to(PROJECT_ROOT)} is not in {chapter}'s protocol"


def test_a_semantic_change_to_the_resampling_fails_the_ledger_naming_the_interval(monkeypatch):
    from adaptstudy.claims import resampling

    _edit_source(monkeypatch, resampling, "tp.sum(axis=1) / n", "tp.sum(axis=1) / (n + 1)")
    why = _houlsby_parity_unamended(CHAPTERS.get("houlsby"))
    assert (
        why.startswith("its protocol changed without an amendment") and "interval (evidence.py, resampling.py)" in why
    )


@pytest.mark.parametrize(
    "target, old, new, part",
    [
        (choices, '["choice score"].idxmax()', '["choice score"][::-1].idxmax()', "selection and tie rules"),
        (houlsby_claims._variant_units, 'runs[runs["plain"]]', "runs", "arms and units"),
    ],
    ids=["tie rule", "arm filter"],
)
def test_edited_code_fails_the_ledger_naming_the_part(monkeypatch, target, old, new, part):
    """The code as an edited copy of the module would read: the fingerprint follows the syntax, not the file."""
    _edit_source(monkeypatch, target, old, new)
    why = _houlsby_parity_unamended(CHAPTERS.get("houlsby"))
    assert why.startswith("its protocol changed without an amendment") and part in why


def test_an_arm_filter_in_a_helper_module_is_part_of_its_chapter_s_protocol(monkeypatch):
    """The code that builds a chapter's arms counts wherever it lives: fusion's attention claims build their units in
    `attention.py`, which the verdicts reach through `tables.py`."""
    from adaptstudy.reporting.across.fusion import attention

    fusion = CHAPTERS.get("fusion")
    before = protocol(fusion)["arms and units (the chapter's verdicts and labels)"]
    _edit_source(monkeypatch, attention._own_weight, "def _own_weight(", "def _own_weight(  ")
    assert protocol(fusion)["arms and units (the chapter's verdicts and labels)"] == before  # layout is no change
    _edit_source(monkeypatch, attention._own_weight, "100 * w[task]", "99 * w[task]")
    assert protocol(fusion)["arms and units (the chapter's verdicts and labels)"] != before


def _edit_source(monkeypatch, target, old: str, new: str) -> None:
    """Make `inspect.getsource` read `target` as if `old` were replaced by `new` in its file."""
    source = inspect.getsource(target)
    assert old in source, (getattr(target, "__name__", target), old)
    real = inspect.getsource
    monkeypatch.setattr(
        protocol_module.inspect, "getsource", lambda o: source.replace(old, new, 1) if o is target else real(o)
    )


def test_a_docstring_or_comment_is_no_change(monkeypatch):
    """Prose is not protocol: a module's docstrings and comments can be rewritten without an amendment."""
    source = inspect.getsource(choices)
    edited = source.replace('"""What the Houlsby', '"""Reworded. What the Houlsby', 1) + "\n# a comment\n"
    real = inspect.getsource
    monkeypatch.setattr(protocol_module.inspect, "getsource", lambda o: edited if o is choices else real(o))
    assert _houlsby_parity_unamended(CHAPTERS.get("houlsby")) == ""


def test_the_amend_command_records_a_protocol_change_with_the_parts_as_they_were(tmp_path):
    """A changed part becomes an amendment of every claim of the chapter: `protocol_was` keeps the part's earlier
    fingerprint, and the ledger then matches the protocol as it is."""
    from adaptstudy.claims.ledgers import amend

    source = PROJECT_ROOT / "src/adaptstudy/reporting/houlsby/claims.yaml"
    path = tmp_path / "claims.yaml"
    path.write_text(source.read_text())
    before = protocol(CHAPTERS.get("houlsby"))
    part = "selection and tie rules (houlsby/choices.py)"
    changed = {**before, part: "0123456789abcdef"}
    names = amend(path, load_declaration(source), "a test: a new tie rule", 5, protocol=changed)
    declared = load_declaration(path)
    assert sorted(names) == sorted(declared.claims)
    for claim in declared.claims.values():
        last = claim.ledger[-1]
        assert (last.event, last.was, last.protocol_was) == ("amended", {}, {part: before[part]})
        assert claim.unamended(changed) == "" and part in claim.unamended(before)
    assert amend(path, load_declaration(path), "a test: nothing more", 5, protocol=changed) == []


def test_the_scorecard_shows_top_k_s_verdict_under_the_earlier_selection_rule(committed_verdicts):
    """The selection amendment keeps top-k's verdict under the rule before it (inconclusive on the 238 records then)
    beside the one after; the amendments table credits the change to it, not to the regime amendment before it."""
    from adaptstudy.reporting.scorecard import by_design
    from adaptstudy.reporting.verdict_tables import amendments

    top_k = next(v for v in committed_verdicts[0] if v.claim.key == "houlsby.top-k")
    shown = by_design(top_k)
    assert "amended 2026-12-03: inconclusive, +2.4 [-0.6, +5.4], on the 238 records then" in shown
    assert shown.endswith(f"amended 2026-12-05: {top_k.verdict}") and top_k.verdict == "holds"
    table = amendments([top_k])
    selection = table[table["claims"].str.contains("inconclusive, +2.4", regex=False)]
    assert len(selection) == 2  # the regime amendment's after, the selection amendment's before
    assert "protocol: selection and tie rules" in selection["was"].iloc[1]
    regime = table[table["date"].str.startswith("2026-12-03")]
    assert "→ inconclusive, +2.4" in regime["claims"].iloc[0]
