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
    with pytest.raises(OlearnError, match="y: 8193 numbers expected, one per row of X, not 8192"):
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
    ({"y": Y[:-1]}, "y: 500 numbers expected, one per row of X, not 499"),
    ({"y": Y.reshape(250, 2)}, r"y: 500 numbers expected, .* not an array of shape \(250, 2\)"),
    ({"y": np.where(np.arange(500) == 3, np.nan, Y)}, "y: row 3: nan is not a finite number"),
    ({"y": np.where(np.arange(500) == 4, 1e39, Y)}, "y: row 4: 1e[+]39 is out of float32's"),
    ({"y": ["a"] * 500}, "y: 500 numbers expected.*could not convert string to float: 'a'"),
    ({"sample_weight": -np.ones(500)}, r"sample_weight: row 0: -1.0 is negative"),
    ({"sample_weight": np.full(500, np.nan)}, "sample_weight: row 0: nan is not a finite"),
    ({"X": np.where(np.arange(12) == 2, np.inf, X)}, "X: row 0, column 2: inf is not a finite"),
    ({"X": np.where(np.arange(12) == 5, 1e39, X)}, "X: row 0, column 5: 1e[+]39 is out of"),
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


def _same_model(a: Learner, b: Learner) -> None:
    """The two learners' weight tables are the same, index by index."""
    np.testing.assert_array_equal(a._learner.weights, b._learner.weights)


@pytest.mark.parametrize("values", [[None, None, None], [np.nan, "x", None]],
                         ids=["all missing", "some missing"])
def test_a_string_column_with_missing_values_learns_as_its_lines(values):
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"a": [1.0, 2.0, 3.0], "s": pandas.Series(values, dtype=object)})
    lines = [f"1 |f a:{a}" + (f" s:{s}" if isinstance(s, str) else "")
             for a, s in zip([1, 2, 3], values)]
    _same_model(Learner().fit(frame, np.ones(3)), Learner().fit(lines))


def test_a_row_whose_category_is_missing_predicts_without_it():
    pandas = pytest.importorskip("pandas")
    categories = pandas.Categorical(["x", "y"])
    learner = Learner().fit(pandas.DataFrame({"a": [1.0, 2.0], "c": categories}), [1.0, 2.0])
    missing = pandas.DataFrame({"a": [1.0], "c": pandas.Categorical([None],
                                                                    categories=["x", "y"])})
    assert learner.predict(missing)[0] == learner.predict(["|f a:1"])[0]


def test_a_category_unseen_in_fit_is_a_feature_of_its_own():
    pandas = pytest.importorskip("pandas")
    learner = Learner().fit(pandas.DataFrame({"c": pandas.Categorical(["x", "y"] * 5)}),
                            [1.0, 2.0] * 5)
    unseen = pandas.DataFrame({"c": pandas.Categorical(["z"], categories=["x", "y", "z"])})
    assert learner.predict(unseen)[0] == learner.predict(["|f c^z"])[0]


def test_duplicate_column_names_are_two_features_of_that_name():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame([[1.0, 2.0], [3.0, 0.0]], columns=["a", "a"])
    lines = ["1 |f a:1 a:2", "2 |f a:3"]
    _same_model(Learner().fit(frame, [1.0, 2.0]), Learner().fit(lines))


def test_values_pandas_holds_equal_are_string_features_of_their_own_texts():
    pandas = pytest.importorskip("pandas")
    mixed = pandas.DataFrame({"c": pandas.Series([1, 1.0, True, "1"] * 5, dtype=object)})
    texts = pandas.DataFrame({"c": ["1", "1.0", "True", "1"] * 5})
    labels = [1.0, 2.0, 3.0, 4.0] * 5
    _same_model(Learner().fit(mixed, labels), Learner().fit(texts, labels))


def test_values_pandas_cannot_hash_are_string_features_of_their_texts():
    pandas = pytest.importorskip("pandas")
    lists = pandas.DataFrame({"c": pandas.Series([[1], {"a": 2}, None] * 3, dtype=object)})
    texts = pandas.DataFrame({"c": ["[1]", "{'a': 2}", None] * 3})
    _same_model(Learner().fit(lists, [1.0, 2.0, 3.0] * 3),
                Learner().fit(texts, [1.0, 2.0, 3.0] * 3))


def test_the_namespace_named_empty_is_the_default_namespace():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"a": [1.0, 2.0], "b": [3.0, 0.0]})
    learner = Learner().fit(frame, [1.0, 2.0], namespaces={"": ["a"], "u": "b"})
    _same_model(learner, Learner().fit(["1 | a:1 |u b:3", "2 | a:2"]))


@pytest.mark.parametrize("namespaces, error, message", [
    ({"u": ["a"], "v": ["a"]}, OlearnError, "column 'a' is in two namespaces, 'u' and 'v'"),
    ({"u": [["a"]]}, TypeError, r"namespaces\['u'\]: \['a'\] is not a column name"),
    (["a"], TypeError, "namespaces: a dict of namespace names to lists of columns, not a list"),
])
def test_namespaces_that_do_not_fit_the_frame_are_one_clear_error(namespaces, error, message):
    pandas = pytest.importorskip("pandas")
    with pytest.raises(error, match=message):
        Learner().fit(pandas.DataFrame({"a": [1.0]}), [1.0], namespaces=namespaces)


def test_a_dataframe_value_beyond_float32_is_named_so():
    pandas = pytest.importorskip("pandas")
    with pytest.raises(OlearnError, match="column 'a', row 1: 1e[+]39 is out of float32's "
                                          "range"):
        Learner().fit(pandas.DataFrame({"a": [1.0, 1e39]}), [1.0, 2.0])


@pytest.mark.parametrize("dtype", ["Int64", "Float64", "boolean", "Sparse[float64]"])
def test_pandas_nullable_and_sparse_columns_learn_as_numbers(dtype):
    pandas = pytest.importorskip("pandas")
    values = [1, None, 0, 1] * 5 if dtype != "Sparse[float64]" else [1.0, np.nan, 0.0, 1.0] * 5
    frame = pandas.DataFrame({"a": pandas.Series(values, dtype=dtype)})
    lines = ["1 |f a:1", "2 |f", "3 |f", "4 |f a:1"] * 5
    _same_model(Learner().fit(frame, [1.0, 2.0, 3.0, 4.0] * 5), Learner().fit(lines))


def test_dataframe_namespaces_must_name_its_columns():
    pandas = pytest.importorskip("pandas")
    with pytest.raises(OlearnError, match="no column 'z'"):
        Learner().fit(pandas.DataFrame({"a": [1.0]}), [1.0], namespaces={"u": ["z"]})


def _peak_bytes(action) -> int:
    """The most memory Python and numpy held at once during ``action()`` (tracemalloc)."""
    import tracemalloc
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_sparse_matrix_of_2_31_columns_takes_memory_for_its_values_only():
    """Only the columns that occur are hashed (it made np.arange of 2^31 + 10 columns: 16 GiB)."""
    sparse = pytest.importorskip("scipy.sparse")
    width = 2 ** 31 + 10
    wide = sparse.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([5, width - 1, 7]),
                              np.array([0, 2, 3])), shape=(2, width))
    lines = [f"1 |f 5:1 {width - 1}:2", "2 |f 7:3"]
    Learner().fit(wide, [1.0, 2.0])  # the kernels loaded
    learner = Learner()
    assert _peak_bytes(lambda: learner.fit(wide, [1.0, 2.0])) < 2 ** 26
    np.testing.assert_array_equal(learner.predict(wide), Learner().fit(lines).predict(lines))


def test_a_wide_matrix_names_the_columns_it_holds():
    sparse = pytest.importorskip("scipy.sparse")
    wide = sparse.csr_matrix((np.array([1.0, 2.0]), np.array([3, 10 ** 9]), np.array([0, 2])),
                             shape=(1, 10 ** 9 + 1))
    names = Learner(names=True).fit(wide, [1.0]).weights()
    assert set(names) == {"f^3", f"f^{10 ** 9}", "Constant"}


def test_a_sparse_dataframe_takes_memory_for_its_values_not_its_shape():
    pandas = pytest.importorskip("pandas")
    sparse = pytest.importorskip("scipy.sparse")
    X_sparse = sparse.random(2000, 2000, density=0.001, format="csr", random_state=0)
    frame = pandas.DataFrame.sparse.from_spmatrix(X_sparse)
    y = np.ones(2000)
    Learner().fit(frame.iloc[:10, :10], y[:10])  # the kernels loaded
    learner = Learner()
    # (a dense n x d table of its features was 52 MB)
    assert _peak_bytes(lambda: learner.fit(frame, y)) < 2 ** 23
    assert learner.average_loss == Learner().fit(X_sparse, y).average_loss


@pytest.mark.parametrize("kind", ["matrix", "masked", "object", "bool", "int8", "float16",
                                  "uint64"])
def test_a_numpy_array_of_numbers_of_any_kind_learns_as_its_float64(kind):
    """np.matrix and object arrays of numbers are their numbers (np.matrix was a numba
    TypingError), a masked array's masked entries no features, other dtypes their values."""
    rows = np.array([[1, 0, 2], [0, 3, 1], [2, 2, 0]] * 5, dtype=np.float64)
    y = np.arange(15.0)
    given = {"matrix": np.matrix(rows), "object": rows.astype(object),
             "masked": np.ma.masked_array(rows + 7 * (rows == 0), mask=rows == 0),
             "bool": rows > 1, "int8": rows.astype(np.int8),
             "float16": rows.astype(np.float16),
             "uint64": rows.astype(np.uint64) * np.uint64(2 ** 60)}[kind]
    want = np.asarray(given.filled(0) if kind == "masked" else given, dtype=np.float64)
    learner = Learner().fit(given, y)
    assert learner.average_loss == Learner().fit(want, y).average_loss
    np.testing.assert_array_equal(learner.predict(given), Learner().fit(want, y).predict(want))


@pytest.mark.parametrize("X, message", [
    (np.array([[1.0, None]], dtype=object), "X: row 0, column 1 holds None, not a number"),
    (np.array([[1.0, "x"]], dtype=object), "X: an object array must hold numbers: row 0, "
                                            "column 1 holds 'x'"),
    (np.array([[1.0, [2.0]]], dtype=object), "X: an object array must hold numbers"),
    (np.ones((1, 2), dtype=complex), "X: a matrix of numbers, not of complex128"),
    (np.zeros((1, 2), dtype="datetime64[s]"), "X: a matrix of numbers, not of datetime64"),
], ids=["None", "str", "list", "complex", "datetime"])
def test_a_matrix_of_what_is_not_a_number_is_a_type_error_naming_it(X, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        Learner().fit(X, [1.0])


def test_a_complex_sparse_matrix_is_a_type_error():
    sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="not of complex128"):
        Learner().fit(sparse.csr_matrix(np.ones((1, 2), dtype=complex)), [1.0])


def test_a_1d_array_with_y_is_refused_with_a_hint():
    with pytest.raises(OptionError, match=re.escape("not with a 1-d numpy array of float64 "
                                                    "(one feature per row: X.reshape(-1, 1))")):
        Learner().fit(np.ones(3), np.ones(3))


def test_a_matrix_of_no_rows_or_no_columns_learns_the_constant_only():
    learner = Learner().fit(np.zeros((0, 3)), np.zeros(0))
    assert np.isnan(learner.average_loss)
    learner.fit(np.zeros((4, 0)), np.ones(4))
    assert learner.average_loss == Learner().fit(["1 |f"] * 4).average_loss


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
    with pytest.raises(OlearnError, match="feature 'a': inf is not a finite number"):
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


def test_pandas_missing_values_in_a_dict_are_no_features():
    pandas = pytest.importorskip("pandas")
    with_missing, without = Learner(), Learner()
    for k in range(5):
        with_missing.learn_one({"a": 1.0 + k, "b": pandas.NA, "c": pandas.NaT}, 1.0)
        without.learn_one({"a": 1.0 + k}, 1.0)
    _same_model(with_missing, without)


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
    with pytest.raises(OlearnError, match="inconsistent|out of float32's range"):
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
