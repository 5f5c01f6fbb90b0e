"""Unlabelled corpora from the mirror: real text, tags removed, and never a task's evaluation texts."""

import pytest

from adaptstudy.data import load_task
from adaptstudy.data.corpora import CORPORA, load_corpus


def test_general_corpus_is_plain_text_without_brown_tags(data_dir):
    corpus = load_corpus("general", data_dir)
    assert corpus.words > 2_000_000 and corpus.excluded == 0
    assert corpus.documents[0].startswith("The Fulton County Grand Jury said Friday")
    assert not any("/at " in d or "/nn " in d for d in corpus.documents[:500])


def test_the_neutral_corpus_is_brown_without_news_or_reviews(data_dir):
    neutral, general, news = (load_corpus(c, data_dir).documents for c in ("neutral", "general", "news"))
    assert set(neutral) < set(general) and not set(neutral) & set(news)
    assert neutral[0].startswith("As a result , although we still make use of this distinction")  # cd01, religion
    assert not any(d.startswith("The Fulton County Grand Jury") for d in neutral)  # ca01, press reportage
    assert 900_000 < load_corpus("neutral", data_dir).words < 1_000_000


def test_reviews_corpus_leaves_out_what_helpfulness_evaluates_on(data_dir):
    everything = load_corpus("reviews", data_dir)
    clean = load_corpus("reviews", data_dir, exclude_eval_of=["helpfulness"])
    held_out = load_task("helpfulness", data_dir)
    evaluated = {" ".join(t.split()).lower() for s in ("dev", "test") for t in held_out[s]["text_a"]}
    assert clean.excluded >= len(evaluated) and len(clean.documents) == len(everything.documents) - clean.excluded
    assert not evaluated & {" ".join(d.split()).lower() for d in clean.documents}
    train = {" ".join(t.split()).lower() for t in held_out["train"]["text_a"]}
    assert train <= {
        " ".join(d.split()).lower() for d in clean.documents
    }  # training reviews stay: TAPT-like overlap is allowed


def test_task_corpus_is_the_training_texts(data_dir):
    corpus = load_corpus("task:acl-arc", data_dir)
    assert corpus.documents == list(load_task("acl-arc", data_dir)["train"]["text_a"])


def test_unknown_corpus_lists_valid_names():
    with pytest.raises(Exception, match=r"unknown corpus 'review'.*valid: general, neutral, news, reviews"):
        CORPORA.get("review")
