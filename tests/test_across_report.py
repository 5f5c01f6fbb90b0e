"""The across-tasks chapter's aggregation: fusion table and heatmap, Hyperformer rows, ablation, low resource,
few-shot, verdicts (records shaped as our runs write them)."""

import numpy as np
import pandas as pd
import pytest

from adaptstudy.reporting import across as ar

BACKBONE = 22_713_216


def _fusion(task, method, seed, score, epochs=3, attention=None):
    record = {
        "task": task,
        "method": method,
        "seed": seed,
        "metrics": {"accuracy": score},
        "trainable_params": 1000,
        "backbone_params": BACKBONE,
        "config": {"num_train_epochs": epochs},
    }
    if attention:
        record["fusion_attention"] = attention
    return record


def _multi(tasks, method, seed, scores, cap=1000, lr=1e-3, validation=50.0, trainable=1_000_000, **config):
    metric = {
        "cola": "mcc",
        "sst2": "accuracy",
        "mrpc": "f1",
        "stsb": "spearman",
        "rte": "accuracy",
        "imdb": "accuracy",
        "cb": "accuracy",
    }
    return {
        "tasks": list(tasks),
        "method": method,
        "seed": seed,
        "validation_mean": validation,
        "metrics": {f"{t}/{metric[t]}": s for t, s in zip(tasks, scores)},
        "main_metric_value": float(np.mean(scores)),
        "trainable_params": trainable,
        "total_params": BACKBONE + trainable,
        "backbone_params": BACKBONE,
        "train_runtime_s": 1.0,
        "config": {"tasks": list(tasks), "max_train_examples": cap, "learning_rate": lr, **config},
    }


def test_fusion_table_reports_each_column_over_seeds_beside_the_paper():
    records = [
        _fusion("rte", m, s, v + s)
        for m, v in (("head_only", 55), ("full", 60), ("pfeiffer", 58), ("fusion", 62))
        for s in range(3)
    ]
    records.append(_fusion("cb", "pfeiffer", 0, 40.0))  # CB's source adapter (3 epochs): not its ST-A cell
    table = ar.fusion_table(records).set_index(["task", "source"])
    assert table.loc[("rte", "ours (minilm-l6, dev)"), "fusion-st-a"] == "63.0 ± 1.0 (3)"
    assert table.loc[("rte", "published (BERT-base, dev)"), "fusion-st-a"] == "76.82"
    assert table.loc[("cb", "ours (minilm-l6, dev)"), "st-a"] == "–"
    assert table.loc[("boolq", "ours (minilm-l6, dev)"), "full"] == "not run offline"
    params = table.xs("trained / target", level="task").iloc[0]
    assert params["st-a"] == f"{100 * 1000 / BACKBONE:.2f}%" and params["mt-a"] == "–"
    claim = ar.claims(records, []).iloc[0]
    assert claim["verdict"] == "holds"  # fusion 63 > ST-A 59 on the one target run
    assert claim["ours"] == "rte: +4.0 (3 seeds per cell)"
    one_seed = [r for r in records if r["seed"] == 0 or r["method"] != "fusion"]
    assert ar.claims(one_seed, []).iloc[0]["ours"] == "rte: +3.0 (1–3 seeds per cell)"
    cb = [_fusion("cb", "pfeiffer", 0, 60.0, epochs=20), _fusion("cb", "fusion", 0, 40.0, epochs=20)]
    assert ar.claims(records + cb, []).iloc[0]["verdict"] == "partly"  # RTE gains, CB loses
    assert ar.claims(cb, []).iloc[0]["verdict"] == "does not hold"


def test_seed_spread_reads_the_single_task_runs_of_the_fusion_targets():
    records = [_multi(["rte"], "houlsby", s, [50.0 + 2 * s]) for s in range(3)] + [
        _multi(["cola"], "full", s, [10.0 * s]) for s in range(3)
    ]
    assert ar.seed_spread(records).endswith("RTE adapters 2.0 points.")
    assert ar.seed_spread([]) == ""


def _written(folder, task, method, seed, epochs):
    from adaptstudy.runs.finetune_config import FinetuneConfig
    from adaptstudy.runs.records import base_record, write_record

    size = {"adapter_size": 24} if method == "pfeiffer" else {}
    record = base_record(FinetuneConfig(task=task, method=method, seed=seed, num_train_epochs=epochs, **size))
    record.update(
        status="ok",
        metrics={"accuracy": 60.0},
        main_metric="accuracy",
        main_metric_value=60.0,
        trainable_params=1,
        total_params=1,
        train_runtime_s=1.0,
        train_examples_per_s=1.0,
        peak_rss_mb=1.0,
        device="cpu",
        precision_used="fp32",
        finished_at="2026-11-25T00:00:00+00:00",
    )
    write_record(record, folder)


def test_the_fusion_scale_note_counts_table_cells_and_names_the_source_adapters_apart(tmp_path):
    from adaptstudy.runs.records import records_frame

    for task in (
        "rte",
        "cola",
        "cb",
    ):  # source adapters: RTE's is also its ST-A cell of seed 0, CoLA's and CB's are not cells
        _written(tmp_path, task, "pfeiffer", 0, 3)
    _written(tmp_path, "rte", "pfeiffer", 1, 3)
    _written(tmp_path, "rte", "full", 0, 3)
    _written(tmp_path, "cb", "full", 0, 20)
    note = ar.fusion_scale_note(records_frame(tmp_path))
    assert note.startswith("Ours: 4 runs on minilm-l6, 1–2 seed(s) per cell, 3–20 epochs")
    assert note.endswith(
        "Source adapters: 3 single-task runs, 3 epochs each (cb, cola, rte); those of rte are also their "
        "targets' ST-A cells of seed 0."
    )


def test_the_fusion_table_scores_accuracy_as_the_paper_even_where_the_main_metric_is_f1():
    record = {
        **_fusion("mrpc", "fusion", 0, 70.0),
        "metrics": {"accuracy": 70.0, "f1": 80.0},
        "main_metric_value": 80.0,
    }
    assert ar.fusion_runs([record])["score"].tolist() == [70.0]


def test_fusion_attention_averages_seeds_per_target():
    records = [
        _fusion("rte", "fusion", 0, 60, attention={"rte": 0.6, "mrpc": 0.4}),
        _fusion("rte", "fusion", 1, 60, attention={"rte": 0.8, "mrpc": 0.2}),
    ]
    matrix = ar.fusion_attention(records)
    assert matrix.loc["rte", "rte"] == pytest.approx(0.7) and matrix.loc["rte", "mrpc"] == pytest.approx(0.3)


def test_hyperformer_rows_use_the_rate_chosen_on_seed_0_and_count_parameters_per_task():
    glue = ar.GLUE5
    records = [_multi([t], "houlsby", s, [70.0 + s], trainable=100_000) for t in glue for s in range(3)]
    for lr, offset, validation in ((3e-4, 0.0, 60.0), (1e-3, 10.0, 70.0)):
        records.append(
            _multi(glue, "hyperformer++", 0, [80.0 + offset] * 5, lr=lr, validation=validation, trainable=400_000)
        )
    records.append(_multi(glue, "hyperformer++", 1, [92.0] * 5, lr=1e-3, trainable=400_000))
    table = ar.hyper_table(records).set_index(["source", "method"])
    ours = table.loc["ours (minilm-l6)"]
    assert ours.loc["hyperformer++", "cola"] == "91.0 ± 1.4 (2)"  # 1e-3 chosen: seeds 0 and 1 at 90, 92
    assert ours.loc["hyperformer++", "trained/task"] == f"{100 * 400_000 / 5 / BACKBONE:.2f}%"
    assert ours.loc["st-adapters", "total params"] == f"{(BACKBONE + 5 * 100_000) / BACKBONE:.2f}×"
    assert (
        ours.loc["st-adapters", "average (these 5)"] == "71.0" and ours.loc["st-adapters", "average (8 tasks)"] == "–"
    )
    published = table.loc["published (T5-base)"]
    assert published.loc["hyperformer++", "average (these 5)"] == f"{np.mean([63.73, 94.03, 92.63, 89.66, 75.36]):.1f}"
    assert table.loc[("published (T5-base)", "hyperformer++"), "cola"] == 63.73
    assert (
        ar.constant_cola(records)
        == "CoLA runs at Matthews correlation 0 (one class for every sentence): st-adapters 0 of 3; "
        "hyperformer++ 0 of 2."
    )
    assert ar.constant_cola([_multi(glue, "full", 0, [0.0, 80, 80, 80, 60])]).endswith("mt-full 1 of 1.")
    rates = ar.rate_selection(records)
    assert rates[["learning_rate", "validation mean (seed 0)", "chosen"]].values.tolist() == [
        [3e-4, 60.0, False],
        [1e-3, 70.0, True],
    ]
    verdicts = ar.claims([], records).set_index("claim")["verdict"]
    assert verdicts.iloc[0] == "not run yet"
    assert verdicts["Hyperformer++ beats single-task adapters while training fewer parameters per task"] == "holds"
    more = [
        r if r["method"] != "hyperformer++" else {**r, "trainable_params": 600_000} for r in records
    ]  # 120k per task > 100k
    assert ar.claims([], more).set_index("claim")["verdict"].iloc[1] == "partly"


def test_ablations_low_resource_and_few_shot_are_read_off_their_settings():
    glue = ar.GLUE5
    records = [
        _multi(glue, "hyperformer++", 0, [80.0] * 5),
        _multi(glue, "layernorm", 0, [60.0] * 5),
        _multi(glue, "hyperformer++", 1, [50.0] * 5),  # seed 1: in the main table, not in the paired ablation
        _multi(glue, "hyperformer++", 0, [75.0] * 5, conditional_layer_norm=False),
        _multi(glue, "hyperformer++", 0, [70.0] * 5, cap=100),
        _multi(["imdb"], "hyperformer++", 0, [77.0], cap=4, transfer_from={"tasks": list(glue)}),
        _multi(["imdb"], "houlsby", 0, [70.0], cap=4),
    ]
    ablation = ar.ablation_table(records).set_index("model")["ours: mean test score"]
    assert ablation["hyperformer++"] == 80.0 and ablation["no adapter blocks"] == 60.0
    assert ablation["no conditional layer norm"] == 75.0 and np.isnan(ablation["no task projector"])
    curve = ar.low_resource(records)
    assert curve[curve["label"] == "hyperformer++"].set_index("cap")["mean test score"].to_dict() == {
        100: 70.0,
        1000: 65.0,
    }  # seeds 0-1
    shots = ar.few_shot(records).set_index(["task", "k"])
    assert shots.loc[("imdb", 4), "ours hyperformer++"] == "77.0 ± 0.0 (1)"
    assert shots.loc[("imdb", 4), "published hyperformer++"] == 81.77
    assert isinstance(ar.few_shot([]), pd.DataFrame)
    claims = ar.claims([], records).set_index("claim")
    ablation = claims.loc["Each component of Hyperformer++ helps (removing it lowers the mean test score)"]
    assert (ablation["ours"], ablation["verdict"]) == (
        "without adapter blocks: +20.0; without conditional layer norm: +5.0",
        "holds",
    )
    few = claims.loc[
        "Few-shot: a new task embedding for a trained Hyperformer++ beats a single-task adapter on the same k"
    ]
    assert (few["ours"], few["verdict"]) == ("imdb k=4: +7.0", "holds")
    low = claims.loc["Hyperformer++ beats multi-task fine-tuning at every training size per task"]
    assert low["verdict"] == "not run yet"  # no multi-task fine-tuning at several sizes


def test_low_resource_uses_the_chosen_rate_and_judges_every_size():
    glue = ar.GLUE5
    records = [
        _multi(glue, "hyperformer++", 0, [80.0] * 5, lr=1e-4, validation=60.0),
        _multi(glue, "hyperformer++", 0, [10.0] * 5, lr=1e-3, validation=30.0),  # a collapsed rate: not on the curve
        _multi(glue, "hyperformer++", 0, [70.0] * 5, lr=1e-4, cap=100),
        _multi(glue, "full", 0, [78.0] * 5, lr=1e-4),
        _multi(glue, "full", 0, [72.0] * 5, lr=1e-4, cap=100),
    ]
    curve = ar.low_resource(records).set_index(["label", "cap"])["mean test score"]
    assert curve[("hyperformer++", 1000)] == 80.0 and curve[("mt-full", 100)] == 72.0
    low = (
        ar.claims([], records)
        .set_index("claim")
        .loc["Hyperformer++ beats multi-task fine-tuning at every training size per task"]
    )
    assert (low["ours"], low["verdict"]) == ("100 per task: -2.0; 1000 per task: +2.0", "partly")


def test_costs_count_every_run_of_both_studies():
    fusion = [
        {
            **_fusion("rte", "fusion", s, 60),
            "train_runtime_s": 10.0,
            "eval_runtime_s": 2.0,
            "train_examples_per_s": 5.0,
            "peak_rss_mb": 900.0,
        }
        for s in range(2)
    ]
    hyper = [
        {
            **_multi(ar.GLUE5, "hyperformer++", 0, [80.0] * 5),
            "eval_runtime_s": 3.0,
            "train_examples_per_s": 7.0,
            "peak_rss_mb": 1000.0,
        }
    ]
    spent = ar.cost_runs(fusion, hyper)
    table = ar.costs(spent).set_index(["study", "method"])
    assert table.loc[("fusion", "fusion"), "runs"] == 2 and table.loc[("fusion", "fusion"), "train_s"] == 20.0
    assert table.loc[("hyperformer", "hyperformer++"), "examples_per_s"] == 7.0
