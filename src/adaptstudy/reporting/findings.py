"""A chapter's "what the sources claim, what we test" table, from its declaration's findings."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from adaptstudy.claims.catalog import CLAIMS, DECLARATIONS
from adaptstudy.claims.declarations import load_declaration
from adaptstudy.claims.evidence import Rule
from adaptstudy.claims.verdicts import Verdict
from adaptstudy.claims.what_it_takes import deciding, plainly, what_it_takes
from adaptstudy.reporting.power_plan import NOT_RUN
from adaptstudy.runs.records import made_at


def findings_table(chapter: str, verdicts: Sequence[Verdict] = ()) -> pd.DataFrame:
    """The chapter's "what the sources claim, what we test": each main finding of its sources, the claims that test
    it with their verdicts (where `verdicts` are given), or why none can."""
    by_key = {v.claim.key: v for v in verdicts}
    rows = []
    for f in load_declaration(DECLARATIONS[chapter]).findings:
        keys = [f"{chapter}.{c}" for c in f.claims]
        tested = "; ".join(
            f"{CLAIMS.get(k).sentence} ({by_key[k].verdict})" if k in by_key else CLAIMS.get(k).sentence for k in keys
        )
        rows.append(
            {
                "source": f.source,
                "finding": f.finding,
                "where": f.where,
                "we test it as (verdict)": tested or "–",
                "not tested, because": f.untested or "–",
            }
        )
    return pd.DataFrame(rows, columns=FINDING_COLUMNS)


FINDING_COLUMNS = ["source", "finding", "where", "we test it as (verdict)", "not tested, because"]


GROUPS = {  # how the findings page groups the four verdicts
    "holds": "Holds here",
    "does not hold": "Does not hold here",
    "inconclusive": "Inconclusive at this scale",
    "not testable": "Not testable here",
}
BACKBONE_NAMES = {  # the registry's names as a reader knows the models (the chapters name the exact weights)
    "minilm-l6": "MiniLM-L6",
    "minilm-l3": "MiniLM-L3",
    "mpnet-base": "MPNet-base",
}


STAND_INS = {  # which of the source's models each of our backbones stands in for, by source (None: it names none)
    "Houlsby et al. 2019": {"MiniLM-L6": "BERT-large", "MPNet-base": "BERT-base", "MiniLM-L3": "a smaller BERT"},
    'the "Efficient Adaption of Large Pre-Trained Models" report': {
        "MiniLM-L6": "TinyRoBERTa",
        "MiniLM-L3": "TinyBERT",
    },
    "Gururangan et al. 2020": {"MiniLM-L6": "RoBERTa-base"},
    "Adapt or Die (draft)": {"MiniLM-L6": "RoBERTa-base"},
    "Pfeiffer et al. 2021": {"MiniLM-L6": "BERT-base"},
    "Mahabadi et al. 2021": {"MiniLM-L6": "T5-base"},
}


def training_examples(*runs: pd.DataFrame) -> pd.Series:
    """Each run's training examples per task, by run id (a multi-task run has one per task); runs whose records
    do not say are left out."""
    frames = [r.set_index("run_id")["train_examples"].dropna() for r in runs if "train_examples" in r and not r.empty]
    return pd.concat(frames).astype(int) if frames else pd.Series(dtype=int)


def backbone_labels(*runs: pd.DataFrame) -> pd.Series:
    """Each run's backbone as a reader knows it, with its size from the records: 'MiniLM-L6, 22.6M', by run
    id (the findings name the backbone of every figure: none of ours is the sources' BERT)."""
    frames = [r[["run_id", "backbone", *(["backbone_params"] if "backbone_params" in r else [])]] for r in runs]
    table = pd.concat([f for f in frames if not f.empty]).drop_duplicates("run_id").set_index("run_id")
    sizes = table.groupby("backbone")["backbone_params"].median() if "backbone_params" in table else pd.Series()
    names = {
        b: BACKBONE_NAMES.get(b, b) + (f", {sizes[b] / 1e6:.1f}M" if pd.notna(sizes.get(b)) else "")
        for b in table["backbone"].unique()
    }
    return table["backbone"].map(names)


def headline_claims() -> dict[str, str]:
    """Each source's headline claim (its declaration's `headlines`), by source, in the chapters' order."""
    out: dict[str, str] = {}
    for chapter, path in DECLARATIONS.items():
        for name in load_declaration(path).headlines:
            claim = CLAIMS.get(f"{chapter}.{name}")
            out.setdefault(claim.paper, claim.key)
    return out


def findings_by_paper(
    verdicts: Sequence[Verdict],
    confirmed: dict[str, Verdict] | None = None,
    finished: pd.Series | None = None,
    backbones: pd.Series | None = None,
    examples: pd.Series | None = None,
) -> str:
    """The study's findings as Markdown, per source: first its summary (the headline claim's verdict on every
    reported seed and on fresh seeds alone, how many of its claims hold, do not hold or are undecided, and why the
    undecided are; given `backbones`, its scale: our backbones and the source's models they stand in for, the
    training examples per task (`examples`, by run id, where given) and the seeds per arm), then every claim under its
    verdict, each with our effect and interval beside the source's figure and the rule's threshold, the backbone it was
    measured on where it is not the source's usual one (by run id: `backbone_labels`), its verdict on fresh seeds
    alone, and whether it was declared after its runs existed (given the runs' `finished` times). Written from the
    verdicts, so the page cannot drift."""
    confirmed, headlines = confirmed or {}, headline_claims()
    papers: dict[str, list[Verdict]] = {}
    for v in verdicts:
        papers.setdefault(v.claim.paper, []).append(v)
    sections = []
    for paper, judged in papers.items():
        usual = usual_backbones(judged, named(backbones))
        lines = [f"### {paper}", "", *summary(judged, headlines.get(paper), confirmed, backbones, examples), ""]
        for verdict, title in GROUPS.items():
            these = [v for v in judged if v.verdict == verdict]
            if not these:
                continue
            top = " (and the headline)" if any(v.claim.key == headlines.get(paper) for v in these) else ""
            lines.append(f"**{title}{top}:**")
            lines.append("")
            shown = [v for v in these if v.claim.key != headlines.get(paper)]  # the summary gave the headline
            lines += [f"- {_finding(v, confirmed.get(v.claim.key), finished, named(backbones), usual)}" for v in shown]
            lines.append("")
        sections.append("\n".join(lines))
    return "\n".join(sections)


def named(backbones: pd.Series | None) -> pd.Series | None:
    """The backbones without their sizes ('MiniLM-L6'): a finding names its backbone so, the summary's scale gives
    the sizes."""
    return backbones.str.split(", ").str[0] if backbones is not None else None


def usual_backbones(judged: Sequence[Verdict], backbones: pd.Series | None) -> str:
    """The backbone(s) most of a source's claims were measured on, as `on` names them ('' without backbones): the
    summary's scale names them once, and a finding names its backbone only where it differs."""
    if backbones is None:
        return ""
    named = pd.Series([on(v, backbones) for v in judged if v.run_ids], dtype=object)
    return named.value_counts().index[0] if not named.empty else ""


def scale(judged: Sequence[Verdict], backbones: pd.Series, examples: pd.Series | None) -> str:
    """A source's scale in one line: each backbone we ran with its size and the source's model it stands in for
    (`STAND_INS`), the training examples per task where the records say (`examples`), and the reported seeds per
    arm (the fewest and the most of any comparison)."""
    ids = sorted(set().union(*(v.run_ids for v in judged)))
    paper = judged[0].claim.paper
    ours = sorted(set(backbones.reindex(ids).dropna()), key=lambda b: (b.split(",")[0] != "MiniLM-L6", b))
    stand_ins = STAND_INS.get(paper, {})
    said = []
    for label in ours:
        name, _, size = label.partition(", ")
        theirs = stand_ins.get(name)
        verb = " for " if said else " stands in for "
        said.append(f"{name}{f' ({size})' if size else ''}" + (f"{verb}{theirs}" if theirs else ""))
    parts = ["; ".join(said)]
    if examples is not None and not (n := examples[examples.index.isin(ids)]).empty:
        low, high = int(n.min()), int(n.max())
        parts.append(f"{low:,}{f'–{high:,}' if high != low else ''} training examples per task")
    seeds = sorted({j.seeds for v in judged for j in v.judgements if j.seeds and j.seeds == j.seeds})
    if seeds:
        parts.append(f"{seeds[0]}{f'–{seeds[-1]}' if seeds[-1] != seeds[0] else ''} seeds per arm")
    return f"**Scale:** {', '.join(parts)}."


def summary(
    judged: Sequence[Verdict],
    headline: str | None,
    confirmed: dict[str, Verdict],
    backbones: pd.Series | None,
    examples: pd.Series | None = None,
) -> list[str]:
    """A source's summary, at most four lines: its scale (given `backbones`), its headline claim, its verdicts
    counted, why the undecided are."""
    lines = [f"{scale(judged, backbones, examples)}  "] if backbones is not None else []
    usual = usual_backbones(judged, named(backbones))
    top = next((v for v in judged if v.claim.key == headline), None)
    if top is not None:
        where = on(top, named(backbones))
        lines.append(
            f"**Headline:** {top.claim.sentence}{'' if where == usual else where}: *{top.verdict}*, {effect(top)}"
            f"{beside(top)} (every reported seed); {fresh_said(confirmed.get(top.claim.key))}.{to_decide(top)}  "
        )
    count = {k: sum(v.verdict == k for v in judged) for k in GROUPS}
    undecided = count["inconclusive"] + count["not testable"]
    lines.append(
        f"**{len(judged)} claims:** {count['holds']} hold, {count['does not hold']} do not hold, "
        f"{undecided} undecided ({count['inconclusive']} inconclusive, {count['not testable']} not testable).  "
    )
    if undecided:
        lines.append(f"**Why undecided:** {why_undecided(judged)}.")
    lines[-1] = lines[-1].rstrip()
    return lines


def why_undecided(judged: Sequence[Verdict]) -> str:
    """Why a source's undecided claims are undecided, counted: the inconclusive that no number of seeds decides on
    these evaluation examples (their sampling error alone is wider than the effect's distance from the rule's
    boundary), those that more seeds would, and what keeps the untestable from a verdict."""
    open_ = [v for v in judged if v.verdict == "inconclusive"]
    stuck = sum(what_it_takes(v).startswith("more seeds would not") for v in open_)
    parts = []
    if stuck:
        parts.append(
            f"{stuck} of {len(open_)} inconclusive {'needs' if stuck == 1 else 'need'} more evaluation examples"
        )
    more = sum(what_it_takes(v).startswith("needs about") for v in open_)
    if more:
        parts.append(f"{more} {'needs' if more == 1 else 'need'} more seeds")
    kinds = [plainly(r) for v in judged if v.verdict == "not testable" for r in v.reason_kinds()]
    reasons = pd.Series(kinds, dtype=object)
    if not reasons.empty:
        parts.append("not testable: " + ", ".join(f"{r} ({n})" for r, n in reasons.value_counts().items()))
    return "; ".join(parts)


def to_decide(v: Verdict) -> str:
    """For an inconclusive claim, one sentence on what would decide it (`what_it_takes`, in short); '' otherwise."""
    d = deciding(v)
    if d is None:
        return ""
    if d.seeds is None:
        return " Only more evaluation examples would decide it."
    return f" It needs about {d.seeds} seeds per arm to decide (now {d.now})."


def effect(v: Verdict) -> str:
    """Our effect and its interval; for a claim of several comparisons, how many gave each verdict (the claim table
    has each one's interval)."""
    if len(v.judgements) <= 1:
        return v.effects()
    counts = pd.Series([j.verdict for j in v.judgements], dtype=object).value_counts()
    plural = {"holds": "hold", "does not hold": "do not hold"}
    said = ", ".join(f"{n} {plural.get(word, word) if n > 1 else word}" for word, n in counts.items())
    return f"{len(v.judgements)} comparisons: {said}"


def fresh_said(fresh: Verdict | None) -> str:
    """'fresh seeds alone: ' the verdict on them, with its effect where it has one; 'not run on fresh seeds yet'
    where there is no such verdict."""
    if fresh is None:
        return NOT_RUN
    said = effect(fresh)
    return f"fresh seeds alone: *{fresh.verdict}*" + (f", {said}" if said not in ("", "–") else "")


def rule_said(rule: Rule) -> str:
    """The rule's threshold as a reader reads it: 'holds if above +5', 'holds if within ±1', 'holds if clear of 0'
    (two-sided, at 0)."""
    t = rule.threshold
    if rule.kind in ("above", "below"):
        return f"holds if {rule.kind} {t:+g}"
    if rule.kind == "outside":
        return "holds if clear of 0" if t == 0 else f"holds if outside ±{t:g}"
    return f"holds if within ±{t:g}"


DEFAULT_RULE = Rule("above", 0.0)  # the page's introduction says it once: a finding names any other rule


def beside(v: Verdict) -> str:
    """What our effect is read against: the source's figure in our units where the declaration gives it, and the
    rule's threshold: '; source +5.2; holds if above +5'. The rule the page's introduction states (`DEFAULT_RULE`:
    above 0) is left out: within the findings' word limit, a rule said once is not said 40 times."""
    source = v.design.published_effect
    against = " (opposite sign)" if v.against_source() else ""  # a two-sided rule holds either way
    rule = v.design.decision
    said = f"; {rule_said(rule)}" if rule != DEFAULT_RULE else ""
    return (f"; source {source:+g}{against}" if source is not None else "") + said


def on(v: Verdict, backbones: pd.Series | None, *more: str) -> str:
    """' (MiniLM-L6, 22.6M)': the backbone(s) the verdict's runs were made on ('no runs yet' for none), then `more`
    ('post hoc'); '' without backbones and `more`."""
    names = sorted(set(backbones.reindex(sorted(v.run_ids)).dropna())) if backbones is not None else []
    if backbones is not None and not v.run_ids:
        names = ["no runs yet"]
    said = "; ".join([" and ".join(names), *more] if names else more)
    return f" ({said})" if said else ""


def _finding(
    v: Verdict, fresh: Verdict | None, finished: pd.Series | None, backbones: pd.Series | None, usual: str = ""
) -> str:
    why = f" ({plainly(v.reasons())})" if v.verdict == "not testable" else ""
    when = declared(v, finished) if finished is not None else ""
    post_hoc = ["post hoc"] if when.startswith("post hoc") else []
    decisive = ("holds", "does not hold")
    alone = ""  # their interval: the claim table
    if fresh is not None and fresh.verdict in decisive:
        alone = f" Fresh seeds: *{fresh.verdict}*."
    elif fresh is not None and fresh.verdict == "inconclusive" and v.verdict == "holds":
        alone = " Holds on every seed; *inconclusive* on fresh seeds alone."
    where = on(v, None if on(v, backbones) == usual else backbones, *post_hoc)
    return f"{v.claim.sentence}{where}: {effect(v)}{beside(v)}{why}.{alone}"


def finished_times(*runs: pd.DataFrame) -> pd.Series:
    """When each run of these labelled runs was first made, by run id (a rerun of a seed is not a new run)."""
    frames = [pd.Series(made_at(r).to_numpy(), index=r["run_id"]) for r in runs if not r.empty]
    times = pd.concat(frames) if frames else pd.Series(dtype=object)
    return times[~times.index.duplicated()]  # a multi-task run has a row per task, and chapters share runs


def declared(v: Verdict, finished: pd.Series) -> str:
    """Whether the claim was declared before the runs it rests on or after some of them existed (post hoc): 'before
    its runs', or 'post hoc: after 126 of its 140 runs'."""
    ids = sorted(v.run_ids)
    times = pd.to_datetime(finished.reindex(ids), utc=True, format="ISO8601")
    older = int((times < pd.Timestamp(v.claim.declared.ledger[0].date)).sum())
    return f"post hoc: after {older} of its {len(ids)} runs" if older else "before its runs"


def declared_counts(verdicts: list[Verdict], finished: pd.Series) -> str:
    """When a chapter's claims were declared, counted from the records as the scorecard's *declared* column reads
    them (`declared`): 'Of its 12 claims, 6 were declared before every run they rest on and 6 after some existed
    (*post hoc*: a, b, …); 0 rest on no run.'"""
    said = {v.claim.key: declared(v, finished) if v.run_ids else "" for v in verdicts}
    before = [k for k, d in said.items() if d == "before its runs"]
    post_hoc = [k for k, d in said.items() if d.startswith("post hoc")]
    none = [k for k, d in said.items() if not d]
    named = f" ({', '.join(post_hoc)})" if post_hoc else ""
    return (
        f"Of its {len(said)} claims, {len(before)} were declared before every run they rest on and {len(post_hoc)} "
        f"after some of those runs existed (*post hoc*{named}){f'; {len(none)} rest on no run yet' if none else ''}."
    )
