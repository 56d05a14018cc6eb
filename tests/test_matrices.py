"""Numeric input: Learner.fit(X, y), predict(X), decision_function(X) on numpy arrays and
scipy.sparse matrices (olearn/data/matrices.py)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_DATA, run_olearn
from hypothesis import given, settings
from hypothesis import strategies as st

from olearn import Learner, OlearnError, OptionError
from olearn.data import matrices
from olearn.data.hashing import hash_bytes
from olearn.data.matrices import DictExamples
from olearn.kernel import kept

RNG = np.random.default_rng(11)
# whole numbers: VW's number reader (data/numbers.py) is not correctly rounded ("1.359375" reads
# as 1.3593749), so only they read from text exactly as the numeric path takes them
X = np.round(RNG.normal(size=(500, 12)) * 3) * (RNG.random((500, 12)) < 0.4)
Y = np.round(X @ RNG.normal(size=12) + RNG.normal(size=500))


def svmlight_lines(X: np.ndarray, y: np.ndarray, weights=None) -> list[str]:
    """The rows as svmlight text, column j as feature j, values exactly (repr)."""
    lines = []
    for i, row in enumerate(X):
        importance = "" if weights is None else f" {float(weights[i])!r}"
        features = " ".join(f"{j}:{float(v)!r}" for j, v in enumerate(row) if v != 0)
        lines.append(f"{float(y[i])!r}{importance} |f {features}")
    return lines


@pytest.mark.parametrize("options", ["", "--hash all -b 10", "--noconstant --sgd",
                                     "--passes 3 --holdout_period 5"])
def test_a_matrix_learns_what_its_text_learns(options):
    from_text = Learner(options).fit(svmlight_lines(X, Y))
    from_matrix = Learner(options).fit(X, Y)
    assert from_matrix.average_loss == from_text.average_loss
    np.testing.assert_array_equal(from_matrix.predict(X[:50]),
                                  from_text.predict(svmlight_lines(X[:50], Y[:50])))


def test_a_matrix_of_several_batches_made_ahead_learns_what_its_text_learns():
    rows = 2 * matrices.ROWS_PER_BATCH + 100  # batches made on a second thread (read_ahead)
    many = np.tile(X, (rows // len(X) + 1, 1))[:rows]
    labels = np.tile(Y, rows // len(Y) + 1)[:rows]
    from_text = Learner().fit(svmlight_lines(many, labels))
    from_matrix = Learner().fit(many, labels)
    assert from_matrix.average_loss == from_text.average_loss
    assert len(from_matrix.history.examples) == len(from_text.history.examples)
    np.testing.assert_array_equal(from_matrix.predict(many), from_text.predict(
        svmlight_lines(many, labels)))


def test_an_error_made_ahead_is_raised_by_fit_before_learning():
    rows = matrices.ROWS_PER_BATCH + 1
    learner = Learner()
    with pytest.raises(OlearnError, match="y: 8193 finite numbers expected"):
        learner.fit(np.ones((rows, 2)), np.ones(rows - 1))
    assert np.isnan(learner.average_loss)


def test_sample_weight_is_the_importance():
    weights = np.round(RNG.random(500) * 3)
    from_text = Learner().fit(svmlight_lines(X, Y, weights))
    from_matrix = Learner().fit(X, Y, sample_weight=weights)
    assert from_matrix.average_loss == from_text.average_loss


@pytest.mark.parametrize("kind", ["csr", "csc", "coo"])
def test_sparse_matrices_learn_what_the_array_learns(kind):
    sparse = pytest.importorskip("scipy.sparse")
    matrix = getattr(sparse, f"{kind}_matrix")(X)
    dense = Learner().fit(X, Y)
    assert Learner().fit(matrix, Y).average_loss == dense.average_loss
    np.testing.assert_array_equal(Learner().fit(matrix, Y).predict(matrix), dense.predict(X))


def test_decision_function_is_the_raw_score():
    learner = Learner(loss_function="logistic", link="logistic").fit(X, np.sign(Y))
    raw = learner.decision_function(X)
    np.testing.assert_allclose(learner.predict(X), 1 / (1 + np.exp(-np.clip(raw, -50, 50))),
                               rtol=1e-5)


@pytest.mark.parametrize("bad, message", [
    ({"y": Y[:-1]}, "y: 500 finite numbers"),
    ({"y": np.where(np.arange(500) == 3, np.nan, Y)}, "y: 500 finite numbers"),
    ({"sample_weight": -np.ones(500)}, "importances must be >= 0"),
    ({"X": np.where(np.arange(12) == 2, np.inf, X)}, "NaN or infinite"),
])
def test_bad_numeric_input_is_one_clear_error(bad, message):
    args = {"X": X, "y": Y, **bad}
    with pytest.raises(OlearnError, match=message):
        Learner().fit(args.pop("X"), **args)


def test_a_matrix_needs_its_labels_and_lines_take_none():
    with pytest.raises(OptionError, match="needs its labels"):
        Learner().fit(X)
    with pytest.raises(OptionError, match="go with a matrix"):
        Learner().fit(["1 |a x"], Y)


A9A = SHARED_DATA / "a9a" / "train.svm.gz"


@pytest.mark.skipif(not A9A.exists(), reason="no ../shared/data/a9a")
def test_a9a_loaded_with_scikit_learn_learns_as_the_command_line():
    datasets = pytest.importorskip("sklearn.datasets")
    X_a9a, y_a9a = datasets.load_svmlight_file(str(A9A), zero_based=True)
    learner = Learner().fit(X_a9a, y_a9a)
    rc, _, err = run_olearn("-d", A9A)
    assert rc == 0, err
    cli_loss = float(re.search(r"average loss = (\S+)", err)[1])
    assert round(learner.average_loss, 6) == cli_loss


def test_a_dataframe_learns_what_its_text_learns():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"age": [30, 0, 41, np.nan, 25, 30] * 40,
                              "city": ["paris", "rome", None, "x12", "paris", "oslo"] * 40,
                              "item": pandas.Categorical(["a", "b", "a", "c", "b", "a"] * 40),
                              "n": [1, 2, 3, 4, 5, 6] * 40})
    labels = np.array([1.0, 0, 1, 0, 1, 1] * 40)
    lines = []
    for (age, city, item, count), label in zip(frame.itertuples(index=False), labels):
        user = " ".join(part for part in (f"age:{age:g}" if age == age and age else "",
                                          "" if pandas.isna(city) else f"city:{city}") if part)
        lines.append(f"{label:g} |u {user} |i item:{item} |f n:{count}")
    options = "-q ui"
    namespaces = {"u": ["age", "city"], "i": ["item"]}
    from_frame = Learner(options).fit(frame, labels, namespaces=namespaces)
    from_text = Learner(options).fit(lines)
    assert from_frame.average_loss == from_text.average_loss
    np.testing.assert_array_equal(from_frame.predict(frame.head(6)), from_text.predict(lines[:6]))


def test_dataframe_namespaces_must_name_its_columns():
    pandas = pytest.importorskip("pandas")
    with pytest.raises(OlearnError, match="no column 'z'"):
        Learner().fit(pandas.DataFrame({"a": [1.0]}), [1.0], namespaces={"u": ["z"]})


def test_learn_one_learns_what_the_lines_learn():
    examples = [({"age": 3, "city": "paris", ("u", "id"): 7}, 1.0),
                ({"age": 0, "city": None, ("u", "id"): 2.5}, 0.0),
                ({"n": float("nan"), "city": "rome"}, 1.0)] * 30
    lines = ["1 |f age:3 city:paris |u id:7", "0 |u id:2.5", "1 |f city:rome"] * 30
    one = Learner("-q fu")
    for x, y in examples:
        one.learn_one(x, y)
    from_lines = Learner("-q fu").fit(lines)
    assert one.average_loss == from_lines.average_loss
    assert one.predict_one(examples[0][0]) == from_lines.predict(lines[:1])[0]


def test_learn_one_on_numbers_learns_what_the_matrix_learns():
    # a dict of numbers under keys seen before takes the fast path (kept buffers, compiled
    # code called without numba's dispatcher); its zeros send it the general way
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(300, 6)), 2) * (rng.random((300, 6)) < 0.7)
    y = np.where(X.sum(axis=1) > 0, 1.0, -1.0)
    one = Learner(loss_function="logistic")
    for row, label in zip(X, y):
        one.learn_one({j: float(v) for j, v in enumerate(row) if v != 0}, label)
    matrix = Learner(loss_function="logistic").fit(X, y)
    assert one.average_loss == matrix.average_loss
    assert [one.predict_one(dict(enumerate(row.tolist()))) for row in X[:20]] == list(
        matrix.predict(X[:20]))


NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3),
                    st.sampled_from([0.0, -0.0, 1e-45, 3e38, 4e38, None]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.dictionaries(st.sampled_from(["a", "b", "c", 4, 4.0, True]), NUMBERS,
                                          min_size=1, max_size=4),
                          st.sampled_from([1.0, -1.0, 0.5])), min_size=1, max_size=12))
def test_learn_one_on_the_fast_path_learns_what_the_general_path_learns(examples):
    # names=True sends every dict the general way; without it, dicts of numbers under seen
    # keys take the fast path, whose values the kernel checks (a 0, NaN or inf: general way)
    fast, general = Learner(), Learner(names=True)
    for x, y in examples:
        outcomes = []
        for learner in (fast, general):
            try:
                learner.learn_one(x, y)
                outcomes.append(learner.predict_one(x))
            except OlearnError as error:
                outcomes.append(str(error))
        assert outcomes[0] == outcomes[1] or all(o != o for o in outcomes)  # (NaN == NaN)
    np.testing.assert_array_equal(fast._learner.weights, general._learner.weights)
    assert fast.average_loss == general.average_loss or np.isnan(general.average_loss)


def test_learn_one_follows_the_interactions_a_new_namespace_adds():
    # with -q ::, a new namespace makes new interaction terms (a new array): the learner's
    # arrays change between calls, and the compiled code is looked up again
    rows = [(ns, "abcd"[(k + 1) % 4], 1 + k % 3, k % 2) for k, ns in enumerate("abcd" * 20)]
    one = Learner("-q ::")
    for ns, other, x, y in rows:
        one.learn_one({(ns, "x"): x, (other, "y"): 2}, y)
    lines = [f"{y} |{ns} x:{x} |{other} y:2" for ns, other, x, y in rows]
    assert one.average_loss == Learner("-q ::").fit(lines).average_loss


def test_learn_one_past_the_kept_calls_learns_what_the_lines_learn():
    # the general path (a string value) makes a new batch each call, whose kernel arguments
    # the learner keeps until it holds KEPT_CALLS of them, then drops them all; the fast
    # path's kept batches come back among them
    from olearn.engine.learner import KEPT_CALLS
    examples, lines = [], []
    for k in range(KEPT_CALLS + 100):
        x = 1 + k % 7
        if k % 3:
            examples.append(({"a": x, "b": 2.0}, k % 2))
            lines.append(f"{k % 2} |f a:{x} b:2.0")
        else:
            examples.append(({"a": x, "c": "s" + str(k % 5)}, k % 2))
            lines.append(f"{k % 2} |f a:{x} c:s{k % 5}")
    one = Learner()
    for x, y in examples:
        one.learn_one(x, y)
    assert one.average_loss == Learner().fit(lines).average_loss


def test_learn_one_with_oaa_learns_what_the_lines_learn():
    # --oaa widens each batch's indices into a new array: no call is kept (the next dict of
    # as many features, under other keys, takes the same kept batch)
    rows = [(1 + k % 4 % 3, 1 + k % 5, k % 4) for k in range(200)]  # z tells the label
    one = Learner("--oaa 3")
    for label, x, z in rows:
        one.learn_one({"x": x, f"z{z}": 1}, label)
    lines = [f"{label} |f x:{x} z{z}:1" for label, x, z in rows]
    from_lines = Learner("--oaa 3").fit(lines)
    assert one.average_loss == from_lines.average_loss
    assert one.predict_one({"x": 2, "z": 1}) == from_lines.predict(["|f x:2 z:1"])[0]


def test_learn_one_refuses_non_finite_numbers():
    with pytest.raises(OlearnError, match="feature 'a': inf is infinite"):
        Learner().learn_one({"a": float("inf")}, 1.0)
    with pytest.raises(OlearnError, match="the label y nan must be a number"):
        Learner().learn_one({"a": 1.0}, float("nan"))


@pytest.mark.parametrize("label, weight, wrong", [(1e39, 1.0, "label y 1e[+]39"),
                                                  (-1e39, 1.0, "label y -1e[+]39"),
                                                  (1.0, 1e39, "weight 1e[+]39")])
def test_learn_one_refuses_a_label_or_weight_beyond_float32(label, weight, wrong):
    learner = Learner()
    learner.learn_one({"a": 1.0, "b": 2.0}, 1.0)  # the keys are seen: the fast path's dict
    with pytest.raises(OlearnError, match=f"the {wrong} must be .* within float32's range"):
        learner.learn_one({"a": 1.0, "b": 2.0}, label, weight)


@pytest.mark.parametrize("x, y, weight, message", [
    ({"a": 1.0, "b": 10 ** 400}, 1.0, 1.0, "feature 'b': 1000.*000 is out of float32's range"),
    ({"a": 1.0, "b": 1e39}, 1.0, 1.0, "feature 'b': 1e[+]39 is out of float32's range"),
    ({"a": [1.0], "b": 2.0}, 1.0, 1.0, r"feature 'a': \[1.0\] is not a number, a string or None"),
    ({"a": np.ones(2), "b": 2.0}, 1.0, 1.0, "feature 'a': array.* is not a number"),
    ({"a": 1.0, "b": 2.0}, 10 ** 400, 1.0, "the label y 1000.*000 must be a number within"),
    ({"a": 1.0, "b": 2.0}, "one", 1.0, "the label y 'one' must be a number within"),
    ({"a": 1.0, "b": 2.0}, 1.0, "one", "the weight 'one' must be a number >= 0 within"),
    ({"a": 1.0, "b": 2.0}, 1.0, -1.0, "the weight -1.0 must be a number >= 0 within")])
def test_learn_one_names_what_is_not_a_float_in_one_clear_error(x, y, weight, message):
    learner = Learner()
    learner.learn_one({"a": 1.0, "b": 2.0}, 1.0)  # the keys are seen: the fast path's dict
    with pytest.raises(OlearnError, match=message):
        learner.learn_one(x, y, weight)


@pytest.mark.parametrize("other", [1.0, True, np.float64(1.0)], ids=repr)
def test_keys_equal_in_python_but_of_other_types_are_other_features(other):
    """1, 1.0 and True are one dict key to Python but three names to VW (|f 1 1.0 True): a
    learner that saw 1 predicts {1.0: ...} as the line with 1.0 does."""
    learner = Learner()
    for _ in range(20):
        learner.learn_one({1: 1.0, "b": 1.0}, 1.0)
    lines = Learner().fit(["1 |f 1:1 b:1"] * 20)
    assert learner.predict_one({other: 1.0, "b": 1.0}) == lines.predict(
        [f"|f {other}:1 b:1"])[0]


@pytest.mark.parametrize("make", [lambda k: {f"k{k}": 1.0 + k % 3},
                                  lambda k: {("u", f"k{k}"): 1.0},
                                  lambda k: {f"k{k}": f"v{k % 7}"}],
                         ids=["numbers", "pairs", "strings"])
def test_learn_one_runs_no_python_function_per_feature(make):
    """A wide dict's features are handled together (numpy, C's map and a hashing kernel): the
    calls of olearn's Python functions do not grow with their number."""
    import sys
    package = str(Path(matrices.__file__).parents[1])

    def calls(n: int, start: int) -> int:
        x = {key: value for k in range(start, start + n) for key, value in make(k).items()}
        count = 0

        def profile(frame, event, arg):  # (not others': a gc callback runs as it pleases)
            nonlocal count
            count += event == "call" and frame.f_code.co_filename.startswith(package)
        sys.setprofile(profile)
        try:
            learner.learn_one(x, 1.0)
        finally:
            sys.setprofile(None)
        return count
    learner = Learner()
    calls(100, 0)  # the kernels loaded
    assert calls(10_000, 10 ** 6) == calls(100, 2 * 10 ** 6)


def test_the_maps_of_names_stay_within_their_budget(monkeypatch):
    monkeypatch.setattr(matrices, "CACHE_KEYS", 8)
    examples = [({f"a{k % 13}": 1.0 + k % 3, ("u", f"b{k % 11}"): 2.0, "c": f"s{k % 9}"}, k % 2)
                for k in range(200)]
    learner = Learner()
    for x, y in examples:
        learner.learn_one(x, y)
        assert len(learner._dicts._plain) <= 8 and len(learner._dicts._index) <= 8
    lines = [f"{y} |f a{k % 13}:{1 + k % 3} c^s{k % 9} |u b{k % 11}:2"
             for k, (_, y) in enumerate(examples)]
    assert learner.average_loss == Learner().fit(lines).average_loss


def test_names_hashed_in_the_kernel_hash_as_in_python():
    words = ["a", "x y", " 12 ", "007", "", "é", "\udc80", b"b\xff", "1" * 30, "-5"] * 4
    seeds = list(range(len(words)))
    assert len(words) > matrices.FEW_WORDS
    for hash_all in (False, True):
        want = [hash_bytes(matrices._word(w), s, hash_all) for w, s in zip(words, seeds)]
        assert matrices._hashes(words, seeds, hash_all).tolist() == want


def test_the_hashing_kernel_refuses_arrays_that_do_not_fit():
    text = np.frombuffer(b"abcdef", dtype=np.uint8)
    out = np.zeros(2, dtype=np.int64)

    def run(ends, seeds=np.zeros(2, dtype=np.int64), into=out):
        return matrices._hash_words(text, np.array(ends, dtype=np.int64), seeds, False, into)
    assert run([2, 6])
    assert not run([2, 7])
    assert not run([4, 2])
    assert not run([2, 6], seeds=np.zeros(1, dtype=np.int64))
    assert not run([2, 6], into=np.zeros(1, dtype=np.int64))


def _dict_batch_arrays(batch) -> list:
    return [batch.numbers, batch.offsets, batch.index, batch.value, batch.namespace]


VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=False, width=32), st.integers(-5, 5),
                   st.none(), st.sampled_from(["x", "1.5", ""]), st.booleans())
KEYS = st.one_of(st.sampled_from(["a", "b", 3, 3.0, True, "Constant"]),
                 st.tuples(st.sampled_from(["u", "", "f"]), st.sampled_from(["a", "z"])))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(KEYS, VALUES, max_size=6), min_size=1, max_size=4),
       st.booleans())
def test_a_dict_remembered_makes_the_batch_a_new_one_makes(examples, noconstant):
    config = Learner(noconstant=noconstant).config
    remembered = DictExamples(config)
    for x in examples:
        general = remembered.batch(x, 1.0)
        fast = remembered.fast(x, 1.0)  # its keys are seen now
        fresh = DictExamples(config).batch(x, 1.0)
        for a, b in zip(_dict_batch_arrays(general), _dict_batch_arrays(fresh)):
            np.testing.assert_array_equal(a, b)
        # the fast path's batch, when its values pass the kept call's check, is the same
        if fast is not None and kept.nonzero_finite(fast.value):
            for a, b in zip(_dict_batch_arrays(fast), _dict_batch_arrays(fresh)):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("value, general", [(0.0, "drops"), (float("nan"), "drops"),
                                            (1e39, "refuses")])
def test_the_fast_path_leaves_a_value_the_general_path_drops_or_refuses_to_the_kernel(
        value, general):
    remembered = DictExamples(Learner().config)
    remembered.batch({"a": 1.0, "b": 2.0})  # the keys are seen
    fast = remembered.fast({"a": 5.0, "b": value}, 1.0)
    assert fast is not None and not kept.nonzero_finite(fast.value)
    if general == "drops":
        assert len(remembered.batch({"a": 5.0, "b": value}, 1.0).value) == 2  # a, constant
    else:
        with pytest.raises(OlearnError, match="out of float32's range"):
            remembered.batch({"a": 5.0, "b": value}, 1.0)


@pytest.mark.parametrize("value", [0.0, float("nan"), 1e39])
def test_learn_one_takes_a_dict_the_kernel_refuses_the_general_way(value):
    fast, general = Learner(), Learner()
    fast.learn_one({"a": 1.0, "b": 2.0}, 1.0)  # seen keys: the next dict takes the fast path
    general.learn_one({"a": 1.0, "b": 2.0}, 1.0)
    x = {"a": 5.0, "b": value}
    if value == 1e39:
        with pytest.raises(OlearnError, match="out of float32's range"):
            fast.learn_one(x, -1.0)
        assert fast.weights() == general.weights()
        return
    fast.learn_one(x, -1.0)
    general.learn_one({"a": 5.0}, -1.0)
    assert fast.predict_one(x) == general.predict_one({"a": 5.0})
    assert fast.weights() == general.weights()


def test_the_fast_path_writes_the_label_row_and_a_whole_batch_after_a_refused_one():
    remembered = DictExamples(Learner().config)
    remembered.batch({"a": 1.0, "b": 2.0})  # the keys are seen: the next dicts take the fast path
    fast = remembered.fast({"a": 1.0, "b": 2.0}, 2.5, 0.5)
    assert fast is not None
    np.testing.assert_array_equal(fast.numbers, [[2.5, 0.5, 0.0]])
    # a dict refused on the way may have written part of the kept batch; the next one writes
    # it all
    assert remembered.fast({"a": 5.0, "b": "x"}, 1.0) is None
    again = remembered.fast({"b": 4.0, "a": 3.0}, -1.0)
    fresh = DictExamples(Learner().config).batch({"b": 4.0, "a": 3.0}, -1.0)
    assert again is fast
    for a, b in zip(_dict_batch_arrays(again), _dict_batch_arrays(fresh)):
        np.testing.assert_array_equal(a, b)


def test_a_key_seen_with_a_number_is_a_string_feature_with_a_string():
    remembered = DictExamples(Learner().config)
    numeric = remembered.batch({"a": 1.5}).index[0]
    assert remembered.batch({"a": "1.5"}).index[0] != numeric
    assert remembered.batch({"a": "1.5"}).value[0] == 1.0
    with pytest.raises(OlearnError, match="out of float32's range"):
        remembered.batch({"a": 1e39})


def test_rows_without_features_learn_nothing_without_the_constant():
    X0 = np.zeros((3, 2))
    X0[2, 1] = 1.0
    learner = Learner(noconstant=True).fit(X0[:2], [1.0, 0.0])
    assert learner.average_loss == 0.5
    learner.fit(X0, [1.0, 0.0, 1.0])
    assert learner.predict(X0[2:])[0] > 0


@pytest.mark.parametrize("break_it", ["column beyond the shape", "row pointers decreasing",
                                      "row pointers beyond the arrays", "value beyond float32"])
def test_an_inconsistent_sparse_matrix_is_one_clear_error_before_learning(break_it):
    sparse = pytest.importorskip("scipy.sparse")
    bad = sparse.csr_matrix(X)
    if break_it == "column beyond the shape":
        bad.indices[5] = 10 ** 6
    elif break_it == "row pointers decreasing":
        bad.indptr[3] = bad.indptr[4] + 1
    elif break_it == "row pointers beyond the arrays":
        bad.indptr[-1] += 7
    else:
        bad.data[9] = 1e39
    learner = Learner()
    with pytest.raises(OlearnError, match="inconsistent|beyond float32"):
        learner.fit(bad, Y)
    assert np.isnan(learner.average_loss)


def test_a_sparse_matrix_with_duplicates_and_unsorted_columns_learns_as_its_sum():
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(3)
    data, indices, indptr = [], [], [0]
    for row in X:
        cols = np.flatnonzero(row)
        halves = np.concatenate([row[cols] / 2, row[cols] - row[cols] / 2])
        order = rng.permutation(2 * len(cols))
        data += halves[order].tolist()
        indices += np.concatenate([cols, cols])[order].tolist()
        indptr.append(len(data))
    csr = sparse.csr_matrix((data, indices, indptr), shape=X.shape)
    assert not csr.has_canonical_format
    expected = Learner().fit(X, Y).average_loss
    assert Learner().fit(csr, Y).average_loss == expected
    assert Learner().fit(csr.tocoo(), Y).average_loss == expected


def test_the_batch_kernel_refuses_arrays_that_do_not_fit():
    from olearn.data.matrices import _csr_batch
    indptr = np.array([0, 2, 3], dtype=np.int64)
    cols = np.array([0, 1, 1], dtype=np.int64)
    values = np.ones(3)
    column_index = np.array([5, 6], dtype=np.uint32)

    def run(room=5, offsets=3, columns=column_index, pointers=indptr, column_room=0):
        return _csr_batch(pointers, cols, values, columns, 0, 2, 7,
                          np.empty(offsets, dtype=np.int64), np.empty(room, dtype=np.uint32),
                          np.empty(room, dtype=np.float32), np.empty(room, dtype=np.uint8),
                          np.empty(column_room, dtype=np.int64))
    assert run() == 5
    assert run(room=4) == -1
    assert run(offsets=2) == -1
    assert run(columns=column_index[:1]) == -1
    assert run(pointers=np.array([0, 2, 9], dtype=np.int64)) == -1
    assert run(column_room=4) == -1
