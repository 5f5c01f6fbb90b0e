"""The scorecard at the front of the book: every declared claim of every paper, the paper's figure, ours with its
95% interval, the verdict, the runs behind it and their CPU-hours, and a link to the chapter that judges it."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from adaptstudy.reporting.across.fusion import tables as fusion
from adaptstudy.reporting.across.hyperformer import claims as hyperformer_claims
from adaptstudy.reporting.across.hyperformer import tables as hyperformer_tables
from adaptstudy.reporting.claims import CLAIMS, Verdict
from adaptstudy.reporting.common import load_runs
from adaptstudy.reporting.dsp import claims as dsp_claims
from adaptstudy.reporting.dsp import tables as dsp_tables
from adaptstudy.reporting.houlsby import claims as houlsby_claims
from adaptstudy.reporting.houlsby import tables as houlsby_tables
from adaptstudy.reporting.peft import claims as peft_claims
from adaptstudy.reporting.peft import tables as peft_tables
from adaptstudy.runs.records import paid_seconds

PAGES = {  # chapter (a claim key's first part) -> the book page that judges it
    "houlsby": "06_analysis_houlsby",
    "peft": "06_analysis_peft",
    "dsp": "06_analysis_dsp",
    "fusion": "06_analysis_across",
    "hyperformer": "06_analysis_across",
}
COLUMNS = [
    "paper",
    "claim",
    "paper reports",
    "ours: effect [95% CI]",
    "verdict",
    "why not testable",
    "runs",
    "CPU-hours",
    "chapter",
]
UNJUDGED = "no chapter judged it"


def chapter_verdicts(root: str | os.PathLike) -> tuple[list[Verdict], pd.DataFrame]:
    """Every chapter's verdicts on the committed records under `root` (results/), and the runs they read
    (run_id and seconds), for the costs."""
    root = Path(root)
    houlsby = houlsby_tables.label_runs(load_runs(root / "houlsby"))
    peft = peft_tables.label_runs(load_runs(root / "peft_imdb"))
    dsp_runs = dsp_tables.label_runs(load_runs(root / "dsp"))
    fusion_runs = fusion.label_runs(load_runs(root / "fusion"))
    hyper = hyperformer_tables.label_runs(load_runs(root / "hyperformer"))
    verdicts = [
        *houlsby_claims.verdicts(houlsby),
        *peft_claims.verdicts(peft),
        *dsp_claims.verdicts(dsp_runs),
        *fusion.verdicts(fusion_runs),
        *hyperformer_claims.verdicts(hyper),
    ]
    seconds = pd.concat(
        [
            r[["run_id"]].assign(**{field: paid_seconds(r, field) for field in ("train_runtime_s", "eval_runtime_s")})
            for r in (houlsby, peft, dsp_runs, fusion_runs, hyper)
            if not r.empty
        ]
    )
    return verdicts, seconds


def scorecard(verdicts: list[Verdict], seconds: pd.DataFrame) -> pd.DataFrame:
    """One row per declared claim (a claim no chapter judged reads 'not testable', no runs), with the reason a claim
    is not testable beside its verdict."""
    per_run = seconds.drop_duplicates("run_id").set_index("run_id")
    total = per_run["train_runtime_s"].fillna(0) + per_run["eval_runtime_s"].fillna(0)
    judged = {v.claim.key: v for v in verdicts}
    order = {c: i for i, c in enumerate(PAGES)}
    keys = sorted([*judged, *(k for k in CLAIMS if k not in judged)], key=lambda k: order[CLAIMS.get(k).chapter])
    rows = []
    for key in keys:
        claim, v = CLAIMS.get(key), judged.get(key)
        page = PAGES[claim.chapter]
        ids = sorted(v.run_ids) if v else []
        rows.append(
            {
                "paper": claim.paper,
                "claim": f"{claim.sentence} ({claim.where})",
                "paper reports": claim.published,
                "ours: effect [95% CI]": v.effects() if v else "–",
                "verdict": v.verdict if v else "not testable",
                "why not testable": (v.reasons() if v else UNJUDGED) or "–",
                "runs": len(ids),
                "CPU-hours": total.reindex(ids).fillna(0).sum() / 3600,
                "chapter": f'<a href="{page}.html">{page.removeprefix("06_analysis_")}</a>',
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def verdict_counts(card: pd.DataFrame) -> pd.DataFrame:
    """How many claims of each paper got each verdict."""
    return card.groupby(["paper", "verdict"]).size().unstack(fill_value=0).reset_index()


def untestable_reasons(verdicts: list[Verdict]) -> pd.DataFrame:
    """How many claims each reason keeps from a verdict (a claim can have several), most common first; claims that
    no chapter judged count under their own reason."""
    judged = {v.claim.key for v in verdicts}
    untestable = [v for v in verdicts if v.verdict == "not testable"]
    kinds = [k for v in untestable for k in v.reason_kinds()] + [UNJUDGED for k in CLAIMS if k not in judged]
    counts = pd.Series(kinds, dtype=object).value_counts()
    return pd.DataFrame({"reason": counts.index, "claims": counts.to_numpy()})
