"""Predictions a record stores: compact, in the split's order, tied to the examples by a fingerprint."""

import numpy as np
import pytest

from adaptstudy.data import load_task
from adaptstudy.runs.predictions import decode, encode, examples_sha256, stored_predictions


def test_class_ids_and_scores_round_trip_through_the_stored_string():
    ids = np.array([0, 1, 12, 2, 0, 35])
    assert encode(ids, regression=False) == "01c20z"
    assert decode({"kind": "class_ids", "values": encode(ids, False)}).tolist() == ids.tolist()
    scores = np.array([0.12344, 4.99996, -1.0])
    stored = decode({"kind": "scores", "values": encode(scores, True)})
    assert np.allclose(stored, scores, atol=5e-5)


def test_class_ids_beyond_what_one_character_holds_are_refused():
    with pytest.raises(ValueError, match=r"0\.\.35"):
        encode(np.array([0, 36]), regression=False)


def test_the_fingerprint_names_the_examples_and_their_order(data_dir):
    dev = load_task("rte", data_dir)["dev"]
    stored = stored_predictions(np.zeros(len(dev), dtype=int), dev, "dev", regression=False)
    assert stored["examples"] == 277 and stored["values"] == "0" * 277
    assert stored["examples_sha256"] == examples_sha256(load_task("rte", data_dir)["dev"])  # same examples, same hash
    assert examples_sha256(dev.select(range(276, -1, -1))) != stored["examples_sha256"]  # another order
    assert examples_sha256(dev.select(range(276))) != stored["examples_sha256"]  # one example fewer
