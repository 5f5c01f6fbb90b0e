"""Settings are chosen on a selection split carved from the training data, never on the reported split."""

import numpy as np
import pytest

from adaptstudy.data.errors import DataNotFoundError
from adaptstudy.data.splits import carve_selection
from adaptstudy.data.tasks import load_selection_file, load_task, resolve_task
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.training.finetune import finetune
from adaptstudy.training.splits import finetune_splits


def texts(dataset) -> set[tuple[str, str]]:
    """The examples as (premise, hypothesis) pairs: RTE repeats premises across examples."""
    return set(zip(dataset["text_a"], dataset["text_b"]))


def test_the_selection_split_is_a_stratified_tenth_of_train_capped_at_1000(data_dir):
    rte = load_task("rte", data_dir)["train"]
    rest, selection = carve_selection(rte, resolve_task("rte"))
    assert (len(rest), len(selection)) == (len(rte) - 249, 249)
    assert not texts(rest) & texts(selection)
    share = np.mean(rte["label"])
    assert abs(np.mean(selection["label"]) - share) * len(selection) <= 1  # stratified to within one example
    sst2 = load_task("sst2", data_dir)["train"]
    assert len(carve_selection(sst2, resolve_task("sst2"))[1]) == 1000


def test_every_run_of_a_task_sees_the_same_selection_split_and_never_trains_on_it(data_dir):
    runs = [
        FinetuneConfig(task="rte", selection_split=True, max_train_examples=cap, data_seed=seed, seed=seed)
        for cap, seed in ((64, 0), (500, 1), (None, 2))
    ]
    splits = [finetune_splits(r) for r in runs]
    assert all(texts(s["selection"]) == texts(splits[0]["selection"]) for s in splits)
    assert [len(s["train"]) for s in splits] == [64, 500, 2490 - 249]
    assert all(not texts(s["train"]) & texts(s["selection"]) for s in splits)
    assert len(splits[0]["dev"]) == 277  # the reported split is untouched
    plain = FinetuneConfig(task="rte")
    assert "selection_split" not in plain.identity()  # earlier runs keep their ids
    assert FinetuneConfig(task="rte", selection_split=True).run_id != plain.run_id


def test_a_few_shot_task_selects_on_its_own_dev32_and_keeps_its_32_training_examples(data_dir, tmp_path):
    """Carving a tenth of CB's 32 examples left 3 to select on (one per class at best) and 29 to train on."""
    splits = finetune_splits(FinetuneConfig(task="cb", selection_split=True, data_dir=str(data_dir)))
    assert (len(splits["train"]), len(splits["selection"]), len(splits["dev"])) == (32, 32, 56)
    assert not texts(splits["train"]) & texts(splits["selection"])
    assert not texts(splits["dev"]) & texts(splits["selection"])
    assert set(splits["selection"]["label"]) <= {0, 1, 2}
    with pytest.raises(DataNotFoundError, match=r"dev32.jsonl.*data mirror only"):
        load_selection_file("wic", tmp_path)  # a mirror without it (the Hub copies have no dev32)


def test_a_run_with_a_selection_split_records_its_scores_there(data_dir):
    config = FinetuneConfig(
        task="rte",
        method="houlsby",
        adapter_size=8,
        selection_split=True,
        max_train_examples=32,
        num_train_epochs=1,
        max_seq_length=32,
        batch_size=16,
    )
    record = finetune(config, write=False)
    assert record["selection_examples"] == 249 and record["eval_examples"] == 277
    assert record["selection_metric_value"] == record["selection_metrics"]["accuracy"]
    assert 0 <= record["selection_metric_value"] <= 100
