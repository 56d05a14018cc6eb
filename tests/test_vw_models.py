"""VW's binary model files (persistence/vw_model.py): ``-i`` reads them and ``-f FILE
--model_format vw`` writes them.

Models that VW 9.11.9 wrote are fixtures (tests/fixtures/vw, with VW's predictions), so the
reading side is checked without VW; the tests that take the ``vw`` fixture run VW itself on
olearn's files and on generated data, both ways, and continue training from VW's models.
"""
from __future__ import annotations

import random
import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, olearn_cmd, run_cmd
from test_model import _error_line

from olearn.errors import OlearnError
from olearn.kernel import layouts
from olearn.options.config import Config
from olearn.persistence import model, readable, vw_binary

VW_FIXTURES = FIXTURES / "vw"
TRAIN, TEST = FIXTURES / "train.vw", FIXTURES / "test.vw"
PRED_REL, PRED_ABS = 1e-4, 5e-6  # predictions printed with 6 decimals


def olearn(*args):
    return run_cmd(olearn_cmd(*args))


def _predictions(path: Path) -> list[str]:
    """Each prediction of a -p file (its first field; a multi-line example's blank line too)."""
    return [(line.split() or [""])[0] for line in path.read_text().splitlines()]


def _assert_same_predictions(got: Path, expected: Path) -> None:
    """Numbers to the printed digits; classes, class lists and blank lines exactly."""
    mine, theirs = _predictions(got), _predictions(expected)
    try:
        numbers = np.array(mine, dtype=float), np.array(theirs, dtype=float)
    except ValueError:
        assert mine == theirs
        return
    np.testing.assert_allclose(*numbers, rtol=PRED_REL, atol=PRED_ABS)


@pytest.mark.parametrize("name", ["default", "predict_only", "sgd", "quadratic", "oaa"])
def test_vw_written_model_predicts_as_in_vw(tmp_path, name):
    test = VW_FIXTURES / "classes_test.vw" if name == "oaa" else TEST
    out = tmp_path / "p"
    assert olearn("-t", "-i", VW_FIXTURES / f"{name}.model", "-d", test, "-p", out,
                  "--quiet")[0] == 0
    _assert_same_predictions(out, VW_FIXTURES / f"{name}.test.p")


def test_vw_model_options_become_the_models_options():
    saved = model.load(str(VW_FIXTURES / "quadratic.model"))
    assert saved.options["quadratic"] == ["ab"] and saved.options["bit_precision"] == 10
    assert model.load(str(VW_FIXTURES / "oaa.model")).options["oaa"] == 3


def test_vw_7_header_interactions_are_read():
    """VW 7.10.2's header lists -q terms itself (VW's test suite's model-sets/simple_model)."""
    saved = model.load(str(VW_FIXTURES / "simple_model"))
    assert saved.options["interactions"] == ["fe"] and saved.options["oaa"] == 3
    assert "counters" not in saved.arrays  # written without the resume state


def test_vw_8_options_give_the_pending_l1_and_l2_state():
    """VW 8.10.0 kept --l1_state/--l2_state as options (VW 9 in the resume block)."""
    state = model.load(str(VW_FIXTURES / "l1l2_state-8.10.0.model")).state
    assert state[layouts.S_L1_STATE] == pytest.approx(3.4)
    assert state[layouts.S_L2_STATE] == pytest.approx(4.4528)


OWN_CASES = {"default": [], "sgd": ["--sgd", "-l", "0.05"], "adaptive": ["--adaptive"],
             "ftrl": ["--ftrl", "--ftrl_alpha", "0.2"], "coin": ["--coin"],
             "normalized": ["--normalized"], "quadratic": ["-q", "ab", "--l2", "1e-6"],
             "rates": ["-l", "0.1", "--power_t", "0.3", "--initial_t", "2"],
             "logistic": ["--loss_function", "logistic", "--link", "logistic"]}


@pytest.mark.parametrize("case", sorted(OWN_CASES))
def test_continuing_from_the_vw_format_equals_continuing_from_olearns(tmp_path, case):
    """VW's format keeps everything gradient descent continues from (the command line names
    the loss and --l2 again, which VW's files do not keep): the two files give the same
    continued run."""
    options = OWN_CASES[case]
    lines = TRAIN.read_text().splitlines(keepends=True)
    first, second = tmp_path / "a.vw", tmp_path / "b.vw"
    first.write_text("".join(lines[:150]))
    second.write_text("".join(lines[150:]))
    for fmt in ("olearn", "vw"):
        assert olearn("-d", first, *options, "-f", tmp_path / fmt, "--model_format", fmt,
                      "--quiet")[0] == 0
        assert olearn("-i", tmp_path / fmt, "-d", second, *options, "-p",
                      tmp_path / f"{fmt}.p", "--quiet")[0] == 0
    _assert_same_predictions(tmp_path / "vw.p", tmp_path / "olearn.p")


@pytest.mark.parametrize("extra", [[], ["--predict_only_model"]])
def test_vw_format_predicts_as_olearns_own(tmp_path, extra):
    train, test = VW_FIXTURES / "classes.vw", VW_FIXTURES / "classes_test.vw"
    for fmt in ("olearn", "vw"):
        assert olearn("-d", train, "--oaa", "3", "-q", "ab", *extra, "-f", tmp_path / fmt,
                      "--model_format", fmt, "--quiet")[0] == 0
        assert olearn("-t", "-i", tmp_path / fmt, "-d", test, "-p", tmp_path / f"{fmt}.p",
                      "--quiet")[0] == 0
    assert (tmp_path / "vw.p").read_text() == (tmp_path / "olearn.p").read_text()


def test_python_learner_saves_and_loads_vws_format(tmp_path):
    from olearn import Learner
    path = tmp_path / "m.vw"
    learner = Learner(model_format="vw", quadratic=["ab"]).fit(str(TRAIN))
    learner.save(path)
    assert vw_binary.version_of(path.read_bytes()) == (9, 11, 9)
    np.testing.assert_allclose(Learner.load(path).predict(str(TEST)),
                               learner.predict(str(TEST)), rtol=1e-6)


def _vw_file(tmp_path: Path, options: str, body: bytes = b"\0") -> Path:
    path = tmp_path / "m.vw"
    path.write_bytes(vw_binary.header_bytes(-1.0, 1.0, 10, options) + body)
    return path


@pytest.mark.parametrize("options, named", [("--cb_adf --cb_type ips", "--cb_adf"),
                                            ("--log_multi 3", "--log_multi"),
                                            ("--boosting 2 --alg logistic", "--alg"),
                                            ("--bfgs", "--bfgs")])
def test_vw_model_olearn_cannot_carry_is_refused_naming_the_option(tmp_path, options, named):
    line = _error_line(olearn("-t", "-i", _vw_file(tmp_path, options), "-d", TEST))
    assert named in line and "m.vw" in line


@pytest.mark.parametrize("options, flag", [(["--boa"], "--boa"), (["--freegrad"], "--freegrad"),
                                           (["--marginal", "b"], "--marginal"),
                                           (["--stage_poly"], "--stage_poly"),
                                           (["--feature_limit", "3"], "--feature_limit")])
def test_vw_format_refuses_what_it_cannot_hold_before_learning(tmp_path, options, flag):
    out = tmp_path / "m.vw"
    line = _error_line(olearn("-d", TRAIN, *options, "-f", out, "--model_format", "vw"), 2)
    assert flag in line and "--model_format vw" in line
    assert not out.exists()


def test_vw_header_reads_back_what_was_written():
    header = vw_binary.read_header(vw_binary.Reader(
        vw_binary.header_bytes(-2.0, 3.5, 12, "--oaa 3 --quadratic ab", ("f2",), ("f1",)),
        "m"))
    assert (header.version, header.min_label, header.max_label, header.bits) == (
        (9, 11, 9), -2.0, 3.5, 12)
    assert (header.options, header.ngram, header.skips) == ("--oaa 3 --quadratic ab",
                                                           ("f2",), ("f1",))


def test_text_model_header_checksum_is_vws():
    """VW 9.11.9's Checksum lines of --readable_model after `1 |f a`-like data with labels
    in [-1, 1], without and with --ngram f2 --ngram g3 --skips f1."""
    state = layouts.STATE.defaults()
    state[layouts.S_MIN], state[layouts.S_MAX] = -1.0, 1.0
    plain = readable.header_lines(Config(), state, "")
    assert plain[-1] == "Checksum: 1119895216"
    grams = readable.header_lines(Config(ngram=["f2", "g3"], skips=["f1"]), state, "")
    assert grams[6:8] == ["2 ngram:f2 g3 ", "1 skip:f1 "]
    assert grams[-1] == "Checksum: 2944068400"


def test_a_changed_header_byte_fails_the_checksum(tmp_path):
    data = bytearray((VW_FIXTURES / "default.model").read_bytes())
    data[20] ^= 1  # the label range
    path = tmp_path / "m.vw"
    path.write_bytes(bytes(data))
    assert "checksum" in _error_line(olearn("-t", "-i", path, "-d", TEST))


def test_a_partial_weight_record_is_refused(tmp_path):
    path = tmp_path / "m.vw"
    path.write_bytes((VW_FIXTURES / "default.model").read_bytes()[:-3])
    assert "partial weight record" in _error_line(olearn("-t", "-i", path, "-d", TEST))


def test_an_index_outside_the_table_is_refused(tmp_path):
    record = struct.pack("<If", 1 << 10, 0.5)
    path = _vw_file(tmp_path, "", b"\0" + record)
    assert "outside the table" in _error_line(olearn("-t", "-i", path, "-d", TEST))


def test_a_repeated_index_keeps_its_last_record(tmp_path):
    records = struct.pack("<IfIf", 7, 0.5, 7, -2.0)
    saved = model.load(str(_vw_file(tmp_path, "", b"\0" + records)))
    assert saved.arrays["index"].tolist() == [7]
    assert saved.arrays["rows"][0, 0] == -2.0


def test_damaged_vw_models_give_one_error_or_a_model(tmp_path):
    """Every truncation and 300 random byte changes of VW-written models: model.load gives an
    OlearnError or a model, never another exception."""
    rng = random.Random(5)
    for name in ("default.model", "oaa.model", "simple_model", "l1l2_state-8.10.0.model"):
        data = (VW_FIXTURES / name).read_bytes()
        variants = [data[:cut] for cut in range(len(data))]
        for _ in range(300):
            damaged = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            variants.append(bytes(damaged))
        path = tmp_path / "m"
        for variant in variants:
            path.write_bytes(variant)
            try:
                model.load(str(path))
            except OlearnError:
                pass


# -- against VW itself ---------------------------------------------------------------------

def _label(rng: random.Random, labels: str) -> str:
    """A label of the kind ``labels`` names: regression, 10 classes, binary, 4 classes' costs
    or lists of them."""
    if labels == "regression":
        return f"{rng.gauss(0, 1):.3f}"
    if labels == "classes":
        return str(rng.randint(1, 10))
    if labels == "binary":
        return rng.choice(["-1", "1"])
    if labels == "costs":
        return " ".join(f"{k}:{rng.random():.2f}" for k in range(1, 5))
    return ",".join(map(str, sorted(rng.sample(range(1, 5), rng.randint(1, 2)))))


def _generated(tmp_path: Path, labels: str = "regression", n: int = 600, seed: int = 7
               ) -> tuple:
    """Train and test files of ``n`` examples each: namespaces a and b, labels of the kind
    ``labels`` (:func:`_label`; "actions": multi-line examples of 3 actions, costs on each)."""
    rng = random.Random(seed)
    paths = []
    for part in ("train", "test"):
        lines = []
        for _ in range(n):
            a = " ".join(f"f{rng.randrange(40)}:{rng.gauss(0, 1):.3f}" for _ in range(6))
            features = f"|a {a} |b c{rng.randrange(9)} v:{rng.random():.3f}\n"
            if labels == "actions":
                lines += [f"{k}:{rng.random():.2f} |a f{rng.randrange(40)} x{k} {features[3:]}"
                          for k in range(1, 4)] + ["\n"]
            else:
                lines.append(f"{_label(rng, labels)} {features}")
        paths.append(tmp_path / f"{part}.vw")
        paths[-1].write_text("".join(lines))
    return tuple(paths)


VW_CASES = {"default": ([], "regression"), "predict_only": (["--predict_only_model"], "regression"),
            "quadratic_l2": (["-q", "ab", "--l2", "1e-6"], "regression"),
            "oaa": (["--oaa", "10"], "classes"), "sgd": (["--sgd", "-l", "0.05"], "regression"),
            "cubic": (["--cubic", "aab", "-b", "20"], "regression"),
            "hashing": (["--hash_seed", "5", "--noconstant", "--ignore_linear", "b",
                         "-q", "ab"], "regression"),
            # the reductions whose state is all in the weights
            "csoaa": (["--csoaa", "4"], "costs"),
            "multilabel": (["--multilabel_oaa", "4"], "lists"),
            "ect": (["--ect", "10", "--error", "2"], "classes"),
            "bootstrap": (["--bootstrap", "3", "--bs_type", "vote"], "regression"),
            "oaa_bootstrap": (["--oaa", "10", "--bootstrap", "2"], "classes"),
            "nn": (["--nn", "3", "--inpass", "--dropout"], "regression"),
            "nn_multitask": (["--nn", "3", "--multitask"], "regression"),
            "lrq": (["--lrq", "ab2", "--lrqdropout"], "regression"),
            "lrqfa": (["--lrqfa", "ab2"], "regression"),
            "boosting": (["--boosting", "3"], "binary"),
            "csoaa_ldf": (["--csoaa_ldf", "m"], "actions"),
            "wap_ldf": (["--wap_ldf", "mc"], "actions"),
            "baseline": (["--baseline"], "regression"),
            # the learners whose state is a row per coordinate in VW's files too
            "ftrl": (["--ftrl"], "regression"), "pistol": (["--pistol"], "regression"),
            "coin": (["--coin"], "regression")}


@pytest.mark.parametrize("case", sorted(VW_CASES))
def test_models_cross_both_ways(vw, tmp_path, case):
    options, labels = VW_CASES[case]
    _cross_both_ways(vw, tmp_path, *_generated(tmp_path, labels), options)


def _cross_both_ways(vw, tmp_path: Path, train: Path, test: Path, options: list) -> None:
    """A model of ``options`` written by VW, then by olearn in VW's format: each predicts
    ``test`` the same in both."""
    for writer, run in (("vw", vw), ("olearn", olearn)):
        path = tmp_path / f"{writer}.model"
        extra = ["--model_format", "vw"] if writer == "olearn" else []
        assert run("-d", train, *options, "-f", path, "--quiet", *extra)[0] == 0
        for reader, read in (("vw", vw), ("olearn", olearn)):
            assert read("-t", "-i", path, "-d", test, "-p", tmp_path / f"{reader}.p",
                        "--quiet")[0] == 0
        _assert_same_predictions(tmp_path / "olearn.p", tmp_path / "vw.p")


@pytest.mark.parametrize("dataset, options", [("cpusmall", []),
                                              ("a9a", ["--loss_function", "logistic"])])
def test_shared_dataset_models_cross_both_ways(vw, shared_data, tmp_path, dataset, options):
    train, test = (shared_data / dataset / f"{part}.vw.gz" for part in ("train", "test"))
    if not train.exists():
        pytest.skip(f"{dataset} not in the shared data")
    _cross_both_ways(vw, tmp_path, train, test, options)


CONTINUED = {"default": [], "sgd": ["--sgd", "-l", "0.05"], "adaptive": ["--adaptive"],
             "normalized": ["--normalized"], "quadratic_l2": ["-q", "ab", "--l2", "1e-6"],
             "rates": ["-l", "0.1", "--power_t", "0.3", "--initial_t", "2"],
             "oaa": ["--oaa", "10"], "ftrl": ["--ftrl"], "pistol": ["--pistol"],
             "coin": ["--coin"]}


@pytest.mark.parametrize("case", sorted(CONTINUED))
def test_continuing_a_vw_model_follows_vws_continuation(vw, tmp_path, case):
    """VW trains the first file; VW and olearn each continue from VW's model on the second:
    their progressive predictions agree as a run of either from scratch does (float32
    against float64 sums: about 1e-5 relative, a few in a thousand up to 1e-3)."""
    options = CONTINUED[case]
    first, second = _generated(tmp_path, "classes" if case == "oaa" else "regression",
                               n=1000, seed=11)
    start = tmp_path / "start.model"
    assert vw("-d", first, *options, "-f", start, "--quiet")[0] == 0
    again = ["--l2", "1e-6"] if case == "quadratic_l2" else []  # VW keeps no --l2
    for name, run in (("vw", vw), ("olearn", olearn)):
        assert run("-i", start, "-d", second, *again, "-p", tmp_path / f"{name}.p",
                   "--quiet")[0] == 0
    got, expected = (np.array(_predictions(tmp_path / f"{name}.p"), dtype=float)
                     for name in ("olearn", "vw"))
    relative = np.abs(got - expected) / np.maximum(np.abs(expected), 1e-2)
    assert np.median(relative) < 1e-4 and relative.max() < 1e-2
