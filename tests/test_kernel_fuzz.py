"""Fuzzing the kernels' entry points: any bytes and any arguments give a result or a ValueError,
never an access outside an array.

The kernels check no bounds (numba), so an access outside an array would corrupt memory or
crash silently; run under NUMBA_BOUNDSCHECK=1 (`make test` does, in a separate kernel cache),
such an access is an IndexError instead, which these tests do not accept.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olearn.data import sources
from olearn.data.csv_header import CsvHeader
from olearn.data.hashing import namespace_hash
from olearn.data.labels import LABEL_CLASSES, LABEL_COSTS, labels_of
from olearn.data.parse import (
    FORMAT_CSV,
    FORMAT_SVMLIGHT,
    FORMAT_VW,
    IDENTITY,
    NO_CSV,
    SIMPLE_LABELS,
    line_ends,
    parse,
    parse_block,
)
from olearn.engine.learner import OnlineLearner
from olearn.errors import OlearnError
from olearn.features.interactions import encode, expand_example, unseen_features
from olearn.kernel import layouts, loop
from olearn.kernel.bundles import Examples, Expander, Model, NoReduction, Out
from olearn.learners import regularize
from olearn.learners.coin import Coin
from olearn.learners.experts import saew
from olearn.learners.experts.family import ExponentialWeights
from olearn.learners.gd import GradientDescent
from olearn.options.config import Config
from olearn.outputs.predictions import format_predictions
from olearn.reductions.oaa import OneAgainstAll

# Bytes that matter to the parsers (CSV's too), so that random input reaches every branch.
GRAMMAR = list(b"|: ,\"\t\n\r'#abq0123456789.-+eExinfa\x00\xef\xbb\xbf")
# Lines dense with one-byte features (a feature per 2 bytes: more than the parser's first
# buffers hold), and many short lines: what makes the parser grow its buffers.
dense_line = st.tuples(
    st.sampled_from([b"", b"1 ", b"1 2 'x", b"1:2 |", b"|a:2"]),
    st.integers(0, 400).flatmap(lambda k: st.lists(
        st.sampled_from([b"x"] * 8 + [b":", b"1", b"|", b":1", b"|b"]), min_size=k,
        max_size=k)),
    st.sampled_from([b" ", b"\t"])).map(lambda t: t[0] + b"|" + t[2].join(t[1]))
dense_lines = st.integers(1, 30).flatmap(
    lambda k: st.lists(dense_line, min_size=k, max_size=k)).map(b"\n".join)
text_bytes = st.one_of(st.binary(max_size=300),
                       st.lists(st.sampled_from(GRAMMAR), max_size=300).map(bytes),
                       dense_lines, st.integers(0, 300).map(lambda n: b"1\n" * n))
# Example arrays of every kernel configuration (one compiled kernel serves them all).
CONFIGS = {"default": {}, "l1": {"l1": 1e-3}, "elastic net": {"l1": 1e-3, "l2": 1e-2},
           "sgd quadratic": {"sgd": True, "quadratic": ["ab", "b:"], "cubic": ["abc"]},
           "stage_poly": {"stage_poly": True, "batch_sz": 2, "poly_heuristic": "ssm"},
           "boa": {"boa": True}, "saew eg": {"saew": True, "saew_sub": "eg"},
           "calibrated": {"saew_calibrate": True, "saew_grid_d0": 1, "saew_grid_alpha": 2,
                          "saew_grid_radius": 1, "saew_grid_B": 1},
           "logistic": {"loss_function": "logistic", "link": "logistic"},
           "oaa": {"oaa": 3, "quadratic": ["ab"]},
           "ftrl": {"ftrl": True, "l1": 1e-3, "quadratic": ["ab"]}, "pistol": {"pistol": True},
           "coin": {"coin": True, "loss_function": "logistic"},
           "oaa stage_poly": {"oaa": 5, "stage_poly": True, "batch_sz": 2, "l1": 1e-3,
                              "probabilities": True, "poly_heuristic": "ssm"},
           # simple labels' batches: no costs, and any number where an action's position is
           "csoaa_ldf": {"csoaa_ldf": "mc", "probabilities": True, "quadratic": ["ab"]},
           "wap_ldf": {"wap_ldf": "m"},
           "lrq": {"lrq": ["ab2", "bb1"], "lrqdropout": True}, "lrqfa": {"lrqfa": "abb 2"}}
BITS = 6


# the columns CSV bytes are fuzzed under: every kind, two namespaces sharing an index byte
CSV_COLUMNS = [b"_label", b"_tag", b"a|x", b"|", b"ab|", b"b|y", b"z", b"_label"]


def _parse(text: bytes, fmt: int = FORMAT_VW, audit: bool = False):
    ns = b"f" if fmt == FORMAT_SVMLIGHT else b" "
    data = np.frombuffer(text, dtype=np.uint8)
    csv = (CsvHeader(CSV_COLUMNS, Config(csv=True), False).block(data, False)
           if fmt == FORMAT_CSV else NO_CSV)
    return parse(data, fmt, (1 << BITS) - 1, 0, False, True, audit, namespace_hash(ns), csv=csv)


def _lines_in(text: bytes) -> int:
    return text.count(b"\n") + (len(text) > 0 and not text.endswith(b"\n"))


@pytest.mark.slow  # thousands of inputs: make check runs them, bounds-checked too
@settings(max_examples=2000)
@given(text_bytes, st.sampled_from([FORMAT_VW, FORMAT_SVMLIGHT, FORMAT_CSV]), st.booleans())
def test_parser_output_fits_its_arrays_whatever_the_bytes(text, fmt, audit):
    batch = _parse(text, fmt, audit)
    n = len(batch)
    assert batch.n_lines == _lines_in(text)
    assert n <= batch.n_lines and batch.numbers.shape == (n, 3) and batch.tags.shape == (n, 2)
    assert batch.offsets[0] == 0 and np.all(np.diff(batch.offsets) >= 0)
    assert batch.offsets[-1] == len(batch.index) == len(batch.value) == len(batch.namespace)
    assert np.all(batch.index < (1 << BITS)) and np.all(np.isfinite(batch.value))
    assert np.all(batch.value != 0)
    assert np.all((batch.lines >= 0) & (batch.lines < max(batch.n_lines, 1)))
    tagged = batch.tags[:, 0] >= 0
    assert np.all((batch.tags[tagged, 0] <= batch.tags[tagged, 1])
                  & (batch.tags[tagged, 1] <= len(text)))
    labels, importance = batch.numbers[:, 0], batch.numbers[:, 1]
    assert not np.any(np.isinf(labels)) and np.all(np.isfinite(importance))
    if audit:
        assert batch.audit.shape == (len(batch.index), 6)
        assert np.all(batch.audit[:, 1] <= len(batch.text))


@pytest.mark.slow  # thousands of inputs: make check runs them, bounds-checked too
@settings(max_examples=500)
@given(st.lists(st.sampled_from([b"shared", b"1:0.5", b"2:1", b"3", b"a:x", b" ", b"\n", b"\n\n",
                                 b"|a x", b"|b y:2", b"'t"]), max_size=60).map(b" ".join),
       st.sampled_from(["csoaa_ldf", "wap_ldf"]))
def test_multiline_examples_group_and_learn_whatever_the_bytes(learners, text, name):
    learner = learners[name]
    try:
        batch = learner.parse_block(sources.Block(text, "f", 0, True), FORMAT_VW)
    except OlearnError as error:  # a misplaced shared line
        assert "'shared' line" in error.message
        return
    assert np.all(np.diff(batch.cost_offsets) >= 0) and len(batch.cost_offsets) == len(batch) + 1
    assert batch.offsets[-1] == len(batch.index)
    preds = learner.new_predictions(batch)
    learner.learn(batch, preds)
    learner.predict(batch, preds)


@pytest.mark.slow  # thousands of inputs: make check runs them, bounds-checked too
@settings(max_examples=1000)
@given(text_bytes, st.sampled_from([LABEL_COSTS, LABEL_CLASSES]), st.booleans())
def test_class_labels_fit_their_arrays_whatever_the_bytes(text, kind, named):
    labels = labels_of(kind, ["a", "b:c", "1"] if named else None)
    batch = parse(np.frombuffer(text, dtype=np.uint8), FORMAT_VW, (1 << BITS) - 1, 0, False,
                  True, False, namespace_hash(b" "), labels=labels)
    n = len(batch)
    offsets = batch.cost_offsets
    assert len(offsets) == n + 1 and offsets[0] == 0 and np.all(np.diff(offsets) >= 0)
    assert offsets[-1] == len(batch.cost_class) == len(batch.cost_value)
    assert np.all(np.isfinite(batch.cost_value))
    listed = np.diff(offsets) > 0
    assert np.all(np.isnan(batch.numbers[~listed, 0]))


@settings(max_examples=500)
@given(st.binary(max_size=200), st.integers(0, 7))
def test_line_ends_are_every_newline_then_an_unterminated_end(text, offset):
    buf = np.frombuffer(b"\n" * offset + text, dtype=np.uint8)[offset:]  # any alignment
    expected = list(np.flatnonzero(buf == 10))
    if len(buf) and buf[-1] != 10:
        expected.append(len(buf))
    assert list(line_ends(buf)) == expected


@pytest.fixture(scope="module")
def learners():
    return {name: OnlineLearner(Config(bit_precision=BITS, quiet=True, **options))
            for name, options in CONFIGS.items()}


def _learn(learner, batch, **replace):
    """loop.learn_batch (or learn_expanded_batch) on ``batch`` with some of its arguments
    replaced."""
    args = {"W": learner.weights, "family": learner.family.bundle(), "poly": learner.poly,
            "reduction": learner.reduction.bundle(), "state": learner.state, "stats": learner.stats,
            "params": learner.params, "terms": learner.terms, "linear": learner.linear,
            "numbers": batch.numbers, "offsets": batch.offsets,
            "index": batch.index, "value": batch.value, "namespace": batch.namespace,
            "lines": batch.lines, "first_line": 0, "cost_offsets": batch.cost_offsets,
            "cost_class": batch.cost_class, "cost_value": batch.cost_value,
            "preds": learner.new_predictions(batch),
            "rows": np.empty((4, layouts.ROW_COLS))}
    args.update(replace)
    a = args
    kernel = loop.batch_kernel(a["terms"], a["linear"], a["params"])
    return kernel(Model(a["W"], a["state"], a["params"]), a["family"],
                  Expander(a["terms"], a["linear"], a["poly"]), a["reduction"],
                  Examples(a["numbers"], a["offsets"], a["index"], a["value"], a["namespace"],
                           a["lines"], a["first_line"], a["cost_offsets"], a["cost_class"],
                           a["cost_value"]),
                  Out(a["stats"], a["preds"], a["rows"]))


@pytest.mark.slow  # thousands of inputs: make check runs them, bounds-checked too
@settings(max_examples=1000)
@given(text_bytes, st.sampled_from(sorted(CONFIGS)))
def test_learner_takes_any_parsed_bytes(learners, text, name):
    learner = learners[name]
    batch = _parse(text)
    preds = learner.new_predictions(batch)
    learner.learn(batch, preds)
    learner.predict(batch, preds)


MUTATIONS = ("offsets", "index", "value", "namespace", "numbers", "lines", "preds", "rows",
             "weights", "terms", "linear", "lazy", "poly", "ew", "slots", "state", "params",
             "classes")


def _mutated(learner, batch, what, k):
    """Arguments of learn_batch that do not fit each other, one way per ``what``."""
    n, nf = len(batch), len(batch.index)
    if what == "offsets":
        offsets = batch.offsets.copy()
        offsets[k % len(offsets)] = [-1, nf + 1 + k, 1 << 40][k % 3]
        return {"offsets": offsets}
    if what == "index":
        index = np.append(batch.index, np.uint32(1 << BITS) + np.uint32(k))
        offsets = batch.offsets.copy()
        offsets[-1] += 1
        return {"index": index, "value": np.append(batch.value, np.float32(1)),
                "namespace": np.append(batch.namespace, np.uint8(97)), "offsets": offsets}
    if what in ("value", "namespace"):
        return {what: getattr(batch, what)[:max(nf - 1 - k % 3, 0)]}
    if what == "numbers":
        return {what: np.concatenate([batch.numbers, batch.numbers[:1]]) if k % 2
                else batch.numbers[:-1]}
    if what == "lines":
        return {what: batch.lines[:-1]}
    if what == "preds":
        return {"preds": np.empty((max(n - 1, 0), 2), dtype=np.float32)}
    if what == "rows":
        return {"rows": np.empty((4, layouts.ROW_COLS - 1))}
    if what == "weights":
        return {"W": learner.weights[:-1 - k % 3]}
    if what == "terms":
        terms = encode(["ab"])
        terms[0, 0] = [0, 3, 99, -1][k % 4]
        return {"terms": terms}
    if what == "linear":
        return {"linear": np.ones(255 + 2 * (k % 2), dtype=np.bool_)}
    if what == "lazy":
        return {"family": GradientDescent.BUNDLE(np.zeros((1, 1))),
                "params": _params(learner, layouts.P.l1, 1e-3)}
    if what == "poly":
        poly = tuple(a[:1] for a in learner.poly)
        return {"poly": poly, "params": _params(learner, layouts.P.stage_poly, 1)}
    if what == "ew":
        ew = ExponentialWeights(Config(bit_precision=BITS, saew=True, quiet=True)).ew
        return {"family": ExponentialWeights.BUNDLE(tuple(a[..., :1] for a in ew))}
    if what == "slots":  # --coin's per-coordinate table: a row short or a column short
        slots = np.zeros(((1 << BITS) - 1 + k % 2, len(Coin.COLUMNS) - k % 2), np.float32)
        return {"family": Coin.BUNDLE(slots, 4.0, 1.0)}
    if what == "state":
        return {"state": learner.state[:-1]}
    if what == "classes":  # --oaa with too few class rows, too narrow predictions, or K bad
        params = _params(learner, layouts.P.classes, [3, 3, 0.5, 1 << 20, 3][k % 5])
        wide = np.empty((n, 5), dtype=np.float32)
        return [{"reduction": _classes(2), "preds": wide, "params": params},
                {"reduction": _classes(3), "params": params},
                {"reduction": _classes(3), "preds": wide, "params": params},
                {"reduction": _classes(1 << 20), "preds": wide, "params": params},
                {"reduction": NoReduction(), "preds": wide, "params": params}][k % 5]
    return {"params": learner.params[:-1]}


def _classes(k):
    return OneAgainstAll.BUNDLE(np.zeros((k, 2)))


def _params(learner, slot, value):
    params = learner.params.copy()
    params[slot] = value
    return params


@pytest.mark.slow  # thousands of inputs: make check runs them, bounds-checked too
@settings(max_examples=500)
@given(st.lists(st.sampled_from(GRAMMAR[:-4]), min_size=1, max_size=120).map(bytes),
       st.sampled_from(MUTATIONS), st.integers(0, 11), st.sampled_from(["default", "boa"]))
def test_learner_refuses_arguments_that_do_not_fit(learners, text, what, k, name):
    learner = learners[name]
    batch = _parse(b"1 |a x y |b z\n" + text)
    with pytest.raises(ValueError, match="learn_batch"):
        _learn(learner, batch, **_mutated(learner, batch, what, k))


def test_learner_takes_its_own_arguments(learners):
    batch = _parse(b"1 |a x y |b z\n2 |a x\n")
    for learner in learners.values():
        _learn(learner, batch)


@pytest.mark.parametrize("name", ["sgd quadratic", "stage_poly"])
def test_the_plain_loop_refuses_examples_that_expand(learners, name):
    learner = learners[name]
    batch = _parse(b"1 |a x y |b z\n2 |a x\n")
    assert loop.batch_kernel(learner.terms, learner.linear, learner.params) is not loop.learn_batch
    with pytest.raises(ValueError, match="expand"):
        loop.learn_batch(*learner._arguments(batch, learner.new_predictions(batch),
                                             np.empty((4, layouts.ROW_COLS)), learner.params,
                                             learner.state, learner.stats))


def test_the_plain_loop_learns_as_the_expanding_one(learners):
    batch = _parse(b"1 |a x y |b z\n-1 |a x\n1 |b y:2\n")
    plain, expanding = (OnlineLearner(Config(bit_precision=BITS, quiet=True)) for _ in range(2))
    assert loop.batch_kernel(plain.terms, plain.linear, plain.params) is loop.learn_batch
    for learner, kernel in ((plain, loop.learn_batch), (expanding, loop.learn_expanded_batch)):
        preds = learner.new_predictions(batch)
        kernel(*learner._arguments(batch, preds, np.empty((4, layouts.ROW_COLS)),
                                   learner.params, learner.state, learner.stats))
        learner.preds = preds
    assert np.array_equal(plain.preds, expanding.preds)
    assert np.array_equal(plain.weights, expanding.weights)


@settings(max_examples=200)
@given(st.lists(st.integers(0, 255), max_size=12), st.integers(-2, 14), st.integers(-2, 14),
       st.lists(st.text(alphabet="abc:", min_size=1, max_size=4), max_size=3))
def test_expansion_for_audit_checks_its_range_and_terms(namespaces, lo, hi, terms):
    namespace = np.array(namespaces, dtype=np.uint8)
    index = np.arange(len(namespaces), dtype=np.uint32)
    value = np.ones(len(namespaces), dtype=np.float32)
    table = encode([t for t in terms if len(t) >= 2])
    if not 0 <= lo <= hi <= len(namespaces):
        with pytest.raises(ValueError, match="lo:hi"):
            expand_example(index, value, namespace, lo, hi, table, 255, False)
        return
    idx, val, src = expand_example(index, value, namespace, lo, hi, table, 255, False)
    assert len(idx) == len(val) == len(src) >= hi - lo
    assert np.all((src >= -1) & (src < max(hi, 1)))


def test_expansion_for_audit_refuses_malformed_terms():
    table = encode(["ab"])
    table[0, 0] = 5
    with pytest.raises(ValueError, match="terms"):
        expand_example(np.zeros(2, np.uint32), np.ones(2, np.float32),
                       np.array([97, 98], np.uint8), 0, 2, table, 255, False)


@settings(max_examples=100)
@given(text_bytes, st.integers(0, 3))
def test_unseen_features_checks_the_batch_and_table(text, cut):
    batch = _parse(text)
    seen = np.zeros((1 << BITS) - cut, dtype=np.bool_)
    args = (batch.offsets, batch.index, batch.value, batch.namespace, encode(["ab"]),
            (1 << BITS) - 1, False, seen)
    if cut:  # a table smaller than the mask says
        with pytest.raises(ValueError, match="unseen_features"):
            unseen_features(*args)
        return
    indices, components = unseen_features(*args)
    assert np.all(indices < len(seen)) and len(indices) == len(components)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(-3, 12), st.integers(-3, 12)), max_size=6),
       st.integers(0, 8))
def test_prediction_lines_check_their_tags(spans, text_length):
    tags = np.array(spans, dtype=np.int64).reshape(-1, 2)
    text = np.frombuffer(b"abcdefgh"[:text_length], dtype=np.uint8)
    preds = np.arange(len(spans), dtype=np.float32)
    inside = all(end <= start or (start >= 0 and end <= text_length) for start, end in spans)
    if not inside:
        with pytest.raises(ValueError, match="tag"):
            format_predictions(preds, tags, text)
        return
    lines = bytes(format_predictions(preds, tags, text)).decode().splitlines()
    assert len(lines) == len(spans)
    with pytest.raises(ValueError, match="tags"):
        format_predictions(np.append(preds, np.float32(1)), tags, text)


def test_flush_and_export_check_their_arrays(learners):
    learner = learners["elastic net"]
    acc = learner.state[layouts.S_REG:layouts.S_REG + regularize.SIZE]
    with pytest.raises(ValueError, match="flush"):
        regularize.flush(learner.weights, learner.family.lazy[:-1], acc, 1e-3, True)
    with pytest.raises(ValueError, match="flush"):
        regularize.flush(learner.weights, learner.family.lazy[:, :1], acc, 1e-3, True)
    experts = learners["boa"]
    with pytest.raises(ValueError, match="export"):
        saew.export(experts.family.ew, experts.weights[:-1])
    hashes = experts.family.ew[1].copy()
    hashes[0] = 1 << 20
    shared = experts.family.ew[7].copy()
    shared[0] = 1  # one active coordinate, whose feature index is out of range
    old = experts.family.ew
    ew = old[:1] + (hashes,) + old[2:7] + (shared,) + old[8:]
    with pytest.raises(ValueError, match="export"):
        saew.export(ew, experts.weights)


@pytest.mark.parametrize("fmt, line, features", [(FORMAT_VW, b"|a b c d e f g h", 7),
                                                 (FORMAT_VW, b"| b c d e f g h", 7),
                                                 (FORMAT_SVMLIGHT, b"1 a:1 b:2 c:3 d:4", 4),
                                                 (FORMAT_VW, b"1 |a :1 :2 :3", 3)])
def test_parse_block_holds_the_densest_lines_in_its_buffers(fmt, line, features):
    text = np.frombuffer((line + b"\n") * 50 + line, dtype=np.uint8)
    out = parse_block(text, fmt, 255, 0, False, True, True, 0, IDENTITY, SIMPLE_LABELS, NO_CSV)
    assert len(out[0]) == 51 and out[10] == 51 and len(out[4]) == 51 * (features + 1)


@pytest.mark.parametrize("kind, line, classes", [(LABEL_COSTS, b"1 2 3 4 5 6 7 8|", 7),
                                                 (LABEL_COSTS, b"1 2 3 4 5 6 7 8 |", 8),
                                                 (LABEL_CLASSES, b"1,2,3,4,5,6,7,8 |", 8)])
def test_parse_block_holds_the_densest_labels_in_its_buffers(kind, line, classes):
    text = np.frombuffer((line + b"\n") * 50 + line, dtype=np.uint8)
    out = parse_block(text, FORMAT_VW, 255, 0, False, True, True, 0, IDENTITY,
                      labels_of(kind, None), NO_CSV)
    assert out[10] == 51 and list(out[11]) == list(range(0, 52 * classes, classes))
    assert len(out[12]) == 51 * classes


def test_batch_lines_are_the_parsers_count():
    batch = _parse(b"1 |a x\n2 |a y\n3 |a z")
    assert batch.n_lines == 3 and len(batch) == 3


def _vw_number(x: float) -> str:
    """VW's -p number, in plain Python: no decimals for an integral value, else 6 (rounded
    half up on the float64 product, as the kernel rounds)."""
    if math.isnan(x):
        return "nan"
    sign = "-" if x < 0 else ""
    x = abs(x)
    if math.isinf(x):
        return sign + "inf"
    if x == math.floor(x):  # Python's int of a float is exact, as printf's %.0f
        return sign + str(int(x))
    micro = math.floor(x * 1e6 + 0.5)
    return f"{sign}{micro // 10 ** 6}.{micro % 10 ** 6:06d}"


@settings(max_examples=300)
@given(st.lists(st.floats(width=32)
                | st.sampled_from([0.0, -0.0, 9.5, 1e19, 1e20, -3.4028235e38, 123456789.0]),
                min_size=1, max_size=20))
def test_prediction_numbers_are_written_as_vw_writes_them(values):
    preds = np.array(values, dtype=np.float32)
    tags = np.full((len(values), 2), -1, dtype=np.int64)
    lines = bytes(format_predictions(preds, tags, np.empty(0, dtype=np.uint8))).decode()
    assert lines.splitlines() == [_vw_number(float(v)) for v in preds]


def test_a_prediction_beyond_int64_is_written_whole_as_vw_writes_it():
    preds = np.array([1e20, -3.4028235e38, 2.0 ** 70], dtype=np.float32)
    tags = np.full((3, 2), -1, dtype=np.int64)
    lines = bytes(format_predictions(preds, tags, np.empty(0, dtype=np.uint8))).decode()
    assert lines.splitlines() == ["100000002004087734272",
                                  "-340282346638528859811704183484516925440",
                                  "1180591620717411303424"]
