"""EG± on the l1 ball B1(center, eps), online-calibrated, in O(nnz) per example
(docs/algorithms.md §2).

Corner (k, ±) = center ± eps e_k has weight ∝ exp(±h_k), h_k = eta G_k, where
G_k = -eps Σ g_k is minus the cumulative linearized loss of corner (k, +). So the iterate is

    θ̂_k = center_k + eps (e^{h_k} - e^{-h_k}) / Z,   Z = Σ_k (e^{h_k} + e^{-h_k}),

and an example changes only the h_k of its own features: Z is updated there, in units of
e^{offset} (offset >= max |h|, raised when a touched |h| passes it; Z is re-summed after every
n_active touches against drift). The learning rate is the calibrated
eta_t = min(1/E, C sqrt(ln(2d) / V)) (E: range of the corners' losses, V: their cumulated
variance under the weights) rounded down to a power of 2 and never raised ("lazy adaptive"
option, docs/algorithms.md §2): it changes O(log T) times, each an O(d) re-weighting.

The session average of θ̂ (for SAEW) is kept lazily too: A = Σ_t 1/Z_t (in units of
e^{-reference}) and, per coordinate, the A of its last touch; between touches h_k is constant.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.learners.experts import boa
from olearn.learners.experts import state as L

CALIBRATION = np.sqrt(2.0 * (np.sqrt(2.0) - 1.0) / (np.e - 2.0))  # ≈ 1.07
REBASE = 600.0  # e^600 is far from float64 overflow; past it the average's units move


@njit(cache=True, nogil=True)
def reset(coord, es, n):
    """A fresh instance on coordinates 0..n-1: uniform weights, no learning rate yet."""
    for s in range(n):
        coord[L.K_G, s] = 0.0
        coord[L.K_SNAP, s] = 0.0
    es[L.E_SUM] = 2.0 * n
    es[L.E_OFF] = es[L.E_REF] = es[L.E_A] = 0.0
    es[L.E_ETA] = es[L.E_VAR] = es[L.E_RANGE] = es[L.E_TOUCHES] = 0.0


@njit(cache=True, nogil=True)
def add_coordinate(coord, es, s):
    coord[L.K_G, s] = 0.0
    coord[L.K_SNAP, s] = es[L.E_A]
    es[L.E_SUM] += 2.0 * np.exp(-es[L.E_OFF])


@njit(cache=True, nogil=True, inline="always")
def deviation(coord, es, s):
    """θ̂_s - center_s."""
    h = es[L.E_ETA] * coord[L.K_G, s]
    off = es[L.E_OFF]
    return es[L.E_EPS] * (np.exp(h - off) - np.exp(-h - off)) / es[L.E_SUM]


@njit(cache=True, nogil=True, inline="always")
def _settle(coord, es, s):
    """Add coordinate s's share of the session average since its last touch."""
    h = es[L.E_ETA] * coord[L.K_G, s]
    ref = es[L.E_REF]
    coord[L.K_AVG, s] += (es[L.E_EPS] * (np.exp(h - ref) - np.exp(-h - ref))
                          * (es[L.E_A] - coord[L.K_SNAP, s]))
    coord[L.K_SNAP, s] = es[L.E_A]


@njit(cache=True, nogil=True)
def settle_all(coord, es, n):
    """Bring every coordinate's session average up to date; restarts A at 0."""
    for s in range(n):
        _settle(coord, es, s)
        coord[L.K_SNAP, s] = 0.0
    es[L.E_A] = 0.0


@njit(cache=True, nogil=True)
def _reweigh(coord, es, n):
    """Z and its offset from scratch (after a new eta, or against drift)."""
    eta = es[L.E_ETA]
    top = 0.0
    for s in range(n):
        top = max(top, abs(eta * coord[L.K_G, s]))
    z = 0.0
    for s in range(n):
        h = eta * coord[L.K_G, s]
        z += np.exp(h - top) + np.exp(-h - top)
    es[L.E_SUM] = z
    es[L.E_OFF] = top
    es[L.E_TOUCHES] = 0.0


@njit(cache=True, nogil=True)
def learn(coord, es, x_buf, touched, nt, d1, n):
    """One example with loss derivative ``d1`` (importance included) on the unique coordinates
    ``touched[:nt]`` with aggregated values ``x_buf``; ``n`` coordinates are active. One pass,
    four exponentials per coordinate: its old weights serve the mixture's moments, its session
    average and its removal from Z; its new ones enter Z."""
    eps = es[L.E_EPS]
    eta = es[L.E_ETA]
    z0 = z = es[L.E_SUM]
    off0 = off = es[L.E_OFF]
    # the average counts the iterate this example was predicted with
    es[L.E_A] += np.exp(es[L.E_REF] - off0) / z0
    average_units = np.exp(off0 - es[L.E_REF])
    old_units = 1.0  # e^(off0 - off): an old term's factor after the offset moved
    m = 0.0
    second = 0.0
    g_inf = 0.0
    for i in range(nt):
        s = touched[i]
        g = d1 * x_buf[s]
        h = eta * coord[L.K_G, s]
        up = np.exp(h - off0)
        down = np.exp(-h - off0)
        m += g * (up - down)
        second += g * g * (up + down)
        g_inf = max(g_inf, abs(g))
        coord[L.K_AVG, s] += (eps * (up - down) * average_units
                              * (es[L.E_A] - coord[L.K_SNAP, s]))
        coord[L.K_SNAP, s] = es[L.E_A]
        z -= (up + down) * old_units
        coord[L.K_G, s] -= eps * g
        h = eta * coord[L.K_G, s]
        if abs(h) > off:
            shift = np.exp(off - abs(h))
            z *= shift
            old_units *= shift
            off = abs(h)
        z += np.exp(h - off) + np.exp(-h - off)
    m /= z0
    second /= z0
    es[L.E_VAR] += eps * eps * max(second - m * m, 0.0)
    if g_inf > 0.0:
        es[L.E_RANGE] = boa.at_least(max(es[L.E_RANGE], boa.B2_START), 2.0 * eps * g_inf)
    es[L.E_SUM] = z
    es[L.E_OFF] = off
    es[L.E_TOUCHES] += nt
    if es[L.E_TOUCHES] > n or z <= 0.0:
        _reweigh(coord, es, n)
    if es[L.E_OFF] - es[L.E_REF] > REBASE:
        settle_all(coord, es, n)
        es[L.E_REF] = es[L.E_OFF]
    _calibrate(coord, es, n)


@njit(cache=True, nogil=True)
def _calibrate(coord, es, n):
    """Lower eta to the calibrated rate's power of 2 when it falls below the current one."""
    if es[L.E_RANGE] == 0.0:
        return
    target = 1.0 / es[L.E_RANGE]
    if es[L.E_VAR] > 0.0:
        target = min(target, CALIBRATION * np.sqrt(np.log(2.0 * n) / es[L.E_VAR]))
    eta = 2.0 ** np.floor(np.log2(target))
    if es[L.E_ETA] == 0.0 or eta < es[L.E_ETA]:
        settle_all(coord, es, n)
        es[L.E_ETA] = eta
        _reweigh(coord, es, n)
        es[L.E_REF] = es[L.E_OFF]
