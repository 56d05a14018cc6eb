"""BOA on the 2n corners of an l1 ball in O(features of the example) per example, with rates
frozen between touches (docs/algorithms.md §3.1).

With the gradient trick, the regret of corner (s, ±) is eps (m ∓ g_s): every corner of a
coordinate the example does not have sees the same regret rho = eps m. A corner's rate
eta = min(1/B2, sqrt(ln 2n / V)) is rounded down to a power of 2^(1/16) and *frozen* between its
coordinate's touches; V and B2 still grow with rho as dense BOA's, and R by
(rho - eta rho²) / 2 per untouched example. Then an untouched corner's log-weight moves by

    Φ(eta) = eta S1 / 2 - eta² S2 / 2,    S1 = Σ rho, S2 = Σ rho² (since the last rebase)

which depends on its rate alone: corners are kept in *groups*, one per rate, each holding
Σ e^(c_j - OFF) of its corners' constant parts c_j = ln eta + eta R - Φ(eta) at the snapshot, so
Z = Σ_groups e^(Φ + OFF) SUM costs O(groups), and a touched corner is settled (brought up to
date from the snapshot sums), stepped and moved between groups in O(1). The session sum of θ̂
is kept per group the same way (AVG: Σ e^(Φ + OFF - top) / Z over the examples).

The rule is dense BOA's (every corner stepping with its own fresh rate) at a *full step*: an
example where the touches since the last full step reach n (so its O(n) cost is O(1) per
touch), where S2 over the session has more than doubled since the last one (so a frozen rate
is within about sqrt 2 of a fresh one; the first rho != 0 of a session), or where an untouched
corner's B2 term 1{eta rho > 1/2} would fire (so that the lazy steps never need it). Between
full steps the frozen rates are the only difference from dense BOA; with every coordinate in
every example, each step is full and the rule is BOA with rates rounded down to powers of
2^(1/16). A full step leaves the weights explicit (row W) and the groups stale: on dense data
the groups are never formed, and the next lazy step forms them first.

B2 of an untouched corner is the largest |rho| since its snapshot, rounded up: ``records``
keeps the running maxima (distinct powers of 2, so at most ~2100) with their steps.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from olearn.core import vmath
from olearn.learners.experts import boa
from olearn.learners.experts import state as L

# rows of a corner's column: its BOA state as of its snapshot, its frozen rate's level, the
# snapshot (S1, S2, its group's AVG, the step), its rate (rate_of(LEVEL), kept), and its weight:
# relative to e^E_TOP while the groups are stale (after a dense step), else its *unit* within
# its group, e^(c_j - OFF), fixed between its touches: its weight is then the unit times the
# group's TERM, and joining, leaving and settling cost no exponential
V, B2, R, LEVEL, S1, S2, A, T, W, ETA = range(10)
ROWS = 10
SAVED_ROWS = 9  # V to W: what a model file keeps (ETA follows from LEVEL)
# rows of a group's column (one group per level)
COUNT, SUM, OFF, AVG, TERM, RATE = range(6)
GROUP_ROWS = 6
SAVED_GROUP_ROWS = 4  # COUNT to AVG (TERM and RATE follow from them)
# Rates are 2^(level / STEPS). When a corner's rate moves, its log-weight eta R moves by the
# same factor: rounding to powers of 2 cost BOA 2.4 in median ln error on the paper's quantile
# setting, quarter octaves 0.16 (averaged BOA); sixteenths are within 0.06 of unrounded BOA
# (docs/algorithms.md §3.1).
STEPS = 16
_FRACTIONS = np.array([2.0 ** (i / STEPS) for i in range(STEPS)])  # a constant of the kernels
_STEP_BITS = STEPS.bit_length() - 1
assert STEPS == 1 << _STEP_BITS
_LN2_STEP = math.log(2.0) / STEPS
LEVEL_HIGH = round(-STEPS * math.log2(boa.B2_START))  # the largest rate: 1 / B2_START
LEVEL_LOW = -1000 * STEPS  # rates stay >= 2^-1000: below 2^-1022 they would not be normal
LEVELS = LEVEL_HIGH - LEVEL_LOW + 1
_LOW_RATE = 2.0 ** (LEVEL_LOW / STEPS)
_HIGH_RATE = 2.0 ** (LEVEL_HIGH / STEPS)
RECORDS = 2200  # more than the distinct powers of 2 of float64 (inf included)
VALUE, STEP = range(2)
REBASE = 200.0  # how far above its group's unit a corner's log-weight may be


@njit(cache=True, nogil=True, inline="always")
def rate_of(level):
    """The rate of a level: 2^(level / STEPS) = 2^q 2^(r / STEPS), exactly (STEPS a power of 2:
    q and r by shift and mask, without the branches of a floor division)."""
    k = int(level)
    return _FRACTIONS[np.uint64(k & (STEPS - 1))] * vmath.pow2(k >> _STEP_BITS)


@njit(cache=True, nogil=True, inline="always")
def level_below(eta):
    """The level of the greatest power of 2^(1/STEPS) <= eta, within the range: the exponent
    bits, then the mantissa against the fractions (exact, no logarithm)."""
    if not eta > _LOW_RATE:  # (NaN too)
        return LEVEL_LOW
    if eta >= _HIGH_RATE:
        return LEVEL_HIGH
    e = vmath.exponent(eta)
    m = eta * vmath.pow2(-e)
    i = 0
    for k in range(1, STEPS):
        i += m >= _FRACTIONS[k]
    return e * STEPS + i


@njit(cache=True, nogil=True, inline="always")
def _grown(v, b, r):
    """V and B2 after regret r."""
    return v + r * r, boa.at_least(b, abs(r))


@njit(cache=True, nogil=True, inline="always")
def _moved(rr, r, eta, b):
    """R after regret r at rate eta (B2 b)."""
    return rr + 0.5 * (r - eta * r * r + (b if eta * r > 0.5 else 0.0))


@njit(cache=True, nogil=True, inline="always")
def _group(corners, j):
    """The group of corner j (its level, offset; clamped, as the level comes from the state)."""
    return min(max(int(corners[LEVEL, j]) - LEVEL_LOW, 0), LEVELS - 1)


@njit(cache=True, nogil=True, inline="always")
def _gain(es, eta):
    """Φ(eta): an untouched corner's log-weight gain since the rebase."""
    return 0.5 * eta * es[L.E_S1] - 0.5 * eta * eta * es[L.E_S2]


@njit(cache=True, nogil=True, inline="always")
def _constant(corners, j, eta):
    """c_j: the corner's log-weight less the gain of its group (``eta``: its rate)."""
    return (corners[LEVEL, j] * _LN2_STEP + eta * corners[R, j]
            - (0.5 * eta * corners[S1, j] - 0.5 * eta * eta * corners[S2, j]))


@njit(cache=True, nogil=True, inline="always")
def weight(corners, groups, es, j):
    """Corner j's weight in units of e^E_TOP (Z is E_SUM in the same units)."""
    if es[L.E_GROUPED] == 0:
        return corners[W, j]
    return corners[W, j] * groups[TERM, _group(corners, j)]


@njit(cache=True, nogil=True, inline="always")
def _inverse(es):
    """1 / Z; 0 where Z is not a positive number (only a state no run makes, e.g. a model
    file's lying sums: a rebase follows, and the kernels never divide by 0)."""
    z = es[L.E_SUM]
    return 1.0 / z if z > 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def deviation(corners, groups, es, s):
    """θ̂_s - center_s."""
    spread = weight(corners, groups, es, 2 * s) - weight(corners, groups, es, 2 * s + 1)
    return es[L.E_EPS] * spread * _inverse(es)


@njit(cache=True, nogil=True, inline="always")
def _reset_corner(corners, j):
    corners[V, j] = 0.0
    corners[B2, j] = boa.B2_START
    corners[R, j] = 0.0
    corners[LEVEL, j] = LEVEL_HIGH  # 1 / B2_START
    corners[ETA, j] = rate_of(LEVEL_HIGH)
    corners[S1, j] = corners[S2, j] = corners[A, j] = corners[T, j] = 0.0


# --- groups ---------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _join(groups, es, j, corners):
    """Corner j joins the group of its rate; returns whether it weighs over e^REBASE times the
    group's unit (then the caller rebases: the units stay fixed while a group has corners, as
    its members' snapshots of AVG are in them)."""
    k = _group(corners, j)
    c = _constant(corners, j, corners[ETA, j])
    if groups[COUNT, k] == 0:
        _open(groups, k, corners[ETA, j], c)
    corners[W, j] = np.exp(c - groups[OFF, k])
    groups[SUM, k] += corners[W, j]
    groups[COUNT, k] += 1
    corners[A, j] = groups[AVG, k]
    es[L.E_LO] = min(es[L.E_LO], k)
    es[L.E_HI] = max(es[L.E_HI], k)
    return c - groups[OFF, k] > REBASE


@njit(cache=True, nogil=True, inline="always")
def _open(groups, k, rate, unit):
    """Group k (empty) opens, for corners of rate ``rate``, in units of e^unit."""
    groups[OFF, k] = unit
    groups[SUM, k] = groups[AVG, k] = 0.0
    groups[RATE, k] = rate


@njit(cache=True, nogil=True)
def _leave(groups, j, corners):
    k = _group(corners, j)
    groups[COUNT, k] -= 1
    if groups[COUNT, k] == 0:
        groups[SUM, k] = 0.0
    else:  # cancellation is bounded: full steps re-sum at least every n touches
        groups[SUM, k] = max(groups[SUM, k] - corners[W, j], 0.0)


@njit(cache=True, nogil=True)
def _total(groups, es):
    """Z (E_SUM, in units of e^E_TOP, E_TOP moved to the largest group) after groups changed;
    the range [E_LO, E_HI] shrinks to the groups that have corners."""
    lo = max(int(es[L.E_LO]), 0)
    hi = min(int(es[L.E_HI]), groups.shape[1] - 1)
    while hi > lo and groups[COUNT, hi] == 0:
        hi -= 1
    while lo < hi and groups[COUNT, lo] == 0:
        lo += 1
    es[L.E_LO] = lo
    es[L.E_HI] = hi
    top = _exponents(groups, lo, hi + 1, es[L.E_S1], es[L.E_S2])
    if top == -np.inf:  # no group weighs anything
        for k in range(lo, hi + 1):
            groups[TERM, k] = 0.0
        es[L.E_SUM] = 0.0
    else:
        es[L.E_SUM] = _terms(groups, lo, hi + 1, top)
    es[L.E_TOP] = top


# _total's two loops over the groups in range vectorize (a select rather than a branch for the
# empty groups, vmath's exp): per lazy step they cost more than the example's own corners.

@njit(cache=True, nogil=True, error_model="numpy")
def _exponents(groups, lo, hi, s1, s2):
    """Row TERM = each group's log-weight unit Φ + OFF (-inf where it weighs nothing); their
    largest."""
    top = -np.inf
    for k in range(np.uint64(lo), np.uint64(hi)):
        eta = groups[RATE, k]
        term = 0.5 * eta * s1 - 0.5 * eta * eta * s2 + groups[OFF, k]
        term = term if (groups[COUNT, k] > 0) & (groups[SUM, k] > 0.0) else -np.inf
        groups[TERM, k] = term
        top = vmath.maximum(top, term)
    return top


@njit(cache=True, nogil=True, error_model="numpy")
def _terms(groups, lo, hi, top):
    """Row TERM = e^(Φ + OFF - top), each group's unit relative to the largest; returns Z."""
    z = 0.0
    for k in range(np.uint64(lo), np.uint64(hi)):
        term = vmath.exp(groups[TERM, k] - top)
        groups[TERM, k] = term
        z = vmath.add_reordered(z, term * groups[SUM, k])
    return z


@njit(cache=True, nogil=True)
def _clear(groups, es):
    """No group has corners (the caller forms them anew): those in use are in [E_LO, E_HI], and
    while the groups are stale none is."""
    if es[L.E_GROUPED] != 0:
        for k in range(max(int(es[L.E_LO]), 0), min(int(es[L.E_HI]) + 1, groups.shape[1])):
            groups[COUNT, k] = 0.0


@njit(cache=True, nogil=True)
def _regroup(corners, groups, es, n):
    """Every group re-summed from its corners (after a rebase: snapshots at 0). A group's unit
    is its heaviest corner's, so that none is far above it."""
    _clear(groups, es)
    lo = groups.shape[1] - 1
    hi = 0
    for j in range(2 * n):  # row W holds c_j until the units are known
        k = _group(corners, j)
        c = _constant(corners, j, corners[ETA, j])
        corners[W, j] = c
        if groups[COUNT, k] == 0:
            _open(groups, k, corners[ETA, j], c)
        else:
            groups[OFF, k] = max(groups[OFF, k], c)
        groups[COUNT, k] += 1
        lo = min(lo, k)
        hi = max(hi, k)
    for j in range(2 * n):
        k = _group(corners, j)
        corners[W, j] = np.exp(corners[W, j] - groups[OFF, k])
        groups[SUM, k] += corners[W, j]
        corners[A, j] = 0.0  # (the groups' AVG)
    es[L.E_LO] = lo
    es[L.E_HI] = hi
    _total(groups, es)
    es[L.E_GROUPED] = 1.0


@njit(cache=True, nogil=True)
def _group_weights(corners, groups, es, n):
    """The groups formed from the weights a dense step left explicit (row W, in units of
    e^E_TOP; snapshots at 0): every group's unit is e^E_TOP, so the weights are the units and
    no corner costs an exponential. Where a group's heaviest corner is e^-690 below that unit
    or less, its sum could lose it: the exact way, :func:`_regroup`, then forms the groups."""
    lo = groups.shape[1] - 1
    hi = 0
    for j in range(2 * n):  # (while stale, no group has corners)
        k = _group(corners, j)
        if groups[COUNT, k] == 0:
            _open(groups, k, corners[ETA, j], es[L.E_TOP])
            groups[TERM, k] = 0.0
        groups[SUM, k] += corners[W, j]
        groups[TERM, k] = max(groups[TERM, k], corners[W, j])  # the heaviest, for the check
        groups[COUNT, k] += 1
        corners[A, j] = 0.0  # (the groups' AVG)
        lo = min(lo, k)
        hi = max(hi, k)
    for k in range(lo, hi + 1):
        if groups[COUNT, k] > 0 and not groups[TERM, k] >= _SMALLEST_UNIT:
            for i in range(lo, hi + 1):
                groups[COUNT, i] = 0.0
            _regroup(corners, groups, es, n)
            return
    es[L.E_LO] = lo
    es[L.E_HI] = hi
    _total(groups, es)
    es[L.E_GROUPED] = 1.0


_SMALLEST_UNIT = 1e-300


# --- records of |rho| -----------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _record(records, es, rho, step):
    b = vmath.ceil_pow2(abs(rho))
    if not b > 0.0:  # (0, and NaN)
        return
    count = min(int(es[L.E_RECORDS]), records.shape[1] - 1)  # (at most ~2100 distinct)
    while count > 0 and records[VALUE, count - 1] <= b:
        count -= 1
    records[VALUE, count] = b
    records[STEP, count] = step
    es[L.E_RECORDS] = count + 1


@njit(cache=True, nogil=True)
def _largest_since(records, es, step):
    """The largest rounded |rho| of the steps after ``step`` (0 if none): the first record
    after it (records are in step order, their values decreasing)."""
    lo = 0
    hi = min(int(es[L.E_RECORDS]), records.shape[1])
    while lo < hi:
        mid = (lo + hi) // 2
        if records[STEP, mid] > step:
            hi = mid
        else:
            lo = mid + 1
    return records[VALUE, lo] if lo < min(int(es[L.E_RECORDS]), records.shape[1]) else 0.0


# --- settling, stepping ---------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _settle_corner(corners, records, es, j):
    """Corner j brought up to date: its V, B2, R as if it had stepped through every example
    since its snapshot with its frozen rate."""
    eta = corners[ETA, j]
    d1 = es[L.E_S1] - corners[S1, j]
    d2 = es[L.E_S2] - corners[S2, j]
    corners[V, j] += d2
    # (the first record is the largest: a B2 above it needs no search)
    if corners[T, j] < es[L.E_STEP] and corners[B2, j] < records[VALUE, 0]:
        corners[B2, j] = max(corners[B2, j], _largest_since(records, es, corners[T, j]))
    corners[R, j] += 0.5 * (d1 - eta * d2)
    corners[S1, j] = es[L.E_S1]
    corners[S2, j] = es[L.E_S2]
    corners[T, j] = es[L.E_STEP]


@njit(cache=True, nogil=True, inline="always")
def _average_share(corners, groups, es, j):
    """Σ of corner j's normalized weight over the examples since its snapshot (before it is
    settled): its unit (<= e^REBASE) times its group's sum, each term below 1 / Z."""
    return corners[W, j] * (groups[AVG, _group(corners, j)] - corners[A, j])


@njit(cache=True, nogil=True)
def _settle_coordinate(corners, groups, records, coord, es, s):
    coord[L.K_AVG, s] += es[L.E_EPS] * (_average_share(corners, groups, es, 2 * s)
                                        - _average_share(corners, groups, es, 2 * s + 1))
    _settle_corner(corners, records, es, 2 * s)
    _settle_corner(corners, records, es, 2 * s + 1)


@njit(cache=True, nogil=True)
def rebase(corners, groups, records, coord, es, n):
    """Every corner and session sum brought up to date, the snapshot sums restarted at 0 and the
    groups re-summed: the same state, in fresh units (O(n))."""
    _settle_all(corners, groups, records, coord, es, n)
    _regroup(corners, groups, es, n)


@njit(cache=True, nogil=True)
def _settle_all(corners, groups, records, coord, es, n):
    """Every corner and session sum brought up to date, the snapshot sums restarted at 0 (the
    groups are then stale: the caller re-sums them). After a dense step all already are."""
    if es[L.E_GROUPED] == 0:
        return
    _settle_averages(corners, groups, coord, es, n)
    step = es[L.E_STEP]
    first = _largest_since(records, es, 0.0)
    for j in range(2 * n):  # corners touched since the last full step: their own records
        if 0.0 < corners[T, j] < step and corners[B2, j] < first:
            corners[B2, j] = max(corners[B2, j], _largest_since(records, es, corners[T, j]))
    _settle_untouched(corners, 2 * n, es[L.E_S1], es[L.E_S2], first)
    ghost = 2 * n
    _settle_corner(corners, records, es, ghost)
    es[L.E_S1] = es[L.E_S2] = es[L.E_STEP] = es[L.E_RECORDS] = 0.0
    corners[S1, ghost] = corners[S2, ghost] = corners[T, ghost] = 0.0


# _settle_all's loops over the corners: the records' search (a branch per corner) apart, they
# vectorize.

@njit(cache=True, nogil=True, error_model="numpy")
def _settle_averages(corners, groups, coord, es, n):
    """The session sums of θ̂ brought up to date (before the corners are settled)."""
    eps = es[L.E_EPS]
    for s in range(np.uint64(0), np.uint64(n)):
        coord[L.K_AVG, s] += eps * (_average_share(corners, groups, es, 2 * s)
                                    - _average_share(corners, groups, es, 2 * s + 1))


@njit(cache=True, nogil=True, error_model="numpy")
def _settle_untouched(corners, hi, s1, s2, first):
    """Corners 0..hi-1 settled as :func:`_settle_corner` does, given the sums and the largest
    |rho| since step 0 (``first``; a touched corner's B2 is already settled), and their
    snapshots restarted at 0."""
    for j in range(np.uint64(0), np.uint64(hi)):
        d1 = s1 - corners[S1, j]
        d2 = s2 - corners[S2, j]
        corners[V, j] += d2
        corners[B2, j] = vmath.maximum(corners[B2, j], first if corners[T, j] == 0.0 else 0.0)
        corners[R, j] += 0.5 * (d1 - corners[ETA, j] * d2)
        corners[S1, j] = corners[S2, j] = corners[T, j] = 0.0


@njit(cache=True, nogil=True, inline="always")
def _step(corners, j, r, log_n):
    """Dense BOA's step of corner j with regret r, its rate refrozen."""
    v, b = _grown(corners[V, j], corners[B2, j], r)
    level = level_below(boa.rate(v, b, log_n))
    eta = rate_of(level)
    corners[V, j] = v
    corners[B2, j] = b
    corners[LEVEL, j] = level
    corners[ETA, j] = eta
    corners[R, j] = _moved(corners[R, j], r, eta, b)


# The dense step of every corner, in three loops: the first and the last vectorize (as dense
# BOA's loop did: vmath's exp and sqrt, reductions that may be reordered, unit stride with an
# unsigned j); the middle one, the rates' levels, does not.

@njit(cache=True, nogil=True, error_model="numpy")
def _grow_all(corners, lo, hi, log_n):
    """V, B2 after the regrets of row A; row T = the fresh rates."""
    for j in range(np.uint64(lo), np.uint64(hi)):
        v, b = _grown(corners[V, j], corners[B2, j], corners[A, j])
        corners[V, j] = v
        corners[B2, j] = b
        corners[T, j] = boa.rate(v, b, log_n)


@njit(cache=True, nogil=True, error_model="numpy")
def _freeze_all(corners, lo, hi):
    """The fresh rates of row T rounded down to their levels: :func:`level_below` and
    :func:`rate_of` as selects (a loop that vectorizes), the same numbers."""
    for j in range(np.uint64(lo), np.uint64(hi)):
        eta = corners[T, j]
        eta = eta if eta > _LOW_RATE else _LOW_RATE  # (NaN too)
        eta = eta if eta < _HIGH_RATE else _HIGH_RATE
        k, power, m = vmath.binary_parts(eta)
        fraction = 1.0
        i = 0.0
        for step in range(1, STEPS):
            above = m >= _FRACTIONS[step]
            fraction = _FRACTIONS[step] if above else fraction
            i += 1.0 if above else 0.0
        corners[LEVEL, j] = k * STEPS + i
        corners[ETA, j] = fraction * power


@njit(cache=True, nogil=True, error_model="numpy")
def _move_all(corners, lo, hi, offset):
    """R after the regrets of row A (rows A and T then cleared: snapshots at 0), and the weights
    relative to ``offset`` (row W); returns their sum, the largest log-weight and the highest
    level."""
    total = 0.0
    top = -np.inf
    high = -np.inf
    for j in range(np.uint64(lo), np.uint64(hi)):
        eta = corners[ETA, j]
        rr = _moved(corners[R, j], corners[A, j], eta, corners[B2, j])
        corners[R, j] = rr
        a = corners[LEVEL, j] * _LN2_STEP + eta * rr
        w = vmath.exp(a - offset)
        corners[W, j] = w
        corners[A, j] = 0.0
        corners[T, j] = 0.0
        total = vmath.add_reordered(total, w)
        top = vmath.maximum(top, a)
        high = vmath.maximum(high, corners[LEVEL, j])
    return total, top, high


@njit(cache=True, nogil=True)
def _steps(corners, lo, hi, log_n, offset):
    """Corners lo..hi-1 step with their regrets (row A) and get their weights (row W)."""
    _grow_all(corners, lo, hi, log_n)
    _freeze_all(corners, lo, hi)
    return _move_all(corners, lo, hi, offset)


@njit(cache=True, nogil=True, error_model="numpy")
def _weights(corners, hi, offset):
    """Row W = the weights of corners 0..hi-1 relative to ``offset`` (snapshots at 0); their
    sum."""
    total = 0.0
    for j in range(np.uint64(0), np.uint64(hi)):
        w = vmath.exp(corners[LEVEL, j] * _LN2_STEP + corners[ETA, j] * corners[R, j] - offset)
        corners[W, j] = w
        total = vmath.add_reordered(total, w)
    return total


@njit(cache=True, nogil=True)
def _dense_step(corners, coord, es, x_buf, d1, rho, n, average):
    """Every corner (and the ghost) steps with a fresh rate, settled corners in, explicit
    weights out: the groups are left stale (E_GROUPED 0) until a lazy step needs them.
    ``average``: add this example's iterate to the session sums here (the groups did not)."""
    eps = es[L.E_EPS]
    offset = es[L.E_TOP]
    if average:  # (row W holds the weights: the groups are stale since the last dense step)
        scale = eps * _inverse(es)
        for s in range(n):
            coord[L.K_AVG, s] += scale * (corners[W, 2 * s] - corners[W, 2 * s + 1])
    eps_d1 = eps * d1
    for s in range(n):
        eps_g = eps_d1 * x_buf[s]
        corners[A, 2 * s] = rho - eps_g
        corners[A, 2 * s + 1] = rho + eps_g
    ghost = 2 * n
    corners[A, ghost] = rho
    log_n = np.log(2.0 * n)
    total, top, high = _steps(corners, 0, 2 * n, log_n, offset)
    _steps(corners, ghost, ghost + 1, log_n, offset)
    if not abs(top - offset) <= REBASE:
        offset = top
        total = _weights(corners, 2 * n, offset)
    es[L.E_TOP] = offset
    es[L.E_SUM] = total
    es[L.E_HI] = high - LEVEL_LOW
    es[L.E_GROUPED] = 0.0


@njit(cache=True, nogil=True)
def fresh(corners, groups, records, es, n):
    """Uniform weights on the 2n corners (and the ghost), as a new session starts."""
    for j in range(2 * n + 1):
        _reset_corner(corners, j)
    es[L.E_S1] = es[L.E_S2] = es[L.E_STEP] = es[L.E_RECORDS] = 0.0
    es[L.E_TOUCHES] = es[L.E_S2_SESSION] = es[L.E_S2_FULL] = 0.0
    _regroup(corners, groups, es, n)


@njit(cache=True, nogil=True)
def add_coordinate(corners, groups, records, coord, es, s):
    """Coordinate s (the last of the active ones) joins, its corners with the ghost's state (a
    coordinate no gradient touched): the ghost, in column 2s, moves on to 2s + 2."""
    if es[L.E_GROUPED] == 0:
        _group_weights(corners, groups, es, s)
    for row in range(ROWS):
        corners[row, 2 * s + 2] = corners[row, 2 * s + 1] = corners[row, 2 * s]
    far = False
    for j in (2 * s, 2 * s + 1):
        far |= _join(groups, es, j, corners)
    _total(groups, es)
    settle_if_needed(corners, groups, records, coord, es, s + 1, far)


@njit(cache=True, nogil=True)
def _accumulate(groups, es):
    """The session sums count the iterate this example was predicted with."""
    inverse = _inverse(es)
    lo = max(int(es[L.E_LO]), 0)
    hi = max(min(int(es[L.E_HI]) + 1, groups.shape[1]), lo)
    for k in range(np.uint64(lo), np.uint64(hi)):  # (unsigned: it vectorizes)
        groups[AVG, k] += groups[TERM, k] * inverse  # (TERM is 0 for an empty group)


@njit(cache=True, nogil=True)
def learn(corners, groups, records, coord, es, x_buf, touched, nt, d1, n):
    """One example with loss derivative ``d1`` (importance included) on the unique coordinates
    ``touched[:nt]`` with aggregated values ``x_buf``; ``n`` coordinates are active."""
    eps = es[L.E_EPS]
    m = 0.0
    for i in range(nt):
        s = touched[i]
        m += d1 * x_buf[s] * (weight(corners, groups, es, 2 * s)
                              - weight(corners, groups, es, 2 * s + 1))
    rho = eps * m * _inverse(es)
    ghost = 2 * n
    es[L.E_TOUCHES] += nt
    es[L.E_S2_SESSION] += rho * rho
    top_rate = rate_of(max(es[L.E_HI] + LEVEL_LOW, corners[LEVEL, ghost]))
    grouped = es[L.E_GROUPED] != 0
    if (es[L.E_TOUCHES] >= n or es[L.E_S2_SESSION] > 2.0 * es[L.E_S2_FULL]
            or top_rate * rho > 0.5):  # a full step
        if grouped:
            _accumulate(groups, es)
            _settle_all(corners, groups, records, coord, es, n)
            _clear(groups, es)
        _dense_step(corners, coord, es, x_buf, d1, rho, n, not grouped)
        es[L.E_TOUCHES] = 0.0
        es[L.E_S2_FULL] = es[L.E_S2_SESSION]
        return
    if not grouped:
        _group_weights(corners, groups, es, n)
    _accumulate(groups, es)
    for i in range(nt):
        s = touched[i]
        _leave(groups, 2 * s, corners)
        _leave(groups, 2 * s + 1, corners)
        _settle_coordinate(corners, groups, records, coord, es, s)
    es[L.E_S1] += rho
    es[L.E_S2] += rho * rho
    es[L.E_STEP] += 1.0
    _record(records, es, rho, es[L.E_STEP])
    eps_d1 = eps * d1
    log_n = np.log(2.0 * n)
    far = False
    for i in range(nt):
        s = touched[i]
        eps_g = eps_d1 * x_buf[s]
        for j, r in ((2 * s, rho - eps_g), (2 * s + 1, rho + eps_g)):
            _step(corners, j, r, log_n)
            corners[S1, j] = es[L.E_S1]  # its snapshot moves past this step
            corners[S2, j] = es[L.E_S2]
            corners[T, j] = es[L.E_STEP]
            far |= _join(groups, es, j, corners)
    _total(groups, es)
    settle_if_needed(corners, groups, records, coord, es, n, far)


@njit(cache=True, nogil=True)
def settle_if_needed(corners, groups, records, coord, es, n, far):
    """Rebase when a corner joined a group far above its unit, or when Z is no longer a
    positive number (cancellation in a group's sum, or an overflow)."""
    if far or not (0.0 < es[L.E_SUM] < np.inf):
        rebase(corners, groups, records, coord, es, n)


@njit(cache=True, nogil=True)
def complete_loaded(corners, groups, es, n):
    """Complete each instance's state read from a model file (E_LOADED), once."""
    for k in range(es.shape[0]):
        if es[k, L.E_LOADED] != 0:
            restored(corners[k], groups[k], es[k], n)
            es[k, L.E_LOADED] = 0.0


@njit(cache=True, nogil=True)
def restored(corners, groups, es, n):
    """A model file's corners and groups (their saved rows) made whole: the rates, and the
    groups' terms and Z, as they were (the corners' units or weights are saved). A model
    from before frozen rates holds each corner's settled (V, B2, R, weight): its corners get
    the frozen rates of their state, and groups."""
    if es[L.E_FROZEN] == 0:
        log_n = np.log(2.0 * max(n, 1))
        for j in range(2 * n + 1):  # (the ghost is column 2n)
            corners[S1, j] = corners[S2, j] = corners[A, j] = corners[T, j] = 0.0
            corners[LEVEL, j] = level_below(boa.rate(corners[V, j], corners[B2, j], log_n))
            corners[ETA, j] = rate_of(corners[LEVEL, j])
        es[L.E_FROZEN] = 1.0
        es[L.E_S1] = es[L.E_S2] = es[L.E_STEP] = es[L.E_RECORDS] = 0.0
        _regroup(corners, groups, es, n)
        return
    for j in range(2 * n + 1):
        corners[ETA, j] = rate_of(corners[LEVEL, j])
    if es[L.E_GROUPED] == 0:
        for k in range(groups.shape[1]):  # while stale, no group has corners
            groups[COUNT, k] = 0.0
        return
    for k in range(max(int(es[L.E_LO]), 0), min(int(es[L.E_HI]) + 1, groups.shape[1])):
        if groups[COUNT, k] > 0:
            groups[RATE, k] = rate_of(k + LEVEL_LOW)
    _total(groups, es)
