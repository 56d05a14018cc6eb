"""The kernel that finds the rows a --dask_sync learner changed (olearn/kernel/changed_rows.py),
against numpy's comparison of the bytes."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olearn.kernel.changed_rows import _mark, changed_rows


def _reference(pairs, count):
    """The rows whose bytes differ in any pair: numpy, a row at a time."""
    changed = np.zeros(count, dtype=bool)
    for now, base in pairs:
        a = np.ascontiguousarray(now).view(np.uint8).reshape(count, now.nbytes // max(count, 1))
        b = np.ascontiguousarray(base).view(np.uint8).reshape(count, base.nbytes // max(count, 1))
        changed |= (a != b).any(axis=1)
    return np.flatnonzero(changed)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.sampled_from([(4, np.float32), (1, np.float64), (3, np.float32),
                                            (3, np.uint8), (2, np.float64)]),
       st.integers(0, 2 ** 32 - 1))
def test_changed_rows_are_the_rows_whose_bits_differ(rows, shape, seed):
    """Tables of several widths and types (8-, 4- and 1-byte words), a few entries changed,
    some to another NaN payload or to -0.0: the rows found are numpy's."""
    width, dtype = shape
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(2):
        base = rng.integers(0, 255, size=(rows, width)).astype(dtype)
        now = base.copy()
        for _ in range(rng.integers(0, 4)):
            if rows:
                i, j = rng.integers(rows), rng.integers(width)
                if dtype is np.uint8:
                    now[i, j] ^= np.uint8(1 + rng.integers(255))
                else:
                    now[i, j] = rng.choice([np.nan, -0.0, now[i, j] + 1])
                    base[i, j] = np.nan if rng.random() < 0.3 else base[i, j]
        pairs.append((now, base))
    assert changed_rows(pairs, rows).tolist() == _reference(pairs, rows).tolist()


def test_a_nan_that_stays_nan_is_unchanged():
    base = np.full((3, 4), np.nan, dtype=np.float32)
    assert changed_rows([(base.copy(), base)], 3).tolist() == []


def test_arrays_that_do_not_match_are_an_error():
    with pytest.raises(ValueError, match="changed_rows"):
        changed_rows([(np.zeros((3, 4)), np.zeros((3, 2)))], 3)
    with pytest.raises(ValueError, match="changed_rows"):
        changed_rows([(np.zeros((3, 4)), np.zeros((3, 4)))], 4)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6), st.integers(0, 3),
       st.integers(0, 3))
def test_the_kernel_reads_only_the_rows_and_words_all_its_arrays_have(a, b, c, wa, wb):
    """Called directly with arrays of any shapes it stays inside them (the bounds-checked run
    proves it) and marks only rows all three have."""
    now = np.arange(a * wa, dtype=np.uint32).reshape(a, wa)
    base = np.zeros((b, wb), dtype=np.uint32)
    changed = np.zeros(c, dtype=np.bool_)
    _mark(now, base, changed)
    common = min(a, b, c)
    words = min(wa, wb)
    expected = [i < common and (now[i, :words] != base[i, :words]).any() for i in range(c)]
    assert changed.tolist() == expected
