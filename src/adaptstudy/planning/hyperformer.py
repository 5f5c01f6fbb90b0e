"""Stages 1 and 2 of the Hyperformer half under the protocol, each generated from the records before it:

    python -m adaptstudy.planning.hyperformer select > params/cpu/hyperformer_select.yaml
    python -m adaptstudy.planning.hyperformer report > params/cpu/hyperformer_report.yaml

- `select` (from the search, `params/cpu/hyperformer_search.yaml`): seed 0 (never reported) on the search's schedule
  and with the recipe and number of epochs its decision rule picked (`search.search_table`; the first round's where
  no variant learned CoLA, which leaves the hypernetwork claims *not testable*): Hyperformer, Hyperformer++ and each
  ablation of Hyperformer++ at every rate of `RATES`, scored on validation (the half of dev the paper selects on).
- `report` (from stage 1): seeds 1-3 of every cell a claim reads. The hypernetwork rows and the ablations run at the
  rate their own stage-1 runs chose (the best validation mean among the rates that learned the most tasks);
  single-task and multi-task fine-tuning and adapters at the rates the Houlsby chapter chose on this backbone (fixed,
  not chosen here); the low-resource caps for Hyperformer++ and multi-task fine-tuning; few-shot transfer from stage
  1's chosen Hyperformer++ run against an adapter on the same k examples.
"""

from __future__ import annotations

import sys

import pandas as pd

from adaptstudy.planning.stage_2 import shared_settings, stage_2_main
from adaptstudy.reporting.across.hyperformer.search import KNOBS, search_table
from adaptstudy.reporting.across.hyperformer.tables import FEW_SHOT_GRID as FEW_SHOT
from adaptstudy.reporting.across.hyperformer.tables import GLUE5, at_chosen_rates, label_runs, rate_selection
from adaptstudy.reporting.common import SELECTION_SEED
from adaptstudy.runs.multitask_config import MultiTaskConfig

SEEDS = [1, 2, 3]
RATES = [3e-5, 1e-4, 3e-4]  # around the first round's choices (Hyperformer 3e-5, Hyperformer++ 1e-4)
TUNED = {  # label -> (method, the settings that make it)
    "hyperformer": ("hyperformer", {}),
    "hyperformer++": ("hyperformer++", {}),
    "no adapter blocks": ("layernorm", {}),
    "no conditional layer norm": ("hyperformer++", {"conditional_layer_norm": False}),
    "no task projector": ("hyperformer++", {"task_projector": False}),
}
FIXED = {"full": 1e-4, "houlsby": 1e-3}  # the Houlsby chapter's rates on this backbone
ADAPTER_SIZE = 24  # hidden 384 / 16, as the paper's reduction factor
LOW_CAPS = [100, 500]  # the paper's Figure 2 goes to 4,000; the larger sizes are cut for the budget
FEW_SHOT_RATE = 1e-3
WHERE = {"data_dir", "results_dir", "checkpoint_every_s"}
PER_RUN = WHERE | {"seed", "method", "learning_rate"}
RECIPE = {*KNOBS, "task_projector", "adapter_size"}  # what a method's own settings add to the shared schedule
EPOCHS = "num_train_epochs"  # the search's pick sets it for every method of the study, baselines included
DEFAULTS = {k: f.default for k, f in MultiTaskConfig.model_fields.items()}


def settings(config: dict, drop: set[str] = PER_RUN) -> dict:
    """A record's config as a grid carries it: the keys not in `drop` that differ from the defaults."""
    return shared_settings([{"config": config}], drop, config_class=MultiTaskConfig)


def _block(config: dict, method: str, rate: float | list[float], seeds: list[int]) -> dict:
    """One grid block: `config`'s settings, one method, its rate(s), the seeds."""
    rates = rate if isinstance(rate, list) else [rate]
    return {**{k: [v] for k, v in config.items()}, "seed": seeds, "method": {method: {"learning_rate": rates}}}


def search_pick(runs: pd.DataFrame) -> dict | None:
    """The search's pick by its rule (the recipe's knobs and the number of epochs, where not the defaults), or None
    where no hypernetwork run learned CoLA."""
    table = search_table(runs)
    chosen = table.index[table["chosen"]]
    if chosen.empty:
        return None
    config = runs["record"].iloc[chosen[0]]["config"]
    return {knob: config[knob] for knob in [*KNOBS, EPOCHS] if config.get(knob) != DEFAULTS[knob]}


def select_grid(runs: pd.DataFrame, study: str = "hyperformer") -> dict:
    """Stage 1 from the search's labelled runs: every tuned label at every rate, seed 0, the search's schedule and
    its pick's recipe."""
    hyper = runs[runs["label"].str.startswith("hyperformer")]
    if hyper.empty:
        raise ValueError("no search runs of the hypernetwork methods: run params/cpu/hyperformer_search.yaml first")
    pick = search_pick(runs) or {}
    schedule = settings(hyper["record"].iloc[0]["config"], PER_RUN | RECIPE | {EPOCHS})
    schedule |= {k: v for k, v in pick.items() if k not in RECIPE}
    recipe = {k: v for k, v in pick.items() if k in RECIPE}
    blocks = []
    for label, (method, own) in TUNED.items():
        if method == "layernorm":  # nothing is generated: the recipe has nothing to set
            knobs = {}
        elif label == "no conditional layer norm" and recipe.get("conditional_layer_norm") is False:
            continue  # the recipe already removed it: Hyperformer++ is this ablation
        else:
            knobs = {**recipe, **own}
        blocks.append(_block({**schedule, **knobs}, method, RATES, [SELECTION_SEED]))
    return {
        "study": study,
        "kind": "multitask",
        "description": "stage 1: the rates of the hypernetwork methods and their ablations, seed 0, with the "
        "search's recipe (generated by adaptstudy.planning.hyperformer select)",
        "fixed": {},
        "axes": blocks,
    }


def select_comment(runs: pd.DataFrame) -> str:
    recipe = search_pick(runs)
    if recipe is None:
        return (
            "#   No hypernetwork run learned CoLA: the first round's recipe, and the hypernetwork claims are\n"
            "#   *not testable* at this scale (the chapter shows the search).\n"
        )
    return f"#   The rule's pick: {', '.join(f'{k}={v}' for k, v in recipe.items()) or 'the first round recipe'}\n"


def _stage_1(runs: pd.DataFrame) -> pd.DataFrame:
    stage_1 = runs[(runs["seed"] == SELECTION_SEED) & runs["label"].isin(TUNED)]
    if stage_1["cap"].nunique() > 1:
        raise ValueError(
            f"seed-0 runs at several training caps ({sorted(stage_1['cap'].unique())}): stage 1 is one schedule; "
            "remove the first round's records (git rm) and rerun params/cpu/hyperformer_select.yaml"
        )
    return stage_1


def chosen_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Stage 1's run per tuned label at the rate it chose (`tables.at_chosen_rates`: the best validation mean among
    the rates that learned the most tasks)."""
    return at_chosen_rates(_stage_1(runs)).drop_duplicates("label")


def report_grid(runs: pd.DataFrame, study: str = "hyperformer") -> dict:
    """Stage 2 from stage 1's labelled runs: seeds 1-3 of the main table, the ablations, the low-resource caps and
    few-shot transfer."""
    chosen = chosen_runs(runs).set_index("label")
    missing = [label for label in TUNED if label not in chosen.index and label != "no conditional layer norm"]
    if missing:
        raise ValueError(f"stage 1 chose no rate for {', '.join(missing)}: its seed-0 runs are missing")
    configs = {label: settings(record["config"]) for label, record in chosen["record"].items()}
    rates = chosen["config.learning_rate"].to_dict()
    schedule = {k: v for k, v in configs["hyperformer++"].items() if k not in RECIPE} | {"tasks": list(GLUE5)}
    adapter = {"adapter_size": ADAPTER_SIZE}
    blocks = [
        _block({**schedule, "tasks": tasks, **(adapter if method == "houlsby" else {})}, method, rate, SEEDS)
        for tasks in [[t] for t in GLUE5] + [list(GLUE5)]
        for method, rate in FIXED.items()
    ]
    blocks += [_block(configs[label], TUNED[label][0], float(rates[label]), SEEDS) for label in TUNED if label in rates]
    for cap in LOW_CAPS:
        blocks.append(
            _block(
                {**configs["hyperformer++"], "max_train_examples": cap},
                "hyperformer++",
                float(rates["hyperformer++"]),
                SEEDS,
            )
        )
        blocks.append(_block({**schedule, "max_train_examples": cap}, "full", FIXED["full"], SEEDS))
    source = settings(chosen.loc["hyperformer++", "record"]["config"], WHERE)
    for task, sizes in FEW_SHOT.items():
        for k, (epochs, every) in sizes.items():
            few = {**schedule, "tasks": [task], "max_train_examples": k, "num_train_epochs": epochs}
            few["eval_every_epochs"] = every
            blocks.append(_block({**few, "transfer_from": source}, "hyperformer++", FEW_SHOT_RATE, SEEDS))
            blocks.append(_block({**few, **adapter}, "houlsby", FEW_SHOT_RATE, SEEDS))
    return {
        "study": study,
        "kind": "multitask",
        "description": "stage 2: seeds 1-3 at the rates stage 1 chose (generated by "
        "adaptstudy.planning.hyperformer report)",
        "fixed": {},
        "axes": blocks,
    }


def report_comment(runs: pd.DataFrame) -> str:
    table = rate_selection(_stage_1(runs))
    lines = []
    for label, group in table.groupby("method", sort=False):
        tried = "; ".join(f"{r:g}: {v:.1f}, {n} learned" for r, v, n in group.iloc[:, 1:4].itertuples(index=False))
        lines.append(f"#   {label}: {group.loc[group['chosen'], 'learning_rate'].iloc[0]:g} ({tried})\n")
    return "".join(lines)


HEADERS = {
    "select": "# Hyperformer under the protocol, stage 1: the rates of the hypernetwork methods and their\n"
    "# ablations on seed 0, with the recipe the search (hyperformer_search.yaml) picked. Generated; do not edit:\n"
    "#   python -m adaptstudy.planning.hyperformer select > params/cpu/hyperformer_select.yaml\n",
    "report": "# Hyperformer under the protocol, stage 2: seeds 1-3 at the rates stage 1\n"
    "# (hyperformer_select.yaml, seed 0) chose on validation: the best mean among the rates that learned the most\n"
    "# tasks (above the constant prediction by more than noise). Generated; do not edit:\n"
    "#   python -m adaptstudy.planning.hyperformer report > params/cpu/hyperformer_report.yaml\n"
    "# Choices (mean validation score and tasks learned per rate):\n",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in HEADERS:
        print(f"usage: plan {{{','.join(HEADERS)}}} [RESULTS_DIR] [--stage-1 GRID]", file=sys.stderr)
        return 2
    stage, rest = argv[0], argv[1:]
    if stage == "select":
        return stage_2_main(
            rest,
            "hyperformer_search",
            label_runs,
            lambda runs, study: select_grid(runs),
            HEADERS[stage],
            select_comment,
            "params/cpu/hyperformer_search.yaml",
        )
    return stage_2_main(
        rest,
        "hyperformer",
        label_runs,
        report_grid,
        HEADERS[stage],
        report_comment,
        "params/cpu/hyperformer_select.yaml",
    )


if __name__ == "__main__":
    sys.exit(main())
