"""SAEW, sparse accelerated exponential weights (docs/algorithms.md §4), and plain BOA / EG± as its
single-session case; with calibration (Algorithm 3), BOA over a grid of SAEW instances.

An instance runs a subroutine (BOA on the 2d corners of B1(center, eps), EG±, or lazy SGD with
L1 on the ball) in sessions:
session i has radius eps = U 2^(-i/2) and is centered on the previous session's average (or
last iterate) truncated to its d0 largest coordinates. A session ends at the first example
where its length n satisfies the stopping rule (docs/algorithms.md §4, constant C):

    n >= C d0 2^(i/2) (a sqrt(Q) + b B) / (alpha U),   Q = Σ_session ||g||∞²

The learner kernel (loop.learn_batch) calls :func:`predict` then :func:`learn` per example; the
state layout is in layout.py. Coordinates are the features seen so far: a new one starts in
every instance as if it had been there all along with a zero gradient (BOA: the ghost corner's
state; EG: weight e^0; SGD: θ̂ = center), so the result does not depend on when a feature first
appears. The subroutine's code (``sub``, layout.SUBS) is read once per call and the loops over
coordinates are compiled for each (no per-feature branch on it).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.core.arrays import heapsort
from olearn.core.option import MAX_COUNT, choice, flag, number
from olearn.learners.experts import boa, boa_corners, eg, l1_sgd
from olearn.learners.experts import state as L
from olearn.learners.losses import derivative
from olearn.learners.weights import W_W

MAX_GRID = 16  # --saew_calibrate's d0 values 1, 4, ..., 4^15 = 2^30 cover -b 30
_GRID = {"kind": int, "default": 3, "low": 1, "high": MAX_GRID, "model": True}
# --saew_d0, --saew_C and --saew_center were chosen by scripts/saew_experiment.py
# (BENCHMARKS.md, "SAEW"); --saew_sgd_eta and --saew_sgd_l1 by experiments/saew-sub/run.py
OPTIONS = (
    flag("--eg", model=True,
         help="EG±: exponential weights on the 2d corners of the l1 ball of --radius, "
              "online-calibrated learning rate, O(nonzeros) per example."),
    flag("--boa", model=True,
         help="BOA (Bernstein Online Aggregation) on the corners of the l1 ball of --radius: "
              "per-corner adaptive rates (frozen between a feature's appearances), "
              "O(nonzeros) per example."),
    flag("--saew", model=True,
         help="SAEW: sessions of BOA, EG or SGD on shrinking l1 balls around sparse centers."),
    number("--radius", kind=float, default=None, low=0.0, low_allowed=False, model=True,
           help="--eg/--boa/--saew: l1 radius U of the ball the weights live in [default: 1]; "
                "--freegrad --project: l2 radius of the projection [default: adaptive]."),
    choice("--saew_sub", choices=tuple(L.SUBS), default="boa", model=True,
           help="SAEW's subroutine: BOA, EG± or lazy SGD with L1 (each O(features of the "
                "example) per example)."),
    number("--saew_sgd_eta", kind=float, default=0.1, low=0.0, low_allowed=False, model=True,
           help="--saew_sub sgd: a coordinate's step is eta × radius / sqrt(Σ ||gradient||∞²) "
                "over the session's examples that have it."),
    number("--saew_sgd_l1", kind=float, default=0.03, low=0.0, model=True,
           help="--saew_sub sgd: L1 level (towards the center) l1 × the session's RMS of "
                "||gradient||∞; 0: none."),
    number("--saew_d0", kind=int, default=5, low=1, high=MAX_COUNT, model=True,
           help="SAEW: centers keep their d0 largest coordinates besides the constant (the "
                "sparsity sought)."),
    number("--saew_alpha", kind=float, default=1.0, low=0.0, low_allowed=False, model=True,
           help="SAEW: strong-convexity constant of the risk (stopping rule)."),
    number("--saew_B", kind=float, default=0.0, low=0.0, model=True,
           help="SAEW: bound on ||gradient||∞ in the stopping rule; 0: its running max."),
    number("--saew_C", kind=float, default=0.5, low=0.0, low_allowed=False, model=True,
           help="SAEW: constant of the stopping rule (smaller: shorter sessions)."),
    number("--saew_a", kind=float, default=0.0, low=0.0, model=True,
           help="SAEW: the subroutine's constant a in the stopping rule; 0: sqrt(ln 2d)."),
    number("--saew_b", kind=float, default=0.0, low=0.0, model=True,
           help="SAEW: the subroutine's constant b in the stopping rule; 0: ln 2d."),
    number("--saew_regrow_floor", kind=float, default=50.0, low=0.0, model=True,
           help="SAEW: a center keeps, beyond its d0 largest coordinates, every one whose "
                "magnitude exceeds this multiple of the median magnitude (the noise level), "
                "so that a d0 guessed too small loses no true coordinate; 0: none."),
    number("--saew_regrow", kind=float, default=0.0, low=0.0, model=True,
           help="SAEW: a center also keeps more than its d0 largest coordinates while it "
                "would drop over this fraction of the next radius in l1 mass; 0: no such "
                "limit. With --saew_regrow_floor 0 and --saew_regrow 0: exactly d0 (the "
                "paper)."),
    choice("--saew_center", choices=("average", "last"), default="last", model=True,
           help="SAEW: recenter on the truncated session average (the paper) or last iterate."),
    choice("--saew_output", choices=tuple(L.OUTPUTS), default="iterate", model=True,
           help="--eg/--boa/--saew: what -f, -t, --readable_model and --invert_hash hold: the "
                "iterate, the session average, or its truncation as the next center."),
    flag("--saew_calibrate", model=True,
         help="SAEW calibrated (Algorithm 3, implies --saew): SAEW instances over a grid of "
              "(d0, alpha, radius, B) learn throughout; BOA mixes them, restarted on blocks "
              "[2^j, 2^(j+1)) over a grid that grows with j."),
    number("--saew_grid_d0", **_GRID,
           help="--saew_calibrate: d0 values 1, 4, 16, ... (each grid: 1 to 16 values)"),
    number("--saew_grid_alpha", **_GRID,
           help="--saew_calibrate: alpha values --saew_alpha × 4^k, k centered on 0."),
    number("--saew_grid_radius", **_GRID,
           help="--saew_calibrate: radius values --radius × 4^k, k centered on 0."),
    number("--saew_grid_B", **_GRID,
           help="--saew_calibrate: B values (running max of ||g||∞) × 4^k, k centered on 0."),
)


def l1_radius(config) -> float:
    """--radius as the experts read it: U, 1 unless given."""
    return 1.0 if config.radius is None else config.radius


@njit(cache=True, nogil=True)
def fits(ew, size):
    """Whether the state arrays ``ew`` (layout.py) are consistent with each other and with a
    table of ``size`` weights, as the kernels below index them."""
    slot, hashes, x_buf, touched, corners, coord, es, shared, meta, settings, groups, records = ew
    if settings.shape[0] < L.S_SIZE or shared.shape[0] < L.SH_SIZE:
        return False
    cap = hashes.shape[0]
    instances = es.shape[0]
    columns = corners.shape[2]
    boa_sub = settings[L.S_SUB] == L.BOA
    known_sub = boa_sub or settings[L.S_SUB] == L.EG or settings[L.S_SUB] == L.SGD
    return (known_sub and slot.shape[0] == size and -1 <= settings[L.S_CONSTANT] < size
            and cap == size and x_buf.shape[0] >= cap
            and touched.shape[0] >= cap and 0 <= shared[L.SH_ACTIVE] <= cap
            and 0 <= shared[L.SH_TOUCHED] <= cap and instances >= 1
            and es.shape[1] >= L.E_SIZE and corners.shape[0] == instances
            and corners.shape[1] >= boa.ROWS
            and (columns == 2 * cap + 1 if boa_sub else columns >= 1)
            and coord.shape[0] == instances and coord.shape[1] >= L.K_ROWS
            and coord.shape[2] >= cap and meta.shape[0] >= boa.ROWS + 1
            and meta.shape[1] == instances
            and (corners.shape[1] >= boa_corners.ROWS if boa_sub else True)
            and groups.shape[0] == instances and records.shape[0] == instances
            and (groups.shape[1] >= boa_corners.GROUP_ROWS
                 and groups.shape[2] == boa_corners.LEVELS
                 and records.shape[1] >= 2 and records.shape[2] == boa_corners.RECORDS
                 if boa_sub else True))


# --- one instance -------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _deviation(corners, groups, coord, es, sub, s):
    """θ̂_s - center_s of one instance."""
    if sub == L.SGD:
        return l1_sgd.deviation(coord, es, s)
    if sub == L.EG:
        return eg.deviation(coord, es, s)
    return boa_corners.deviation(corners, groups, es, s)


@njit(cache=True, nogil=True)
def _add_coordinate(corners, groups, records, coord, es, sub, s):
    coord[L.K_CENTER, s] = 0.0
    coord[L.K_AVG, s] = 0.0
    if sub == L.SGD:
        l1_sgd.add_coordinate(coord, es, s)
    elif sub == L.EG:
        eg.add_coordinate(coord, es, s)
    else:
        boa_corners.add_coordinate(corners, groups, records, coord, es, s)


@njit(cache=True, nogil=True)
def _fresh_subroutine(corners, groups, records, coord, es, settings, n):
    """A new subroutine on the ball of the current session (uniform weights, or θ̂ = center)."""
    sub = settings[L.S_SUB]
    if sub == L.SGD:
        l1_sgd.reset(coord, es, n, settings[L.S_SGD_ETA])
    elif sub == L.EG:
        eg.reset(coord, es, n)
    else:
        boa_corners.fresh(corners, groups, records, es, n)


@njit(cache=True, nogil=True)
def _restart(corners, groups, records, coord, es, settings, n):
    """Session 0: center 0, radius U."""
    es[L.E_SESSION] = 0.0
    es[L.E_EPS] = es[L.E_U]
    es[L.E_N] = es[L.E_Q] = es[L.E_B_MAX] = es[L.E_GROWN] = 0.0
    for s in range(n):
        coord[L.K_CENTER, s] = 0.0
        coord[L.K_AVG, s] = 0.0
    _fresh_subroutine(corners, groups, records, coord, es, settings, n)


@njit(cache=True, nogil=True)
def _truncate(values, out, n, d0, keep, budget, floor):
    """out[:n] = values[:n] sparsified: coordinate ``keep`` (the constant; -1: none) stays, and
    of the others the d0 largest |entries|, then also every one above ``floor`` times the
    median of their magnitudes (0, or a median of 0: none), and the next largest while the
    smaller ones would add up to more than ``budget`` in l1 mass (np.inf: no such limit).
    Returns how many of the others it kept. ``values[:n]`` is scratch (overwritten: the
    magnitudes, sorted in place; nothing is allocated, as gd's example loop runs without
    numba's runtime). Of entries tied at the largest magnitude dropped, the lowest coordinates
    go first."""
    others = n - 1 if 0 <= keep < n else n
    top = others if d0 >= others else (int(d0) if d0 > 0 else 0)  # (a NaN d0 keeps nothing)
    removable = others - top
    for s in range(n):  # (a slice copy could allocate: numba copies overlapping arrays)
        out[s] = values[s]
        values[s] = np.inf if s == keep else abs(values[s])
    heapsort(values, n)
    dropped = 0.0
    m = 0  # the m smallest magnitudes are dropped
    while m < removable:
        dropped += values[m]
        if dropped > budget:
            break
        m += 1
    if floor > 0 and others > 0:  # (the magnitudes are sorted: those above the floor are last)
        level = floor * 0.5 * (values[(others - 1) // 2] + values[others // 2])
        if level > 0:
            below = 0
            while below < m and values[below] <= level:
                below += 1
            m = below
    if m == 0:
        return top + removable
    threshold = values[m - 1]
    at_threshold = m  # how many of magnitude == threshold to drop
    for i in range(m):
        if values[i] < threshold:
            at_threshold -= 1
    for s in range(n):
        if s == keep:
            continue
        a = abs(out[s])
        if a < threshold or (a == threshold and at_threshold > 0):
            if a == threshold:
                at_threshold -= 1
            out[s] = 0.0
    return top + removable - m


@njit(cache=True, nogil=True)
def _center_of(values, out, n, es, settings, keep):
    """:func:`_truncate` by the run's rule: d0 (grown), --saew_regrow's budget and
    --saew_regrow_floor."""
    return _truncate(values, out, n, _sparsity(es), keep, _budget(es, settings),
                     settings[L.S_REGROW_FLOOR])


@njit(cache=True, nogil=True, inline="always")
def _sparsity(es):
    """d0, grown to the most coordinates a center had to keep."""
    return max(es[L.E_D0], es[L.E_GROWN])


@njit(cache=True, nogil=True)
def _budget(es, settings):
    """The l1 mass a new center may drop: --saew_regrow times the next session's radius. The
    ball B1(center, r) then holds B1(estimate, r (1 - regrow)): the estimate's neighbourhood,
    coordinates truncated by mistake included, stays reachable as the radii shrink."""
    regrow = settings[L.S_REGROW]
    if regrow <= 0:
        return np.inf
    return regrow * es[L.E_U] * 2.0 ** (-(es[L.E_SESSION] + 1.0) / 2.0)


@njit(cache=True, nogil=True, inline="always")
def _iterate(sub, corners, groups, coord, es, n, out):
    """out[:n] = θ̂ of one instance (``sub`` a constant: a loop compiled per subroutine)."""
    for s in range(n):
        out[s] = coord[L.K_CENTER, s] + _deviation(corners, groups, coord, es, sub, s)


@njit(cache=True, nogil=True)
def _estimate(corners, groups, records, coord, es, settings, n, kind, keep, out):
    """out[:n] = the instance's iterate (kind 0), session average (1) or its truncation (2, as
    the next center would be; ``keep``: the constant's coordinate). SGD's, which keep to the
    box around the center, are projected onto the session's ball (O(n))."""
    sub = int(settings[L.S_SUB])
    if kind != 0:  # the iterate does not read the lazy session sums
        if sub == L.EG:
            eg.settle_all(coord, es, n)
        elif sub == L.SGD:
            l1_sgd.settle_all(coord, es, n)
        else:
            boa_corners.rebase(corners, groups, records, coord, es, n)
    if kind == 0 and sub == L.SGD:
        _iterate(L.SGD, corners, groups, coord, es, n, out)
    elif kind == 0 and sub == L.EG:
        _iterate(L.EG, corners, groups, coord, es, n, out)
    elif kind == 0:
        _iterate(L.BOA, corners, groups, coord, es, n, out)
    else:
        steps = es[L.E_N]
        for s in range(n):
            out[s] = coord[L.K_CENTER, s] + (coord[L.K_AVG, s] / steps if steps > 0 else 0.0)
    if sub == L.SGD:
        l1_sgd.project(out, coord[L.K_CENTER], n, es[L.E_EPS])
    if kind == 2:
        scratch = coord[L.K_SCRATCH]
        for s in range(n):  # (not a slice copy, which could allocate)
            scratch[s] = out[s]
        _center_of(scratch, out, n, es, settings, keep)


@njit(cache=True, nogil=True)
def _next_session(corners, groups, records, coord, es, settings, n, keep):
    source = coord[L.K_SCRATCH]
    kind = 0 if settings[L.S_CENTER_LAST] != 0 else 1
    _estimate(corners, groups, records, coord, es, settings, n, kind, keep, source)
    kept = _center_of(source, coord[L.K_CENTER], n, es, settings, keep)
    es[L.E_GROWN] = max(es[L.E_GROWN], kept)
    es[L.E_SESSION] += 1.0
    es[L.E_EPS] = es[L.E_U] * 2.0 ** (-es[L.E_SESSION] / 2.0)
    es[L.E_N] = es[L.E_Q] = 0.0
    for s in range(n):
        coord[L.K_AVG, s] = 0.0
    _fresh_subroutine(corners, groups, records, coord, es, settings, n)


@njit(cache=True, nogil=True)
def _session_over(es, settings, n):
    """The stopping rule, after the session's latest example."""
    log_2d = np.log(2.0 * n)
    a = settings[L.S_A] if settings[L.S_A] > 0 else np.sqrt(log_2d)
    b = settings[L.S_B] if settings[L.S_B] > 0 else log_2d
    bound = es[L.E_B] if es[L.E_B] > 0 else es[L.E_B_SCALE] * es[L.E_B_MAX]
    need = (settings[L.S_C] * _sparsity(es) * 2.0 ** (es[L.E_SESSION] / 2.0)
            * (a * np.sqrt(es[L.E_Q]) + b * bound) / (es[L.E_ALPHA] * es[L.E_U]))
    return es[L.E_N] >= need


@njit(cache=True, nogil=True)
def _instance_learn(corners, groups, records, coord, es, settings, x_buf, touched, nt, d1, n,
                    keep):
    g_inf = 0.0
    for i in range(nt):
        g_inf = max(g_inf, abs(d1 * x_buf[touched[i]]))
    es[L.E_B_MAX] = max(es[L.E_B_MAX], g_inf)
    es[L.E_Q] += g_inf * g_inf
    es[L.E_N] += 1.0
    if n == 0:  # no feature seen yet (examples without features): no corner to weigh
        return
    sub = settings[L.S_SUB]
    if sub == L.SGD:
        l1_sgd.learn(coord, es, settings, x_buf, touched, nt, d1, g_inf)
    elif sub == L.EG:
        eg.learn(coord, es, x_buf, touched, nt, d1, n)
    else:
        boa_corners.learn(corners, groups, records, coord, es, x_buf, touched, nt, d1, n)
    if settings[L.S_SESSIONS] != 0 and _session_over(es, settings, n):
        _next_session(corners, groups, records, coord, es, settings, n, keep)


@njit(cache=True, nogil=True, inline="always")
def _raw(sub, corners, groups, coord, es, slot, f_idx, f_val, lo, hi):
    raw = 0.0
    for k in range(lo, hi):
        s = slot[f_idx[k]]
        if s >= 0:
            theta = coord[L.K_CENTER, s] + _deviation(corners, groups, coord, es, sub, s)
            raw += theta * f_val[k]
    return raw


@njit(cache=True, nogil=True)
def _instance_raw(corners, groups, coord, es, sub, slot, f_idx, f_val, lo, hi):
    """One instance's θ̂ · x (``sub``'s loop compiled for it)."""
    if sub == L.SGD:
        return _raw(L.SGD, corners, groups, coord, es, slot, f_idx, f_val, lo, hi)
    if sub == L.EG:
        return _raw(L.EG, corners, groups, coord, es, slot, f_idx, f_val, lo, hi)
    return _raw(L.BOA, corners, groups, coord, es, slot, f_idx, f_val, lo, hi)


# --- the learner: K instances sharing the active index ----------------------------------------

@njit(cache=True, nogil=True)
def block(t):
    """The calibration's block j of example t (1-based): [2^j, 2^(j+1)) holds t (0 for t <= 1)."""
    j = 0
    while t >> (j + 1) > 0:
        j += 1
    return j


@njit(cache=True, nogil=True, inline="always")
def _mixed(es, k, j):
    """Whether the calibration's BOA mixes instance k in block j (the grid grows with j)."""
    return es[k, L.E_JOIN] <= j


@njit(cache=True, nogil=True, _nrt=False)
def predict(ew, f_idx, f_val, lo, hi, y_min, y_max, learn):
    """The raw prediction (without the example's initial value) for features ``f_idx[lo:hi]``.

    When the example will be learned, its new features join the active index first and its
    values are gathered per coordinate for :func:`learn`; with calibration, each instance's
    forecast (clipped to [y_min, y_max]) is kept for :func:`learn`.
    """
    slot, hashes, x_buf, touched, corners, coord, es, shared, meta, settings, groups, records = ew
    sub = int(settings[L.S_SUB])
    calibrate = settings[L.S_CALIBRATE] != 0
    instances = es.shape[0]
    n = int(shared[L.SH_ACTIVE])
    boa_corners.complete_loaded(corners, groups, es, n)
    t = int(shared[L.SH_T]) + 1 if learn else max(int(shared[L.SH_T]), 1)
    j = block(t)
    if learn:
        if t == 1:
            for k in range(instances):
                _restart(corners[k], groups[k], records[k], coord[k], es[k], settings, n)
        if calibrate and (t & (t - 1)) == 0:  # a block starts: only the aggregation restarts
            total = 0.0
            for k in range(instances):
                boa.reset(meta, k)
                total += _mixed(es, k, j)
            shared[L.SH_META_SUM] = total
        nt = 0
        for i in range(lo, hi):
            h = f_idx[i]
            s = slot[h]
            if s < 0:
                s = n
                slot[h] = s
                hashes[s] = h
                n += 1
                for k in range(instances):
                    _add_coordinate(corners[k], groups[k], records[k], coord[k], es[k], sub, s)
            if x_buf[s] == 0.0:
                touched[nt] = s
                nt += 1
            x_buf[s] += f_val[i]
            if x_buf[s] == 0.0:  # values that cancel: keep the coordinate listed once
                x_buf[s] = 5e-324
        shared[L.SH_ACTIVE] = n
        shared[L.SH_TOUCHED] = nt
    if not calibrate:
        return _instance_raw(corners[0], groups[0], coord[0], es[0], sub, slot, f_idx, f_val,
                             lo, hi)
    raw = 0.0
    for k in range(instances):
        f = _instance_raw(corners[k], groups[k], coord[k], es[k], sub, slot, f_idx, f_val, lo, hi)
        f = min(max(f, y_min), y_max)
        meta[boa.ROWS, k] = f
        if _mixed(es, k, j):
            raw += meta[boa.W, k] * f
    return raw / shared[L.SH_META_SUM]


@njit(cache=True, nogil=True, inline="always")
def _constant_coordinate(slot, settings):
    """The constant feature's active coordinate, -1 if there is none (yet)."""
    h = int(settings[L.S_CONSTANT])
    return slot[h] if h >= 0 else -1


@njit(cache=True, nogil=True, _nrt=False)
def learn(ew, loss_code, loss_param, p, y, imp, initial):
    """Learn the example :func:`predict` prepared: its prediction was ``p`` (clipped, initial
    value included), its label ``y``, importance ``imp``."""
    slot, hashes, x_buf, touched, corners, coord, es, shared, meta, settings, groups, records = ew
    n = int(shared[L.SH_ACTIVE])
    boa_corners.complete_loaded(corners, groups, es, n)
    keep = _constant_coordinate(slot, settings)
    nt = int(shared[L.SH_TOUCHED])
    shared[L.SH_T] += 1.0
    instances = es.shape[0]
    if settings[L.S_CALIBRATE] != 0:
        d1 = imp * derivative(loss_code, loss_param, p, y)
        for k in range(instances):
            f = meta[boa.ROWS, k] + initial
            meta[boa.ROWS, k] = d1 * (p - f)
            _instance_learn(corners[k], groups[k], records[k], coord[k], es[k], settings, x_buf,
                            touched, nt, imp * derivative(loss_code, loss_param, f, y), n, keep)
        shared[L.SH_META_SUM] = boa.aggregate_step(meta, meta[boa.ROWS], es[:, L.E_JOIN],
                                                   block(int(shared[L.SH_T])))
    else:
        _instance_learn(corners[0], groups[0], records[0], coord[0], es[0], settings, x_buf,
                        touched, nt, imp * derivative(loss_code, loss_param, p, y), n, keep)
    for i in range(nt):
        x_buf[touched[i]] = 0.0


@njit(cache=True, nogil=True)
def export(ew, weights):
    """Write the model's θ (iterate, session average or its truncation, as the settings say;
    with calibration, the instances' θ mixed by the aggregation's weights) into
    ``weights[:, W_W]``."""
    if weights.shape[1] < 1 or not fits(ew, weights.shape[0]):
        raise ValueError("saew.export: state arrays of the wrong shape")
    slot, hashes, x_buf, touched, corners, coord, es, shared, meta, settings, groups, records = ew
    n = int(shared[L.SH_ACTIVE])
    for s in range(n):  # before any estimate: a bad index is refused whatever the state
        if not 0 <= hashes[s] < weights.shape[0]:
            raise ValueError("saew.export: a coordinate's feature index is out of range")
    boa_corners.complete_loaded(corners, groups, es, n)
    keep = _constant_coordinate(slot, settings)
    kind = int(settings[L.S_OUTPUT])
    instances = es.shape[0]
    j = block(max(int(shared[L.SH_T]), 1))
    theta = np.zeros(n)
    part = np.empty(n)
    for k in range(instances):
        share = 1.0
        if settings[L.S_CALIBRATE] != 0:
            if not _mixed(es, k, j):
                continue
            share = meta[boa.W, k] / shared[L.SH_META_SUM]
        _estimate(corners[k], groups[k], records[k], coord[k], es[k], settings, n, kind, keep,
                  part)
        theta += share * part
    for s in range(n):
        weights[hashes[s], W_W] = theta[s]
