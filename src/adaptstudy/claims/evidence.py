"""How a claim is judged: its effect with a 95% confidence interval, and one of four verdicts.

An effect compares two arms (say adapters and full fine-tuning) over units (tasks, or task × setting): the mean
over units of (mean of arm a over its reported seeds − mean of arm b), in points. Arm b may be a constant (a
published threshold, a baseline with no spread).

The interval is a Welch t-interval over seeds; where every run of the comparison stored its predictions, its
variance is widened by a paired bootstrap over evaluation examples (the same resampled examples for both arms and
every seed), so the interval also covers which examples were drawn for the reported split (conservatively: where
runs err on different examples, their example noise is already in the spread over seeds and is counted twice). A
percentile bootstrap over seeds alone is not used: its variance is (n − 1)/n of the sample's, so with 3 seeds its
"95%" interval is about as wide as a t-interval at 89%, and it never reaches beyond the seeds observed.

The bootstrap widens only an effect in a metric the stored predictions recompute (`Unit.metric`); an effect in a
measured quantity (seconds, an accuracy after an early epoch) has the interval over seeds alone.

A comparison is **not testable** when an arm has fewer than `MIN_SEEDS` reported seeds; otherwise the rule reads the
interval: **holds**, **does not hold**, or **inconclusive**. Runs that learned nothing are counted, not judged, here:
what a claim does with them is its declaration's (`claims`), one regime for every chapter.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from adaptstudy.claims.resampling import Resampled

VERDICTS = ("holds", "does not hold", "inconclusive", "not testable")
MIN_SEEDS = 3
LEVEL = 0.95
RESAMPLES = 1000


@dataclass(frozen=True)
class Rule:
    """A claim's decision rule on its effect. `above` t: holds when the interval lies above t, does not hold when it
    lies below. `below` t: the mirror. `within` m: holds when the interval lies inside ±m, does not hold when it lies
    wholly outside. `outside` m, its converse (a two-sided "depends on"): holds when the interval lies wholly outside
    ±m, does not hold when it lies inside (never, at m = 0: no interval proves an effect of exactly 0)."""

    kind: Literal["above", "below", "within", "outside"]
    threshold: float = 0.0

    def verdict(self, low: float, high: float) -> str:
        t = self.threshold
        if self.kind == "above":
            return "holds" if low > t else "does not hold" if high < t else "inconclusive"
        if self.kind == "below":
            return "holds" if high < t else "does not hold" if low > t else "inconclusive"
        inside, beyond = -t < low and high < t, low > t or high < -t
        if self.kind == "outside":
            return "holds" if beyond else "does not hold" if inside else "inconclusive"
        return "holds" if inside else "does not hold" if beyond else "inconclusive"

    def __str__(self) -> str:
        t = f"{self.threshold:+g}" if self.kind in ("above", "below") else f"±{self.threshold:g}"
        where = {"above": f"above {t}", "below": f"below {t}", "within": f"inside {t}", "outside": f"outside {t}"}
        where = where[self.kind]
        return f"holds if the 95% CI lies {where}"


@dataclass
class Arm:
    """The reported runs of one side of a comparison in one unit: their scores (one per seed), how many learned
    nothing, and, when every run stored them, their predictions and the examples' labels (in the split's order);
    `run_ids` name the runs."""

    scores: Sequence[float]
    learned_nothing: int = 0
    predictions: Sequence[np.ndarray] | None = None
    labels: np.ndarray | None = None
    run_ids: tuple[str, ...] = ()
    metric: str | None = None  # the metric `scores` are in, which the bootstrap recomputes from `predictions`
    name: str = ""  # what the arm is (a method's label), for the notes that name it
    set_aside: str = ""  # selection-stage evidence that this arm's chosen setting learned nothing, where there is
    precisions: tuple[str, ...] = ()  # each run's precision (its record's `precision_used`): a verdict names a mix
    out_of_order: tuple[str, ...] = ()  # runs resumed without their epoch's batch order, not rerun (flagged)
    rescored: bool = False  # `scores` are on the examples every run scored, some runs having scored more
    unpaired: str = ""  # why its runs' predictions cannot be paired, where they cannot

    def __post_init__(self):
        self.scores = np.asarray(self.scores, dtype=float)


@dataclass
class Unit:
    """One task (or task × setting) of a comparison: a weighted sum of arms (a − b; or a difference of differences,
    as a gain over a baseline against another's) plus a constant. A unit marked `against` is on the other side of a
    comparison between groups of units ("helps most on small targets": their mean gain − the large targets').
    `labels` and `metric` are given when every arm stored its predictions on these examples, for the bootstrap over
    examples; without `metric`, the arms' own, where they share one."""

    name: str
    terms: list[tuple[float, Arm]]
    offset: float = 0.0
    labels: np.ndarray | None = None
    metric: str | None = None
    measured: bool = False  # the effect is in a measured quantity (seconds): no bootstrap over examples
    against: bool = False  # subtracted: the effect is the mean over the other units − the mean over these

    def __post_init__(self):
        if self.metric is None:
            metrics = {arm.metric for arm in self.arms()}
            self.metric = metrics.pop() if len(metrics) == 1 else None

    def arms(self) -> list[Arm]:
        return [arm for _, arm in self.terms]

    def collapsed(self) -> int:
        """How many of the unit's runs learned nothing."""
        return int(sum(arm.learned_nothing for arm in self.arms()))

    def testable(self) -> tuple[str, str] | None:
        """Why the unit cannot be judged, as (reason, this unit's part of it), or None."""
        thin = min(len(arm.scores) for arm in self.arms())
        if thin < MIN_SEEDS:
            return f"fewer than {MIN_SEEDS} reported seeds", f"{self.name} ({thin})"
        return None

    def effect(self) -> float:
        if any(len(arm.scores) == 0 for arm in self.arms()):
            return np.nan
        return float(sum(w * arm.scores.mean() for w, arm in self.terms) + self.offset)

    def shared_labels(self) -> np.ndarray | None:
        """The labels the bootstrap resamples: given, or those every arm stored predictions on (else None)."""
        if self.labels is not None:
            return self.labels
        labels = [arm.labels for arm in self.arms()]
        if any(x is None for x in labels) or any(not np.array_equal(labels[0], x) for x in labels[1:]):
            return None
        return labels[0]

    def unpaired(self) -> str:
        """Why the bootstrap over examples cannot recompute this unit's effect ('' when it can)."""
        if self.measured:
            return "a measured quantity, not a metric of the predictions"
        if self.metric is None:
            return "its arms report different metrics"
        if missing := [arm for arm in self.arms() if arm.predictions is None]:
            return "; ".join(f"{a.name or 'an arm'}: {a.unpaired or 'its runs stored no predictions'}" for a in missing)
        if self.shared_labels() is None:
            return "its arms scored different examples"
        return ""

    def has_predictions(self) -> bool:
        """Whether the bootstrap over examples can recompute this unit's effect: a metric, shared labels, and every
        arm's predictions."""
        return not self.unpaired()


def contrast(name: str, a: Arm, b: Arm | float, *, labels: np.ndarray | None = None, metric: str | None = None) -> Unit:
    """The unit a − b (b an arm, or a constant such as a threshold or a baseline's score). `labels` and `metric` are
    keywords: a metric's name passed where the labels go once made the bootstrap resample a string."""
    if isinstance(b, Arm):
        return Unit(name, [(1.0, a), (-1.0, b)], labels=labels, metric=metric)
    return Unit(name, [(1.0, a)], offset=-float(b), labels=labels, metric=metric)


@dataclass
class Judgement:
    """A comparison judged: effect, interval, the fewest reported seeds of any arm, verdict, and how it was
    reached (`method`); `why` says what made it not testable; `se` and `df` give the interval's scale (for the
    smallest effect it could detect), `example_var` the part of se² that is the evaluation examples' sampling error
    (more seeds do not shrink it); `collapsed` names the units with runs that learned nothing ('rte (3 runs)')."""

    effect: float
    low: float
    high: float
    seeds: int
    verdict: str
    method: str
    reasons: dict[str, list[str]] = field(default_factory=dict)
    units: list[tuple[str, Judgement]] = field(default_factory=list)
    se: float = np.nan
    df: float = np.nan
    collapsed: list[str] = field(default_factory=list)
    example_var: float = 0.0

    def detectable(self, power: float = 0.8) -> float:
        """The smallest true effect (points) this design detects with `power` at the 95% level: (t₀.₉₇₅ + t_power)
        × the interval's standard error, on its degrees of freedom."""
        if np.isnan(self.se):
            return np.nan
        return float((stats.t.ppf(0.5 + LEVEL / 2, self.df) + stats.t.ppf(power, self.df)) * self.se)

    @property
    def why(self) -> str:
        return format_reasons(self.reasons)

    def rules_out(self) -> str:
        """What the interval excludes: 'below −1.3 and above +2.3' (a true effect there would fall outside it)."""
        if np.isnan(self.low) or np.isnan(self.high):
            return "–"
        return f"below {self.low:+.1f} and above {self.high:+.1f}"

    def interval(self) -> str:
        if np.isnan(self.effect):
            return "–"
        return (
            f"{self.effect:+.1f} [{self.low:+.1f}, {self.high:+.1f}]"
            if not np.isnan(self.low)
            else f"{self.effect:+.1f}"
        )


def coefficients(units: Sequence[Unit]) -> np.ndarray:
    """Each unit's weight in the effect: 1/n (the mean over units), or, where some units are `against`, 1/n for the
    others and −1/m for those (the difference of the two groups' means)."""
    against = np.array([u.against for u in units])
    if not against.any():
        return np.full(len(units), 1 / len(units))
    if against.all():
        return np.full(len(units), np.nan)  # no group to compare with
    return np.where(against, -1 / against.sum(), 1 / (~against).sum())


def judge(units: Sequence[Unit], rule: Rule, resamples: int = RESAMPLES, seed: int = 0) -> Judgement:
    """The effect of `units` (mean over units of a − b, or the difference of two groups' means), its 95% interval,
    and the rule's verdict; per-unit judgements ride along in `.units` for a chapter's detail."""
    if not units:
        return Judgement(np.nan, np.nan, np.nan, 0, "not testable", "–", {"no runs": []})
    c = coefficients(units)
    effect = float(np.dot(c, [u.effect() for u in units]))  # nan where an arm has no runs
    seeds = min(len(arm.scores) for u in units for arm in u.arms())
    reasons: dict[str, list[str]] = {}
    for u in units:
        if (why := u.testable()) is not None:
            reasons.setdefault(why[0], []).append(why[1])
    low, high, method, se, df, example_var = _interval(units, resamples, seed)
    if np.isnan(c).any():
        reasons.setdefault("no units to compare with", [])
    verdict = "not testable" if reasons else rule.verdict(low, high)
    collapsed = [_collapsed(u) for u in units if u.collapsed()]
    judgement = Judgement(
        effect, low, high, seeds, verdict, method, reasons, se=se, df=df, collapsed=collapsed, example_var=example_var
    )
    if len(units) > 1:
        judgement.units = [(u.name, judge([replace(u, against=False)], rule, resamples, seed)) for u in units]
    return judgement


def _collapsed(unit: Unit) -> str:
    """'cola (2 runs: hyperformer++)': how many of a unit's runs learned nothing, and which arms they are (where
    named)."""
    n = unit.collapsed()
    named = ", ".join(dict.fromkeys(a.name for a in unit.arms() if a.learned_nothing and a.name))
    return f"{unit.name} ({n} run{'s' if n > 1 else ''}{f': {named}' if named else ''})"


def format_reasons(reasons: dict[str, list[str]]) -> str:
    """'learned nothing: rte (2 runs); fewer than 3 reported seeds: cola (2), mrpc (2)'."""
    return "; ".join(f"{reason}: {', '.join(parts)}" if parts else reason for reason, parts in reasons.items())


def all_of(judgements: Sequence[Judgement]) -> str:
    """The verdict of a claim that needs every comparison (an intersection-union test: each at the 95% level):
    not testable if any is, does not hold if any does not, holds if all do, else inconclusive."""
    verdicts = [j.verdict for j in judgements]
    if not verdicts or "not testable" in verdicts:
        return "not testable"
    if "does not hold" in verdicts:
        return "does not hold"
    return "holds" if all(v == "holds" for v in verdicts) else "inconclusive"


def _interval(units: Sequence[Unit], resamples: int, seed: int) -> tuple[float, float, str, float, float, float]:
    """The 95% interval of the effect (see the module docstring), the name of the method, its standard error and
    degrees of freedom, and the examples' part of its variance."""
    c = coefficients(units)
    parts = [  # (variance of each weighted arm mean, its degrees of freedom), scaled to the unit's coefficient
        (w**2 * arm.scores.var(ddof=1) / len(arm.scores) * cu**2, len(arm.scores) - 1)
        for u, cu in zip(units, c)
        for w, arm in u.terms
        if len(arm.scores) > 1
    ]
    if len(parts) < len(sum((u.arms() for u in units), [])):
        return np.nan, np.nan, "fewer than 2 seeds in an arm: no interval", np.nan, np.nan, 0.0
    seed_var = sum(v for v, _ in parts)
    df = seed_var**2 / sum(v**2 / d for v, d in parts) if seed_var > 0 else np.inf
    method = "Welch t-interval over seeds"
    example_var = 0.0
    if all(u.has_predictions() for u in units):
        example_var = float(np.var(_example_bootstrap(units, resamples, seed), ddof=1))
        method += f", widened by a paired bootstrap over {_examples(units)} ({resamples} resamples)"
        if any(arm.rescored for u in units for arm in u.arms()):
            method += "; runs that scored the whole split rescored on the capped examples every run scored"
    else:
        why = "; ".join(dict.fromkeys(f"{u.name}: {u.unpaired()}" for u in units if u.unpaired()))
        method += f"; not widened by the examples' sampling error ({why})"
    se = float(np.sqrt(seed_var + example_var))
    half = stats.t.ppf(0.5 + LEVEL / 2, df) * se
    effect = float(np.dot(c, [u.effect() for u in units]))
    return effect - half, effect + half, method, se, float(df), example_var


def _examples(units: Sequence[Unit]) -> str:
    """How many evaluation examples the bootstrap resampled: '500 evaluation examples', or a range per unit."""
    sizes = sorted({len(u.shared_labels()) for u in units})
    count = f"{sizes[0]:,}" if len(sizes) == 1 else f"{sizes[0]:,}–{sizes[-1]:,} (by unit)"
    return f"{count} evaluation examples"


def _example_bootstrap(units: Sequence[Unit], resamples: int, seed: int) -> np.ndarray:
    """The effect recomputed on `resamples` resamples of each unit's examples, the runs held fixed; computed once per
    distinct input (the scorecard judges the same units again under each design a claim's ledger names)."""
    c = coefficients(units)
    key = (
        resamples,
        seed,
        *((u.metric, cu, u.offset, _digest(u.shared_labels()), _terms_key(u)) for u, cu in zip(units, c)),
    )
    if key not in _BOOTSTRAPS:
        with threadpool_limits(1, user_api="blas"):  # many small products: a second BLAS thread only waits (2× slower)
            _BOOTSTRAPS[key] = _bootstrap(units, resamples, seed)
    return _BOOTSTRAPS[key]


_BOOTSTRAPS: dict[tuple, np.ndarray] = {}


def _digest(values: np.ndarray) -> str:
    values = np.ascontiguousarray(values)
    return f"{values.dtype.str}{values.shape}" + hashlib.blake2b(values.tobytes(), digest_size=16).hexdigest()


def _terms_key(unit: Unit) -> tuple:
    return tuple((w, tuple(_digest(p) for p in arm.predictions)) for w, arm in unit.terms)


def _bootstrap(units: Sequence[Unit], resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    total = np.zeros(resamples)
    for u, cu in zip(units, coefficients(units)):
        labels = u.shared_labels()
        resampled = Resampled(u.metric, labels, rng.integers(0, len(labels), size=(resamples, len(labels))))
        for w, arm in u.terms:
            total += cu * w * np.mean([resampled.score(p) for p in arm.predictions], axis=0)
        total += cu * u.offset
    return total
