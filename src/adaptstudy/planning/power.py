"""The confirmation plan by power, written before any fresh run: per claim, the fresh seeds per arm its design needs
to decide it, what they cost, and whether the budget buys them.

The rule, applied to the committed records and each claim's exploratory verdict:

1. The effect to detect: the source's, where the design gives it in our units (`published_effect`), else ours (the
   exploratory effect); the distance that decides is that effect's from the rule's boundary (the threshold, or the
   margin's edge nearest it).
2. Seeds: the fresh reported seeds per arm at which the design's smallest detectable effect (80% power at the 95%
   level: 2.80 standard errors) falls to that distance, with the seeds' variance as the exploratory seeds measured it
   (shrinking as 1/seeds) and the evaluation examples' (which more seeds on the same examples do not shrink); at
   least 3. None where the examples' part alone is wider: more seeds on these evaluation sets cannot decide it.
3. Cost: each cell a claim rests on (a run's settings but its seed; every cell of one task on one evaluation set, so
   an arm and its partner score the same examples: `claim_cells`) at the median seconds its committed runs paid; a
   cell several claims share is bought once, at the most seeds any of them needs; prerequisites a fresh machine lacks
   once.
4. Order: first every claim at 3 fresh seeds per arm, cheapest first, within the budget: a verdict on fresh seeds
   alone for each, which decides those whose design needs no more (a reading only for the others); then, with what
   is left, the further seeds that decide the others, cheapest decision first. A claim not testable for a reason
   seeds do not fix, and one whose design has no exploratory interval to plan from, are left out with the reason.

    python -m adaptstudy.planning.power results --write params/cpu/confirm/power

`--only KEY ...` plans those claims alone; `--precision fp32` has every bought run train in fp32 on every machine.

A later plan (`--after PLAN.csv`) takes only the claims the earlier plan did not buy, the headline claims first
(`--first KEY ...`: each source's claim a reader looks for first), each at 3 fresh seeds per arm at least, then the
others by rule 4. Its costs are the seconds the records paid on the kind of machine it runs on (`--machine`, by
default this one's: 'bf16 on AVX512', 'fp32 on AVX2'); a cell with no record on that kind is costed at its records'
median scaled by the kinds' ratio, measured on the cells that have records on both.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from adaptstudy.claims.catalog import CLAIMS
from adaptstudy.claims.evidence import Judgement
from adaptstudy.claims.verdicts import Verdict
from adaptstudy.claims.what_it_takes import Z, distance
from adaptstudy.common.files import write_json_atomic
from adaptstudy.planning.allocation import (
    PlanCell,
    chapter_records,
    grids,
    prerequisite_costs,
    record_seconds,
    write_run_ids,
)
from adaptstudy.reporting.costs import machine_label
from adaptstudy.reporting.power_plan import BUDGET_H, COSTED
from adaptstudy.reporting.scorecard import chapter_runs, chapter_verdicts
from adaptstudy.runs.grid import CONFIGS

MIN_SEEDS = 3  # fresh seeds per arm: a verdict on fresh seeds alone needs an interval over them


@dataclass
class ClaimPurchase:
    """What one claim's decision takes: the fresh seeds per arm (None: seeds cannot decide it), the distance and
    where it comes from, and the cells it rests on."""

    claim: str
    seeds: int | None
    distance: float
    target: str
    floor: float
    cells: set[PlanCell] = field(default_factory=set)


def seeds_needed(j: Judgement, d: float) -> tuple[int | None, float]:
    """(fresh seeds per arm, the examples' floor): the seeds at which Z·se falls to `d` (rule 2)."""
    seed_var = max(j.se**2 - j.example_var, 0.0) * j.seeds  # one seed's share, from the exploratory interval
    floor = Z * math.sqrt(j.example_var)
    room = (d / Z) ** 2 - j.example_var
    if d <= 0 or room <= 0:
        return None, floor
    return max(MIN_SEEDS, math.ceil(seed_var / room)), floor


def need_of(v: Verdict) -> ClaimPurchase | str:
    """The claim's need (rule 1-2), or why it has none to plan from."""
    if not v.run_ids:
        return "no runs when the plan was written: its own grids, run after its freeze, give its verdict"
    if v.verdict == "not testable":
        return f"not testable ({v.reasons()}): fresh seeds of its cells would not change that"
    judged = [j for j in v.judgements if not (math.isnan(j.se) or math.isnan(j.effect)) and j.seeds >= 2]
    if not judged:
        return "no exploratory interval to plan from"
    figure = v.design.published_effect
    target = "the source's effect" if figure is not None else "our exploratory effect"
    seeds, distances, floors = [], [], []
    for j in judged:
        d = distance(v.design.decision, figure if figure is not None else j.effect)
        n, floor = seeds_needed(j, d)
        seeds.append(n)
        distances.append(d)
        floors.append(floor)
    worst = None if any(n is None for n in seeds) else max(seeds)
    return ClaimPurchase(v.claim.key, worst, min(distances), target, max(floors))


CAP = "max_eval_examples"


def claim_cells(v: Verdict, records: dict) -> set[PlanCell]:
    """The cells a verdict rests on, every cell of one task on one evaluation set, so that an arm and its partner are
    scored on the same examples: the whole split where every cell of the task has runs on it, else the smallest cap
    any of them was scored on (a cell scored only on the whole split is bought at that cap: a cap keeps the split's
    first examples). `one_evaluation_set` refuses cells that would mix them."""
    groups: dict[str, dict] = {}  # a cell's settings but its cap -> {cap: the cell}
    for run_id in v.run_ids:
        study, record = records[run_id]
        cell = PlanCell.of(study, record)
        groups.setdefault(_uncapped(cell), {})[json.loads(cell.settings).get(CAP)] = cell
    chosen = set()
    for key, by_cap in groups.items():
        peers = [caps for other, caps in groups.items() if _task(other) == _task(key)]
        shared = set.intersection(*(set(caps) for caps in peers))
        cap = None if None in shared else min((c for caps in peers for c in caps if c is not None), default=None)
        chosen.add(by_cap[cap] if cap in by_cap else _at_cap(next(iter(by_cap.values())), cap))
    one_evaluation_set(v.claim.key, chosen)
    return chosen


def one_evaluation_set(claim: str, cells: set[PlanCell]) -> None:
    """Refuse, naming the claim and the task, cells of one task that would be scored on different evaluation sets
    (a fresh arm on the whole split beside its partner on a cap: their interval could not be widened by the
    examples' sampling error, and their scores would not compare)."""
    sets: dict[str, set] = {}
    for cell in cells:
        sets.setdefault(_task(_uncapped(cell)), set()).add(json.loads(cell.settings).get(CAP))
    mixed = {task: caps for task, caps in sets.items() if len(caps) > 1}
    if mixed:
        said = "; ".join(f"{task}: {sorted(caps, key=str)}" for task, caps in sorted(mixed.items()))
        raise ValueError(
            f"{claim}: its cells would be scored on different evaluation sets ({said}); valid: one per task"
        )


def _uncapped(cell: PlanCell) -> str:
    settings = json.loads(cell.settings)
    return json.dumps({k: x for k, x in settings.items() if k != CAP}, sort_keys=True)


def _task(uncapped: str) -> str:
    settings = json.loads(uncapped)
    return str(settings.get("task") or settings.get("tasks"))


def _at_cap(cell: PlanCell, cap: int | None) -> PlanCell:
    return PlanCell(cell.study, cell.kind, json.dumps({**json.loads(cell.settings), CAP: cap}, sort_keys=True))


def kind_ratio(records: dict, kind: str) -> float:
    """How many times the seconds of a run on `kind` are those of the same cell's runs elsewhere: the median, over
    the cells with records on both, of the ratio of their medians (1 where no cell has both)."""
    on, off = {}, {}
    for study, record in records.values():
        side = on if machine_label(record) == kind else off
        side.setdefault(_uncapped(PlanCell.of(study, record)), []).append(record_seconds(record))
    ratios = [pd.Series(on[c]).median() / pd.Series(off[c]).median() for c in on.keys() & off.keys()]
    return float(pd.Series(ratios).median()) if ratios else 1.0


def cell_seconds(runs: list[dict], kind: str | None, ratio: float) -> float:
    """A cell's seconds per run: the median of its records on `kind` where there are some, else of all its records
    scaled by `ratio` (`kind_ratio`); all its records' median where no kind is given."""
    mine = [r for r in runs if kind is not None and machine_label(r) == kind]
    if mine:
        return float(pd.Series([record_seconds(r) for r in mine]).median())
    return float(pd.Series([record_seconds(r) for r in runs]).median()) * (ratio if kind is not None else 1.0)


def plan(
    verdicts: Sequence[Verdict],
    root: str | Path,
    budget_h: float = BUDGET_H,
    first: Sequence[str] = (),
    skip: Sequence[str] = (),
    kind: str | None = None,
):
    """The rule above: a table with one row per claim (taken or not, seeds, cost, why) and each cell's fresh seeds;
    a later plan leaves out the claims in `skip` (an earlier plan bought them), buys those in `first` before the
    others, and costs runs on the machine `kind`."""
    root = Path(root)
    records = chapter_records(root)
    ratio = kind_ratio(records, kind) if kind is not None else 1.0
    verdicts = [v for v in verdicts if v.claim.key not in set(skip)]
    next_seed = {}
    for study, record in records.values():
        next_seed[study] = max(next_seed.get(study, 1), record["config"]["seed"] + 1)
    rows, needs = [], {}
    for v in verdicts:
        got = need_of(v)
        if isinstance(got, str):
            rows.append({"claim": v.claim.key, "taken": "no", "why": got})
            continue
        got.cells = claim_cells(v, records)
        needs[v.claim.key] = got
    per_run, extra = {}, {}
    for need in needs.values():
        for cell in need.cells:
            if cell not in per_run:  # a cell bought at another cap than its runs scored: their seconds
                runs = [r for s, r in records.values() if PlanCell.of(s, r) == cell] or [
                    r for s, r in records.values() if _uncapped(PlanCell.of(s, r)) == _uncapped(cell)
                ]
                per_run[cell] = cell_seconds(runs, kind, ratio)
                config = CONFIGS[cell.kind].model_validate({**json.loads(cell.settings), "results_dir": str(root)})
                extra[cell] = prerequisite_costs(records, config)
    bought: dict[PlanCell, int] = {}
    paid_extra: set[str] = set()
    spent = 0.0

    def cost(need: ClaimPurchase, seeds: int) -> float:
        more = sum(per_run[c] * max(0, seeds - bought.get(c, 0)) for c in need.cells)
        pre = sum(s for c in need.cells for rid, s in extra[c].items() if rid not in paid_extra)
        return (more + pre) / 3600

    def buy(need: ClaimPurchase, seeds: int) -> None:
        nonlocal spent
        spent += cost(need, seeds)
        for c in need.cells:
            bought[c] = max(bought.get(c, 0), seeds)
            paid_extra.update(extra[c])

    rows_of: dict[str, dict] = {}
    pool = list(needs.values())  # stage 1: every claim read at MIN_SEEDS, which decides those that need no more
    while pool:  # the headline claims first (`first`), then the others; each group cheapest first
        need = min(pool, key=lambda n: (n.claim not in set(first), cost(n, MIN_SEEDS), n.claim))
        pool.remove(need)
        hours = cost(need, MIN_SEEDS)
        if spent + hours > budget_h:
            rows_of[need.claim] = _row(need, MIN_SEEDS, hours) | {"taken": "no", "why": _over(spent, budget_h)}
            continue
        buy(need, MIN_SEEDS)
        rows_of[need.claim] = _row(need, MIN_SEEDS, hours) | {"taken": "yes", "cumulative": round(spent, 2)}
    pool = [n for n in needs.values() if rows_of[n.claim]["taken"] == "yes" and (n.seeds or 0) > MIN_SEEDS]
    while pool:  # stage 2: the further seeds that decide the others, cheapest decision first
        need = min(pool, key=lambda n: (cost(n, n.seeds), n.claim))
        pool.remove(need)
        hours = cost(need, need.seeds)
        if spent + hours > budget_h:
            continue
        buy(need, need.seeds)
        row = rows_of[need.claim]
        rows_of[need.claim] = _row(need, need.seeds, row["CPU-hours"] + hours) | {
            "taken": "yes",
            "cumulative": round(spent, 2),
        }
    rows += list(rows_of.values())
    table = pd.DataFrame(rows, columns=["claim", "taken", "seeds per arm", "CPU-hours", "cumulative", "why"])
    table.attrs["kind ratio"] = ratio  # what a run elsewhere was scaled by
    first = {cell.study: next_seed.get(cell.study, 1) for cell in bought}
    taken = {cell: list(range(first[cell.study], first[cell.study] + seeds)) for cell, seeds in bought.items()}
    return table, taken


def _row(need: ClaimPurchase, seeds: int, hours: float) -> dict:
    """A claim's row: the seeds bought and what they do (decide it, or read it only, and why)."""
    if need.seeds is not None and seeds >= need.seeds:
        why = (
            f"decides it: {seeds} fresh seeds per arm detect {need.distance:.2f} ({need.target}'s distance from "
            "the rule's boundary) with 80% power"
        )
    elif need.seeds is None:
        why = (
            f"a reading only: the evaluation examples alone put the smallest detectable effect at {need.floor:.2f}, "
            f"beyond {need.distance:.2f} ({need.target}'s distance from the boundary): more seeds cannot decide it"
        )
    else:
        why = f"a reading only: deciding it takes {need.seeds} fresh seeds per arm, more than the budget leaves"
    return {"claim": need.claim, "seeds per arm": seeds, "CPU-hours": round(hours, 2), "why": why}


def _over(spent: float, budget_h: float) -> str:
    return f"not bought: even a reading would exceed the budget ({spent:.1f} of {budget_h:g} CPU-hours spent before)"


HEADER = """The confirmation plan by power ({budget:g} CPU-hours): fresh seeds of the cells the claims rest on, written
before any of them ran, after every claim was frozen. Generated by `python -m adaptstudy.planning.power results
--write {folder}` (the rule is that module's docstring; plan.csv beside this file lists every claim, taken or not,
with the seeds it needs, its cost and why). Do not edit."""


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", default="results")
    parser.add_argument("--budget", type=float, default=BUDGET_H, help="CPU-hours")
    parser.add_argument("--write", help="a folder for the plan and its sweep files")
    parser.add_argument("--after", type=Path, help="an earlier plan's plan.csv: leave out the claims it bought")
    parser.add_argument("--first", nargs="*", default=[], metavar="KEY", help="claims to buy before the others")
    parser.add_argument("--machine", help="the machine kind to cost runs on (default: this machine's)")
    parser.add_argument("--only", nargs="*", default=[], metavar="KEY", help="plan these claims alone")
    parser.add_argument(
        "--precision", choices=("fp32", "bf16"), help="the precision every bought run trains in, on every machine"
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.first + args.only) - set(CLAIMS.names()))  # checked before any record is read
    if unknown or (args.after and not args.after.is_file()):
        said = (
            f"--first or --only names {unknown}, not declared claims; valid: {', '.join(CLAIMS.names())}"
            if unknown
            else f"--after {args.after}: no such file"
        )
        print(f"error: {said}", file=sys.stderr)
        return 2
    bought = pd.read_csv(args.after).query("taken == 'yes'")["claim"].tolist() if args.after else []
    kind = args.machine or this_machine()
    verdicts, _ = chapter_verdicts(chapter_runs(args.root))
    if args.only:
        verdicts = [v for v in verdicts if v.claim.key in set(args.only)]
    table, taken = plan(verdicts, args.root, args.budget, first=args.first, skip=bought, kind=kind)
    if args.precision:
        taken = {at_precision(cell, args.precision): seeds for cell, seeds in taken.items()}
    print(f"costed on {kind}; runs elsewhere scaled by {table.attrs['kind ratio']:.2f}")
    print(table.to_string(index=False))
    if args.write:
        folder = Path(args.write)
        folder.mkdir(parents=True, exist_ok=True)
        table.to_csv(folder / "plan.csv", index=False)
        costed = {"kind": kind, "ratio": round(table.attrs["kind ratio"], 3), "budget_h": args.budget}
        costed |= {"machine": this_machine_description(), "written": pd.Timestamp.now(tz="UTC").isoformat()}
        write_json_atomic(costed, folder / COSTED)
        text = HEADER.format(budget=args.budget, folder=args.write)
        text += (
            f"\nCosted on {kind} (runs measured elsewhere scaled by {costed['ratio']:.2f}): {COSTED} beside this file."
        )
        header = "".join(f"# {line}\n" for line in text.splitlines())
        for name, grid in grids(taken, "_power", "confirmatory runs by power", PlanCell.with_seed).items():
            (folder / f"{name}.yaml").write_text(header + yaml.safe_dump(grid, sort_keys=False, width=120))
            write_run_ids(folder / f"{name}.yaml")
    return 0


def at_precision(cell: PlanCell, precision: str) -> PlanCell:
    """The cell trained in `precision` on every machine (`auto` would pick per machine): the arms of a claim's unit
    then never differ in precision, and a run can resume on any machine."""
    return PlanCell(
        cell.study, cell.kind, json.dumps({**json.loads(cell.settings), "precision": precision}, sort_keys=True)
    )


def this_machine_description() -> dict:
    from adaptstudy.training.device import machine_description

    return machine_description()


def this_machine() -> str:
    """This machine's kind as records name theirs (`machine_label`): the precision `auto` picks here and torch's CPU
    kernels."""
    from adaptstudy.training.device import machine_description

    machine = machine_description()
    return machine_label({"precision_used": machine["precision"], "machine": machine})


if __name__ == "__main__":
    sys.exit(main())
