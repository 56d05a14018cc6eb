"""Lazy SGD with L1 on the l1 ball B1(center, eps): SAEW's O(nnz) subroutine (``--saew_sub
sgd``, docs/algorithms.md §4.2).

Per coordinate s (layout.py): dev_s = θ̂_s - center_s as of its last touch (row K_G), G_s
(K_SQ), the session's Σ λ at that touch (K_SHRUNK) and the session's step count then (K_SNAP).
Example k of the session, gradient g = l'(ŷ) x:

    λ_k = l1 sqrt(Q_k / k)                    (Q: SAEW's Σ ||g||∞², so λ is in gradient units)
    for s in supp(x_k):  G_s += ||g||∞²,  η_s = eta eps / sqrt(G_s)
                         dev_s <- clip(shrink(dev_s, owed_s) - η_s g_s, -eps, eps)
    then every coordinate takes the proximal step of λ_k |θ_s - center_s| with its η_s

This is diagonal AdaGrad whose sums take ||g||∞, the bound SAEW's stopping rule uses, in place
of |g_s|: a coordinate's step shrinks with the examples that touched it (rare features keep
large steps), and its first step is eta eps g_s / ||g||∞, in proportion to its gradient (with
|g_s| it would be eta eps sign(g_s) for every coordinate: the truncation would choose among
ties).

shrink(v, m) = sign(v) max(0, |v| - m) is FOBOS's closed form (regularize.soft_threshold). η_s
changes only when s is touched, so what s owes since its last touch is η_s (Λ - Λ_s) with
Λ = Σ λ: a coordinate catches up when next touched and θ̂ equals the dense iterate. The box
|dev_s| <= eps holds the ball; the ball itself (an O(d) projection) is enforced when a session
ends (:func:`project`). The session average counts, at each step, the touched coordinates'
caught-up values and the others' values as of their last touch.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.learners.experts import state as L
from olearn.learners.regularize import soft_threshold

BISECTIONS = 200  # enough to close any float64 interval [0, top]


@njit(cache=True, nogil=True)
def reset(coord, es, n, eta):
    """A fresh session on coordinates 0..n-1 (θ̂ = center), with step factor ``eta``."""
    for s in range(n):
        coord[L.K_G, s] = 0.0
        coord[L.K_SNAP, s] = 0.0
        coord[L.K_SHRUNK, s] = 0.0
        coord[L.K_SQ, s] = 0.0
    es[L.E_SHRINK] = 0.0
    es[L.E_ETA] = eta * es[L.E_EPS]


@njit(cache=True, nogil=True)
def add_coordinate(coord, es, s):
    coord[L.K_G, s] = 0.0
    coord[L.K_SNAP, s] = es[L.E_N]
    coord[L.K_SHRUNK, s] = es[L.E_SHRINK]
    coord[L.K_SQ, s] = 0.0


@njit(cache=True, nogil=True, inline="always")
def _step(coord, es, s):
    """The coordinate's step size η_s (0 before its first nonzero gradient)."""
    sq = coord[L.K_SQ, s]
    return es[L.E_ETA] / np.sqrt(sq) if sq > 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def deviation(coord, es, s):
    """θ̂_s - center_s, caught up (read only)."""
    return soft_threshold(coord[L.K_G, s],
                          _step(coord, es, s) * (es[L.E_SHRINK] - coord[L.K_SHRUNK, s]))


@njit(cache=True, nogil=True)
def settle_all(coord, es, n):
    """Bring every coordinate's session sum of θ̂ - center up to the session's step count."""
    steps = es[L.E_N]
    for s in range(n):
        coord[L.K_AVG, s] += coord[L.K_G, s] * (steps - coord[L.K_SNAP, s])
        coord[L.K_SNAP, s] = steps


@njit(cache=True, nogil=True)
def learn(coord, es, settings, x_buf, touched, nt, d1, g_inf):
    """One example with loss derivative ``d1`` (importance included) on the unique coordinates
    ``touched[:nt]`` with aggregated values ``x_buf`` and ||g||∞ ``g_inf``; the caller has
    counted it in E_N and E_Q. O(nt)."""
    eps = es[L.E_EPS]
    steps = es[L.E_N]  # this example included
    shrink = es[L.E_SHRINK]
    for i in range(nt):
        s = touched[i]
        held = coord[L.K_G, s]
        now = deviation(coord, es, s)
        # the steps since the last touch saw the held value, this one the caught-up value
        coord[L.K_AVG, s] += held * (steps - 1.0 - coord[L.K_SNAP, s]) + now
        coord[L.K_SQ, s] += g_inf * g_inf
        coord[L.K_G, s] = min(max(now - _step(coord, es, s) * d1 * x_buf[s], -eps), eps)
        coord[L.K_SNAP, s] = steps
        coord[L.K_SHRUNK, s] = shrink
    es[L.E_SHRINK] = shrink + settings[L.S_SGD_L1] * np.sqrt(es[L.E_Q] / steps)


@njit(cache=True, nogil=True)
def _mass(values, center, n, tau):
    """Σ_s max(0, |values_s - center_s| - tau)."""
    total = 0.0
    for s in range(n):
        total += max(abs(values[s] - center[s]) - tau, 0.0)
    return total


@njit(cache=True, nogil=True)
def project(values, center, n, eps):
    """values[:n] projected onto B1(center[:n], eps) in place: θ - center soft-thresholded by the
    least tau >= 0 that leaves l1 mass <= eps. tau is bracketed by bisection (O(n) per step, no
    sort: no allocation), then solved exactly on the coordinates above the bracket, where the
    mass is linear in tau."""
    top = 0.0
    for s in range(n):
        top = max(top, abs(values[s] - center[s]))
    if _mass(values, center, n, 0.0) <= eps:
        return
    lo, hi = 0.0, top  # mass(lo) > eps >= mass(hi) = 0
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if _mass(values, center, n, mid) > eps:
            lo = mid
        else:
            hi = mid
    count = 0
    above = 0.0
    for s in range(n):
        a = abs(values[s] - center[s])
        if a > lo:
            count += 1
            above += a
    tau = (above - eps) / count
    for s in range(n):
        values[s] = center[s] + soft_threshold(values[s] - center[s], tau)
