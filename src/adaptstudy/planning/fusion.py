"""Stage 2 of the AdapterFusion half: the runs that report, from stage 1's records (`params/cpu/fusion_select.yaml`).

    python -m adaptstudy.planning.fusion > params/cpu/fusion_report.yaml

- Sources: those that learned on their selection split (`tables.source_gate`), named by the settings stage 1 trained
  them with (`source_settings`: one run id, so no fusion cell trains a source again). A target's own adapter is in
  its fusion whether it learned or not: Fusion w/ ST-A composes with the target's adapter by definition.
- Per target, seeds 1-3: head only and full fine-tuning at the rates stage 1 chose on the selection split; ST-A with
  its source's settings; Fusion w/ ST-A over the sources; the N = 1 control over the target's own adapter alone;
  Fusion w/ MT-A over the adapters of MT-A's run of the same seed (`mt_a_settings`: trained first, as the fusion
  cells' prerequisite; its record is the MT-A column); every fusion at `FUSION_RATE`, fixed before any run.

Every run keeps its target's stage-1 schedule (data caps, epochs, batch, the selection split).
"""

from __future__ import annotations

import sys

import pandas as pd

from adaptstudy.planning.stage_2 import shared_settings, stage_2_main
from adaptstudy.reporting.across.fusion.tables import (
    CHOSEN,
    FUSION_TARGETS,
    chosen_rates,
    protocol_sources,
    source_gate,
)
from adaptstudy.reporting.common import SELECTION_SEED
from adaptstudy.reporting.selection import choice_score
from adaptstudy.runs.finetune_config import FinetuneConfig, source_config

SEEDS = [1, 2, 3]
FUSION_RATE = 1e-4  # the first round's; the paper: 5e-5 for up to 10 epochs
MT_A_RATE = 1e-4  # full fine-tuning's rate on this backbone (the encoder trains); fixed, not chosen
NOT_SOURCE = {"task", "data_dir", "results_dir", "keep_adapter", "checkpoint_every_s"}
PER_RUN = NOT_SOURCE | {"seed", "learning_rate", "method", "adapter_size"}
SHOWN = ("backbone", "num_train_epochs", "max_seq_length", "batch_size")


def source_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Stage 1's source adapters: the runs that kept their adapter, scored on a selection split, of the selection
    seed."""
    return runs[protocol_sources(runs) & (runs["seed"] == SELECTION_SEED)]


def source_settings(sources: pd.DataFrame) -> dict:
    """The `source_settings` that name these source runs: the settings they share (those not at their defaults), and
    under `per_task` what differs per task. Checked: each source's run id comes out the same."""
    defaults = {k: f.default for k, f in FinetuneConfig.model_fields.items()}
    configs = {r["task"]: {k: v for k, v in r["config"].items() if k not in NOT_SOURCE} for r in sources["record"]}
    first = next(iter(configs.values()))
    shared = {k: v for k, v in first.items() if all(c.get(k) == v for c in configs.values())}
    settings = {k: v for k, v in shared.items() if v != defaults.get(k)}
    per_task = {
        task: {k: v for k, v in config.items() if k not in shared and v != defaults.get(k)}
        for task, config in configs.items()
    }
    per_task = {task: own for task, own in per_task.items() if own}
    if per_task:
        settings["per_task"] = per_task
    for record in sources["record"]:
        if source_config(record["task"], settings).run_id != record["run_id"]:
            raise ValueError(f"the source settings do not name the source run {record['run_id']} ({record['task']})")
    return settings


def report_grid(runs: pd.DataFrame, study: str = "fusion") -> dict:
    """The stage-2 grid (a sweep file's mapping) from stage 1's runs."""
    sources = source_runs(runs)
    if sources.empty:
        raise ValueError("no stage-1 source runs (keep_adapter, seed 0): run params/cpu/fusion_select.yaml first")
    stage_1 = runs[runs["seed"] == SELECTION_SEED]
    if choice_score(stage_1) != "selection_metric_value":
        raise ValueError(
            "some seed-0 runs were not scored on a selection split (the first round's): delete them "
            "(git rm the fusion records without selection_split) and run params/cpu/fusion_select.yaml"
        )
    settings = source_settings(sources)
    gate = source_gate(sources)
    learned = sorted(gate.loc[gate["learned"], "task"])
    chosen = chosen_rates(runs).set_index(["task", "method"])["learning_rate"]
    targets = [t for t in FUSION_TARGETS if t in set(sources["task"])]
    mt_a = {seed: mt_a_settings(runs, targets, learned, seed) for seed in SEEDS}
    blocks = []
    for target in targets:
        schedule = _target_schedule(runs, target)
        missing = [m for m in CHOSEN if (target, m) not in chosen]
        if missing:
            raise ValueError(f"stage 1 chose no rate for {target} {', '.join(missing)}: its seed-0 runs are missing")
        own = source_config(target, settings)
        fused = [target, *[t for t in learned if t != target]]
        methods = {
            **{m: {"learning_rate": [float(chosen[(target, m)])]} for m in CHOSEN},
            "pfeiffer": {"adapter_size": [own.adapter_size], "learning_rate": [own.learning_rate]},
            "houlsby": {"adapter_size": [own.adapter_size], "learning_rate": [own.learning_rate]},  # ST-A^Houlsby
            "fusion": {
                "learning_rate": [FUSION_RATE],
                "fusion_sources": [fused, [target]],  # Fusion w/ ST-A, and the N = 1 control
                "source_settings": [settings],
            },
        }
        blocks.append({"task": [target], **{k: [v] for k, v in schedule.items()}, "seed": SEEDS, "method": methods})
        for seed in SEEDS:  # Fusion w/ MT-A: over the adapters of MT-A's run of the same seed
            over = {"learning_rate": [FUSION_RATE], "fusion_sources": [fused], "fusion_from": [mt_a[seed]]}
            blocks.append(
                {"task": [target], **{k: [v] for k, v in schedule.items()}, "seed": [seed], "method": {"fusion": over}}
            )
    return {
        "study": study,
        "description": "stage 2: the reported seeds, fusion over the sources that learned (generated by "
        "adaptstudy.planning.fusion)",
        "fixed": {},
        "axes": blocks,
    }


def mt_a_settings(runs: pd.DataFrame, targets: list[str], learned: list[str], seed: int) -> dict:
    """MT-A's run (a `task_adapters` multi-task run on the targets and the sources that learned) as the first
    target's schedule has it: its training cap per task, epochs and batch, the dev sets reported and the selection
    splits validating, examples sampled in proportion (T = 1: each once an epoch, as the single-task runs see them),
    scored after the last epoch only (so its adapters are the ones fused). Its rate is fixed, not chosen."""
    schedule = _target_schedule(runs, targets[0])
    sources = source_runs(runs)
    return {
        "tasks": sorted(set(targets) | set(learned)),
        "method": "task_adapters",
        "backbone": schedule.get("backbone", "minilm-l6"),
        "adapter_size": int(sources["record"].iloc[0]["config"]["adapter_size"]),
        "learning_rate": MT_A_RATE,
        **{k: schedule[k] for k in ("max_train_examples", "max_eval_examples", "max_seq_length") if k in schedule},
        "num_train_epochs": schedule.get("num_train_epochs", 3.0),
        "eval_every_epochs": int(schedule.get("num_train_epochs", 3)),
        "batch_size": schedule.get("batch_size", 32),
        "temperature": 1.0,
        "selection_split": True,
        "seed": seed,
    }


def _target_schedule(runs: pd.DataFrame, target: str) -> dict:
    """The settings every stage-1 run of `target`'s columns shares (its data caps, epochs, batch, selection split)."""
    mine = runs[(runs["task"] == target) & (runs["seed"] == SELECTION_SEED) & runs["method"].isin(CHOSEN)]
    return shared_settings(mine["record"], PER_RUN, SHOWN)


def choices_comment(runs: pd.DataFrame) -> str:
    """The choices behind the grid, as YAML comment lines: the sources' gate, and each chosen rate."""
    gate = source_gate(source_runs(runs)).rename(columns={"selection score": "score"})
    lines = [
        f"source {r.task}: {r.metric} {r.score:.1f} against a constant's {r.constant:.1f} + {r.margin:.1f} -> "
        + ("fused" if r.learned else "left out (learned nothing)")
        for r in gate.itertuples()
    ]
    lines += [f"{r.task} {r.method}: {r.learning_rate:g} (of {r.grid})" for r in chosen_rates(runs).itertuples()]
    return "".join(f"#   {line}\n" for line in lines)


HEADER = (
    "# AdapterFusion under the protocol, stage 2: seeds 1-3 of every column at the rates stage 1\n"
    "# (fusion_select.yaml, seed 0) chose on the selection split. Generated; do not edit:\n"
    "#   python -m adaptstudy.planning.fusion > params/cpu/fusion_report.yaml\n"
    "# Sources (selection-split score) and choices:\n"
)


def main(argv: list[str] | None = None) -> int:
    return stage_2_main(
        argv, "fusion", lambda runs: runs, report_grid, HEADER, choices_comment, "params/cpu/fusion_select.yaml"
    )


if __name__ == "__main__":
    sys.exit(main())
