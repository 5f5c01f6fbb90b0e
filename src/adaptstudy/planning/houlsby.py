"""Stage 2 of the Houlsby chapter: the runs that report, at the rates (and epochs) stage 1 chose.

Stage 1 (`params/cpu/houlsby_select.yaml`) runs seed 0 over the learning-rate grids and scores each run on the
selection split. This module turns its records into the stage-2 grid with the chapter's own choice
(`tables.chosen_learning_rates`), so the runs the chapter reports are at the rates it says were chosen:

    python -m adaptstudy.planning.houlsby > params/cpu/houlsby_report.yaml

- Table 1: full fine-tuning and size-64 adapters, seeds 1-5 (size 64 also evaluates the layer ablation, which
  removes adapters from the trained model and so costs no training); sizes 8 and 256, seeds 1-3 (one of 8/64/256
  is the task's best size, so it has at least 3). A choice the extended selection moved (20 epochs, or an extended
  rate) reports seeds 1-3 (`choices.MOVED_SEEDS`, the budget's cut); a choice that stands keeps its records.
- Trade-off: top-k fine-tuning and layer-norm-only, each at its own chosen rate, seeds 1-3, where stage 1 ran them.
- Initialisation scale and architecture variants: size 64 at its 3-epoch choice, seeds 1-3, on `ABLATION_TASKS`.

Every run keeps its task's stage-1 settings (data cap, batch, selection split), and the epochs its arm chose where
its task's stage 1 tried several (adapters: 3 or 20 for the parity arms, the extended selection;
`reporting.houlsby.choices`). The header states the cost against the extended selection's budget (declared in the
chapter's claims.yaml, `budgets`), and the planner refuses a grid that would exceed it.
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path

import pandas as pd
import yaml

from adaptstudy.common.paths import PROJECT_ROOT
from adaptstudy.models.methods import METHODS
from adaptstudy.planning.stage_2 import _PlainDumper, shared_settings, stage_2_main, unfinished
from adaptstudy.reporting.common import SELECTION_SEED, config_column, load_runs
from adaptstudy.reporting.houlsby.choices import (
    BASE_EPOCHS,
    EXTENDED,
    MOVED_SEEDS,
    SIZES,
    ablation_choices,
    chosen_learning_rates,
    extended_selection_runs,
    limits_hit,
    moved_choices,
    order_of,
    parity_labels,
    selection_grid,
    step_beyond,
)
from adaptstudy.reporting.houlsby.tables import TABLE1_TASKS, label_runs
from adaptstudy.runs.base import validate
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.runs.grid import Grid, expand
from adaptstudy.runs.records import paid_seconds, resolve_results_dir

TABLE1_SEEDS = [1, 2, 3, 4, 5]  # full fine-tuning and size 64
SEEDS = [1, 2, 3]  # the other sizes, the trade-off methods, the init scale and the variants
ABLATION_TASKS = ["cola", "mrpc"]  # the paper's ablations used MNLI (not offline) and CoLA
INIT_STDS = [1e-6, 1e-4, 1e-2, 1e-1, 1.0]  # the paper: stable up to 1e-2, degrading above
VARIANTS = list(typing.get_args(typing.get_args(FinetuneConfig.model_fields["adapter_variant"].annotation)[0]))
PER_RUN = {"task", "seed", "learning_rate", "method", "adapter_size", "top_k_layers", "data_dir", "results_dir"}
SHOWN = ("backbone", "num_train_epochs", "max_seq_length", "batch_size")  # written even where they are the defaults


def report_grid(runs: pd.DataFrame, study: str = "houlsby") -> dict:
    """The stage-2 grid (a sweep file's mapping) from the labelled runs of stage 1; its records go to `study`'s
    folder, beside stage 1's."""
    choices = chosen_learning_rates(runs, labels=None).set_index(["task", "label"])
    chosen, chosen_epochs = choices["learning_rate"], choices["epochs"]
    if chosen.empty:
        raise ValueError("no stage-1 runs (seed 0) to choose from: run params/cpu/houlsby_select.yaml first")
    settings = _task_settings(runs)
    fixed = {k: v for k, v in next(iter(settings.values())).items() if all(s.get(k) == v for s in settings.values())}
    tasks = [t for t in TABLE1_TASKS if t in settings]

    def block(task: str, seeds: list[int], methods: dict, **axes) -> dict:
        own = {k: [v] for k, v in settings[task].items() if k not in fixed}
        return {"task": [task], **own, "seed": seeds, **axes, "method": methods}

    def rate(task: str, label: str) -> dict:
        """The arm's chosen rate, and its chosen epochs where its task's stage 1 tried several."""
        if (task, label) not in chosen:
            raise ValueError(f"stage 1 chose no rate for {task} {label}: its seed-0 runs are missing")
        epochs = (
            {} if "num_train_epochs" in settings[task] else {"num_train_epochs": [float(chosen_epochs[(task, label)])]}
        )
        return {"learning_rate": [float(chosen[(task, label)])], **epochs}

    def _base(task: str) -> dict:
        return {} if "num_train_epochs" in settings[task] else {"num_train_epochs": [BASE_EPOCHS]}

    moved = moved_choices(runs)

    def seeds(task: str, label: str) -> list[int]:
        return MOVED_SEEDS if (task, label) in moved else TABLE1_SEEDS

    blocks = []
    for t in tasks:
        blocks.append(block(t, seeds(t, "full"), {"full": rate(t, "full")}))
        size64 = {"adapter_size": [64], **rate(t, "houlsby-64"), "layer_ablation": [True]}
        blocks.append(block(t, seeds(t, "houlsby-64"), {"houlsby": size64}))
    for size in (s for s in SIZES if s != 64):
        blocks += [block(t, SEEDS, {"houlsby": {"adapter_size": [size], **rate(t, f"houlsby-{size}")}}) for t in tasks]
    for task, label in chosen.index:
        method, _, k = label.partition("-")
        if method in ("top_k", "layernorm"):
            layers = {"top_k_layers": [int(k)]} if k else {}
            blocks.append(block(task, SEEDS, {method: {**rate(task, label), **layers}}))
    ablation = ablation_choices(runs).set_index(["task", "label"])["learning_rate"]
    size64 = {
        t: {"houlsby": {"adapter_size": [64], "learning_rate": [float(ablation[(t, "houlsby-64")])], **_base(t)}}
        for t in ABLATION_TASKS
    }
    blocks += [block(t, SEEDS, size64[t], adapter_init_std=INIT_STDS) for t in ABLATION_TASKS]
    blocks += [block(t, SEEDS, size64[t], adapter_variant=VARIANTS) for t in ABLATION_TASKS]
    grid = {
        "study": study,
        "description": "stage 2: the reported seeds at the rates stage 1 chose (generated by "
        "adaptstudy.planning.houlsby)",
        "fixed": fixed,
        "axes": blocks,
    }
    spent, todo_h, todo = budget(runs, grid)
    if spent + todo_h > EXTENDED.cpu_hours:
        raise ValueError(
            f"the grid breaks the extended selection's budget: {spent:.1f} h spent since {EXTENDED.since} and {todo} "
            f"cells without a record at about {todo_h:.1f} h, against {EXTENDED.cpu_hours:g} h; cut in the reverse of "
            "the plan's order (ablations, then top-k and layer norm, then the parity arms) and state the cut"
        )
    return grid


def budget(runs: pd.DataFrame, grid: dict) -> tuple[float, float, int]:
    """(hours the extended selection's selection runs have paid, hours the grid's cells will take that no selection
    run or record from before it covers, how many): each cell at the mean seconds (training and evaluation) of stage
    1's runs of its task, arm and epochs. Stage 2's cells count at that estimate even once their records land, so the
    planner's verdict on a grid does not change while it runs; the chapter's budget note gives what they paid."""
    paid = paid_seconds(runs, "train_runtime_s", False) + paid_seconds(runs, "eval_runtime_s", False)
    mine = extended_selection_runs(runs)
    stage_2 = mine & (runs["seed"] != SELECTION_SEED)
    done = set(runs.loc[~stage_2, "run_id"])
    todo = [c for c in (validate(FinetuneConfig, v) for v in expand(Grid(**grid))) if c.run_id not in done]
    stage_1 = selection_grid(runs.assign(_paid=paid), None)
    epochs = config_column(stage_1, "num_train_epochs", BASE_EPOCHS).fillna(BASE_EPOCHS).astype(float)
    per_run = stage_1.groupby([stage_1["task"], stage_1["label"], epochs])["_paid"].mean()
    estimate = sum(per_run.get((c.task, _label(c), float(c.num_train_epochs)), per_run.max()) for c in todo)
    return paid[mine & ~stage_2].sum() / 3600, estimate / 3600, len(todo)


def _label(config: FinetuneConfig) -> str:
    """A cell's arm as `label_runs` names its record's: houlsby-64, top_k-2, full."""
    number = config.adapter_size or config.top_k_layers
    return f"{config.method}-{number}" if number else config.method


def extension_grid(runs: pd.DataFrame, study: str = "houlsby") -> dict | None:
    """Stage 1's next edge extensions (the extended selection), or None when every parity arm's choice is interior or
    at its limit:
    for each parity arm (full, size 64, the task's best size) whose chosen rate is the largest or smallest tried at its
    chosen epochs, one rate a step beyond it (`RATE_STEPS`), at those epochs, seed 0, on the selection split, in
    `EXTEND_ORDER`. The other arms' edge choices stay where they are (the budget goes to the parity arms first;
    `choices.not_extended` names them). Rerun stage 1 with it and ask again until none is left; `choices.limits_hit`
    names the choices a limit stopped."""
    chosen = chosen_learning_rates(runs, labels=None)
    settings = _task_settings(runs)
    parity = parity_labels(runs)
    blocks = []
    for row in sorted(chosen.itertuples(), key=lambda r: (order_of(r.label), r.task)):
        beyond = step_beyond(row) if (row.task, row.label) in parity else None
        if beyond is None:
            continue
        method, _, k = row.label.partition("-")
        arm = {"learning_rate": [beyond], "num_train_epochs": [row.epochs]}
        if k:  # the label's number: an adapter method's size, else top-k's layers
            arm |= {"adapter_size" if METHODS.get(method).uses_adapter_size else "top_k_layers": [int(k)]}
        own = {key: [v] for key, v in settings[row.task].items() if key != "num_train_epochs"}
        blocks.append({"task": [row.task], **own, "seed": [0], "selection_split": [True], "method": {method: arm}})
    if not blocks:
        return None
    return {
        "study": study,
        "description": "stage 1's edge extensions (generated by adaptstudy.planning.houlsby --extend)",
        "axes": blocks,
    }


def choices_comment(runs: pd.DataFrame) -> str:
    """The choices behind the grid, as YAML comment lines: per task and label, each rate's score and the pick."""
    chosen = chosen_learning_rates(runs, labels=None)
    lines = [f"{r.task} {r.label}: {r.learning_rate:g} (of {r.grid})" for r in chosen.itertuples()]
    return "".join(f"#   {line}\n" for line in lines)


def choices_and_budget(runs: pd.DataFrame) -> str:
    """`choices_comment`, then the stage-2 grid's cost against the extended selection's budget, as YAML comments."""
    return choices_comment(runs) + _budget_comment(*budget(runs, report_grid(runs)))


def _budget_comment(spent: float, todo_h: float, todo: int) -> str:
    return (
        f"# Budget: {EXTENDED.cpu_hours:g} CPU-hours from {EXTENDED.since}; its selection runs paid {spent:.1f} h; "
        f"the {todo} cells below\n#   that it adds about {todo_h:.1f} h (stage 1's mean seconds per run of the same "
        f"task, arm and epochs): {spent + todo_h:.1f} h in all.\n"
    )


def _task_settings(runs: pd.DataFrame) -> dict[str, dict]:
    """Per task, the settings every one of its stage-1 runs shares (what stays fixed across its grid), where they
    differ from the defaults or are among `SHOWN`."""
    return {
        task: shared_settings(group["record"], PER_RUN, SHOWN)
        for task, group in selection_grid(runs, labels=None).groupby("task")
    }


HEADER = (
    "# Houlsby et al. 2019 on the whole training sets, stage 2: the reported seeds at the rates\n"
    "# stage 1 (houlsby_select.yaml, seed 0) chose on the selection split. Generated; do not edit:\n"
    "#   python -m adaptstudy.planning.houlsby > params/cpu/houlsby_report.yaml\n"
    "# Choices (selection-split score per rate):\n"
)


EXTEND_GRID = "params/cpu/houlsby_extend.yaml"
EXTEND_HEADER = (
    "# Houlsby et al. 2019, the extended selection's stage 1 edge extensions: for every parity arm's choice\n"
    "# (full, size 64, the task's best size) at an end of its rates, one rate a step beyond, at the chosen epochs,\n"
    "# seed 0, on the selection split; the other arms' edge choices are not extended (the budget goes to the parity\n"
    "# arms first).\n"
    "# Generated; do not edit: after each sweep of it, rerun\n"
    "#   python -m adaptstudy.planning.houlsby --extend > /tmp/extend.yaml && mv /tmp/extend.yaml "
    f"{EXTEND_GRID}\n"
    "# until it says (exit 1) every parity arm's choice is interior or at its limit; this file then keeps the last\n"
    "# round, and the stage-2 planner refuses while a cell of it has no record.\n"
)


def main(argv: list[str] | None = None) -> int:
    """`python -m adaptstudy.planning.houlsby [RESULTS_DIR]`: the stage-2 grid; with `--extend`, stage 1's
    next edge extensions instead (exit 1 and the limits hit when there are none left)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--extend" in argv:
        argv.remove("--extend")
        folder = Path(resolve_results_dir(argv[0] if argv else None, "houlsby"))
        missing = unfinished(PROJECT_ROOT / "params/cpu/houlsby_select.yaml", folder)
        if missing:
            print(
                f"error: stage 1 has not finished ({len(missing)} cells without a record): run it first",
                file=sys.stderr,
            )
            return 2
        runs = label_runs(load_runs(folder))
        grid = extension_grid(runs, study=folder.name)
        if grid is None:
            print(
                "every parity arm's choice is interior or at its limit:",
                "; ".join(limits_hit(runs)) or "none hit",
                file=sys.stderr,
            )
            return 1
        spent, todo_h, todo = budget(runs, grid)
        if spent + todo_h > EXTENDED.cpu_hours:
            print(
                f"error: the extensions break the extended selection's budget: {spent:.1f} h spent and {todo} cells at "
                f"about {todo_h:.1f} h, against {EXTENDED.cpu_hours:g} h; stop extending and say which choices stay on "
                "the edge",
                file=sys.stderr,
            )
            return 2
        print(EXTEND_HEADER + choices_comment(runs) + _budget_comment(spent, todo_h, todo))
        print(yaml.dump(grid, Dumper=_PlainDumper, sort_keys=False, default_flow_style=None, width=120), end="")
        return 0
    return stage_2_main(
        argv,
        "houlsby",
        label_runs,
        report_grid,
        HEADER,
        choices_and_budget,
        "params/cpu/houlsby_select.yaml",
        also=(EXTEND_GRID,),
    )


if __name__ == "__main__":
    sys.exit(main())
