"""VW's number reader: the inline common case equals the general reader bit for bit, and the
general reader follows VW's documented results (vw-reference.md §1.5)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olearn.data.numbers import parse_float, parse_float_general


def _read(reader, text: bytes):
    value, used = reader(np.frombuffer(text, dtype=np.uint8), 0, len(text))
    return np.float32(value), used


numbers = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda f: f"{f:.{abs(hash(f)) % 7}f}".encode()),
    st.integers(-10**9, 10**9).map(lambda i: str(i).encode()),
    st.from_regex(rb"\A-?[0-9]{0,9}(\.[0-9]{0,9})?([eE]-?[0-9]{1,2})?\Z"),
)


@settings(max_examples=1000, deadline=None)
@given(numbers, st.sampled_from([b"", b" ", b"\t", b"\n", b"\r", b":", b"|", b"x", b"."]),
       st.binary(max_size=9))
def test_fast_path_equals_general_reader(text, tail, more):
    """``more`` (any bytes) lets the 8-byte fast path see numbers far from the end."""
    fast, fast_used = _read(parse_float, text + tail + more)
    general, general_used = _read(parse_float_general, text + tail + more)
    assert fast_used == general_used
    assert fast.tobytes() == general.tobytes() or (np.isnan(fast) and np.isnan(general))


@settings(max_examples=1000, deadline=None)
@given(numbers, st.sampled_from([b"", b" ", b"\t", b"\n", b"\r", b":", b"|", b"x", b"."]),
       st.binary(max_size=9), st.integers(0, 30))
def test_fast_path_reads_nothing_beyond_its_end(text, tail, more, end):
    """The 8-byte fast path may look past ``end`` (the next token, the next line), but the
    value and the bytes used are those of the general reader, which stops at ``end``."""
    buf = np.frombuffer(text + tail + more, dtype=np.uint8)
    end = min(end, len(buf))
    fast, fast_used = parse_float(buf, 0, end)
    general, general_used = parse_float_general(buf, 0, end)
    assert fast_used == general_used
    assert np.float32(fast).tobytes() == np.float32(general).tobytes() or (
        np.isnan(fast) and np.isnan(general))


@pytest.mark.parametrize("text, bits", [
    (b"3.9656971e-02", "0x1.44deaep-5"),   # VW's float32 digit loop, not correctly rounded
    (b"0.5", "0x1.0000000000000p-1"),
    (b"-2.5e-1", "-0x1.0000000000000p-2"),
])
def test_values_are_vws(text, bits):
    assert float(_read(parse_float, text)[0]) == float.fromhex(bits)


@pytest.mark.parametrize("text, value, used", [
    (b"2x", 2.0, 1), (b"abc", 0.0, 0), (b"1e", 1.0, 2), (b" 3", 3.0, 2), (b"+3", 3.0, 2),
    (b"0x10", 16.0, 4), (b"0x1.8", 1.5, 5), (b"0x1p3", 8.0, 5), (b".5e+1", 5.0, 5),
    (b"1e-50", 0.0, 5), (b"3e40", np.inf, 4),
])
def test_prefixes_and_fallbacks(text, value, used):
    assert _read(parse_float, text) == (np.float32(value), used)


@pytest.mark.parametrize("text, value", [
    (b"1e999", np.inf), (b"-1e999", -np.inf), (b"1e-999", 0.0), (b"1e200", np.inf),
    (b"1e-200", 0.0), (b"1.5e127", np.inf), (b"1e-130", 0.0),
])
def test_exponents_beyond_an_int8_do_not_wrap(text, value):
    """VW reads 1e999 as 1e-25 (its exponent is an int8); olearn gives the value's limit."""
    assert _read(parse_float, text) == (np.float32(value), len(text))
