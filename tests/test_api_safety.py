"""The Python API on odd inputs: data that is not example lines, lines holding newlines, parse
warnings and --strict_parse, threads, and no numpy RuntimeWarning (nor from the CLI)."""
import os
import re
import subprocess
import threading
import warnings

import numpy as np
import pytest
from conftest import olearn_cmd, run_cmd

import olearn
from olearn.data import sources
from olearn.engine.learner import OnlineLearner
from olearn.options.config import Config

LINES = [f"{(i * 7) % 11 - 5} |a x:{i % 5} y:{(i * 3) % 7 - 3} |b z{i % 4}" for i in range(300)]
PROBE = ["|a x:1 y:2 |b z1", "|a x:4", "|b z3"]


def _parse_warnings(action):
    """The messages of the ParseWarnings that ``action()`` raises."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return [str(w.message) for w in caught if w.category is olearn.ParseWarning]


@pytest.mark.parametrize("data", [
    np.array([1.0, 2.0]), np.array([["1 |a x"]]), 5, 1.5, None, [1, 2], ["1 |a x", 3],
    ("1 |a x", None), b"1 |a x\n", bytearray(b"1 |a x\n"), object(),
], ids=lambda data: type(data).__name__)
def test_data_that_is_not_example_lines_is_a_type_error_and_nothing_is_learned(data):
    model = olearn.Learner()
    with pytest.raises(TypeError, match="str or bytes"):
        model.fit(data)
    np.testing.assert_array_equal(model.predict(PROBE), np.zeros(len(PROBE)))


def test_predict_refuses_data_that_is_not_example_lines():
    with pytest.raises(TypeError, match="not NoneType"):
        olearn.Learner().predict(None)


def test_an_iterator_is_checked_as_it_is_read():
    with pytest.raises(TypeError, match="data item 2 is int"):
        olearn.Learner().fit(iter(["1 |a x", "2 |a y", 3]))


def test_numpy_array_of_strings_is_example_lines():
    want = olearn.Learner().fit(LINES).predict(PROBE)
    np.testing.assert_array_equal(olearn.Learner().fit(np.array(LINES)).predict(PROBE), want)
    np.testing.assert_array_equal(
        olearn.Learner().fit(np.array([s.encode() for s in LINES])).predict(PROBE), want)


@pytest.mark.parametrize("kind", [str, bytes])
def test_a_string_holding_newlines_is_several_examples(kind):
    def as_kind(text):
        return text if kind is str else text.encode()
    one_per_line = olearn.Learner().fit(LINES)
    joined = olearn.Learner().fit([as_kind("\n".join(LINES[:150])),
                                   as_kind("\n".join(LINES[150:]) + "\n")])
    np.testing.assert_array_equal(joined.predict(PROBE), one_per_line.predict(PROBE))
    assert joined.average_loss == one_per_line.average_loss
    assert len(olearn.Learner().predict([as_kind("|a x\n|a y\n\n|b z")])) == 3


def test_blocks_of_lines_count_embedded_newlines():
    blocks = sources.blocks_of_lines(["1 |a\n2 |b", "3 |c", "4 |d\n\n5 |e"], block_size=8)
    batches = list(OnlineLearner(Config(quiet=True)).batches(blocks))
    assert [(b.first_line, b.n_lines, b.pass_line) for b in batches] == [(0, 2, 0), (2, 4, 2)]


def test_batches_number_each_sources_lines_and_the_passes(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "READ_SIZE", 12)  # several blocks per source
    paths = [tmp_path / "a.vw", tmp_path / "b.vw"]
    paths[0].write_text("1 |a x\n\n2 |a y\n3 |a z\n4 |a w\n")
    paths[1].write_text("5 |b x\n6 |b y\n7 |b z")  # its last line without a newline
    blocks = sources.all_blocks(map(str, paths), block_size=12)
    batches = list(OnlineLearner(Config(quiet=True)).batches(blocks))
    assert len(batches) > len(paths)
    line, pass_line, lines_of = 0, 0, {}
    for batch, previous in zip(batches, [None, *batches]):
        line = 0 if previous is None or previous.source != batch.source else line
        assert (batch.first_line, batch.pass_line) == (line, pass_line)
        line += batch.n_lines
        pass_line += batch.n_lines
        lines_of[batch.source[-4:]] = line
    assert lines_of == {"a.vw": 5, "b.vw": 3}
    assert sources.count_lines(map(str, paths)) == 8


def test_warnings_name_the_line_counting_embedded_newlines():
    messages = _parse_warnings(lambda: olearn.Learner().fit(
        ["1 |a x\n2 |a y\nabc |a z", "1 |a x", "def |a w"]))
    assert [m.split(": ")[0] for m in messages] == ["<lines>:3", "<lines>:5"]


def test_nul_bytes_and_cr_only_text_give_a_result():
    model = olearn.Learner().fit([b"1 |a x\x00y\n", "1 |a x\r-1 |b y", b"\x00\x00"])
    preds = model.predict(["|a x\r\n", b"\x00", "\r"])  # "\r" alone: an empty line, no example
    assert len(preds) == 2 and np.isfinite(preds).all()


def test_parse_warning_has_the_command_line_text(tmp_path):
    data = tmp_path / "d.vw"
    data.write_bytes(b"1 |a x\nabc |a x\n1 |a x:nan\n")
    _, _, err = run_cmd(olearn_cmd("-d", data))
    cli = [line.removeprefix("[warning] ") for line in err.splitlines()
           if line.startswith("[warning]")]
    assert len(cli) == 2
    assert _parse_warnings(lambda: olearn.Learner().fit(data)) == cli
    assert _parse_warnings(lambda: olearn.Learner().predict(data)) == cli


def test_parse_warning_points_at_the_callers_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        olearn.Learner().fit(["abc |a x"])
    assert [w.filename for w in caught] == [__file__]
    assert issubclass(olearn.ParseWarning, UserWarning)


@pytest.mark.parametrize("method", ["fit", "predict"])
def test_strict_parse_makes_the_first_warning_an_error(method):
    model = olearn.Learner(strict_parse=True)
    with pytest.raises(olearn.OlearnError, match=r"<lines>:2: 'abc' is not a good float "
                                                 r"\(--strict_parse\)"):
        getattr(model, method)(["1 |a x", "abc |a x", "def |a x"])


def test_threads_fitting_one_learner_give_one_serial_order():
    first = LINES * 40
    second = [line.replace("|b", "|c") for line in LINES] * 40
    model = olearn.Learner()
    threads = [threading.Thread(target=model.fit, args=(half,)) for half in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    got = model.predict(PROBE + ["|c z2"])
    orders = [olearn.Learner().fit(a).fit(b) for a, b in ((first, second), (second, first))]
    assert any(np.array_equal(got, serial.predict(PROBE + ["|c z2"])) for serial in orders)
    assert any(model.average_loss == serial.average_loss for serial in orders)


def test_threads_calling_learn_one_end_as_the_same_calls_in_turn():
    """learn_one takes the lock without waiting when it is free: calls from several threads
    still run one at a time (the same example each, so that any order ends alike)."""
    x, calls = {"a": 1.5, "b": -2.0, "c": 0.5}, 300
    model = olearn.Learner()

    def learn():
        for _ in range(calls):
            model.learn_one(x, 1.0)
            model.predict_one(x)
    threads = [threading.Thread(target=learn) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    serial = olearn.Learner()
    for _ in range(4 * calls):
        serial.learn_one(x, 1.0)
    np.testing.assert_array_equal(model._learner.weights, serial._learner.weights)
    assert model.average_loss == serial.average_loss


def test_threads_saving_while_fitting_write_whole_models(tmp_path):
    model = olearn.Learner()
    fitting = threading.Thread(target=model.fit, args=(LINES * 100,))
    fitting.start()
    for k in range(5):
        model.save(tmp_path / f"m{k}.olearn")
    fitting.join()
    for k in range(5):
        assert len(olearn.Learner.load(tmp_path / f"m{k}.olearn").predict(PROBE)) == 3


@pytest.mark.parametrize("data, options", [
    ([], {}), (["|a x", "|b y"], {}), (["1 |a x", "-1 |b y"], {"testonly": True}),
    (["1 0 |a x"], {}), (["1 |a x"] * 3, {"loss_function": "logistic"}),
    (["-1 |a x"] * 3, {"loss_function": "hinge", "binary": True}),
    (["|a x"], {"passes": 2, "holdout_off": False}),
])
def test_no_runtime_warning_from_the_api(data, options):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = olearn.Learner(**options)
        assert np.isnan(model.average_loss)
        model.fit(data)
        model.average_loss
        model.predict(data)


@pytest.mark.parametrize("text, args", [
    (b"", []), (b"|a x\n|b y\n", []), (b"1 |a x\n-1 |b y\n", ["-t"]),
    (b"|a x\n", ["--passes", "2", "--cache_file", "{cache}"]), (b"1 0 |a x\n", []),
    (b"1 |a x\n", ["--loss_function", "logistic"]),
])
def test_no_python_warning_from_the_command_line(tmp_path, text, args):
    args = [arg.format(cache=tmp_path / "c.cache") for arg in args]
    proc = subprocess.run(olearn_cmd(*args), input=text, capture_output=True,
                          env={**os.environ, "PYTHONWARNINGS": "error"})
    err = proc.stderr.decode()
    assert proc.returncode == 0 and "Warning" not in err and "finished run" in err, err


@pytest.mark.parametrize("call", ["predict", "fit", "average_loss", "learn_one", "predict_one"])
def test_data_that_calls_its_own_learner_is_an_error_not_a_deadlock(call):
    learner = olearn.Learner()
    calls = {"predict": lambda: learner.predict(["1 |a y"]),
             "fit": lambda: learner.fit(["1 |a y"]),
             "average_loss": lambda: learner.average_loss,
             "learn_one": lambda: learner.learn_one({"y": 1.0, "z": 2.0}, 1.0),
             "predict_one": lambda: learner.predict_one({"y": 1.0, "z": 2.0})}

    def lines():
        yield "1 |a x"
        calls[call]()
        yield "0 |a z"

    with pytest.raises(olearn.OlearnError, match="uses the same Learner"):
        learner.fit(lines())
    learner.fit(["1 |a x"])  # the lock was released


@pytest.mark.parametrize("x", [None, [("x", 1.0)], "a:1", 3])
def test_learn_one_example_that_is_not_a_dict_is_a_type_error(x):
    learner = olearn.Learner(quiet=True)
    with pytest.raises(TypeError, match="dict of features"):
        learner.learn_one(x, 1.0)
    with pytest.raises(TypeError, match="dict of features"):
        learner.predict_one(x)


def test_key_of_three_parts_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="tuple of 3"):
        olearn.Learner(quiet=True).learn_one({("u", "x", "y"): 1.0, "b": 1.0}, 1.0)


@pytest.mark.parametrize("as_bytes, as_text", [
    ({b"a": 1.0, b"b": 2.0}, {"a": 1.0, "b": 2.0}),
    ({(b"u", b"x"): 1.0, "b": 1.0}, {("u", "x"): 1.0, "b": 1.0}),
])
def test_bytes_keys_are_the_text_lines_names(as_bytes, as_text):
    """A bytes name or namespace is its bytes (as in the text line), not its repr."""
    learners = [olearn.Learner(quiet=True, names=True) for _ in range(2)]
    for learner, x in zip(learners, (as_bytes, as_text)):
        for _ in range(5):
            learner.learn_one(x, 1.0)
    assert learners[0].weights() == learners[1].weights()


@pytest.mark.parametrize("label", [1.5, -1, 0.5])
def test_learn_one_refuses_a_label_that_is_not_a_class_as_fit_does(label):
    learner = olearn.Learner("--oaa 3")
    with pytest.raises(olearn.OlearnError, match=f"<dict>:1: --oaa: label {label:g} is not a "
                                                 f"class"):
        learner.learn_one({"a": 1.0, "b": 2.0}, label)
    with pytest.raises(olearn.OlearnError, match=f"--oaa: label {label:g} is not a class"):
        olearn.Learner("--oaa 3").fit([f"{label} |f a:1 b:2"])
    assert np.isnan(learner.average_loss)


def test_learn_one_warns_of_a_label_outside_the_classes_as_fit_does():
    lines = _parse_warnings(lambda: olearn.Learner("--oaa 3").fit(["7 |f a:1 b:2"]))
    one = _parse_warnings(lambda: olearn.Learner("--oaa 3").learn_one({"a": 1.0, "b": 2.0}, 7))
    assert [m.replace("<dict>", "<lines>") for m in one] == lines and len(one) == 1


@pytest.mark.parametrize("options, labels", [
    ("--csoaa 3", r"class:cost lists \(--csoaa\)"),
    ("--multilabel_oaa 3", r"lists of classes \(--multilabel_oaa\)"),
    ("--csoaa_ldf m", r"multi-line examples \(--csoaa_ldf, --wap_ldf\)"),
    ("--oaa 3 --named_labels a,b,c", r"names \(--named_labels\)")])
def test_labels_that_are_not_one_number_are_refused_for_dicts_and_matrices(options, labels):
    """A dict's or a matrix row's label is one number: options whose labels are not (costs,
    lists, names) refuse them, where they learned from a misread label."""
    with pytest.raises(olearn.OptionError, match=f"learn_one: .* labels are {labels}"):
        olearn.Learner(options).learn_one({"a": 1.0}, 1.0)
    with pytest.raises(olearn.OptionError, match=f"fit\\(X, y\\): .* labels are {labels}"):
        olearn.Learner(options).fit(np.ones((2, 2)), [1.0, 2.0])


@pytest.mark.parametrize("X, hint", [
    ([[1.0, 2.0]], "a list (example lines; np.array(X) makes a matrix)"),
    (np.ones(3), "a 1-d numpy array of float64 (one feature per row: X.reshape(-1, 1))"),
    (np.ones((2, 2, 2)), "a 3-d numpy array of float64"),
    (np.array([["a", "b"]]), "a 2-d numpy array of <U1"),
], ids=["list", "1-d", "3-d", "strings"])
def test_y_with_what_is_not_a_matrix_says_what_x_is(X, hint):
    with pytest.raises(olearn.OptionError, match=re.escape(f"go with a matrix X (a 2-d numpy "
                                                           f"array, a scipy.sparse matrix or a "
                                                           f"DataFrame), not with {hint}")):
        olearn.Learner().fit(X, [1.0])


@pytest.mark.parametrize("method", ["fit", "predict"])
def test_a_dict_given_as_data_is_a_type_error_pointing_at_learn_one(method):
    """A dict's iteration is its keys: it was read as example lines ("a")."""
    with pytest.raises(TypeError, match=re.escape("not dict (one example as a dict: learn_one "
                                                  "or predict_one)")):
        getattr(olearn.Learner(), method)({"a": 1.0})


@pytest.mark.parametrize("make", [lambda **kw: olearn.Learner(**kw),
                                  lambda **kw: olearn.Learner.load("m.olearn", **kw)],
                         ids=["Learner", "load"])
def test_a_keyword_that_is_no_option_is_a_type_error_naming_it(make):
    with pytest.raises(TypeError, match="Learner: no option 'bit_precison': .*did you mean "
                                        "bit_precision"):
        make(bit_precison=20)
