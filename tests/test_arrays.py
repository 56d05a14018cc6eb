"""olearn/core/arrays.py's helpers against numpy."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from olearn.core.arrays import heapsort

floats = st.floats(allow_nan=False, width=64)


@settings(max_examples=300, deadline=None)
@given(st.lists(floats, max_size=60), st.integers(0, 60))
def test_heapsort_sorts_the_prefix_and_leaves_the_rest(values, n):
    a = np.array(values + [7.0])  # one entry past the list: never touched
    n = min(n, len(values))
    want = np.concatenate([np.sort(a[:n]), a[n:]])
    heapsort(a, n)
    assert a.tolist() == want.tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(allow_nan=True, width=64), max_size=30))
def test_heapsort_with_nans_stays_a_permutation(values):
    a = np.array(values)
    heapsort(a, len(a))
    assert sorted(map(repr, a.tolist())) == sorted(map(repr, values))
