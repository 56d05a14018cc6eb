"""The numba parsers against the plain-Python reference parsers on generated well-formed input."""
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import parse_csv, parse_svm_line, parse_vw_line

from olearn.data.csv_header import header_of
from olearn.data.hashing import namespace_hash
from olearn.data.parse import FORMAT_CSV, FORMAT_SVMLIGHT, FORMAT_VW, parse
from olearn.options.config import Config

NAME_BYTES = st.sampled_from(list(b"abcxyzAZ_019-.+\xc3\xa9"))
names = st.lists(NAME_BYTES, min_size=1, max_size=6).map(bytes)
numbers = st.one_of(
    st.integers(-1000, 1000).map(lambda i: str(i).encode()),
    st.floats(-1e6, 1e6, allow_nan=False).filter(lambda f: f == 0 or abs(f) > 1e-30)
    .map(lambda f: f"{f:.6g}".encode()),
    st.floats(1e-3, 1e3).map(lambda f: f"{f:.3e}".encode()),
)
string_values = st.lists(st.sampled_from(list(b"abcxyz_")), min_size=1, max_size=4).map(bytes)


@st.composite
def features(draw):
    kind = draw(st.sampled_from(["plain", "value", "string", "anonymous"]))
    if kind == "plain":
        return draw(names)
    if kind == "value":
        return draw(names) + b":" + draw(numbers)
    if kind == "string":
        return draw(names) + b":" + draw(string_values)
    return b":" + draw(numbers)


@st.composite
def vw_lines(draw):
    head = []
    n_numbers = draw(st.integers(0, 3))
    head += [draw(numbers) for _ in range(n_numbers)]
    tag = draw(st.sampled_from([None, "quote", "glued"]))
    if tag == "quote":
        head.append(b"'" + draw(names))
    label = b" ".join(head)
    if tag == "glued":
        label += (b" " if label else b"") + draw(
            st.lists(st.sampled_from(list(b"tg1")), min_size=1, max_size=3).map(bytes))
    elif label:
        label += b" "
    segments = []
    for _ in range(draw(st.integers(0, 3))):
        header = draw(st.one_of(st.just(b""), names))
        if header and draw(st.booleans()):
            header += b":" + draw(numbers)
        feats = draw(st.lists(features(), max_size=5))
        segments.append(b"|" + header + b"".join(b" " + f for f in feats))
    # a blank before each later '|': a string value would otherwise run on into it (VW's rule)
    line = label + b" ".join(segments)
    return line or b"|"


def _parse(text: bytes, fmt: int, bits: int = 18):
    ns_hash = namespace_hash(b"f" if fmt == FORMAT_SVMLIGHT else b" ")
    return parse(np.frombuffer(text, dtype=np.uint8), fmt, (1 << bits) - 1, 0,
                 False, True, False, ns_hash)


def _features(batch, e):
    lo, hi = batch.offsets[e], batch.offsets[e + 1]
    return list(zip(batch.index[lo:hi].tolist(), batch.value[lo:hi].tolist(),
                    batch.namespace[lo:hi].tolist()))


def _same_features(got, want):
    assert [(i, ns) for i, _, ns in got] == [(i, ns) for i, _, ns in want]
    for (_, v, _), (_, w, _) in zip(got, want):
        assert math.isclose(v, w, rel_tol=2e-6, abs_tol=1e-30)


@settings(max_examples=300, deadline=None)
@given(st.lists(vw_lines(), min_size=1, max_size=5), st.integers(1, 24))
def test_vw_parser_equals_reference(lines, bits):
    text = b"\n".join(lines) + b"\n"
    batch = _parse(text, FORMAT_VW, bits)
    assert len(batch) == len(lines)
    for e, line in enumerate(lines):
        label, importance, initial, tag, want = parse_vw_line(line, bits)
        got_label, got_importance, got_initial = batch.numbers[e].tolist()
        assert ((math.isnan(got_label) and math.isnan(label))
                or math.isclose(got_label, label, rel_tol=2e-6))
        if not math.isnan(label):
            assert math.isclose(got_importance, importance, rel_tol=2e-6)
            assert math.isclose(got_initial, initial, rel_tol=2e-6, abs_tol=1e-30)
        start, end = batch.tags[e]
        assert (None if start < 0 else bytes(batch.text[start:end])) == tag
        _same_features(_features(batch, e), want)


@st.composite
def svm_lines(draw):
    label = draw(st.sampled_from([b"1", b"-1", b"+1", b"0", b"2.5"]))
    tokens = [label]
    if draw(st.booleans()):
        tokens.append(b"qid:" + str(draw(st.integers(1, 9))).encode())
    for index in sorted(draw(st.sets(st.integers(1, 10**6), max_size=8))):
        tokens.append(str(index).encode() + b":" + draw(numbers))
    line = b" ".join(tokens)
    if draw(st.booleans()):
        line += b" # a comment: 1:2"
    return line


@settings(max_examples=200, deadline=None)
@given(st.lists(svm_lines(), min_size=1, max_size=5))
def test_svmlight_parser_equals_reference(lines):
    text = b"\n".join(lines) + b"\n"
    batch = _parse(text, FORMAT_SVMLIGHT)
    assert len(batch) == len(lines)
    assert batch.n_warnings == 0
    for e, line in enumerate(lines):
        label, want = parse_svm_line(line)
        assert math.isclose(batch.numbers[e, 0], label, rel_tol=1e-6)
        _same_features(_features(batch, e), want)


@settings(max_examples=100, deadline=None)
@given(st.lists(vw_lines(), min_size=1, max_size=5))
def test_line_endings_and_bom_do_not_change_the_parse(lines):
    plain = _parse(b"\n".join(lines) + b"\n", FORMAT_VW)
    crlf = _parse(b"\xef\xbb\xbf" + b"\r\n".join(lines) + b"\r\n", FORMAT_VW)
    np.testing.assert_array_equal(plain.index, crlf.index)
    np.testing.assert_array_equal(plain.value, crlf.value)
    np.testing.assert_array_equal(plain.numbers, crlf.numbers)


csv_names = st.lists(st.sampled_from(list(b"abxy_01")), max_size=3).map(bytes)
quoted_cells = st.lists(st.sampled_from([b"a", b"b", b" ", b",", b'""', b"1"]),
                        max_size=4).map(lambda parts: b'"' + b"".join(parts) + b'"')


@st.composite
def csv_files(draw):
    """A well-formed CSV file: a header of _label, _tag and ``[ns|]name`` columns, and rows
    of numbers, names, quoted strings (separators and doubled quotes inside) or empty cells."""
    columns = [b"_label"] if draw(st.booleans()) else []
    columns += [b"_tag"] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(2, 5))):  # two at least: no line is empty
        ns = draw(st.sampled_from([b"", b"a", b"ab", b"b", b"x"]))
        columns.append((ns + b"|" if ns or draw(st.booleans()) else b"") + draw(csv_names))
    columns = draw(st.permutations(columns))
    rows = []
    for _ in range(draw(st.integers(1, 4))):
        cells = []
        for column in columns:
            if column == b"_label":
                cells.append(b" ".join(draw(st.lists(numbers, max_size=3))))
            elif column == b"_tag":
                cells.append(draw(st.one_of(st.just(b""), names)))
            else:
                cells.append(draw(st.one_of(st.just(b""), numbers, string_values, quoted_cells)))
        rows.append(b",".join(cells))
    return b",".join(columns) + b"\n" + b"\n".join(rows) + b"\n"


@settings(max_examples=300, deadline=None)
@given(csv_files(), st.integers(1, 24))
def test_csv_parser_equals_reference(text, bits):
    config = Config(csv=True, quiet=True)
    data = np.frombuffer(text, dtype=np.uint8)
    batch = parse(data, FORMAT_CSV, (1 << bits) - 1, 0, False, True, False, 0,
                  csv=header_of(config, text).block(data, True))
    want = parse_csv(text, bits=bits)
    assert len(batch) == len(want)
    for e, (label, importance, initial, tag, features) in enumerate(want):
        got_label, got_importance, got_initial = batch.numbers[e].tolist()
        assert ((math.isnan(got_label) and math.isnan(label))
                or math.isclose(got_label, label, rel_tol=2e-6))
        if not math.isnan(label):
            assert math.isclose(got_importance, importance, rel_tol=2e-6)
            assert math.isclose(got_initial, initial, rel_tol=2e-6, abs_tol=1e-30)
        start, end = batch.tags[e]
        assert (None if start < 0 else bytes(batch.text[start:end])) == tag
        _same_features(_features(batch, e), features)
