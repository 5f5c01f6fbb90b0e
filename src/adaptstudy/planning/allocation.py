"""Which exploratory claims the confirmatory runs confirm, chosen by a rule written before they run.

The rule, applied to the committed records:

1. Candidates: every claim whose verdict is exploratory (a run it rests on predates its design) and could be
   confirmed by fresh seeds of the cells it rests on; a claim that is not testable for a reason seeds do not fix
   ("not run"), and the Houlsby chapter's claims (whose confirmatory runs are the stage 2 of its new selection,
   the extended selection), are left out, each with its reason.
2. Cost: a claim rests on cells (a run's settings but its seed). A cell's fresh run costs the median seconds its
   reported runs paid (training and evaluation, prerequisites trained again included); it gets 5 fresh seeds where
   that median is under 2 minutes, else 3. The prerequisites its runs need and a fresh machine lacks (a pretraining
   artifact, a source adapter) are paid once, at their records' seconds.
3. Order: cheapest decision first. Repeatedly take the candidate whose cells not yet allocated cost least; stop at
   the first that would exceed the budget (10 CPU-hours on an AVX512-BF16 machine), and name what it leaves out.

The fresh seeds follow the highest seed each study used; the DSP chapter's fresh runs evaluate the whole split (its
500-example cap dominated its intervals, and evaluation is cheap beside training), which the cost counts at the
split's size.

A later wave (`--claims`, `--longest-run-min`) applies the same rule to the claims it names, leaving out any whose
runs take longer than it allows (claims declared after the first plan, confirmed where a run costs under 5
minutes); it writes its plan to a folder of its own under params/cpu/confirm/, with its rule beside it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd
import yaml

from adaptstudy.claims.verdicts import Verdict
from adaptstudy.data import load_task, resolve_task
from adaptstudy.reporting.confirmation import BUDGET_H, RULE_FILE, STUDIES, rule
from adaptstudy.reporting.scorecard import chapter_runs, chapter_verdicts, status
from adaptstudy.runs.grid import CONFIGS, grid_configs
from adaptstudy.runs.records import read_records
from adaptstudy.training.runner import prerequisites

SHORT_RUN_S = 120.0  # a run under 2 minutes gets 5 fresh seeds, else 3
NOT_ALLOCATED_HERE = {
    "houlsby": "left to the stage 2 of the chapter's new selection (the extended selection), not here"
}
WHOLE_SPLIT = {"dsp"}  # chapters whose fresh runs evaluate the whole split, not the capped 500
PER_RUN = ("seed", "results_dir", "data_dir")


@dataclass(frozen=True)
class PlanCell:
    """A run's settings but its seed: what fresh seeds repeat."""

    study: str
    kind: str
    settings: str  # canonical JSON of the config without PER_RUN

    @staticmethod
    def of(study: str, record: dict) -> PlanCell:
        config = {k: v for k, v in record["config"].items() if k not in PER_RUN}
        kind = "multitask" if "tasks" in config else "finetune"
        return PlanCell(study, kind, json.dumps(config, sort_keys=True))

    def with_seed(self, seed: int) -> dict:
        """The fresh run's settings: the cell's with `seed` (and, for fusion over MT-A, MT-A's run of that seed)."""
        config = {**json.loads(self.settings), "seed": seed}
        if isinstance(config.get("fusion_from"), dict):
            config["fusion_from"] = {**config["fusion_from"], "seed": seed}
        return config

    def config(self, seed: int) -> dict:
        """`with_seed`, scored on the whole evaluation split where the chapter reports on it."""
        config = self.with_seed(seed)
        if self.study in {STUDIES[c] for c in WHOLE_SPLIT}:
            config["max_eval_examples"] = None
        return config


def chapter_records(root: Path) -> dict[str, tuple[str, dict]]:
    """run_id -> (study, record) for every ok record of the chapters' studies."""
    return {r["run_id"]: (s, r) for s in STUDIES.values() for r in read_records(root / s)}


def record_seconds(record: dict) -> float:
    """The seconds a record paid: its training and evaluation, and every earlier training of the run it lists under
    `retrained`."""
    own = (record.get("train_runtime_s") or 0.0) + (record.get("eval_runtime_s") or 0.0)
    return own + sum(
        (r.get("train_runtime_s") or 0.0) + (r.get("eval_runtime_s") or 0.0) for r in record.get("retrained", [])
    )


def _eval_scale(study: str, record: dict, data_dir: str | None) -> float:
    """How many times more evaluation a whole-split run does than `record` did (1 outside `WHOLE_SPLIT`)."""
    if study not in {STUDIES[c] for c in WHOLE_SPLIT} or not record.get("eval_examples"):
        return 1.0
    return _split_size(record["task"], record.get("eval_split") or "validation", data_dir) / record["eval_examples"]


@lru_cache
def _split_size(task: str, split: str, data_dir: str | None) -> int:
    return len(load_task(resolve_task(task), data_dir=data_dir)[split])


def prerequisite_costs(records: dict[str, tuple[str, dict]], config) -> dict[str, float]:
    """The prerequisites a fresh run of `config` needs that are not cells themselves (pretraining, source adapters),
    theirs included: run id -> the seconds their kept records paid."""
    out = {}
    for needed in prerequisites(config):
        kept = needed.kept_record()
        if kept is not None and needed.config.run_id not in records:
            out[needed.config.run_id] = record_seconds(kept)
        out |= prerequisite_costs(records, needed.config)
    return out


def allocate(
    verdicts: Sequence[Verdict],
    root: str | Path,
    budget_h: float = BUDGET_H,
    data_dir: str | None = None,
    claims: Sequence[str] | None = None,
    longest_run_s: float | None = None,
) -> tuple[pd.DataFrame, dict[PlanCell, list[int]]]:
    """The rule above on `verdicts` (computed from the records under `root`; with `claims`, only those): a table, one
    row per claim in the order taken (or why it is left out), and the fresh seeds of each allocated cell. With
    `longest_run_s`, a claim one of whose cells' runs takes longer is left out."""
    root = Path(root)
    if claims is not None:
        unknown = sorted(set(claims) - {v.claim.key for v in verdicts})
        if unknown:
            raise ValueError(
                f"no judged claim {', '.join(unknown)}; judged: {', '.join(v.claim.key for v in verdicts)}"
            )
        verdicts = [v for v in verdicts if v.claim.key in set(claims)]
    records = chapter_records(root)
    finished = pd.Series({k: r["finished_at"] for k, (_, r) in records.items()})
    next_seed = {
        s: 1 + max((r["config"]["seed"] for st, r in records.values() if st == s), default=0) for s in STUDIES.values()
    }
    runs_of: dict[PlanCell, list[dict]] = {}
    cells_of: dict[str, set[PlanCell]] = {}
    extra_of: dict[str, dict[str, float]] = {}
    rows, candidates = [], []
    for v in verdicts:
        chapter = v.claim.chapter
        state = status(v, finished)
        why = NOT_ALLOCATED_HERE.get(chapter) or (
            "confirmatory already"
            if state.startswith("confirmatory")
            else "no runs"
            if state == "–"
            else f"not testable ({v.reasons()}): fresh seeds of its cells would not change that"
            if v.verdict == "not testable" and "not run" in v.reason_kinds()
            else ""
        )
        if why:
            rows.append({"claim": v.claim.key, "taken": "no", "why": why})
            continue
        cells_of[v.claim.key] = set()
        for run_id in v.run_ids:
            study, record = records[run_id]
            cell = PlanCell.of(study, record)
            runs_of.setdefault(cell, {})[run_id] = record
            cells_of[v.claim.key].add(cell)
        candidates.append(v.claim.key)
    cost, needs = {}, {}
    for cell, runs in runs_of.items():
        scale = _eval_scale(cell.study, next(iter(runs.values())), data_dir)
        seconds = [record_seconds(r) + (scale - 1) * (r.get("eval_runtime_s") or 0.0) for r in runs.values()]
        per_run = pd.Series(seconds).median()
        cost[cell] = (per_run, 5 if per_run < SHORT_RUN_S else 3)
        settings = {**json.loads(cell.settings), "results_dir": str(root / cell.study)}
        needs[cell] = prerequisite_costs(records, CONFIGS[cell.kind].model_validate(settings))
    for key, cells in list(cells_of.items()):
        extra_of[key] = {rid: s for cell in cells for rid, s in needs[cell].items()}
        slowest = max((cost[c][0] for c in cells), default=0.0)
        if longest_run_s is not None and slowest > longest_run_s:
            why = f"a run takes {slowest / 60:.1f} minutes, over the {longest_run_s / 60:g} this wave allows"
            rows.append({"claim": key, "taken": "no", "why": why})
            candidates.remove(key)
    taken: dict[PlanCell, list[int]] = {}
    paid_extra: set[str] = set()
    spent = 0.0
    remaining = list(candidates)
    while remaining:

        def marginal(key: str) -> float:
            new = cells_of[key] - set(taken)
            extra = sum(s for rid, s in extra_of[key].items() if rid not in paid_extra)
            return (sum(cost[c][0] * cost[c][1] for c in new) + extra) / 3600

        key = min(remaining, key=lambda k: (marginal(k), k))
        hours = marginal(key)
        remaining.remove(key)
        if spent + hours > budget_h:
            rows.append(
                {
                    "claim": key,
                    "taken": "no",
                    "CPU-hours": round(hours, 2),
                    "why": f"over the budget: {spent:.1f} of {budget_h:g} CPU-hours spent before it",
                }
            )
            for rest in remaining:
                rows.append(
                    {
                        "claim": rest,
                        "taken": "no",
                        "CPU-hours": round(marginal(rest), 2),
                        "why": "over the budget (taken in order of cost; an earlier one did not fit)",
                    }
                )
            break
        spent += hours
        for cell in sorted(cells_of[key] - set(taken), key=lambda c: c.settings):
            seeds = cost[cell][1]
            taken[cell] = list(range(next_seed[cell.study], next_seed[cell.study] + seeds))
        paid_extra |= set(extra_of[key])
        rows.append(
            {
                "claim": key,
                "taken": "yes",
                "CPU-hours": round(hours, 2),
                "cumulative": round(spent, 2),
                "why": f"{len(cells_of[key])} cells, fresh seeds of the new ones",
            }
        )
    table = pd.DataFrame(rows, columns=["claim", "taken", "CPU-hours", "cumulative", "why"])
    return table, taken


def grids(
    taken: dict[PlanCell, list[int]],
    suffix: str = "_confirm",
    description: str = "confirmatory runs: fresh seeds of the cells the allocation took "
    "(generated by adaptstudy.planning.allocation)",
    config: Callable[[PlanCell, int], dict] = PlanCell.config,
) -> dict[str, dict]:
    """The sweep files of the taken cells, one per study and kind (`<study><suffix>[_multitask]`): a block per cell
    and seed, its settings from `config`."""
    out: dict[str, dict] = {}
    for cell, seeds in sorted(taken.items(), key=lambda item: (item[0].study, item[0].kind, item[0].settings)):
        name = f"{cell.study}{suffix}" + ("_multitask" if cell.kind == "multitask" else "")
        grid = out.setdefault(name, {"study": cell.study, "kind": cell.kind, "description": description, "axes": []})
        for seed in seeds:
            grid["axes"].append({k: [v] for k, v in config(cell, seed).items() if v is not None})
    return out


def write_run_ids(sweep: Path) -> Path:
    """Beside a plan's sweep file, its cells' run ids in the grid's order (`<name>.run_ids`): how the report counts
    the fresh runs that have landed without building a run config (it reads records only)."""
    _, _, configs = grid_configs(sweep, Path(sweep).parent / "unused")
    out = Path(sweep).with_suffix(".run_ids")
    out.write_text("".join(f"{c.run_id}\n" for c in configs), encoding="utf-8")
    return out


HEADER = """Confirmatory runs ({why}): fresh seeds of the cells the allocation took, written before any of them ran.
Generated by `python -m adaptstudy.planning.allocation results --write {folder}` (the rule is that module's
docstring; allocation.csv beside this file lists every claim, taken or not, with its cost and why). Do not edit:
regenerating after fresh runs land gives another plan, since claims they confirm leave the candidates."""


def main(argv: list[str] | None = None) -> int:
    """`python -m adaptstudy.planning.allocation [RESULTS_ROOT] [--write DIR]`: the allocation table on stdout;
    with --write, the sweep files of the cells it takes and their run ids."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("root", nargs="?", default="results")
    parser.add_argument("--budget", type=float, default=BUDGET_H, help="CPU-hours")
    parser.add_argument("--write", help="a folder for the generated sweep files")
    parser.add_argument("--claims", nargs="+", help="a later wave: only these claims (keys such as dsp.tapt)")
    parser.add_argument("--longest-run-min", type=float, help="a later wave: leave out claims whose runs take longer")
    parser.add_argument(
        "--why", default="the confirmation plan", help="what the wave is for, in the sweep files' header"
    )
    args = parser.parse_args(argv)
    verdicts, _ = chapter_verdicts(chapter_runs(args.root))
    longest = args.longest_run_min * 60 if args.longest_run_min else None
    try:
        table, taken = allocate(verdicts, args.root, args.budget, claims=args.claims, longest_run_s=longest)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(table.to_string(index=False))
    if args.write:
        folder = Path(args.write)
        folder.mkdir(parents=True, exist_ok=True)
        table.to_csv(folder / "allocation.csv", index=False)
        if args.claims:
            limit = f"; a claim whose runs take over {args.longest_run_min:g} minutes is left out" if longest else ""
            text = f"{rule(args.budget)}; applied to {args.why} ({', '.join(args.claims)}){limit}\n"
            (folder / RULE_FILE).write_text(text, encoding="utf-8")
        text = HEADER.format(why=args.why, folder=args.write)
        header = "".join(f"# {line}\n" if line else "#\n" for line in text.splitlines())
        for name, grid in grids(taken).items():
            text = header + yaml.safe_dump(grid, sort_keys=False, width=120, default_flow_style=None)
            (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
            write_run_ids(folder / f"{name}.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
