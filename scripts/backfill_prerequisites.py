"""Backfill what each committed run started from into records made before records named it: `prerequisites`, each
prerequisite's run id and the study folder of its record (a pretraining, a transfer source, a fusion's source
adapters), as the runner now writes it (`training.runner.with_prerequisites`).

    python scripts/backfill_prerequisites.py results [--check]

The prerequisites are computed from each record's own settings (`training.runner.prerequisites`), its results folder
taken as the one the record is in; each must have a record there, or the record is named and left untouched and the
script exits 1. A record that already names its prerequisites is checked against them, not rewritten. With `--check`
nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import adaptstudy.models.methods  # noqa: F401  (registers the methods' facts, which run configs read)
from adaptstudy.common.files import write_json_atomic
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.multitask_config import MultiTaskConfig
from adaptstudy.runs.pretrain_config import PretrainConfig
from adaptstudy.runs.records import load_record, record_paths
from adaptstudy.training.runner import prerequisites

SETTINGS_OF_ANOTHER_RUN = ("init_from", "transfer_from", "fusion_sources", "fusion_from")


def needs(record: dict, folder: Path) -> list[dict]:
    """What the run of `record` started from, its results folder being `folder`."""
    settings = {k: v for k, v in record["config"].items() if v is not None}
    if not any(isinstance(settings.get(k), (dict, list)) for k in SETTINGS_OF_ANOTHER_RUN):
        return []
    kind = PretrainConfig if "corpus" in settings else MultiTaskConfig if "tasks" in settings else FinetuneConfig
    config = kind.model_validate({**settings, "results_dir": str(folder)})
    if config.run_id != record["run_id"]:
        raise ValueError(f"its settings give run id {config.run_id}, not its own")
    found = [{"run_id": n.config.run_id, "study": n.record_path().parent.name} for n in prerequisites(config)]
    missing = [n for n in found if not (folder.parent / n["study"] / f"{n['run_id']}.json").is_file()]
    if missing:
        raise ValueError(f"no record of its prerequisites {missing}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path)
    parser.add_argument("--check", action="store_true", help="write nothing")
    args = parser.parse_args(argv)
    failed = written = 0
    for path in record_paths(args.results):
        record = load_record(path)
        try:
            found = needs(record, path.parent)
        except Exception as error:  # noqa: BLE001 - every record is tried; each failure is named
            print(f"{path}: {error}", file=sys.stderr)
            failed += 1
            continue
        if "prerequisites" in record:
            if record["prerequisites"] != found:
                print(f"{path}: names {record['prerequisites']}, its settings give {found}", file=sys.stderr)
                failed += 1
            continue
        if found and not args.check:
            write_json_atomic({**record, "prerequisites": found}, path)
        written += bool(found)
    print(f"{written} records {'would name' if args.check else 'now name'} their prerequisites; {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
