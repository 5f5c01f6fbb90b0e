"""What an undecided claim would take to decide: the reported seeds per arm at which its design would detect, with
80% power at the 95% level, an effect as far from the rule's boundary as ours is, and what they would cost at the
pace of its runs; or that no number of seeds can, because the evaluation examples' sampling error alone (which more
seeds on the same examples do not shrink) is wider than that distance."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from scipy import stats

from adaptstudy.claims.evidence import LEVEL, Judgement, Rule
from adaptstudy.claims.verdicts import Verdict

POWER = 0.8
Z = stats.norm.ppf(0.5 + LEVEL / 2) + stats.norm.ppf(POWER)  # 2.80: the detectable effect is Z standard errors


@dataclass(frozen=True)
class Need:
    seeds_now: int
    seeds: int | None  # per arm; None: no number of seeds decides it on these evaluation examples
    distance: float  # from our effect to the boundary that would decide it, in the effect's units
    floor: float  # the smallest effect the examples' sampling error alone lets the design detect


def distance(rule: Rule, effect: float) -> float:
    """How far our effect lies from the boundary whose side decides the rule: the threshold (above, below), or the
    margin's edge nearest the effect (within, outside)."""
    if rule.kind in ("above", "below"):
        return abs(effect - rule.threshold)
    return abs(rule.threshold - abs(effect))


def need(j: Judgement, rule: Rule) -> Need | None:
    """The seeds per arm this comparison needs (see the module docstring), assuming the true effect is ours and the
    variances stay as measured: the seeds' part of the variance shrinks as 1/seeds, the examples' does not."""
    if math.isnan(j.se) or math.isnan(j.effect) or j.seeds < 2:
        return None
    d = distance(rule, j.effect)
    seed_var = max(j.se**2 - j.example_var, 0.0)
    floor = Z * math.sqrt(j.example_var)
    room = (d / Z) ** 2 - j.example_var
    if room <= 0 or d == 0:
        return Need(j.seeds, None, d, floor)
    return Need(j.seeds, max(j.seeds, math.ceil(j.seeds * seed_var / room)), d, floor)


@dataclass(frozen=True)
class Deciding:
    """What would decide an inconclusive claim: `seeds` reported seeds per arm (None: no number of seeds on these
    evaluation examples), against `now`; `stuck`, the comparison and need that no seeds decide (where one is)."""

    seeds: int | None
    now: int
    stuck: tuple[str, Need] | None = None


def deciding(v: Verdict) -> Deciding | None:
    """For an inconclusive verdict whose comparisons' needs are all known, what would decide it; else None."""
    if v.verdict != "inconclusive":
        return None
    open_ = [(n, need(j, v.design.decision)) for n, j in zip(v.names, v.judgements) if j.verdict == "inconclusive"]
    if any(n is None for _, n in open_) or not open_:
        return None
    now = min(n.seeds_now for _, n in open_)
    stuck = [(name, n) for name, n in open_ if n.seeds is None]
    if stuck:
        return Deciding(None, now, stuck[0])
    return Deciding(max(n.seeds for _, n in open_), now)


def what_it_takes(v: Verdict, cpu_hours: float | None = None, machine: str | None = None) -> str:
    """For an inconclusive verdict: 'needs about 9 seeds per arm (now 3; about 4.1 CPU-hours more at its runs'
    pace)', or why seeds cannot decide it; '' for any other verdict (a not-testable one says what it lacks)."""
    d = deciding(v)
    if d is None:
        return ""
    if d.stuck:
        name, n = d.stuck
        where = f" ({name})" if name else ""
        return (
            f"more seeds would not{where}: the evaluation examples' sampling error alone puts the smallest "
            f"detectable effect at {n.floor:.1f}, beyond our effect's distance from the rule's boundary "
            f"({n.distance:.1f}); it needs more evaluation examples, or a larger effect"
        )
    cost = ""
    if cpu_hours and d.now:
        on = f" ({machine})" if machine else ""
        cost = f"; about {cpu_hours * (d.seeds - d.now) / d.now:.1f} CPU-hours more at its runs' pace{on}"
    return f"needs about {d.seeds} seeds per arm (now {d.now}{cost}), if the true effect is ours"


_GATE = re.compile(r"judged only where (\S+) holds \(([^()]*) here\)")
_SEEDS = re.compile(r"a reading only: deciding it takes (\d+) fresh seeds per arm")


def _gate(match: re.Match) -> str:
    state = match.group(2)
    if state == "does not hold":
        return f"waits on {match.group(1)}, which does not hold here"
    if state in ("inconclusive", "not testable"):
        return f"waits on {match.group(1)}, itself undecided"
    return f"waits on {match.group(1)}, not judged here"


def plainly(reason: str) -> str:
    """A reason said in plain words for a reader: 'judged only where dsp.dapt holds (inconclusive here)' reads
    'waits on dsp.dapt, itself undecided'; the power plan's 'a reading only: deciding it takes 31 fresh seeds per
    arm' reads 'needs about 31 seeds per arm'. Anything else is returned as it is."""
    return _SEEDS.sub(r"needs about \1 seeds per arm", _GATE.sub(_gate, reason))
