import json
import re

import numpy as np
import pytest

from adaptstudy.common.registry import UnknownNameError
from adaptstudy.data import TASKS, DataNotFoundError, MalformedDataError, load_task, register_task, resolve_task
from adaptstudy.data.builders import HELPFUL_MIN_VOTES, HELPFUL_SHARE, blitzer_reviews, helpfulness_rows
from adaptstudy.data.splits import subsample
from adaptstudy.runs.base import ConfigError
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.training.config_checks import checked

# Split sizes and label sets as the mirror's README gives them.
GLUE = {
    "cola": (8551, 1043, {0, 1}),
    "sst2": (67349, 872, {0, 1}),
    "mrpc": (3668, 408, {0, 1}),
    "stsb": (5749, 1500, None),
    "rte": (2490, 277, {0, 1}),
    "wnli": (635, 71, {0, 1}),
}


@pytest.mark.parametrize("name", sorted(GLUE))
def test_glue_task_loads_with_published_counts_and_labels(name, data_dir):
    n_train, n_dev, labels = GLUE[name]
    splits = load_task(name, data_dir)
    assert (len(splits["train"]), len(splits["dev"])) == (n_train, n_dev)
    spec = resolve_task(name)
    for split in ("train", "dev"):
        ds = splits[split]
        assert all(t.strip() for t in ds["text_a"])
        assert ("text_b" in ds.column_names) == (len(spec.text_fields) == 2)
        if labels is None:
            assert 0.0 <= min(ds["label"]) and max(ds["label"]) <= 5.0
        else:
            assert set(ds["label"]) == labels


def test_quotes_are_kept_verbatim(data_dir):
    # MRPC dev row 1 starts with a quote; with csv quoting on it would swallow the tab-separated rest.
    dev = load_task("mrpc", data_dir)["dev"]
    assert dev[0]["text_b"].startswith('" The foodservice pie business')
    assert dev[0]["label"] == 1


def test_rte_string_labels_map_in_hub_order(data_dir):
    first = load_task("rte", data_dir)["train"][0]
    assert first["text_b"] == "Weapons of Mass Destruction Found in Iraq."
    assert first["label"] == resolve_task("rte").labels.index("not_entailment") == 1


def test_subsampling_is_seeded_and_stable(data_dir):
    train = load_task("rte", data_dir)["train"]
    a = list(subsample(train, 100, seed=3)["text_a"])
    assert a == list(subsample(train, 100, seed=3)["text_a"])
    assert a != list(subsample(train, 100, seed=4)["text_a"])
    assert len(set(a)) == 100
    assert len(subsample(train, 10**6, seed=0)) == len(train)
    assert len(load_task("rte", data_dir, max_train_examples=50)["train"]) == 50


def test_custom_jsonl_task_from_a_mapping(data_dir):
    spec = {
        "name": "chemprot-custom",
        "format": "jsonl",
        "files": {"train": "dsp/chemprot/train.jsonl", "dev": "dsp/chemprot/dev.jsonl"},
        "text_fields": ["text"],
        "label_field": "label",
        "labels": [
            "ACTIVATOR",
            "AGONIST",
            "AGONIST-ACTIVATOR",
            "AGONIST-INHIBITOR",
            "ANTAGONIST",
            "DOWNREGULATOR",
            "INDIRECT-DOWNREGULATOR",
            "INDIRECT-UPREGULATOR",
            "INHIBITOR",
            "PRODUCT-OF",
            "SUBSTRATE",
            "SUBSTRATE_PRODUCT-OF",
            "UPREGULATOR",
        ],
        "metrics": ["micro_f1", "macro_f1"],
        "main_metric": "micro_f1",
    }
    splits = load_task(spec, data_dir)
    assert (len(splits["train"]), len(splits["dev"])) == (4169, 2427)
    assert len(set(splits["train"]["label"])) == 13


def test_unknown_task_lists_valid_names():
    with pytest.raises(
        UnknownNameError,
        match=r"unknown task 'rtee' \(did you mean 'rte'\?\); valid: acl-arc, agnews, cb, chemprot, cola, .*wic, wnli",
    ):
        load_task("rtee")


def test_missing_data_names_the_directory_and_the_setting(tmp_path):
    with pytest.raises(DataNotFoundError, match=rf"{tmp_path}.*ADAPTSTUDY_DATA"):
        load_task("rte", tmp_path)


def _tsv_task(tmp_path, body: str, labels=("a", "b")):
    (tmp_path / "t").mkdir(exist_ok=True)
    (tmp_path / "t" / "train.tsv").write_text("text\tlabel\n" + body)
    (tmp_path / "t" / "test.tsv").write_text("text\tlabel\nheld out\tb\n")
    return {
        "name": "tiny",
        "format": "tsv",
        "files": {"train": "t/train.tsv", "test": "t/test.tsv"},
        "text_fields": ["text"],
        "label_field": "label",
        "labels": list(labels),
        "metrics": ["accuracy"],
        "main_metric": "accuracy",
    }


@pytest.mark.parametrize(
    "body, message",
    [
        ("good\ta\nbad row without tab\n", r"train.tsv:3: expected 2 columns"),
        ("good\ta\nfine\tc\n", r"train.tsv:3: label 'c' is not one of \['a', 'b'\]"),
        ("good\ta\n  \tb\n", r"train.tsv:3: empty text"),
        ("x\ta\ty\n", r"train.tsv:2: expected 2 columns"),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path, body, message):
    with pytest.raises(MalformedDataError, match=message):
        load_task(_tsv_task(tmp_path, body), tmp_path)


def test_malformed_jsonl_names_line(tmp_path):
    rows = [{"text": "ok", "label": "a"}, {"text": "no label"}]
    (tmp_path / "d.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    spec = {
        "name": "j",
        "format": "jsonl",
        "files": {"train": "d.jsonl", "dev": "d.jsonl"},
        "text_fields": ["text"],
        "label_field": "label",
        "labels": ["a"],
        "metrics": ["accuracy"],
        "main_metric": "accuracy",
    }
    with pytest.raises(MalformedDataError, match=r"d.jsonl:2: no label field 'label'"):
        load_task(spec, tmp_path)


def test_a_registered_custom_task_is_found_by_name(tmp_path):
    spec = register_task(_tsv_task(tmp_path, "one\ta\ntwo\tb\n") | {"name": "tiny-registered"})
    assert "tiny-registered" in TASKS
    assert load_task("tiny-registered", tmp_path)["train"]["label"] == [0, 1]
    assert spec.eval_split == "test"


def test_a_task_without_an_evaluation_split_is_rejected():
    spec = {
        "name": "x",
        "format": "jsonl",
        "files": {"train": "a.jsonl"},
        "text_fields": ["t"],
        "label_field": "l",
        "labels": ["a"],
        "metrics": ["accuracy"],
        "main_metric": "accuracy",
    }
    with pytest.raises(ValueError, match="needs a 'train' split and an evaluation split"):
        resolve_task(spec)


DUPLICATED_IMDB_REVIEWS = 92  # distinct texts that occur more than once among the 25k labelled reviews


def test_imdb_loads_the_mirrors_20k_and_5k_balanced(data_dir):
    splits = load_task("imdb", data_dir)
    assert (len(splits["train"]), len(splits["dev"])) == (20000, 5000)
    assert sum(splits["dev"]["label"]) == 2500


@pytest.mark.parametrize("share", [0.9, 0.3])
def test_resplit_pools_all_reviews_and_splits_them_stratified_and_disjoint(share, data_dir):
    splits = load_task("imdb", data_dir, resplit_train_share=share, data_seed=0)
    train, dev = splits["train"], splits["dev"]
    assert len(train) == round(share * 25000) and len(train) + len(dev) == 25000
    assert abs(sum(train["label"]) / len(train) - 0.5) < 1e-3  # stratified: both halves balanced
    assert len(set(train["text_a"]) & set(dev["text_a"])) <= DUPLICATED_IMDB_REVIEWS  # only reviews that occur twice
    again = load_task("imdb", data_dir, resplit_train_share=share, data_seed=0)
    assert again["train"]["text_a"][:5] == train["text_a"][:5]


def test_resplit_caps_nest_the_smaller_setting_in_the_larger_pool(data_dir):
    """The 30%/70% setting with a third of the 90%/10% setting's training cap, and a capped dev set."""
    big = load_task("imdb", data_dir, max_train_examples=1200, resplit_train_share=0.9, max_eval_examples=500)
    small = load_task("imdb", data_dir, max_train_examples=400, resplit_train_share=0.3, max_eval_examples=500)
    assert (len(big["train"]), len(big["dev"]), len(small["train"]), len(small["dev"])) == (1200, 500, 400, 500)
    assert len(set(small["train"]["text_a"]) & set(small["dev"]["text_a"])) <= DUPLICATED_IMDB_REVIEWS


@pytest.mark.parametrize(
    "name, sizes, labels, metric",
    [
        ("chemprot", (4169, 2427, 3469), 13, "micro_f1"),
        ("acl-arc", (1688, 114, 139), 6, "macro_f1"),
        ("scierc", (3219, 455, 974), 7, "macro_f1"),
    ],
)
def test_dont_stop_pretraining_tasks_load_with_their_sizes_labels_and_metric(name, sizes, labels, metric, data_dir):
    splits = load_task(name, data_dir)
    assert tuple(len(splits[s]) for s in ("train", "dev", "test")) == sizes
    spec = resolve_task(name)
    assert spec.num_labels == labels and spec.main_metric == metric and spec.eval_split == "dev"
    assert set(splits["train"]["label"]) <= set(range(labels))


@pytest.mark.parametrize(
    "name, sizes, positives",
    [
        ("hyperpartisan", (516, 64, 65), 238),
        ("agnews", (8980, 1000, 7600), None),
        ("helpfulness", (2415, 345, 690), None),
    ],
)
def test_built_tasks_have_fixed_disjoint_splits(name, sizes, positives, data_dir):
    splits = load_task(name, data_dir)
    assert tuple(len(splits[s]) for s in ("train", "dev", "test")) == sizes
    texts = {s: set(splits[s]["text_a"]) for s in splits}
    assert not texts["train"] & texts["dev"] and not texts["dev"] & texts["test"] and not texts["train"] & texts["test"]
    if positives is not None:  # every article kept, labels as published (238 hyperpartisan)
        assert sum(sum(splits[s]["label"]) for s in splits) == positives
    assert load_task(name, data_dir, data_seed=7)["dev"]["text_a"] == splits["dev"]["text_a"]  # the split is fixed


def test_helpfulness_follows_its_vote_rule(data_dir):
    reviews = blitzer_reviews(data_dir)
    assert len(reviews) == 8000  # 4 domains x (1000 positive + 1000 negative)
    rows = helpfulness_rows(data_dir)
    by_id = {f"{r['domain']}/{r['unique_id']}": r for r in reviews}
    assert len(rows) == 3523 - 73  # repeated review texts kept once
    for row in rows[:200]:
        helpful, votes = map(int, by_id[row["id"]]["helpful"].split(" of "))
        assert votes >= HELPFUL_MIN_VOTES and row["label"] == int(helpful / votes >= HELPFUL_SHARE)
    assert 0.4 < np.mean([r["label"] for r in rows]) < 0.6


@pytest.mark.parametrize("name, dev_labels", [("cb", [23, 28, 5]), ("rte-fewglue", [146, 131]), ("wic", [319, 319])])
def test_fewglue_tasks_have_32_training_examples_and_the_official_validation_set(name, dev_labels, data_dir):
    splits = load_task(name, data_dir)
    assert len(splits["train"]) == 32
    assert np.bincount(splits["dev"]["label"]).tolist() == dev_labels
    assert "text_b" in splits["dev"].column_names


def test_a_file_that_is_not_utf8_names_file_and_line(tmp_path):
    spec = _tsv_task(tmp_path, "good\ta\n")
    (tmp_path / "t" / "train.tsv").write_bytes(b"text\tlabel\ngood\ta\ncaf\xe9 latin-1\tb\n")
    with pytest.raises(MalformedDataError, match=r"train.tsv:3: not UTF-8 text \(invalid continuation byte\)"):
        load_task(spec, tmp_path)


def test_a_data_dir_that_is_a_file_says_so_at_once(tmp_path):
    not_a_folder = tmp_path / "mirror.tar"
    not_a_folder.write_text("")
    with pytest.raises(DataNotFoundError, match=rf"data_dir {not_a_folder} is a file, not a folder"):
        load_task("rte", not_a_folder)


def test_truncation_says_what_each_length_cuts_on_real_reviews(data_dir):
    from adaptstudy.data.describe import token_lengths, truncation
    from adaptstudy.models.backbones import load_tokenizer

    reviews = load_task("imdb", data_dir)["train"].select(range(300))["text_a"]
    counts = token_lengths(reviews, load_tokenizer("minilm-l6"))
    table = truncation(counts, [128, 256, 100_000]).set_index("max_seq_length")
    assert table.loc[100_000, "texts cut (%)"] == 0 and table.loc[100_000, "tokens kept (%)"] == 100
    assert 60 < table.loc[128, "texts cut (%)"] < 100  # IMDb reviews average about 300 tokens
    assert table.loc[128, "tokens kept (%)"] < table.loc[256, "tokens kept (%)"] < 100
    assert table.loc[128, "tokens per example"] <= 128 and table.loc[128, "cost vs shortest"] == 1


def test_packing_says_what_it_gains_over_one_text_per_row_on_real_reviews(data_dir):
    """The draft's packing arithmetic on our reviews corpus: a packed row holds row length / (mean length + 1) texts,
    and carries row length / (mean text an unpacked row holds) times its text tokens; at a length no text reaches
    the gain is exactly how many texts share a row."""
    from adaptstudy.data.corpora import load_corpus
    from adaptstudy.data.describe import packing, token_lengths
    from adaptstudy.models.backbones import load_tokenizer

    tokenizer = load_tokenizer("minilm-l6")
    texts = load_corpus("reviews", data_dir).documents[:200]
    lengths = [len(ids) for ids in tokenizer(texts, verbose=False)["input_ids"]]  # [CLS] and [SEP] included
    assert token_lengths(texts, tokenizer).tolist() == lengths
    table = packing(lengths, [128, 100_000]).set_index("row length")
    assert table.loc[128, "mean text tokens"] == pytest.approx(sum(lengths) / len(lengths) - 2)
    assert table.loc[100_000, "text in an unpacked row (%)"] == pytest.approx(100 * (sum(lengths) / 200) / 100_000)
    assert table.loc[100_000, "gain in tokens per row"] == pytest.approx(100_000 / (sum(lengths) / 200))
    assert 1 < table.loc[128, "gain in tokens per row"] < table.loc[100_000, "gain in tokens per row"]


@pytest.mark.parametrize("path", ["../x.csv", "/etc/x.csv", "sub/../../x.csv"])
def test_a_custom_task_file_outside_the_data_folder_stops_with_one_error_unless_allowed(tmp_path, path):
    """Files are relative to the data directory; `/abs` and `../` were read from wherever they led without a word."""
    spec = {
        "name": "outside",
        "format": "csv",
        "files": {"train": path, "dev": "dev.csv"},
        "text_fields": ["text"],
        "label_field": "label",
        "labels": ["a", "b"],
        "metrics": ["accuracy"],
        "main_metric": "accuracy",
    }
    with pytest.raises(ConfigError, match=rf"train file '{re.escape(path)}' is outside the data directory"):
        checked(FinetuneConfig, {"task": spec})  # the config holds it; the checks before any work refuse it
    assert resolve_task({**spec, "files_outside_data_dir": True}).files["train"] == path


def test_a_truncated_hyperpartisan_file_is_named(tmp_path, data_dir):
    folder = tmp_path / "hyperpartisan"
    folder.mkdir()
    for source in (data_dir / "hyperpartisan").glob("*.xml"):
        (folder / source.name).write_bytes(source.read_bytes())
    articles = folder / "articles-training-byarticle-20181122.xml"
    articles.write_bytes(articles.read_bytes()[:100_000])
    with pytest.raises(MalformedDataError, match=rf"{re.escape(str(articles))} is not well-formed XML \(no element"):
        load_task("hyperpartisan", tmp_path)
