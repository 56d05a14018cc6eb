"""Lazy L1/L2 (elastic-net) regularization: FOBOS proximal steps in closed form
(docs/algorithms.md §1).

Every update applies the proximal step of ``λ1|w| + λ2/2 w²`` with step size ``η̄`` to *every*
coordinate: ``w ← sign(w)·max(0, |w| − η̄λ1) / (1 + η̄λ2)``. Instead of touching all 2^b weights,
the learner keeps global accumulators (in the state array) and, per coordinate, a snapshot of
them taken when that coordinate was last brought up to date (the ``lazy`` array, float64); a
coordinate catches up on all its skipped steps at once when an example next touches it, and
everything catches up before a model is saved or printed. The result equals the dense
computation up to rounding.

With L2 a snapshot is two numbers (S_j, Φ_j); with L1 alone, one (S_j). Snapshots are float64:
a coordinate's catch-up subtracts two values of the running sum S, and in float32 their
difference lost the steps themselves once S was large (a weight drifted after ~10^7 examples).
In float64 the difference keeps its precision while S stays below 2^26 steps of the largest
size, so the accumulators restart (after a flush, O(2^b)) every 2^26 steps: the result does not
depend on the stream's length. (L2's S also grows like e^Φ: it restarts when Φ > 30 too.)

``η̄`` is the example's global step, VW's ``−u / loss′`` (docs/vw-reference.md §3.3): the same
regularization strength as VW's ``--l1``/``--l2``. VW applies its L1 as a truncation of the
stored weight at prediction time and its L2 as a gradient step ``(1 − λ2η̄)``; we apply true
proximal steps, which keep the weights of dropped features at exactly 0.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.core.fields import Field
from olearn.core.option import number
from olearn.learners.weights import W_W

# Accumulators in the learner state (gd.STATE holds them after its own fields; the kernels get
# them as one slice). Flushed before a model is saved, so saved as zeros; averaged by --dask.
ACCUMULATORS = (
    Field("reg_phi", "Φ(t) = Σ_s ln(1 + λ2 η̄_s)", merge="mean"),
    Field("reg_sum", "S(t) = Σ_s η̄_s e^{Φ(s−1)}   (Σ η̄_s when λ2 = 0)", merge="mean"),
    Field("reg_steps", "steps since the accumulators last restarted", merge="mean"))
PHI, SUM, STEPS = range(3)
SIZE = len(ACCUMULATORS)

# VW's pending regularization (its gravity and contraction): a truncation by l1_state and a
# factor l2_state that the weights have not had yet. olearn's own steps never leave any
# pending; --l1_state/--l2_state set them (VW's model files keep them), and the learner applies
# them to the weights before its first example (``settled``).
PENDING = (
    Field("l1_state", "L1 truncation pending on every weight (VW's gravity)", merge="mean"),
    Field("l2_state", "factor pending on every weight (VW's contraction)", merge="mean",
          default=1.0))

OPTIONS = (
    number("--l1", kind=float, default=0.0, low=0.0, model=True,
           help="L1 regularization, applied lazily as exact proximal (FOBOS) steps."),
    number("--l2", kind=float, default=0.0, low=0.0, model=True,
           help="L2 regularization (λ/2·‖w‖²), applied lazily as exact proximal steps."),
    number("--l1_state", kind=float, default=0.0,
           help="L1 regularization accumulated but not yet applied (VW's): every weight is "
                "truncated towards 0 by this amount before the first example; overrides the "
                "model's (-i) unless 0."),
    number("--l2_state", kind=float, default=1.0,
           help="L2 regularization accumulated but not yet applied (VW's): every weight is "
                "multiplied by this factor before the first example; overrides the model's "
                "(-i) unless 1."),
)

# Columns of the per-coordinate snapshots (``lazy``): S_j, and with L2 Φ_j.
SNAP_SUM = 0
SNAP_PHI = 1

# S grows like e^Φ: beyond this, every coordinate catches up and the accumulators restart at 0.
PHI_LIMIT = 30.0
# S is at most STEPS times the largest step it holds: below 2^26 steps, float64 keeps a step's
# share of S - S_j to 2^-27 of the step.
STEPS_LIMIT = 1 << 26


def settled(w: np.ndarray, l1_state: float, l2_state: float) -> np.ndarray:
    """The weights ``w`` with the pending regularization applied, in float32 as VW's: each
    truncated towards 0 by ``l1_state`` (0 if within it), then multiplied by ``l2_state``."""
    gravity, factor = np.float32(l1_state), np.float32(l2_state)
    kept = np.where(np.abs(w) > gravity, w - np.sign(w) * gravity, np.float32(0.0))
    return (kept * factor).astype(np.float32)


@njit(cache=True, nogil=True)
def snapshot_columns(l2: bool) -> int:
    """Columns of the ``lazy`` array: S_j, and with L2 Φ_j."""
    return 2 if l2 else 1


@njit(cache=True, nogil=True)
def fits(lazy, acc, size, l2):
    """Whether ``lazy`` and ``acc`` are what the kernels below index for a table of ``size``."""
    return lazy.shape[0] == size and lazy.shape[1] >= snapshot_columns(l2) and acc.shape[0] >= SIZE


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


@njit(cache=True, nogil=True, inline="always")
def soft_threshold(w, amount):
    """``w`` after L1 proximal steps (λ1 = 1) whose sizes add up to ``amount``: the L1-only
    catch-up, for SAEW's lazy SGD subroutine (learners/experts/l1_sgd.py)."""
    return _caught_up(w, 1.0, 0.0, amount, 0.0, 0.0, False)


@njit(cache=True, nogil=True, inline="always")
def _current(W, lazy, j, lam1, l2, phi, s):
    """Coordinate ``j``'s weight with the steps since its snapshot applied (0 stays 0)."""
    w = np.float64(W[j, W_W])
    if w == 0.0:
        return w
    if l2:
        return _caught_up(w, lam1, phi, s, lazy[j, SNAP_PHI], lazy[j, SNAP_SUM], True)
    return _caught_up(w, lam1, 0.0, s, 0.0, lazy[j, SNAP_SUM], False)


@njit(cache=True, nogil=True, _nrt=False)
def catch_up(W, lazy, acc, lam1, l2, index, lo, hi):
    """Bring the coordinates ``index[lo:hi]`` up to date with the accumulators ``acc``."""
    phi = acc[PHI]
    s = acc[SUM]
    for k in range(lo, hi):
        j = index[k]
        if W[j, W_W] != 0.0:
            W[j, W_W] = _current(W, lazy, j, lam1, l2, phi, s)
        if l2:
            lazy[j, SNAP_PHI] = phi
        lazy[j, SNAP_SUM] = s


@njit(cache=True, nogil=True, _nrt=False)
def predict_caught_up(W, lazy, acc, lam1, l2, index, value, lo, hi, initial):
    """The raw prediction :func:`catch_up` then ``gd.predict`` give (the same float32 weights
    and sum), writing nothing: a test-only prediction must leave the state as it found it, for
    a weight caught up in two steps rounds differently from one caught up in one."""
    phi = acc[PHI]
    s = acc[SUM]
    raw = np.float32(initial)
    for k in range(lo, hi):
        raw += np.float32(_current(W, lazy, index[k], lam1, l2, phi, s)) * value[k]
    return raw


@njit(cache=True, nogil=True)
def _flush(W, lazy, acc, lam1, l2):
    phi = acc[PHI]
    s = acc[SUM]
    for j in range(W.shape[0]):
        if W[j, W_W] != 0.0:
            W[j, W_W] = _current(W, lazy, j, lam1, l2, phi, s)
    lazy[:] = 0.0
    acc[PHI] = 0.0
    acc[SUM] = 0.0
    acc[STEPS] = 0.0


@njit(cache=True, nogil=True)
def flush(W, lazy, acc, lam1, l2):
    """Bring every coordinate up to date, then restart the accumulators and snapshots at 0.
    Checks its arguments (raises ValueError): it is called from Python."""
    if W.shape[1] < 1 or not fits(lazy, acc, W.shape[0], l2):
        raise ValueError("regularize.flush: state arrays of the wrong shape")
    _flush(W, lazy, acc, lam1, l2)


@njit(cache=True, nogil=True, _nrt=False)
def advance(W, lazy, acc, lam1, lam2, eta_bar):
    """Record one proximal step of size ``eta_bar`` for all coordinates."""
    acc[SUM] += eta_bar * np.exp(acc[PHI]) if lam2 > 0 else eta_bar
    acc[STEPS] += 1.0
    if lam2 > 0:
        acc[PHI] += np.log1p(lam2 * eta_bar)
    if acc[PHI] > PHI_LIMIT or acc[STEPS] >= STEPS_LIMIT:
        _flush(W, lazy, acc, lam1, lam2 > 0)
