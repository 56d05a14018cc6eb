"""The vectorizable math of olearn/core/vmath.py against numpy's and Python's own."""
import math

import numpy as np
from numba import njit

from olearn.core import vmath


@njit(cache=True)
def _apply(kind, xs):
    out = np.empty_like(xs)
    for i in range(len(xs)):
        if kind == 0:
            out[i] = vmath.exp(xs[i])
        elif kind == 1:
            out[i] = vmath.sqrt(xs[i])
        else:
            out[i] = vmath.ceil_pow2(xs[i])
    return out


@njit(cache=True)
def _reductions(xs):
    total, top = 0.0, -np.inf
    for i in range(len(xs)):
        total = vmath.add_reordered(total, xs[i])
        top = vmath.maximum(top, xs[i])
    return total, top


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units in the last place between finite float64s of the same sign."""
    return np.abs(a.view(np.int64) - b.view(np.int64))


def test_exp_is_within_one_ulp_of_numpy_over_the_whole_range():
    rng = np.random.default_rng(5)
    xs = np.concatenate([rng.uniform(-745.0, 709.7, 200_000), rng.uniform(-5, 5, 100_000),
                         np.linspace(-1e-9, 1e-9, 1001), [0.0, -0.0, 1.0, -1.0, 709.78]])
    got, want = _apply(0, xs), np.exp(xs)
    assert _ulps(got, want).max() <= 1


def test_exp_matches_numpy_at_the_ends_of_the_range():
    xs = np.array([709.79, 710.0, 1e300, np.inf, -745.2, -800.0, -1e300, -np.inf, np.nan,
                   -708.5, -740.0, -744.0])  # the last three: subnormal or near-subnormal results
    with np.errstate(over="ignore"):
        got, want = _apply(0, xs), np.exp(xs)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    assert np.all((got[finite] == want[finite]) | (_ulps(got[finite], want[finite]) <= 1))


def test_sqrt_equals_numpy():
    rng = np.random.default_rng(6)
    xs = np.concatenate([rng.uniform(0, 1e6, 10_000), 10.0 ** rng.uniform(-300, 300, 10_000),
                         [0.0, 1.0, 4.0, np.inf, 5e-324]])
    assert np.array_equal(_apply(1, xs), np.sqrt(xs))
    assert np.isnan(_apply(1, np.array([-1.0]))[0])


def test_ceil_pow2_is_the_least_power_of_two_at_least_x():
    rng = np.random.default_rng(7)
    xs = np.concatenate([10.0 ** rng.uniform(-300, 300, 10_000), 2.0 ** np.arange(-1000, 1000),
                         np.nextafter(2.0 ** np.arange(-20, 20), np.inf), [0.0, np.inf]])
    want = np.array([0.0 if x == 0 else x if math.isinf(x)
                     else 2.0 ** (math.frexp(x)[1] - (math.frexp(x)[0] == 0.5)) for x in xs])
    assert np.array_equal(_apply(2, xs), want)


def test_reordered_sum_and_maximum_agree_with_sequential_ones():
    rng = np.random.default_rng(8)
    xs = rng.exponential(1.0, 10_001)
    total, top = _reductions(xs)
    assert math.isclose(total, math.fsum(xs), rel_tol=1e-13)
    assert top == xs.max()
    assert math.isnan(_reductions(np.array([1.0, np.nan, 2.0]))[1])


@njit(cache=True)
def _prefetch_rows(table, rows):
    for r in rows:
        vmath.prefetch_row(table, r)
    return table[0, 0]


def test_prefetching_any_row_is_harmless():
    """A prefetch is a hint: rows far outside the table (or negative) neither fault nor write."""
    table = np.arange(8.0, dtype=np.float32).reshape(2, 4)
    rows = np.array([0, 1, 2, -1, 1 << 40, -(1 << 40), (1 << 62)], dtype=np.int64)
    assert _prefetch_rows(table, rows) == 0.0
    assert table.tolist() == np.arange(8.0).reshape(2, 4).tolist()


@njit(cache=True)
def _binary_parts(xs):
    out = np.empty((3, len(xs)))
    for i in range(len(xs)):
        out[0, i], out[1, i], out[2, i] = vmath.binary_parts(xs[i])
    return out


def test_binary_parts_are_the_exponent_its_power_and_the_mantissa():
    rng = np.random.default_rng(3)
    xs = np.concatenate([np.exp(rng.uniform(-700, 700, 2000)),
                         [2.0 ** -1022, 1.0, 1.5, 2.0 ** 1023, np.nextafter(2.0, 0)]])
    k, power, m = _binary_parts(xs)
    mantissa, exponent = np.frexp(xs)  # xs = mantissa 2^exponent, 0.5 <= mantissa < 1
    assert np.array_equal(k, exponent - 1.0)
    assert np.array_equal(power, np.ldexp(1.0, exponent - 1))
    assert np.array_equal(m, 2.0 * mantissa)
