"""Claims are declared data with a ledger: every declaration matches its ledger's fingerprint (a change without an
amendment fails here), the ledger rebuilds each earlier design, and the amendments an audit named show both
verdicts."""

import re

import pytest
import yaml

import adaptstudy.reporting.scorecard  # noqa: F401  (imports every chapter, which registers its claims)
from adaptstudy.claims.catalog import CLAIMS
from adaptstudy.claims.catalog import DECLARATIONS as CHAPTER_FILES
from adaptstudy.claims.declarations import Declaration, Declared, load_declaration
from adaptstudy.claims.ledgers import amend
from adaptstudy.claims.protocol import protocol
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting.chapters import CHAPTERS
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.findings import findings_table
from adaptstudy.reporting.houlsby import claims as houlsby_claims
from adaptstudy.reporting.houlsby import tables as houlsby_tables
from adaptstudy.reporting.houlsby.choices import extended_selection_runs

DECLARATIONS = sorted((PROJECT_ROOT / "src" / "adaptstudy" / "reporting").rglob("claims.yaml"))


def test_every_chapter_declares_its_claims_in_one_file_and_every_claim_is_registered_from_one():
    assert len(DECLARATIONS) >= 5 and all((p.parent / "chapter.py").is_file() for p in DECLARATIONS)
    declared = sum(len(load_declaration(p).claims) for p in DECLARATIONS)
    assert declared == len(CLAIMS.names()) >= 30


@pytest.mark.parametrize("path", DECLARATIONS, ids=lambda p: p.parent.name)
def test_every_declaration_matches_its_ledger(path):
    """The fingerprint check: a claim's design or protocol (`reporting.protocol`: its grids, selection and tie
    rules, evaluation sets, arm filters, set-aside rule and interval) changed without an amendment entry fails here,
    naming the claim and what changed."""
    chapter = load_declaration(path)
    owner = [name for name, file in CHAPTER_FILES.items() if file.resolve() == path.resolve()]
    now = protocol(CHAPTERS.get(owner[0]))
    mismatched = {name: why for name, c in chapter.claims.items() if (why := c.unamended(now))}
    assert not mismatched, f"{path}: {mismatched}"
    for c in chapter.claims.values():
        dates = [e.date for e in c.ledger]
        assert dates == sorted(dates) and c.ledger[0].event == "declared"


def _parity() -> Declared:
    return load_declaration(PROJECT_ROOT / "src/adaptstudy/reporting/houlsby/claims.yaml").claims["parity"]


def test_a_threshold_changed_without_an_amendment_is_caught_and_an_amendment_entry_accounts_for_it():
    claim = _parity()
    values = claim.model_dump()
    values["rule"]["threshold"] = -2.0
    changed = Declared(**values)
    assert "a change to a declared claim is an amendment" in changed.unamended()
    amended = Declared(
        **{
            **values,
            "ledger": [
                *values["ledger"],
                {
                    "event": "amended",
                    "date": "2026-12-04T00:00:00Z",
                    "reason": "a test",
                    "records": 1,
                    "was": {"rule": claim.rule.model_dump()},
                    "fingerprint": changed.design.fingerprint(),
                },
            ],
        }
    )
    assert amended.unamended() == ""
    assert amended.design_at(len(amended.ledger) - 2) == claim.design


def test_an_amendment_without_a_reason_or_the_fields_it_changed_is_refused():
    values = _parity().model_dump()
    values["ledger"].append({"event": "amended", "date": "2026-12-04T00:00:00Z", "was": {}, "fingerprint": "0" * 16})
    with pytest.raises(ValueError, match="an amendment needs a reason"):
        Declared(**values)


def test_a_declaration_file_with_an_unknown_field_names_the_file(tmp_path):
    data = yaml.safe_load(DECLARATIONS[0].read_text())
    next(iter(data["claims"].values()))["threshold"] = 1.0
    bad = tmp_path / "claims.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=rf"{bad}: not a valid claim declaration"):
        load_declaration(bad)
    assert Declaration.model_validate(yaml.safe_load(DECLARATIONS[0].read_text()))


def test_earlier_amendments_show_the_verdict_under_each_design(committed_verdicts):
    """The amendments an audit named — fusion judged over the targets where both arms learned, few-shot over the
    grid's cells, Houlsby's ablation blocked by RTE — are in the ledgers, and each verdict under the design before it
    is the one the audit found."""
    verdicts = {v.claim.key: v for v in committed_verdicts[0]}
    history = {key: [verdict for _, verdict in v.history()] for key, v in verdicts.items()}
    reasons = {key: [e.reason[:40] for e in v.claim.declared.amendments] for key, v in verdicts.items()}
    assert "Judged over the targets where both arms " in reasons["fusion.beats-st-a"]
    assert history["fusion.beats-st-a"][0] == "not testable"
    before_grid = reasons["hyperformer.few-shot"].index("Judged over the grid's 7 (task, k) cells")
    assert history["hyperformer.few-shot"][before_grid] == "not testable"  # the paper's 10 cells, 3 never run
    # Houlsby's ablations on the records the audit judged: the extended selection's stage 1 (from 2026-12-04) has since
    # moved size 64's choice to 20 epochs, whose reported seeds stage 2 runs, and the ablation follows size 64's chosen
    # runs
    runs = houlsby_tables.label_runs(load_runs(PROJECT_ROOT / "results" / "houlsby"))
    audited = {v.claim.key: v for v in houlsby_claims.verdicts(runs[~extended_selection_runs(runs)])}
    for key in ("houlsby.ablation-one", "houlsby.ablation-all", "houlsby.ablation-lower"):
        assert "A layer ablation whose reported runs inc" in reasons[key]
        assert [verdict for _, verdict in audited[key].history()][:2] == ["does not hold", "not testable"], key
    # every claim amended on 2026-12-03 (the one regime) keeps its earlier verdicts beside the current one
    changes = {
        key: [e for e in v.claim.declared.ledger if e.event in ("declared", "amended")] for key, v in verdicts.items()
    }
    assert all(len(history[key]) == len(changes[key]) for key in verdicts)


def test_the_amend_command_records_an_edit_as_an_amendment(tmp_path):
    """Edit a threshold, run the amendment helper against the file as it was: the ledger accounts for the change,
    keeps the old rule in `was`, and the file keeps its header."""
    source = PROJECT_ROOT / "src/adaptstudy/reporting/houlsby/claims.yaml"
    path = tmp_path / "claims.yaml"
    path.write_text(source.read_text().replace("threshold: -1.0", "threshold: -2.0", 1))
    names = amend(path, load_declaration(source), "a test: a wider margin", records=7)
    assert names == ["parity"]
    parity = load_declaration(path).claims["parity"]
    assert parity.unamended() == "" and parity.rule.threshold == -2.0
    last = parity.ledger[-1]
    assert (last.event, last.records, last.was) == ("amended", 7, {"rule": {"kind": "above", "threshold": -1.0}})
    assert path.read_text().startswith("# The houlsby chapter's claims")


def test_the_amend_command_run_twice_before_a_commit_writes_its_entry_once(tmp_path):
    source = PROJECT_ROOT / "src/adaptstudy/reporting/houlsby/claims.yaml"
    path = tmp_path / "claims.yaml"
    path.write_text(source.read_text().replace("threshold: -1.0", "threshold: -2.0", 1))
    assert amend(path, load_declaration(source), "a test: a wider margin", records=7) == ["parity"]
    written = path.read_text()
    assert amend(path, load_declaration(source), "a test: run again", records=7) == []
    assert path.read_text() == written


def test_the_amend_command_refuses_bad_input_with_one_line_before_writing(tmp_path, capsys):
    """A missing declaration, an empty reason, a mistyped results folder and a ledger entry dated in the future
    each stop the command with one error naming the value, and the file is left as it was."""
    from adaptstudy.reporting.amend import main

    source = PROJECT_ROOT / "src/adaptstudy/reporting/houlsby/claims.yaml"
    path = tmp_path / "claims.yaml"
    path.write_text(source.read_text())
    results = str(PROJECT_ROOT / "results" / "houlsby")
    cases = {
        "no such declaration file": [str(tmp_path / "nope.yaml"), "--reason", "r", "--results-dir", results],
        "--reason is empty": [str(path), "--reason", "  ", "--results-dir", results, "--freeze"],
        "--results-dir .*resluts/houlsby: no such folder": [
            str(path),
            "--reason",
            "r",
            "--results-dir",
            "resluts/houlsby",
        ],
    }
    for message, argv in cases.items():
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert re.search(message, err) and len(err.strip().splitlines()) == 1, err
    future = source.read_text().replace("date: '2026-11-25", "date: '2099-11-25", 1)
    path.write_text(future)
    assert main([str(path), "--reason", "r", "--results-dir", results, "--freeze"]) == 2
    assert "dated in the future" in capsys.readouterr().err and path.read_text() == future


def test_the_amend_command_refuses_a_declared_claim_renamed_and_a_file_outside_git(tmp_path, capsys):
    import subprocess

    from adaptstudy.reporting.amend import main

    source = PROJECT_ROOT / "src/adaptstudy/reporting/houlsby/claims.yaml"
    path = tmp_path / "claims.yaml"
    path.write_text(source.read_text())
    results = str(PROJECT_ROOT / "results" / "houlsby")
    assert main([str(path), "--reason", "r", "--results-dir", results]) == 2
    assert "is in no git repository" in capsys.readouterr().err
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "claims.yaml"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "declared"], cwd=tmp_path, check=True)
    renamed = (
        source.read_text()
        .replace("\n  parity-64:\n", "\n  parity-sixty-four:\n")
        .replace("  - parity-64\n", "  - parity-sixty-four\n")
    )
    path.write_text(renamed)
    assert main([str(path), "--reason", "a rename", "--results-dir", results]) == 2
    err = capsys.readouterr().err
    assert "parity-64 declared at HEAD but gone now (renamed or deleted)" in err and len(err.strip().splitlines()) == 1
    assert path.read_text() == renamed


def test_the_amend_command_declares_a_claim_written_without_a_ledger(tmp_path):
    """A new claim (no ledger) gets the entry that declares it, dated and fingerprinted; a declared claim whose
    ledger was deleted is refused, naming it."""
    source = PROJECT_ROOT / "src/adaptstudy/reporting/houlsby/claims.yaml"
    path = tmp_path / "claims.yaml"
    new = (
        "  new-claim:\n    sentence: A new one\n    where: Table 9\n    published: none\n    effect: a − b\n"
        "    arms: [a, b]\n    units: [cola]\n    rule: {kind: above, threshold: 0.0}\n"
    )
    path.write_text(source.read_text().replace("\nfindings:\n", "\n" + new + "findings:\n"))
    assert amend(path, load_declaration(source), "a test: declared", records=3) == ["new-claim"]
    claim = load_declaration(path).claims["new-claim"]
    assert [(e.event, e.records) for e in claim.ledger] == [("declared", 3)] and claim.unamended() == ""
    stripped = yaml.safe_load(source.read_text())
    del stripped["claims"]["parity"]["ledger"]
    path.write_text(yaml.safe_dump(stripped, allow_unicode=True))
    with pytest.raises(ValueError, match="'parity' lost its ledger"):
        amend(path, load_declaration(source), "a test", records=3)


@pytest.mark.parametrize("chapter", sorted(CHAPTER_FILES))
def test_every_claim_answers_a_finding_of_its_sources(chapter):
    """The chapter's "what we test" table covers every declared claim, and each finding is tested or says why not."""
    declaration = load_declaration(CHAPTER_FILES[chapter])
    covered = {c for f in declaration.findings for c in f.claims}
    assert set(declaration.claims) <= covered, sorted(set(declaration.claims) - covered)
    table = findings_table(chapter)
    assert len(table) == len(declaration.findings)
    assert ((table["we test it as (verdict)"] != "–") ^ (table["not tested, because"] != "–")).all()


def test_a_finding_names_only_claims_of_its_file():
    with pytest.raises(ValueError, match="findings name \\['nope'\\]"):
        Declaration.model_validate(
            {
                "paper": "p",
                "claims": {},
                "findings": [{"source": "s", "finding": "f", "where": "w", "claims": ["nope"]}],
            }
        )


def test_a_claim_requires_only_a_declared_claim_and_is_not_testable_until_it_holds(committed_verdicts):
    """`requires` names a claim of the registry; where it does not hold, the verdict says which and how it stands."""
    from adaptstudy.claims.catalog import CLAIMS

    required = {k: CLAIMS.get(k).design.requires for k in CLAIMS.names() if CLAIMS.get(k).design.requires}
    assert required == {
        "dsp.adapter-dapt": "dsp.dapt",
        "dsp.adapter-tapt": "dsp.tapt",
        "dsp.adapter-dapt-tapt": "dsp.dapt",
    }
    assert set(required.values()) <= set(CLAIMS.names())
    judged = {v.claim.key: v for v in committed_verdicts[0]}
    for key, needed in required.items():
        gate = judged[needed].verdict
        if gate != "holds":
            assert judged[key].verdict == "not testable"
            assert f"judged only where {needed} holds ({gate} here)" in judged[key].reasons()


def _git_available() -> bool:
    import subprocess

    done = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=PROJECT_ROOT, capture_output=True)
    return done.returncode == 0


@pytest.mark.skipif(not _git_available(), reason="the ledger dates are checked against git history")
@pytest.mark.parametrize("path", DECLARATIONS, ids=lambda p: p.parent.name)
def test_every_ledger_entry_is_dated_between_the_commits_around_the_one_that_added_it(path):
    from adaptstudy.claims.ledger_history import misdated_entries

    assert misdated_entries(path) == []


def test_a_backdated_amendment_is_caught_naming_its_claim_and_commit(tmp_path):
    """An amendment written by hand and dated before the file's previous commit fails; the amend command's own
    date passes."""
    import subprocess
    from datetime import datetime, timezone

    from adaptstudy.claims.ledger_history import misdated_entries

    def git(*args, when="2026-12-05T01:00:00+00:00"):
        env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path,
            env=env,
            check=True,
            capture_output=True,
        )

    # the file as it stood before 2026-12-05 (the test's commits are dated that night)
    committed = yaml.safe_load((PROJECT_ROOT / "src/adaptstudy/reporting/houlsby/claims.yaml").read_text())
    for claim in committed["claims"].values():
        claim["ledger"] = [e for e in claim["ledger"] if str(e["date"]) < "2026-12-05"]
    source = tmp_path / "source.yaml"
    source.write_text(yaml.safe_dump(committed, allow_unicode=True, sort_keys=False))
    path = tmp_path / "claims.yaml"
    path.write_text(source.read_text())
    git("init", "-q")
    git("add", "claims.yaml")
    git("commit", "-qm", "declared")
    path.write_text(source.read_text().replace("threshold: -1.0", "threshold: -2.0", 1))
    amend(
        path,
        load_declaration(source),
        "a test: a wider margin",
        7,
        when=datetime(2026, 12, 5, 0, 30, tzinfo=timezone.utc),
    )
    git("commit", "-qam", "amended", when="2026-12-05T02:00:00+00:00")
    (wrong,) = misdated_entries(path)
    assert wrong.startswith("parity: amended 2026-12-05 00:30") and "after 2026-12-05 01:00" in wrong

    path.write_text(source.read_text().replace("threshold: -1.0", "threshold: -2.0", 1))
    amend(
        path, load_declaration(source), "a test: a wider margin", 7, when=datetime(2026, 12, 5, 3, tzinfo=timezone.utc)
    )
    assert misdated_entries(path) == []  # written now, not yet committed
    git("commit", "-qam", "amended, dated as written", when="2026-12-05T04:00:00+00:00")
    assert misdated_entries(path) == []


def test_every_claim_of_closeness_declares_its_margin_with_a_reason():
    """Closeness (within a margin, no worse than −m, at most +m) is decidable only against a declared margin: every
    such claim gives the reason for its margin, and those whose source gives a figure hold it as `smallest_effect`."""
    closeness = {key: CLAIMS.get(key).declared for key in CLAIMS.names() if CLAIMS.get(key).declared.closeness}
    assert {"houlsby.parity", "houlsby.parity-64", "houlsby.size", "houlsby.init-stable"} <= set(closeness)
    assert {"fusion.pfeiffer-on-par-houlsby", "peft.embeddings-near-optimal"} <= set(closeness)
    assert {"houlsby_base.parity-64", "houlsby_base.ablation-one", "houlsby_base.ablation-all"} <= set(closeness)
    assert {"houlsby_base.parity-64-glue", "houlsby_base.parity-64-l3"} <= set(closeness)
    assert len(closeness) == 19
    assert all(len(d.margin_reason) > 40 for d in closeness.values())
    figures = {key: d.smallest_effect for key, d in closeness.items() if d.smallest_effect is not None}
    assert figures == {
        "houlsby.parity": 0.4,
        "houlsby.parity-64": 0.8,
        "houlsby_base.parity-64": 0.8,
        "houlsby_base.parity-64-glue": 0.8,
        "houlsby_base.parity-64-l3": 0.8,
        "houlsby_base.ablation-one": 2.0,
        "houlsby.size": 0.5,
        "houlsby.ablation-one": 2.0,
        "fusion.pfeiffer-on-par-houlsby": 0.27,
    }
    raw = yaml.safe_load(CHAPTER_FILES["houlsby"].read_text())
    del raw["claims"]["parity"]["margin_reason"]
    with pytest.raises(ValueError, match="is a claim of closeness"):
        Declaration.model_validate(raw)


def test_a_budget_is_declared_data_and_its_dates_are_part_of_the_chapters_protocol():
    """The extended selection's days decide which Houlsby arms it moved: they are read from the declaration, and
    the ledgers keep their fingerprint, so another date is a protocol change the ledger test names."""
    from datetime import date

    import pytest
    from pydantic import ValidationError

    from adaptstudy.claims.budgets import Budget
    from adaptstudy.claims.protocol import fingerprint, protocol
    from adaptstudy.reporting.houlsby import choices
    from adaptstudy.reporting.houlsby.chapter import CHAPTER

    assert (choices.EXTENDED.since, choices.EXTENDED.until) == (date(2026, 12, 4), date(2026, 12, 5))
    part = "the extended selection's budget (claims.yaml budgets)"
    recorded = _as_the_ledger_wrote_it(part)
    assert protocol(CHAPTER)[part] == recorded
    later = choices.EXTENDED.model_copy(update={"until": date(2026, 12, 6)}).model_dump(mode="json")
    assert fingerprint((later,)) != recorded
    with pytest.raises(ValidationError, match="`until` must come after `since`"):
        Budget(cpu_hours=1, since=date(2026, 12, 5), until=date(2026, 12, 4), pays_for="?")


def _as_the_ledger_wrote_it(part: str) -> str:
    """The fingerprint of a Houlsby protocol part as its ledgers last wrote it down."""
    from adaptstudy.claims.catalog import CLAIMS

    return CLAIMS.get("houlsby.parity").declared.recorded_protocol[part]


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda t: t.replace("\nfindings:\n", "\n  parity:\n    sentence: twice\nfindings:\n", 1),
            "'parity' appears twice",
        ),
        (
            lambda t: t.replace("    - houlsby-64\n    - full\n", "    - full\n    - full\n", 1),
            "arms name 'full' twice",
        ),
        (lambda t: t.replace("threshold: -1.0", "threshold: -1.0e+12", 1), "rule above -1e\\+12: a metric's effect"),
        (lambda t: t.replace("threshold: -1.0", "threshold: .nan", 1), "rule above nan: the threshold is not a finite"),
    ],
    ids=["a claim named twice", "an arm named twice", "an absurd threshold", "no number"],
)
def test_a_declaration_that_would_judge_wrongly_is_one_error_naming_the_file_and_the_value(tmp_path, edit, message):
    source = PROJECT_ROOT / "src/adaptstudy/reporting/houlsby/claims.yaml"
    path = tmp_path / "claims.yaml"
    edited = edit(source.read_text())
    assert edited != source.read_text()
    path.write_text(edited)
    with pytest.raises(ValueError, match=message) as error:
        load_declaration(path)
    assert str(error.value).startswith(f"{path}: not a valid claim declaration")


def test_a_margin_of_zero_or_less_is_refused_and_a_direction_at_zero_is_not():
    from adaptstudy.claims.declarations import Design

    design = {"sentence": "s", "where": "w", "published": "–", "effect": "a − b", "arms": ["a", "b"], "units": ["cola"]}
    with pytest.raises(ValueError, match="rule within -5: a margin is a positive number of points, not -5"):
        Design(**design, rule={"kind": "within", "threshold": -5})
    with pytest.raises(ValueError, match="rule within 0"):
        Design(**design, rule={"kind": "within", "threshold": 0})
    assert Design(**design, rule={"kind": "outside", "threshold": 0}).rule.threshold == 0  # "depends on": two-sided
    assert Design(**design, rule={"kind": "above", "threshold": 0}).rule.kind == "above"
    assert Design(**design, quantity="measured", rule={"kind": "above", "threshold": 500}).rule.threshold == 500


def test_a_claim_the_code_judges_but_the_file_no_longer_declares_is_one_error_naming_the_file(tmp_path, monkeypatch):
    from adaptstudy.claims import catalog as claims
    from adaptstudy.claims.catalog import declare_chapter
    from adaptstudy.common.registry import Registry

    monkeypatch.setattr(claims, "CLAIMS", Registry("claim"))  # the project's registry stays as it is
    monkeypatch.setattr(claims, "DECLARATIONS", {})

    raw = yaml.safe_load((PROJECT_ROOT / "src/adaptstudy/reporting/houlsby_base/claims.yaml").read_text())
    raw["claims"] = {"parity-sixty-four": raw["claims"]["parity-64"]}  # renamed everywhere in the file
    raw["findings"] = []
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False))
    declared = declare_chapter(path, "a-renamed-chapter")
    with pytest.raises(ValueError, match=f"{path} declares no claim 'parity-64'.*it declares: parity-sixty-four"):
        declared["parity-64"]
