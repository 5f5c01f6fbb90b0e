"""Backfill what the report needs into records made before records kept it: the labels of the splits a run
was scored on (`labels`), and what its method trains (`method_description`).

    ADAPTSTUDY_DATA=../shared/data python scripts/backfill_labels.py results [--check]

Each record's labels are cut from the data mirror as its run cut them (the reported split as the report used to
rebuild it; the selection split from the run's own config), and checked before anything is written: a reported
split's examples must hash to the fingerprint its predictions were stored with (`examples_sha256`), and every split
must have the number of examples the record says it scored. A record that already has its fields is left as it is;
one that fails a check is named and left untouched, and the script exits 1. With `--check` nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import cache
from pathlib import Path

from adaptstudy.common.files import write_json_atomic
from adaptstudy.data.tasks import load_task, resolve_task
from adaptstudy.models.methods import METHODS
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.multitask_config import MultiTaskConfig
from adaptstudy.runs.predictions import examples_sha256, stored_labels
from adaptstudy.runs.records import load_record, record_paths
from adaptstudy.training.splits import finetune_splits, multitask_splits


@cache
def _reported(task: str, data_seed: int, resplit_train_share, max_eval_examples):
    """A single-task run's reported split, as `reporting.baselines` rebuilt it before records kept labels."""
    return load_task(task, None, None, data_seed, resplit_train_share, max_eval_examples)[resolve_task(task).eval_split]


SELECTION_DATA = ("task", "data_seed", "resplit_train_share", "max_eval_examples", "selection_split")


@cache
def _selection(settings: str):
    """A run's selection split, carved from its (uncapped) training set as the run carved it: the training cap is
    drawn after the carving, so it leaves the selection split as it is."""
    known = {k: v for k, v in json.loads(settings).items() if v is not None}
    return finetune_splits(FinetuneConfig(**known), cap=False)["selection"]


def _single_task(record: dict) -> dict:
    config = record["config"]
    spec = resolve_task(record["task"])
    reported = _reported(
        record["task"], config.get("data_seed", 0), config.get("resplit_train_share"), config.get("max_eval_examples")
    )
    stored = record.get("predictions")
    if stored and stored["examples_sha256"] != examples_sha256(reported):
        raise ValueError(f"its reported split does not hash to its predictions' fingerprint ({stored['split']})")
    if len(reported) != record["eval_examples"]:
        raise ValueError(f"{len(reported)} reported examples, the record says {record['eval_examples']}")
    labels = {record.get("eval_split") or spec.eval_split: stored_labels(reported["label"], spec.is_regression)}
    if record.get("selection_metrics"):
        selection = _selection(json.dumps({k: config.get(k) for k in SELECTION_DATA}, sort_keys=True))
        if len(selection) != record["selection_examples"]:
            raise ValueError(f"{len(selection)} selection examples, the record says {record['selection_examples']}")
        labels["selection"] = stored_labels(selection["label"], spec.is_regression)
    return labels


def _multitask(record: dict) -> dict:
    config = MultiTaskConfig.model_validate({**record["config"], "data_dir": None, "results_dir": None})
    splits = multitask_splits(config)
    labels = {}
    for task in record["tasks"]:
        for split in ("validation", "test"):
            examples = splits[task][split]
            if len(examples) != record["eval_examples"][task][split]:
                raise ValueError(f"{task} {split}: {len(examples)} examples, the record says a different number")
            labels[f"{task}/{split}"] = stored_labels(examples["label"], resolve_task(task).is_regression)
    return labels


def backfilled(record: dict) -> dict | None:
    """The record with `labels` and `method_description` added where missing; None when it needs neither (a
    pretraining record keeps no labels: it scores no task)."""
    added = {}
    if "labels" not in record and record.get("eval_examples"):
        added["labels"] = _multitask(record) if "tasks" in record else _single_task(record)
    if "method_description" not in record and record.get("method") in METHODS:
        added["method_description"] = METHODS.get(record["method"]).description
    return {**record, **added} if added else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--check", action="store_true", help="check every record, write none")
    args = parser.parse_args(argv)
    written = failed = 0
    for path in record_paths(args.root):
        record = load_record(path)
        if record["status"] != "ok":
            continue
        try:
            new = backfilled(record)
        except (ValueError, KeyError) as e:
            print(f"FAILED {path}: {e}", file=sys.stderr)
            failed += 1
            continue
        if new is not None:
            written += 1
            if not args.check:
                write_json_atomic(new, path)
    print(f"{written} record(s) {'to backfill' if args.check else 'backfilled'}, {failed} failed a check")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
