"""Published numbers that were once entered wrong stay right: each corrected figure is checked against the source's
own text in `../shared/sources/` (file and line cited), and the declared claims quote it."""

import os
import re
from pathlib import Path

import pytest

from adaptstudy.claims.catalog import CLAIMS
from adaptstudy.data.tasks import resolve_task
from adaptstudy.reporting.across.fusion.published import PFEIFFER_2021
from adaptstudy.reporting.across.hyperformer.published import HYPER_ABLATED, HYPER_ABLATION, HYPER_FEW_SHOT
from adaptstudy.reporting.dsp.published import DSP_METRICS, GURURANGAN_2020
from adaptstudy.reporting.houlsby.published import HOULSBY_COURSE, HOULSBY_SIZE_MEANS
from adaptstudy.reporting.peft.published import PEFT_REPORT_EPOCH_S
from adaptstudy.reporting.published import published_frame
from adaptstudy.reporting.scorecard import PAGES  # noqa: F401  (imports every chapter, which registers its claims)


@pytest.fixture(scope="module")
def sources() -> Path:
    """The sources' text beside the data mirror (`../shared/sources`)."""
    path = Path(os.environ["ADAPTSTUDY_DATA"]).resolve().parent / "sources"
    if not path.is_dir():
        pytest.skip(f"the sources' text is not at {path}")
    return path


def line(sources: Path, prefix: str, number: int) -> str:
    """Line `number` (1-based) of the source file whose name starts with `prefix`."""
    (path,) = sources.glob(f"{prefix}_*.txt")
    return path.read_text(encoding="utf-8").splitlines()[number - 1]


def published(key: str) -> str:
    return CLAIMS.get(key).published


def test_tinybert_prompt_tuning_epoch_is_5_to_6_seconds_as_the_reports_table():
    assert PEFT_REPORT_EPOCH_S["TinyBERT"]["prompt_tuning"] == "5–6"


def test_houlsby_size_256_is_85_7_as_the_source_says(sources):
    assert "86.2%, 85.8%, 85.7%" in line(sources, "003", 606)
    assert HOULSBY_SIZE_MEANS == {8: 86.2, 64: 85.8, 256: 85.7}
    assert "256: 85.7" in published("houlsby.size") and "85.3" not in published("houlsby.size")


def test_the_course_reproductions_gaps_stand_under_parity_at_size_64_to_two_decimals(sources):
    assert line(sources, "003", 390) == "- adapter size: 64"
    full = float(line(sources, "003", 423).split("\t")[1])  # BERT's MRPC accuracy
    adapters = float(line(sources, "003", 424).split("\t")[1])  # BERT w/ Adapters'
    assert (round(100 * full, 2), round(100 * adapters, 2)) == (85.05, 85.78)
    course = published_frame(HOULSBY_COURSE).set_index(["task", "method"])["value"]
    assert course[("mrpc", "houlsby")] - course[("mrpc", "full")] == pytest.approx(0.73)
    assert course[("cola", "houlsby")] - course[("cola", "full")] == pytest.approx(-0.96)
    assert "MRPC +0.73" in published("houlsby.parity-64") and "CoLA −0.96" in published("houlsby.parity-64")
    assert "course" not in published("houlsby.parity")


def test_the_ablation_is_hyperformer_small_with_every_row_of_table_4(sources):
    """Table 4 ablates Hyperformer-small (82.47), not Hyperformer++-small (82.51)."""
    assert line(sources, "004", 274) == "HYPERFORMER _{SMALL}\t82.47"
    assert line(sources, "004", 278) == "– T5 Layer norm\t81.29"
    assert line(sources, "004", 279) == "– Conditional layer norm, T5 Layer norm\t78.92"
    assert HYPER_ABLATION[HYPER_ABLATED] == 82.47 and HYPER_ABLATED == "hyperformer"
    assert 82.51 not in HYPER_ABLATION.values()
    assert HYPER_ABLATION["no T5 layer norm"] == 81.29
    assert HYPER_ABLATION["no conditional layer norm, T5 layer norm"] == 78.92
    assert "Hyperformer-small 82.47" in published("hyperformer.components")


def test_fusion_over_st_a_on_the_small_targets_is_table_1s(sources):
    """Table 1 (sources/002 lines 244, 246, 247): Fusion w/ ST-A − ST-A is RTE +5.78, MRPC +5.13, CB +6.07."""
    rows = {}
    for number in (244, 246, 247):
        name, *cells = line(sources, "002", number).split("\t")
        rows[name] = [float(re.sub(r"<[^>]+>", "", c).split()[0]) for c in cells]
    gains = {task: round(values[4] - values[2], 2) for task, values in rows.items()}  # F. w/ ST-A − ST-A
    assert gains == {"MRPC": 5.13, "RTE": 5.78, "CB": 6.07}
    frame = published_frame(PFEIFFER_2021, "Table 1").pivot_table(index="task", columns="method", values="value")
    ours = (frame["fusion-st-a"] - frame["st-a"]).round(2)
    assert ours[["rte", "mrpc", "cb"]].tolist() == [5.78, 5.13, 6.07]
    for figure in ("RTE +5.78", "MRPC +5.13", "CB +6.07"):
        assert figure in published("fusion.small-targets")
    assert CLAIMS.get("fusion.small-targets").declared.versus_units == ["sst2", "imdb"]  # "most": a comparison


def test_dapt_improves_7_of_the_8_tasks_as_table_5():
    frame = published_frame(GURURANGAN_2020, "Table 5").pivot_table(index="task", columns="method", values="value")
    improved = frame.index[frame["dapt"] > frame["baseline"]]
    assert len(frame) == 8 and len(improved) == 7 and "agnews" not in improved
    assert "7 of the 8" in published("dsp.dapt") and "all 8" not in published("dsp.dapt")
    best = frame.index[frame["dapt+tapt"] >= frame[["dapt", "tapt"]].max(axis=1)]
    assert sorted(set(frame.index) - set(best)) == ["hyperpartisan"]
    assert "but Hyperpartisan" in published("dsp.dapt-tapt")


def test_the_draft_is_credited_with_questions_not_results():
    claim = CLAIMS.get("dsp.adapter-dapt")
    assert claim.paper == "Adapt or Die (draft)" and "question" in claim.sentence
    assert "recover" not in claim.published


def test_dsp_scores_imdb_as_the_paper_does_and_imdb_runs_record_that_metric():
    assert DSP_METRICS["imdb"] == "macro_f1" and DSP_METRICS["chemprot"] == "micro_f1"
    assert "macro_f1" in resolve_task("imdb").metrics


def test_the_few_shot_table_keeps_the_papers_k():
    assert HYPER_FEW_SHOT["imdb"]["k"] == (4, 16, 32, 100, 500, 1000) and HYPER_FEW_SHOT["cb"]["k"] == (4, 16, 32, 100)
