"""BOA, Bernstein Online Aggregation with multiple adaptive learning rates (docs/algorithms.md §3).

Each expert j keeps, in a column of a ``(ROWS, n)`` array: V (sum of squared regrets), B2 (the
largest |regret| rounded up to a power of 2), R (the regularized cumulative regret) and w (its
unnormalized weight ``eta * exp(eta * R - offset)``, the offset kept by the caller). With the
gradient trick the regret of expert j is ``r_j = l'(ŷ) (ŷ - f_j)``; the weights are

    eta_j = min(1 / B2_j, sqrt(ln N / V_j)),
    R_j += (r_j - eta_j r_j² + B2_j 1{eta_j r_j > 1/2}) / 2,
    pi_j ∝ eta_j exp(eta_j R_j)                 (uniform prior: the form that matches the theory)

The calibration's aggregation of SAEW instances runs these steps; the 2d corners of an l1 ball
(boa_corners.py) use the rate and the range with the rates frozen between touches.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.core import vmath

V = 0
B2 = 1
R = 2
W = 3
ROWS = 4

B2_START = 2.0 ** -20  # as opera: the first weights equal the prior


@njit(cache=True, nogil=True, inline="always")
def at_least(b, x):
    """The least b·2^k (k >= 0) that is >= x >= 0, for b a power of 2: ranges are kept as
    powers of 2 (without a loop, so that the corners' update vectorizes)."""
    return max(b, vmath.ceil_pow2(x))


@njit(cache=True, nogil=True)
def reset(experts, j):
    """A fresh expert ``j``: no regret yet, weight 1 (as every fresh expert)."""
    experts[V, j] = 0.0
    experts[B2, j] = B2_START
    experts[R, j] = 0.0
    experts[W, j] = 1.0


@njit(cache=True, nogil=True, inline="always")
def rate(v, b, log_n):
    """eta = min(1 / B2, sqrt(ln N / V))."""
    eta = 1.0 / b
    if v > 0.0:
        eta = min(eta, vmath.sqrt(log_n / v))
    return eta


@njit(cache=True, nogil=True, inline="always")
def step(v, b, rr, r, log_n):
    """An expert's state (V, B2, R) after regret ``r``, and its new eta."""
    r2 = r * r
    v += r2
    b = at_least(b, abs(r))
    eta = rate(v, b, log_n)
    rr += 0.5 * (r - eta * r2 + (b if eta * r > 0.5 else 0.0))
    return v, b, rr, eta


@njit(cache=True, nogil=True, inline="always")
def expert_step(experts, j, r, log_n):
    """Feed regret ``r`` to expert ``j``; returns its log-weight eta R (its weight
    eta exp(eta R) is stored by :func:`weigh`, relative to the caller's offset)."""
    v, b, rr, eta = step(experts[V, j], experts[B2, j], experts[R, j], r, log_n)
    experts[V, j] = v
    experts[B2, j] = b
    experts[R, j] = rr
    return eta * rr


@njit(cache=True, nogil=True, inline="always")
def weigh(experts, j, log_n, offset):
    """Expert ``j``'s weight eta exp(eta R - offset), recomputed from its state."""
    eta = rate(experts[V, j], experts[B2, j], log_n)
    w = eta * vmath.exp(eta * experts[R, j] - offset)
    experts[W, j] = w
    return w


@njit(cache=True, nogil=True)
def aggregate_step(experts, regrets, joins, block):
    """One BOA step with the given regrets over the general experts j whose ``joins[j]`` is at
    most ``block`` (the others are left as they are); returns their weight sum (their
    normalized weights are ``experts[W, j] / sum``). ``experts`` and ``regrets`` have a column
    per entry of ``joins``."""
    n = 0
    for j in range(joins.shape[0]):
        n += joins[j] <= block
    log_n = np.log(max(n, 2))
    top = -np.inf
    for j in range(joins.shape[0]):
        if joins[j] <= block:
            top = max(top, expert_step(experts, j, regrets[j], log_n))
    total = 0.0
    for j in range(joins.shape[0]):
        if joins[j] <= block:
            total += weigh(experts, j, log_n, top)
    return total
