"""Learner.weights(): the model's weights by feature name, as --invert_hash names them."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from conftest import readable_body, run_olearn
from test_matrices import X, Y, svmlight_lines

from olearn import Learner

LINES = ["1 |a x y:2 |b z w:abc", "0 |a x |b w:abc", "2 |a y | anon", "1 |b z:0.5 |a q"] * 5


def invert_hash_weights(path) -> dict[str, float]:
    """``name:index:w ...`` lines of an --invert_hash file as {name: w}."""
    weights = {}
    for line in readable_body(path.read_text()):
        name, _, w = line.split(" ")[0].rsplit(":", 2)
        weights[name] = float(w)
    return weights


@pytest.mark.parametrize("options", ["", "-q ab --ngram a2", "-c --passes 3 --holdout_off",
                                     "--boa --radius 2", "--oaa 3"])
def test_weights_are_the_invert_hash_weights_by_name(tmp_path, options):
    data = tmp_path / "train.vw"
    data.write_text("\n".join(LINES) + "\n")
    out = tmp_path / "names.txt"
    code, _, err = run_olearn("-d", data, "--invert_hash", out, "--quiet", *options.split())
    assert code == 0, err
    expected = invert_hash_weights(out)
    got = Learner(options, names=True).fit(str(data)).weights()
    assert set(got) == set(expected)
    for name, w in expected.items():
        assert got[name] == pytest.approx(w, rel=1e-5, abs=1e-30), name


def test_weights_name_a_matrix_column_as_its_svmlight_feature():
    from_text = Learner(names=True).fit(svmlight_lines(X, Y)).weights()
    from_matrix = Learner(names=True).fit(X, Y).weights()
    assert from_matrix == from_text
    assert {f"f^{j}" for j in range(X.shape[1])} | {"Constant"} == set(from_matrix)


def test_weights_name_dataframe_columns_and_dicts_as_their_text():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"age": [30, 40, 0], "city": ["paris", None, "rome"],
                              "item": ["a", "b", "a"]})
    y = [1, 0, 1]
    lines = ["1 |user age:30 city:paris |i item:a", "0 |user age:40 |i item:b",
             "1 |user city:rome |i item:a"]
    from_text = Learner(names=True, quadratic=["ui"]).fit(lines).weights()
    from_frame = Learner(names=True, quadratic=["ui"]).fit(
        frame, y, namespaces={"user": ["age", "city"], "i": ["item"]}).weights()
    one_by_one = Learner(names=True, quadratic=["ui"])
    for row, label in zip(frame.to_dict("records"), y):
        one_by_one.learn_one({(("i" if k == "item" else "user"), k): v for k, v in row.items()},
                             label)
    assert from_frame == from_text
    assert one_by_one.weights() == from_text
    assert "user^city^paris*i^item^a" in from_text


def test_weights_without_names_are_keyed_by_index():
    named = Learner(names=True).fit(LINES)
    unnamed = Learner().fit(LINES)
    by_index = unnamed.weights()
    assert all(isinstance(j, int) for j in by_index)
    assert sorted(by_index.values()) == sorted(named.weights().values())
    w = unnamed._learner.weights[:, 0]
    assert by_index == {j: float(w[j]) for j in np.flatnonzero(w)}


def test_a_loaded_model_names_only_what_it_reads_again(tmp_path):
    path = tmp_path / "m.olearn"
    Learner().fit(LINES).save(path)
    loaded = Learner.load(path, names=True)
    loaded.predict(["|a x"])
    keys = loaded.weights()
    assert "a^x" in keys and "Constant" in keys and "a^y" not in keys
    assert any(isinstance(k, int) for k in keys)


def test_a_pickled_learner_keeps_its_names():
    learner = Learner(names=True).fit(LINES)
    copy = pickle.loads(pickle.dumps(learner))
    assert copy.weights() == learner.weights()
    copy.learn_one({"new": 1.0}, 1)
    assert "f^new" in copy.weights()
