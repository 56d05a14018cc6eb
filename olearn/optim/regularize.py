"""Lazy L1/L2 (elastic-net) regularization: FOBOS proximal steps in closed form (algorithms.md §1).

Every update applies the proximal step of ``λ1|w| + λ2/2 w²`` with step size ``η̄`` to *every*
coordinate: ``w ← sign(w)·max(0, |w| − η̄λ1) / (1 + η̄λ2)``. Instead of touching all 2^b weights,
the learner keeps three global accumulators (in the state array) and, per coordinate, a snapshot
of two of them taken when that coordinate was last brought up to date; a coordinate catches up on
all its skipped steps at once when an example next touches it, and everything catches up before
a model is saved or printed. The result equals the dense computation up to rounding.

With L1 alone a snapshot is one number, S_j, kept in float32 in the weight row itself
(``W[j, 3]``, the update's scratch slot, see gd.py), so catching up reads no other memory; with
L2 the two snapshots (Φ_j, S_j) live in ``lazy``, in float64.

``η̄`` is the example's global step, VW's ``−u / loss′`` (vw-reference.md §3.3): the same
regularization strength as VW's ``--l1``/``--l2``. VW applies its L1 as a truncation of the
stored weight at prediction time and its L2 as a gradient step ``(1 − λ2η̄)``; we apply true
proximal steps, which keep the weights of dropped features at exactly 0.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# Accumulators in the learner state (indices into it, after gd's own entries).
PHI = 0   # Φ(t) = Σ_s ln(1 + λ2 η̄_s)
SUM = 1   # S(t) = Σ_s η̄_s e^{Φ(s−1)}   (Σ η̄_s when λ2 = 0)
SIZE = 2

# S grows like e^Φ: beyond this, every coordinate catches up and the accumulators restart at 0.
PHI_LIMIT = 30.0


@njit(cache=True, nogil=True, inline="always")
def _caught_up(w, lam1, phi, s, phi_j, s_j, l2):
    """|w| after the proximal steps taken between the snapshot (Φ_j, S_j) and (Φ, S)."""
    a = abs(w)
    if l2:
        a = np.exp(phi_j - phi) * a - lam1 * np.exp(-phi) * (s - s_j)
    else:
        a -= lam1 * (s - s_j)
    if a <= 0.0:
        return 0.0
    return a if w > 0 else -a


@njit(cache=True, nogil=True)
def catch_up(W, lazy, acc, lam1, l2, index, lo, hi):
    """Bring the coordinates ``index[lo:hi]`` up to date with the accumulators ``acc``."""
    phi = acc[PHI]
    s = acc[SUM]
    if l2:
        for k in range(lo, hi):
            j = index[k]
            w = np.float64(W[j, 0])
            if w != 0.0:
                W[j, 0] = _caught_up(w, lam1, phi, s, lazy[j, PHI], lazy[j, SUM], True)
            lazy[j, PHI] = phi
            lazy[j, SUM] = s
    else:
        for k in range(lo, hi):
            j = index[k]
            w = np.float64(W[j, 0])
            if w != 0.0:
                W[j, 0] = _caught_up(w, lam1, 0.0, s, 0.0, np.float64(W[j, 3]), False)
            W[j, 3] = s


@njit(cache=True, nogil=True)
def keep_snapshots(W, acc, l2, index, lo, hi):
    """After an update, which used ``W[j, 3]`` as scratch: put back the L1 snapshots of the
    example's coordinates (all equal to the accumulator they were caught up to)."""
    if not l2:
        s = acc[SUM]
        for k in range(lo, hi):
            W[index[k], 3] = s


@njit(cache=True, nogil=True)
def flush(W, lazy, acc, lam1, l2):
    """Bring every coordinate up to date, then restart the accumulators and snapshots at 0."""
    phi = acc[PHI]
    s = acc[SUM]
    for j in range(W.shape[0]):
        w = np.float64(W[j, 0])
        if l2:
            if w != 0.0:
                W[j, 0] = _caught_up(w, lam1, phi, s, lazy[j, PHI], lazy[j, SUM], True)
            lazy[j, PHI] = 0.0
            lazy[j, SUM] = 0.0
        else:
            if w != 0.0:
                W[j, 0] = _caught_up(w, lam1, 0.0, s, 0.0, np.float64(W[j, 3]), False)
            W[j, 3] = 0.0
    acc[PHI] = 0.0
    acc[SUM] = 0.0


@njit(cache=True, nogil=True)
def advance(W, lazy, acc, lam1, lam2, eta_bar):
    """Record one proximal step of size ``eta_bar`` for all coordinates."""
    acc[SUM] += eta_bar * np.exp(acc[PHI]) if lam2 > 0 else eta_bar
    if lam2 > 0:
        acc[PHI] += np.log1p(lam2 * eta_bar)
        if acc[PHI] > PHI_LIMIT:
            flush(W, lazy, acc, lam1, True)
