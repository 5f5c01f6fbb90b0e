"""The IMDb chapter's claims: the report's conclusions, declared with their rules, judged on the seeds that chose
no learning rate (rates were chosen on the selection seed).

Every function takes the runs of `load_runs`, labelled by `tables.label_runs`.
"""

from __future__ import annotations

import pandas as pd

from adaptstudy.claims.baselines import flag_runs
from adaptstudy.claims.catalog import declaration_path, declare_chapter
from adaptstudy.claims.evidence import Unit, contrast
from adaptstudy.claims.verdicts import Verdict, arm, verdict_of
from adaptstudy.reporting.common import reported
from adaptstudy.reporting.findings import finished_times
from adaptstudy.reporting.peft.published import PEFT_REPORT_METHODS, PEFT_REPORT_SETTINGS
from adaptstudy.reporting.peft.tables import at_chosen_rates
from adaptstudy.reporting.verdict_tables import verdict_table

DECLARED = declare_chapter(declaration_path(__file__), "peft")
FULL_BEST = DECLARED["full-best"]
BITFIT_BEST = DECLARED["bitfit-best-cheap"]
BITFIT_FAST = DECLARED["bitfit-fastest"]
PROMPT_WEAKEST = DECLARED["prompt-weakest"]
PROMPT_DATA = DECLARED["prompt-least-data-loss"]
CONVERGENCE = DECLARED["encoder-only-slower"]
SLOWEST = DECLARED["embeddings-slowest"]
EMBEDDINGS_NEAR = DECLARED["embeddings-near-optimal"]
EMBEDDINGS_CHEAPER = DECLARED["embeddings-cheaper"]
ENCODER_SCARCE = DECLARED["encoder-overtakes-when-scarce"]
BITFIT_BACKBONE = DECLARED["bitfit-depends-on-backbone"]
LARGER, SMALLER = "minilm-l6", "minilm-l3"  # the report's TinyRoBERTa and TinyBERT (PEFT_REPORT_STAND_INS)


def verdicts(runs: pd.DataFrame) -> list[Verdict]:
    """Every claim of the chapter judged on the reported seeds; runs that learned nothing are flagged."""
    chosen = reported(at_chosen_rates(flag_runs(runs)))
    chosen = chosen[chosen["fraction"] == 1.0]
    chosen = chosen.assign(early_gap=chosen["early_accuracy"] - chosen["main_metric_value"])
    panels = sorted(set(zip(chosen["backbone"], chosen["setting"])))
    others = [m for m in PEFT_REPORT_METHODS if m != "full"]

    def cells(backbone, setting, method, score="main_metric_value", learned="learned_nothing"):
        frame = chosen[(chosen["backbone"] == backbone) & (chosen["setting"] == setting) & (chosen["method"] == method)]
        return arm(frame, score, learned)

    def per_panel(a: str, b: str, score="main_metric_value", learned="learned_nothing") -> list[Unit]:
        return [
            contrast(f"{bb} {s}", cells(bb, s, a, score, learned), cells(bb, s, b, score, learned), metric="accuracy")
            for bb, s in panels
        ]

    methods = sorted(set(chosen["method"]))
    slow, fast = PEFT_REPORT_SETTINGS[0.3], PEFT_REPORT_SETTINGS[0.9]
    backbones = sorted({b for b, _ in panels})

    def data_loss(method: str, backbone: str) -> Unit:
        terms = [
            (1.0, cells(backbone, fast, method)),
            (-1.0, cells(backbone, slow, method)),
            (-1.0, cells(backbone, fast, "prompt_tuning")),
            (1.0, cells(backbone, slow, "prompt_tuning")),
        ]
        return Unit(backbone, terms)

    def across_backbones(setting: str, a: str, b: str) -> Unit:
        """(a − b on the larger backbone) − (a − b on the smaller), in one setting."""
        terms = [
            (1.0, cells(LARGER, setting, a)),
            (-1.0, cells(LARGER, setting, b)),
            (-1.0, cells(SMALLER, setting, a)),
            (1.0, cells(SMALLER, setting, b)),
        ]
        return Unit(setting, terms)

    def slower_than(method: str, backbone: str) -> Unit:
        """`method`'s early gap on `backbone` − the larger backbone's embeddings-only early gap, at 90%/10%."""
        slowest = cells(LARGER, fast, "embeddings_only", "early_gap")
        return contrast(fast, cells(backbone, fast, method, "early_gap"), slowest, metric="accuracy")

    def drop(method: str, backbone: str) -> Unit:
        return Unit(backbone, [(1.0, cells(backbone, fast, method)), (-1.0, cells(backbone, slow, method))])

    return [
        verdict_of(FULL_BEST, {f"vs {m}": per_panel("full", m) for m in others}),
        verdict_of(BITFIT_BEST, {f"vs {m}": per_panel("bitfit", m) for m in methods if m != "bitfit"}),
        verdict_of(
            BITFIT_FAST,
            {f"vs {m}": per_panel(m, "bitfit", "epoch_s", learned="") for m in PEFT_REPORT_METHODS if m != "bitfit"},
        ),
        verdict_of(
            PROMPT_WEAKEST,
            {f"vs {m}": per_panel(m, "prompt_tuning") for m in others if m != "prompt_tuning"}
            | {"vs full": per_panel("full", "prompt_tuning")},
        ),
        verdict_of(
            PROMPT_DATA,
            {"": [drop("prompt_tuning", b) for b in backbones]}
            | {f"vs {m}": [data_loss(m, b) for b in backbones] for m in PEFT_REPORT_METHODS if m != "prompt_tuning"},
        ),
        verdict_of(CONVERGENCE, per_panel("full", "encoder_only", "early_gap")),
        verdict_of(
            SLOWEST,
            {
                f"vs {m} on {b}": [slower_than(m, b)]
                for b in (LARGER, SMALLER)
                for m in PEFT_REPORT_METHODS
                if (m, b) != ("embeddings_only", LARGER)
            },
        ),
        verdict_of(EMBEDDINGS_NEAR, per_panel("full", "embeddings_only")),
        verdict_of(
            EMBEDDINGS_CHEAPER,
            {
                "seconds per epoch": per_panel("full", "embeddings_only", "epoch_s", learned=""),
                "peak memory (MB)": per_panel("full", "embeddings_only", "peak_rss_mb", learned=""),
            },
        ),
        verdict_of(ENCODER_SCARCE, per_panel("encoder_only", "embeddings_only")),
        verdict_of(BITFIT_BACKBONE, [across_backbones(s, "bitfit", "full") for s in sorted({s for _, s in panels})]),
    ]


def claims(runs: pd.DataFrame) -> pd.DataFrame:
    """The chapter's verdict table."""
    return verdict_table(verdicts(runs), finished_times(runs))
