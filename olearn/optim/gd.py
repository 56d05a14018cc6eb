"""VW's gradient descent family (docs/vw-reference.md §3) over a batch, in one numba kernel.

State per coordinate j is the row ``W[j]`` of the weight table (optim/weights.py: weight, sum
of squared gradients, largest |x| seen, the update's scratch rate), one 16-byte row per feature;
the learner's state, statistics and parameters are the float64 arrays declared below
(olearn/fields.py).

:func:`learn_batch` is the entry point Python calls: it checks once per call that its arrays fit
each other (shapes, the batch's offsets and indices, the optional states), so that no argument
can make it read or write outside them; the functions it calls trust what it checked.
"""
from __future__ import annotations

import numpy as np
from numba import literally, njit

from olearn.batch import valid_batch
from olearn.fields import Field, Layout
from olearn.options import choice, flag, number
from olearn.features import stage_poly
from olearn.features.interactions import expand, expanded_size, valid_terms
from olearn.losses import (derivative_shared, invariant_update_shared, known, loss_value_shared,
                           shared_term)
from olearn import oaa
from olearn.optim import regularize, saew
from olearn.optim.vmath import prefetch_row
from olearn.optim.weights import W_G, W_N, W_RATE, W_W, WIDTH

# Learner state (float64 array).
STATE = Layout(
    "state",
    Field("norm", "S: sum of importance-weighted normalized norms", merge="mean"),
    Field("total", "T: sum of importance of normalized updates", merge="mean"),
    Field("t", "initial_t plus the weight of all examples seen", merge="mean"),
    Field("min", "bottom of the label range predictions are clipped to", merge="min"),
    Field("max", "top of that range", merge="max"),
    *regularize.ACCUMULATORS, *oaa.STATE_FIELDS)
S_NORM, S_TOTAL, S_T, S_MIN, S_MAX, S_INDEXING = STATE.indices("norm", "total", "t", "min", "max",
                                                               "indexing")
S_REG = STATE.index(regularize.ACCUMULATORS[0].name)  # where the accumulators start
STATE_SIZE = len(STATE)

# Progress statistics (float64 array), see report.py: never saved.
STATS = Layout(
    "stats",
    *(Field(name, merge="sum", saved=False) for name in (
        "sum_loss", "w_labeled", "w_unlabeled", "w_label_sum", "examples", "features")),
    Field("dump_at", "weight sum of the next table row", saved=False),
    Field("last_loss", "sum_loss at the last table row", saved=False),
    Field("last_w_labeled", "w_labeled at the last table row", saved=False),
    Field("label1", "the first two distinct labels (best constant)", merge="labels",
          saved=False),
    Field("label2", merge="labels", saved=False),
    Field("many_labels", "1: more than two distinct labels", merge="max", saved=False),
    # held-out examples: the whole run, since the last holdout row, and this pass
    *(Field(name, merge="sum", saved=False) for name in (
        "holdout_loss", "holdout_w", "holdout_loss_since", "holdout_w_since",
        "holdout_loss_pass", "holdout_w_pass")),
    # --oaa --probabilities: the multiclass log loss, of learned and of held-out examples
    *(Field(name, merge="sum", saved=False) for name in ("mc_log_loss", "holdout_mc_log_loss")))
(R_SUM_LOSS, R_W_LABELED, R_W_UNLABELED, R_W_LABEL_SUM, R_EXAMPLES, R_FEATURES, R_DUMP_AT,
 R_LAST_LOSS, R_LAST_W_LABELED, R_LABEL1, R_LABEL2, R_MANY_LABELS, R_HOLDOUT_LOSS, R_HOLDOUT_W,
 R_HOLDOUT_LOSS_SINCE, R_HOLDOUT_W_SINCE, R_HOLDOUT_LOSS_PASS, R_HOLDOUT_W_PASS, R_MC_LOG_LOSS,
 R_HOLDOUT_MC_LOG_LOSS) = range(len(STATS))
STATS_SIZE = len(STATS)
STATS.check_constants(globals(), "R_")

# Parameters (float64 array): the run's options as the kernel reads them, never saved.
PARAMS = Layout("params", *(Field(name, saved=False) for name in (
    "eta", "power_t", "progress", "adaptive", "normalized", "invariant", "loss",
    "fixed_range", "test_only", "progress_add",
    "loss_param",      # the loss's parameter (losses.py: τ for quantile)
    "link",            # LINKS
    "binary", "mask", "permutations", "l1", "l2",
    "holdout_period",  # hold out every n-th line of a pass (0: no holdout) ...
    "holdout_after",   # ... or, when > 0, every line after this one
    "holdout_rows",    # table rows report the holdout loss (from pass 2 on)
    "stage_poly",      # learn on the synthetic examples of --stage_poly
    "sched_exponent", "doubling", "heuristic",
    "poly_fallback",   # --stage_poly_fallback: each stage's shallowest parent
    "constant",        # the constant feature's index
    "family",          # the learner family's code (FAMILY_CODES)
    "oaa",             # --oaa's class count K (0: one scalar problem)
    "probabilities")))  # --oaa: probabilities instead of scores
(P_ETA, P_POWER_T, P_PROGRESS, P_ADAPTIVE, P_NORMALIZED, P_INVARIANT, P_LOSS, P_FIXED_RANGE,
 P_TEST_ONLY, P_PROGRESS_ADD, P_LOSS_PARAM, P_LINK, P_BINARY, P_MASK, P_PERMUTATIONS, P_L1, P_L2,
 P_HOLDOUT_PERIOD, P_HOLDOUT_AFTER, P_HOLDOUT_ROWS, P_STAGE_POLY, P_SCHED_EXPONENT, P_DOUBLING,
 P_HEURISTIC, P_POLY_FALLBACK, P_CONSTANT, P_FAMILY, P_OAA, P_PROBABILITIES) = range(len(PARAMS))
PARAMS_SIZE = len(PARAMS)
PARAMS.check_constants(globals(), "P_")

# The learner families' codes in the kernel (each family class's CODE; optim/families.py).
GRADIENT_DESCENT, EXPONENTIAL_WEIGHTS = FAMILY_CODES = 0, 1

LINKS = {"identity": 0, "logistic": 1, "glf1": 2, "poisson": 3}

OPTIONS = (
    number("-l", "--learning_rate", kind=float, default=None, low=0.0, low_allowed=False,
           model=True,
           help="Learning rate, > 0 [default: 0.5, or 10 unless adaptive and normalized]."),
    number("--power_t", kind=float, default=0.5, low=0.0, model=True, help="t power value."),
    number("--initial_t", kind=float, default=None, low=0.0, model=True,
           help="Initial t value, >= 0 [default: 0, or 1 without --adaptive/--normalized]."),
    flag("--sgd", model=True,
         help="Plain SGD: no adaptive, normalized or invariant update."),
    flag("--adaptive", model=True, help="Per-feature adaptive learning rates (AdaGrad)."),
    flag("--normalized", model=True, help="Per-feature normalized updates."),
    flag("--invariant", model=True, help="Importance-invariant updates."),
    choice("--link", choices=tuple(LINKS), default="identity", model=True,
           help="Link applied to the output (-p, progress table); the loss uses the raw score."),
    flag("--binary", model=True,
         help="Output the sign (-1/1) and report 0/1 loss; learning is unchanged."),
    number("--min_prediction", kind=float, default=None, model=True,
           help="Smallest prediction to output (fixes the clipping range)."),
    number("--max_prediction", kind=float, default=None, model=True,
           help="Largest prediction to output (fixes the clipping range; above "
                "--min_prediction)."),
)

class GradientDescent:
    """VW's gradient descent (adaptive, normalized, invariant or plain SGD) with the lazy
    --l1/--l2 (optim/regularize.py), whose per-coordinate snapshots (``lazy``) it owns; its
    state is the weight table and the learner state. ``ew`` is the exponential-weights
    family's, unused (tiny arrays)."""

    CODE = GRADIENT_DESCENT
    UNMERGEABLE = ""  # --dask merges its state by the declared rules
    ARRAYS: dict = {}  # a model file needs nothing beyond the weight table and the state
    NAMED: dict = {}

    def __init__(self, config):
        from olearn.optim.experts import new_experts  # experts imports config, which imports us
        self.config = config
        size = 1 << config.bit_precision if config.regularized else 1
        self.lazy = np.zeros((size, regularize.snapshot_columns(config.l2 > 0)))
        self.ew = new_experts(config)

    @staticmethod
    def describe(config) -> str:
        """The learner as the header's "Enabled learners" names it."""
        adaptive, normalized, invariant = config.update_rule
        rule = [name for name, on in (("adaptive", adaptive), ("normalized", normalized),
                                      ("invariant", invariant)) if on] or ["sgd"]
        return f"gd ({', '.join(rule)})"

    def sync(self, weights: np.ndarray, state: np.ndarray) -> None:
        """Apply every pending regularization step, so that ``weights`` hold the model."""
        if self.config.regularized:
            regularize.flush(weights, self.lazy, state[S_REG:S_REG + regularize.SIZE],
                             self.config.l1, self.config.l2 > 0)

    def model_arrays(self) -> dict:
        return {}

    def restore(self, arrays: dict, path: str) -> None:
        """Nothing beyond the weight table and the state (the learner restores those)."""

    @staticmethod
    def check(arrays: dict, config) -> None:
        """Nothing beyond model.py's checks of the weight table and the state."""



# examples, weight sum, label, prediction, features, average loss, since last, holdout row,
# the prediction's probability (--oaa --probabilities; else NaN)
ROW_COLS = 9
UPDATE_BLOCK = 256  # features per block of _update's passes: 6 KB of scratch
X_MIN = 1.084202e-19
X2_MIN = X_MIN * X_MIN


# With interactions or --stage_poly an example's features are spread over the whole table, out
# of the L1 and L2 caches: the loops over them ask for the row PREFETCH_AHEAD features ahead
# (``prefetch``, a literal), 10-15% less learning time on -q ff and the interaction shapes.
# Without them (the table rows in use stay cached) the hints only cost instructions.
PREFETCH_AHEAD = 16  # features


@njit(cache=True, nogil=True, inline="always")
def _prefetch_ahead(W, index, k, hi):
    prefetch_row(W, index[min(k + PREFETCH_AHEAD, hi - 1)])


@njit(cache=True, nogil=True, _nrt=False)
def _predict(W, index, value, lo, hi, initial, prefetch):
    literally(prefetch)
    raw = np.float32(initial)
    if prefetch:
        for k in range(lo, min(hi, lo + PREFETCH_AHEAD)):
            prefetch_row(W, index[k])
    for k in range(lo, hi):
        if prefetch:
            _prefetch_ahead(W, index, k, hi)
        raw += W[index[k], W_W] * value[k]
    return raw


@njit(cache=True, nogil=True, _nrt=False)
def _update(W, state, params, index, value, lo, hi, p, y, imp, shared, work, prefetch):
    """One example's update: VW's gd.cc for every adaptive/normalized/invariant combination.

    Returns the example's global step η̄ = −u / loss′ (0 when there was no update), the step
    size of the regularization's proximal step. ``work`` is the update's scratch (3 rows, at
    least one column: the features are taken that many at a time); ``shared``: the loss's
    :func:`shared_term` of (p, y), which its value took too. VW's default rule
    (adaptive, normalized, power_t 0.5) and plain SGD (neither adaptive nor normalized, any
    power_t) run copies compiled for them (literal flags: no per-feature branch on them).
    ``prefetch`` (literal): see PREFETCH_AHEAD.
    """
    literally(prefetch)
    adaptive = params[P_ADAPTIVE] != 0
    normalized = params[P_NORMALIZED] != 0
    sqrt_rate = params[P_POWER_T] == 0.5
    if adaptive and normalized and sqrt_rate:
        return _update_rule(True, True, True, W, state, params, index, value, lo, hi, p, y, imp,
                            shared, work, prefetch)
    if not adaptive and not normalized:  # sqrt_rate only matters to a per-feature state
        return _update_rule(False, False, False, W, state, params, index, value, lo, hi, p, y,
                            imp, shared, work, prefetch)
    return _update_rule(adaptive, normalized, sqrt_rate, W, state, params, index, value, lo, hi,
                        p, y, imp, shared, work, prefetch)


@njit(cache=True, nogil=True, _nrt=False)
def _update_rule(adaptive, normalized, sqrt_rate, W, state, params, index, value, lo, hi, p, y,
                 imp, shared, work, prefetch):
    """:func:`_update` for one rule (``adaptive``, ``normalized``, ``sqrt_rate``: power_t is
    0.5). Over each block of ``work.shape[1]`` features in turn (their scratch stays in the
    L1 cache), three passes: the weights' sums (in order: a feature repeated in the example
    sees its earlier occurrences), each feature's rate (:func:`_rates`: no memory but
    ``work``'s, so that LLVM can vectorize its divisions and square roots), then the rates'
    sums, in order (none of them when no feature has a state and the update is not
    invariant: nothing would read their sums); then one pass of weight steps. ``work``'s rows
    (x², the sums then the rates, the norms then the normalizer's terms) are indexed in place,
    never taken as views: a view takes and drops a reference, atomically, per example."""
    invariant = params[P_INVARIANT] != 0
    loss = int(params[P_LOSS])
    param = params[P_LOSS_PARAM]
    power_t = params[P_POWER_T]
    neg_norm_power = power_t - 1.0 if adaptive else -1.0
    d1 = derivative_shared(loss, param, p, y, shared)
    g2 = imp * d1 * d1 if adaptive else 0.0
    stateful = adaptive or normalized
    norm_x = 0.0
    ppu = 0.0
    for first in range(lo, hi if stateful or invariant else lo, work.shape[1]):
        n = min(work.shape[1], hi - first)
        for k in range(n):
            if prefetch:
                _prefetch_ahead(W, index, first + k, hi)
            j = index[first + k]
            x = np.float64(value[first + k])
            x2 = x * x
            if x2 < X2_MIN:
                x = X_MIN if x > 0 else -X_MIN
                x2 = X2_MIN
            work[0, k] = x2
            if adaptive:
                W[j, W_G] += g2 * x2
                work[1, k] = W[j, W_G]
            if normalized:
                ax = abs(x)
                n_j = np.float64(W[j, W_N])
                if ax > n_j:
                    if n_j > 0:
                        if sqrt_rate:
                            r = n_j / ax
                            W[j, W_W] *= r if adaptive else r * r
                        else:
                            W[j, W_W] *= ((ax / n_j) ** 2) ** neg_norm_power
                    W[j, W_N] = ax
                    n_j = ax
                work[2, k] = n_j
        if stateful:
            _rates(adaptive, normalized, sqrt_rate, power_t, neg_norm_power, work, n)
        for k in range(n):
            rate = work[1, k] if stateful else 1.0
            if normalized:
                norm_x += work[2, k]
            if stateful:
                W[index[first + k], W_RATE] = rate
            ppu += work[0, k] * rate
    multiplier = 1.0
    if normalized:
        state[S_NORM] += imp * norm_x
        state[S_TOTAL] += imp
        avg = state[S_NORM] / state[S_TOTAL]
        if avg <= 0.0:  # no example so far had a feature: VW's update is NaN, made 0
            return 0.0
        if sqrt_rate:
            multiplier = np.sqrt(1.0 / avg) if adaptive else 1.0 / avg
        else:
            multiplier = avg ** neg_norm_power
        ppu *= multiplier
    scale = params[P_ETA] * imp
    if not adaptive:
        scale *= (state[S_T] + imp) ** -power_t
    if invariant:
        u = invariant_update_shared(loss, param, p, y, scale, ppu, shared)
    else:
        u = -d1 * scale
    if np.isnan(u):
        u = 0.0
    eta_bar = -u / d1 if abs(u) > 1e-8 and abs(d1) > 1e-8 else 0.0
    u *= multiplier
    for k in range(lo, hi):
        if prefetch:
            _prefetch_ahead(W, index, k, hi)
        j = index[k]
        if stateful:
            W[j, W_W] += u * value[k] * W[j, W_RATE]
        else:
            W[j, W_W] += u * value[k]
    return eta_bar


# numpy's error model: no division-by-zero check (a branch per division, which stops LLVM
# from vectorizing the loop); no divisor here can be 0 (the sum is tested > 0, the norm >= X_MIN)
@njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def _rates(adaptive, normalized, sqrt_rate, power_t, neg_norm_power, work, n):
    """Each feature's rate into ``work[1]`` (from its sum of squared gradients ``work[1, k]``
    and norm ``work[2, k]``) and, normalized, its term x²/N² of the normalizer (x² is
    ``work[0, k]``) into ``work[2]``."""
    for k in range(n):
        rate = 1.0
        if adaptive:
            g = np.float32(work[1, k])
            if g > 0:
                rate = 1.0 / np.sqrt(g) if sqrt_rate else g ** -power_t
            else:  # gradients so small that their squares vanish in float32: no step
                rate = 0.0
        if normalized:
            n_j = work[2, k]
            work[2, k] = work[0, k] / (n_j * n_j)
            if sqrt_rate:
                rate *= 1.0 / n_j if adaptive else 1.0 / (n_j * n_j)
            else:
                rate *= (n_j * n_j) ** neg_norm_power
        work[1, k] = rate


@njit(cache=True, nogil=True, _nrt=False)
def _drop_linear(x_idx, x_val, n, namespace, lo, hi, linear):
    """Leave out of an expanded example (``n`` rows: the batch's features ``lo:hi`` in order,
    then the interactions) the linear features of namespaces ``linear`` does not flag; returns
    the new count and how many were left out."""
    kept = 0
    for k in range(n):
        if k >= hi - lo or linear[namespace[lo + k]]:
            x_idx[kept] = x_idx[k]
            x_val[kept] = x_val[k]
            kept += 1
    return kept, n - kept


@njit(cache=True, nogil=True)
def output(params, p):
    """The prediction as the user sees it: after --link and --binary."""
    if params[P_BINARY] != 0:
        return 1.0 if p > 0 else -1.0
    link = params[P_LINK]
    if link == 1:
        return 1.0 / (1.0 + np.exp(-p))
    if link == 2:
        return 2.0 / (1.0 + np.exp(-p)) - 1.0
    if link == 3:
        return np.exp(p)
    return p


@njit(cache=True, nogil=True)
def _holdout_averages(stats, row):
    """A holdout row's losses: over the run's held-out examples, and since the last such row."""
    w = stats[R_HOLDOUT_W]
    row[5] = stats[R_HOLDOUT_LOSS] / w if w > 0 else np.nan
    since_w = stats[R_HOLDOUT_W_SINCE]
    row[6] = stats[R_HOLDOUT_LOSS_SINCE] / since_w if since_w > 0 else np.nan
    stats[R_HOLDOUT_LOSS_SINCE] = stats[R_HOLDOUT_W_SINCE] = 0.0


# _nrt=False, as scratch_fits: a function compiled with numba's runtime counts a reference to
# each array it is passed (an atomic operation each way), and learn_batch's arguments hold 32
# arrays. On one example (the Python API's kept calls, olearn/kept.py) that was ~150 of
# _check_arguments' ~400 ns, and all but 3 of scratch_fits' ~150 ns (in-process loops).
@njit(cache=True, nogil=True, _nrt=False)
def _check_arguments(W, lazy, poly, ew, classes, state, stats, params, terms, linear, numbers,
                     offsets, index, value, namespace, lines, preds, rows):
    """Raise ValueError unless :func:`learn_batch`'s arguments fit each other. O(1), plus one
    pass over the batch's offsets and indices (:func:`valid_batch`)."""
    if (params.shape[0] < PARAMS_SIZE or state.shape[0] < STATE_SIZE
            or stats.shape[0] < STATS_SIZE):
        raise ValueError("learn_batch: parameter, state or statistics array too short")
    size = W.shape[0]
    if W.shape[1] < WIDTH or size != np.int64(params[P_MASK]) + 1:
        raise ValueError("learn_batch: the weight table does not match the mask")
    n = numbers.shape[0]
    if (numbers.shape[1] < 3 or offsets.shape[0] != n + 1 or lines.shape[0] < n
            or preds.shape[0] < n or preds.shape[1] < 2 or rows.shape[1] < ROW_COLS):
        raise ValueError("learn_batch: batch arrays of different lengths")
    if not known(int(params[P_LOSS])):
        raise ValueError("learn_batch: unknown loss code")
    if params[P_FAMILY] != GRADIENT_DESCENT and params[P_FAMILY] != EXPONENTIAL_WEIGHTS:
        raise ValueError("learn_batch: unknown learner family code")
    if not valid_batch(offsets, index, value, namespace, size - 1):
        raise ValueError("learn_batch: malformed batch (offsets, lengths or feature indices)")
    if not valid_terms(terms):
        raise ValueError("learn_batch: malformed interaction terms")
    if linear.shape[0] != 256:
        raise ValueError("learn_batch: linear must flag all 256 namespace indices")
    lam2 = params[P_L2]
    if (params[P_L1] > 0 or lam2 > 0) and not regularize.fits(
            lazy, state[S_REG:S_REG + regularize.SIZE], size, lam2 > 0):
        raise ValueError("learn_batch: regularization snapshots of the wrong shape")
    if params[P_STAGE_POLY] != 0 and not (stage_poly.fits(poly, size, int(params[P_HEURISTIC]))
                                          and 0 <= params[P_CONSTANT] < size):
        raise ValueError("learn_batch: --stage_poly state of the wrong shape")
    if params[P_FAMILY] == EXPONENTIAL_WEIGHTS and not saew.fits(ew, size):
        raise ValueError("learn_batch: --eg/--boa/--saew state of the wrong shape")
    k = params[P_OAA]
    if k != 0 and not (k == np.floor(k) and 1 <= k <= size and params[P_FAMILY] == GRADIENT_DESCENT
                       and classes.shape[0] >= k and classes.shape[1] >= 2
                       and preds.shape[1] >= 2 + k):
        raise ValueError("learn_batch: --oaa's class count, family or arrays do not fit")


@njit(cache=True, nogil=True)
def learn_batch(W, lazy, poly, ew, classes, state, stats, params, terms, linear, numbers, offsets,
                index, value, namespace, lines, first_line, preds, rows):
    """Predict, report and (where the example allows) learn each example of a batch in order.

    Example ``e`` is on line ``first_line + lines[e]`` (0-based) of the pass, which decides
    whether it is held out (VW's holdout: predicted and scored apart, never learned).

    ``terms`` are the interactions (features/interactions.py; no rows: none), expanded per
    example; ``linear[ns]`` says whether namespace index ``ns``'s features are linear terms too
    (--ignore_linear: not, features/namespaces.py). Writes each example's prediction (after
    link and --binary) and raw score (before clipping) to ``preds[e]`` (with --oaa: the class,
    its score, then each class's score or probability) and progress-table rows to ``rows``;
    returns the row count. ``lazy`` holds the per-coordinate snapshots of the --l1/--l2
    regularization; ``poly`` the --stage_poly state (min_depth, flags, SSM sums, counters,
    origins; features/stage_poly.py); ``ew`` the state of the exponential-weights learners
    (optim/layout.py), which predict from their own state except in test-only mode, where ``W``
    holds the model they exported; ``classes`` --oaa's per-class sums (olearn/oaa.py).
    """
    _check_arguments(W, lazy, poly, ew, classes, state, stats, params, terms, linear, numbers,
                     offsets, index, value, namespace, lines, preds, rows)
    return _learn(W, lazy, poly, ew, classes, state, stats, params, terms, linear, numbers,
                  offsets, index, value, namespace, lines, first_line, preds, rows,
                  new_scratch(terms, params))


@njit(cache=True, nogil=True, inline="always")
def learn_kept(W, lazy, poly, ew, classes, state, stats, params, terms, linear, numbers, offsets,
               index, value, namespace, lines, first_line, preds, rows, scratch):
    """:func:`learn_batch` with the scratch of a :func:`new_scratch` the caller keeps (the Python
    API's single examples, olearn/kept.py: a call allocates nothing then); checked as the
    other arguments are (:func:`scratch_fits`)."""
    _check_arguments(W, lazy, poly, ew, classes, state, stats, params, terms, linear, numbers,
                     offsets, index, value, namespace, lines, preds, rows)
    if not scratch_fits(scratch, terms, params):
        raise ValueError("learn_batch: scratch of the wrong shape")
    return _learn(W, lazy, poly, ew, classes, state, stats, params, terms, linear, numbers,
                  offsets, index, value, namespace, lines, first_line, preds, rows, scratch)


@njit(cache=True, nogil=True)
def new_scratch(terms, params):
    """The scalar example loop's scratch (:func:`_examples`) for a learner's interaction terms
    and (checked) parameters: _update's work, the interactions' expansion scratch (16 rows, grown
    by :func:`_learn_scalar` as examples need), --stage_poly's synthetic example (one row per slot
    of the table: the walk keeps each slot at most once; none without it) and its walk's
    stack."""
    synthetic = np.int64(params[P_MASK]) + 1 if params[P_STAGE_POLY] != 0 else 0
    return (np.empty((3, UPDATE_BLOCK)), _expansion_scratch(terms, 16),
            np.empty(synthetic, dtype=np.uint32), np.empty(synthetic, dtype=np.float32),
            stage_poly.new_stack())


@njit(cache=True, nogil=True, _nrt=False)
def scratch_fits(scratch, terms, params):
    """Whether ``scratch`` has the shapes :func:`new_scratch` gives for these terms and
    parameters (at least its rows)."""
    work, (ranges, pos, x_idx, x_val, no_src), s_idx, s_val, stack = scratch
    synthetic = np.int64(params[P_MASK]) + 1 if params[P_STAGE_POLY] != 0 else 0
    depth = stage_poly.MAX_DEPTH + 1
    return (work.shape[0] >= 3 and work.shape[1] >= 1 and ranges.shape[0] == 256
            and ranges.shape[1] == 2 and pos.shape[0] >= terms.shape[1]
            and x_val.shape[0] >= x_idx.shape[0] and no_src.shape[0] == 0
            and no_src.shape[1] >= terms.shape[1] and s_idx.shape[0] >= synthetic
            and s_val.shape[0] >= synthetic and stack[0].shape[0] >= depth
            and stack[1].shape[0] >= depth and stack[2].shape[0] >= depth)


@njit(cache=True, nogil=True, inline="always")
def _learn(W, lazy, poly, ew, classes, state, stats, params, terms, linear, numbers, offsets,
           index, value, namespace, lines, first_line, preds, rows, scratch):
    """:func:`learn_batch` on checked arguments and scratch."""
    # The stack is chosen here, once per batch: the reduction (one scalar problem, or --oaa's
    # K) and the learner family are compile-time constants of the example loops, which numba
    # compiles once for each (docs/architecture.md).
    if params[P_OAA] != 0:
        return _learn_multiclass(W, lazy, poly, classes, state, stats, params, terms, linear,
                                 numbers, offsets, index, value, namespace, lines, first_line,
                                 preds, rows)
    if params[P_FAMILY] == EXPONENTIAL_WEIGHTS:
        return _learn_scalar(EXPONENTIAL_WEIGHTS, True, W, lazy, poly, ew, state, stats, params,
                             terms, linear, numbers, offsets, index, value, namespace, lines,
                             first_line, preds, rows, scratch)
    if terms.shape[0] == 0 and params[P_STAGE_POLY] == 0 and not _some_not_linear(linear):
        return _learn_scalar(GRADIENT_DESCENT, False, W, lazy, poly, ew, state, stats, params,
                             terms, linear, numbers, offsets, index, value, namespace, lines,
                             first_line, preds, rows, scratch)
    return _learn_scalar(GRADIENT_DESCENT, True, W, lazy, poly, ew, state, stats, params, terms,
                         linear, numbers, offsets, index, value, namespace, lines, first_line,
                         preds, rows, scratch)


@njit(cache=True, nogil=True, inline="always")
def _settings(params):
    """The example loops' options, read once per batch: loss code and parameter, test-only,
    fixed range, mask, permutations, λ1, λ2, regularized, --stage_poly's (on, constant,
    exponent, heuristic, doubling, fallback) and normalized."""
    lam1 = params[P_L1]
    lam2 = params[P_L2]
    return (int(params[P_LOSS]), params[P_LOSS_PARAM], params[P_TEST_ONLY] != 0,
            params[P_FIXED_RANGE] != 0, np.int64(params[P_MASK]), params[P_PERMUTATIONS] != 0,
            lam1, lam2, lam1 > 0 or lam2 > 0, params[P_STAGE_POLY] != 0,
            np.int64(params[P_CONSTANT]), params[P_SCHED_EXPONENT], int(params[P_HEURISTIC]),
            params[P_DOUBLING] != 0, params[P_POLY_FALLBACK] != 0, params[P_NORMALIZED] != 0)


@njit(cache=True, nogil=True, inline="always")
def _some_not_linear(linear):
    """Whether --ignore_linear leaves any namespace's features out of the linear terms."""
    flagged = 0
    for ns in range(256):  # no early exit: LLVM vectorizes the sum
        flagged += linear[ns]
    return flagged < 256


# The per-example helpers (_predict, _label, _count_held_out, _count_example) are plain njit
# functions, which LLVM inlines: numba's own inlining (inline="always") binds their array
# arguments to new variables, a reference count taken and dropped (atomically) per array per
# example, which cost more than the example's other work on short examples.
@njit(cache=True, nogil=True, _nrt=False)
def _label(e, numbers, params, first_line, lines, test_only):
    """Example ``e``'s label and importance, whether it has a label, whether it is held out
    (VW's holdout, by its line in the pass) and whether it is learned."""
    y = np.float64(numbers[e, 0])
    imp = np.float64(numbers[e, 1])
    labeled = not np.isnan(y)
    held = False
    period = np.int64(params[P_HOLDOUT_PERIOD])
    if period > 0:
        held = held_out(period, np.int64(params[P_HOLDOUT_AFTER]), first_line + lines[e] + 1)
    return y, imp, labeled, held, labeled and imp > 0 and not test_only and not held


@njit(cache=True, nogil=True)
def held_out(period, after, counter):
    """VW's holdout (``period`` > 0): whether the example on line ``counter`` (1-based) of the
    pass is held out. ``counter`` is a number (the kernels) or an array (--metric auc splits
    a batch's examples with it: plain numpy, no loop)."""
    if after > 0:
        return counter > after
    return counter % period == 0


@njit(cache=True, nogil=True, _nrt=False)
def _count_held_out(stats, reported, imp):
    for r in (R_HOLDOUT_LOSS, R_HOLDOUT_LOSS_SINCE, R_HOLDOUT_LOSS_PASS):
        stats[r] += reported
    for r in (R_HOLDOUT_W, R_HOLDOUT_W_SINCE, R_HOLDOUT_W_PASS):
        stats[r] += imp


@njit(cache=True, nogil=True, _nrt=False)
def _count_example(stats, rows, nrows, params, y, shown, probability, n_features):
    """Count a (not held-out) example and write a table row when one is due; returns the row
    count."""
    stats[R_EXAMPLES] += 1
    stats[R_FEATURES] += n_features
    wsum = stats[R_W_LABELED] + stats[R_W_UNLABELED]
    if wsum < stats[R_DUMP_AT] or nrows >= rows.shape[0]:
        return nrows
    rows[nrows, 0] = stats[R_EXAMPLES]
    rows[nrows, 1] = wsum
    rows[nrows, 2] = y
    rows[nrows, 3] = shown
    rows[nrows, 4] = n_features
    rows[nrows, 8] = probability
    if params[P_HOLDOUT_ROWS] != 0:
        _holdout_averages(stats, rows[nrows])
        rows[nrows, 7] = 1.0
    else:
        wl = stats[R_W_LABELED]
        rows[nrows, 5] = stats[R_SUM_LOSS] / wl if wl > 0 else np.nan
        new_w = wl - stats[R_LAST_W_LABELED]
        rows[nrows, 6] = ((stats[R_SUM_LOSS] - stats[R_LAST_LOSS]) / new_w
                          if new_w > 0 else np.nan)
        stats[R_LAST_LOSS] = stats[R_SUM_LOSS]
        stats[R_LAST_W_LABELED] = wl
        rows[nrows, 7] = 0.0
    if params[P_PROGRESS_ADD] != 0:
        stats[R_DUMP_AT] = wsum + params[P_PROGRESS]
    else:
        stats[R_DUMP_AT] = wsum * params[P_PROGRESS]
    return nrows + 1


@njit(cache=True, nogil=True, inline="always")
def _expansion_scratch(terms, rows):
    """The interactions' scratch: namespace ranges, component positions, ``rows`` rows for an
    expanded example, and no source rows (no --audit here)."""
    return (np.zeros((256, 2), dtype=np.int64), np.empty(terms.shape[1], dtype=np.int64),
            np.empty(rows, dtype=np.uint32), np.empty(rows, dtype=np.float32),
            np.empty((0, terms.shape[1]), dtype=np.int64))


# inline: a function compiled on its own with numba's runtime counts a reference to an array it
# returns, which the example loop (without the runtime) would never give back: the batch's
# arrays would never be freed. Inlined, it is compiled as part of the loop. (The loop's other
# callees return numbers only.)
@njit(cache=True, nogil=True, inline="always")
def _example_features(e, offsets, index, value, namespace, terms, mask, permutations, linear,
                      some_not_linear, interacting, scratch):
    """Example ``e``'s features: the batch's own, or (``interacting``) after the interactions
    and --ignore_linear, written to the scratch of :func:`_expansion_scratch`. Returns
    (indices, values, lo, hi, how many --ignore_linear left out, 0), or with rows needed last
    when the scratch holds fewer rows than the expansion may need (then nothing is written)."""
    if not interacting:
        return index, value, offsets[e], offsets[e + 1], 0, 0
    ranges, pos, x_idx, x_val, no_src = scratch
    lo = offsets[e]
    hi = offsets[e + 1]
    need = expanded_size(namespace, lo, hi, terms, ranges)
    if need > x_idx.shape[0]:
        return x_idx, x_val, 0, 0, 0, need
    n = expand(index, value, lo, hi, terms, ranges, mask, permutations, x_idx, x_val, no_src,
               pos)
    left_out = 0
    if some_not_linear:
        n, left_out = _drop_linear(x_idx, x_val, n, namespace, lo, hi, linear)
    return x_idx, x_val, 0, n, left_out, 0


@njit(cache=True, nogil=True, inline="always")
def _learn_scalar(family, expanded, W, lazy, poly, ew, state, stats, params, terms, linear,
                  numbers, offsets, index, value, namespace, lines, first_line, preds, rows,
                  kept_scratch):
    """:func:`learn_batch` for one scalar problem: runs :func:`_examples` (which runs without
    numba's runtime, so cannot allocate) over the batch with the scratch of
    :func:`new_scratch`; when it stops before an example, gives it a larger expansion scratch
    (for this batch) or runs the due --stage_poly stage, and lets it go on. ``expanded``: see
    :func:`_examples`."""
    (_, _, _, _, _, _, _, _, _, _, constant, exponent, heuristic, _, fallback,
     normalized) = _settings(params)
    min_depth, flags, ssm, counters, _ = poly
    work, scratch, s_idx, s_val, stack = kept_scratch
    e = 0
    nrows = 0
    while True:
        e, nrows, rows_needed, stage = _examples(family, expanded, e, nrows, W, lazy, poly, ew,
                                                 state, stats, params, terms, linear, numbers,
                                                 offsets, index, value, namespace, lines,
                                                 first_line, preds, rows, work, scratch, s_idx,
                                                 s_val, stack)
        if rows_needed > 0:
            scratch = _expansion_scratch(terms, max(rows_needed, 2 * scratch[2].shape[0]))
        elif stage:
            stage_poly.run_stage(W, flags, ssm, min_depth, counters, constant, exponent,
                                 heuristic, normalized, fallback)
        else:
            return nrows


# _nrt=False: numba's runtime is off in the example loop, so that no reference is counted (an
# atomic operation per array argument per call: a fifth of the time of an interaction run) and
# nothing is allocated; numba refuses to compile an allocation here. Numba compiles each callee
# with its own options, not its caller's: every function the loop calls that is not inlined
# (_label, _update, interactions.expand, ...) is marked _nrt=False too, else it counts its
# array arguments' references on every example. Such a function must return no array (nothing
# would count the reference its caller drops).
@njit(cache=True, nogil=True, _nrt=False)
def _examples(family, expanded, e0, nrows, W, lazy, poly, ew, state, stats, params, terms,
              linear, numbers, offsets, index, value, namespace, lines, first_line, preds, rows,
              work, scratch, s_idx, s_val, stack):
    """:func:`learn_batch`'s example loop for one scalar problem and one learner ``family``,
    from example ``e0`` with ``nrows`` table rows written. Returns (the example it stopped at,
    the row count, rows needed, stage due): at the end of the batch (rows needed 0, no stage
    due), or before an example (nothing of it done) whose interactions need more rows than
    ``scratch`` holds, or before which a --stage_poly stage is due (it allocates). ``family``
    and ``expanded`` are literals: the stack expander → family → loss is fixed for the whole
    loop. ``expanded`` False: no interactions, --ignore_linear or --stage_poly, so each
    example's features are the batch's own. ``s_idx``/``s_val`` hold a row per slot of the
    table with --stage_poly (else none), ``stack`` its walk's scratch."""
    literally(family)
    literally(expanded)
    binary = params[P_BINARY] != 0
    (loss_code, loss_param, test_only, fixed_range, mask, permutations, lam1, lam2, regularized,
     poly_on, constant, exponent, heuristic, doubling, fallback, normalized) = _settings(params)
    acc = state[S_REG:S_REG + regularize.SIZE]
    min_depth, flags, ssm, counters, origin = poly
    some_not_linear = _some_not_linear(linear)
    interacting = expanded and (terms.shape[0] > 0 or some_not_linear)
    for e in range(e0, numbers.shape[0]):
        y, imp, labeled, held, learn = _label(e, numbers, params, first_line, lines, test_only)
        if expanded and poly_on and learn and stage_poly.stage_due(counters):
            return e, nrows, 0, True
        # not_linear: features left out of the linear terms, counted as VW counts them
        f_idx, f_val, lo, hi, not_linear, rows_needed = _example_features(
            e, offsets, index, value, namespace, terms, mask, permutations, linear,
            some_not_linear, interacting, scratch)
        if rows_needed > 0:
            return e, nrows, rows_needed, False
        if expanded and poly_on:
            if learn:
                stage_poly.count_input(counters, hi - lo)
            n_syn = stage_poly.expand(f_idx, f_val, lo, hi, constant, mask, min_depth, flags,
                                      origin, learn, s_idx, s_val, stack, 0)
            f_idx = s_idx
            f_val = s_val
            lo = 0
            hi = n_syn
        if learn and not fixed_range:
            state[S_MIN] = min(state[S_MIN], y)
            state[S_MAX] = max(state[S_MAX], y)
        if family == GRADIENT_DESCENT and regularized and not test_only:
            regularize.catch_up(W, lazy, acc, lam1, lam2 > 0, f_idx, lo, hi)
        if family == EXPONENTIAL_WEIGHTS and not test_only:
            raw = numbers[e, 2] + saew.predict(ew, f_idx, f_val, lo, hi, state[S_MIN],
                                               state[S_MAX], learn)
        elif family == GRADIENT_DESCENT and regularized and test_only:
            raw = np.float64(regularize.predict_caught_up(W, lazy, acc, lam1, lam2 > 0, f_idx,
                                                          f_val, lo, hi, numbers[e, 2]))
        else:
            raw = np.float64(_predict(W, f_idx, f_val, lo, hi, numbers[e, 2], expanded))
        if np.isnan(raw):
            raw = 0.0
        p = min(max(raw, state[S_MIN]), state[S_MAX])
        shown = output(params, p)
        preds[e, 0] = shown
        preds[e, 1] = raw
        if labeled:
            # computed once for the loss, its derivative and the update
            shared = shared_term(loss_code, p, y)
            loss = loss_value_shared(loss_code, loss_param, p, y, shared)
            reported = (shown != y) * imp if binary else loss * imp
        if held and labeled:
            _count_held_out(stats, reported, imp)
            continue
        if labeled:
            stats[R_SUM_LOSS] += reported
            stats[R_W_LABELED] += imp
            stats[R_W_LABEL_SUM] += y * imp
            if np.isnan(stats[R_LABEL1]):
                stats[R_LABEL1] = y
            elif y != stats[R_LABEL1]:
                if np.isnan(stats[R_LABEL2]):
                    stats[R_LABEL2] = y
                elif y != stats[R_LABEL2]:
                    stats[R_MANY_LABELS] = 1.0
            if learn and poly_on and heuristic == 1:
                stage_poly.add_ssm(ssm, f_idx, f_val, lo, hi, y - p)
            if learn and family == EXPONENTIAL_WEIGHTS:
                saew.learn(ew, loss_code, loss_param, p, y, imp, numbers[e, 2])
            elif learn and family == GRADIENT_DESCENT and loss > 0:
                eta_bar = _update(W, state, params, f_idx, f_val, lo, hi, p, y, imp, shared,
                                  work, expanded)
                if regularized and eta_bar > 0.0:
                    regularize.advance(W, lazy, acc, lam1, lam2, eta_bar)
            if learn and poly_on:
                stage_poly.after_training(counters, first_line + lines[e], doubling)
            state[S_T] += imp  # VW's t counts labeled examples only
        else:
            stats[R_W_UNLABELED] += imp
        nrows = _count_example(stats, rows, nrows, params, y, shown, np.nan,
                               hi - lo + not_linear)
    return numbers.shape[0], nrows, 0, False




@njit(cache=True, nogil=True)
def _grown(a, kept, need):
    """``a`` with room for ``need`` entries (at least doubled), its first ``kept`` kept."""
    out = np.empty(max(need, 2 * a.shape[0]), dtype=a.dtype)
    out[:kept] = a[:kept]
    return out


@njit(cache=True, nogil=True)
def _class_label(y, indexing, k):
    """The 0-based class of label ``y`` under ``indexing`` (VW's unsigned arithmetic: label 0
    of 1-based classes wraps), modulo the ``k`` classes; 0 for a label beyond 32 bits."""
    if not 0 <= y < 4294967296.0:
        return 0
    c = np.int64(y) - (0 if indexing == 0 else 1)
    if c < 0:
        c += np.int64(1) << 32
    return c % k


@njit(cache=True, nogil=True)
def _learn_multiclass(W, lazy, poly, classes, state, stats, params, terms, linear, numbers,
                      offsets, index, value, namespace, lines, first_line, preds, rows):
    """:func:`learn_batch`'s example loop for --oaa's K problems (olearn/oaa.py), with gradient
    descent: each example's features are copied once per class to the class's slots (by
    --stage_poly's walk for that class, with it), every class is predicted, then every class
    learns from its own clipped prediction, with its own normalizer sums (VW's order)."""
    k_classes = np.int64(params[P_OAA])
    probabilities = params[P_PROBABILITIES] != 0
    (loss_code, loss_param, test_only, fixed_range, mask, permutations, lam1, lam2, regularized,
     poly_on, constant, exponent, heuristic, doubling, fallback, normalized) = _settings(params)
    acc = state[S_REG:S_REG + regularize.SIZE]
    min_depth, flags, ssm, counters, origin = poly
    work = np.empty((3, UPDATE_BLOCK))  # _update's scratch
    scratch = _expansion_scratch(terms, 16)
    synthetic = mask + 1 if poly_on else 0  # as in _learn_scalar
    s_idx = np.empty(synthetic, dtype=np.uint32)
    s_val = np.empty(synthetic, dtype=np.float32)
    stack = stage_poly.new_stack()
    c_idx = np.empty(16, dtype=np.uint32)  # every class's features, class k's from c_lo[k]
    c_val = np.empty(16, dtype=np.float32)
    c_lo = np.zeros(k_classes + 1, dtype=np.int64)
    scores = np.zeros(k_classes)
    probs = np.zeros(k_classes, dtype=np.float32)
    nrows = 0
    some_not_linear = _some_not_linear(linear)
    interacting = terms.shape[0] > 0 or some_not_linear
    for e in range(numbers.shape[0]):
        f_idx, f_val, lo, hi, not_linear, rows_needed = _example_features(
            e, offsets, index, value, namespace, terms, mask, permutations, linear,
            some_not_linear, interacting, scratch)
        if rows_needed > 0:
            scratch = _expansion_scratch(terms, max(rows_needed, 2 * scratch[2].shape[0]))
            f_idx, f_val, lo, hi, not_linear, _ = _example_features(
                e, offsets, index, value, namespace, terms, mask, permutations, linear,
                some_not_linear, interacting, scratch)
        y, imp, labeled, held, learn = _label(e, numbers, params, first_line, lines, test_only)
        if poly_on and learn:
            if stage_poly.stage_due(counters):
                stage_poly.run_stage(W, flags, ssm, min_depth, counters, constant, exponent,
                                     heuristic, normalized, fallback)
            stage_poly.count_input(counters, hi - lo)
        n = 0
        for k in range(k_classes):
            c_lo[k] = n
            if poly_on:
                m = stage_poly.expand(f_idx, f_val, lo, hi, constant, mask, min_depth, flags,
                                      origin, learn, s_idx, s_val, stack, k)
            else:
                m = hi - lo
            if n + m > c_idx.shape[0]:
                c_idx = _grown(c_idx, n, n + m)
                c_val = _grown(c_val, n, n + m)
            for j in range(m):
                if poly_on:
                    c_idx[n + j] = s_idx[j]
                    c_val[n + j] = s_val[j]
                else:
                    c_idx[n + j] = (np.int64(f_idx[lo + j]) + k) & mask
                    c_val[n + j] = f_val[lo + j]
            n += m
        c_lo[k_classes] = n
        best = 0
        for k in range(k_classes):
            a = c_lo[k]
            b = c_lo[k + 1]
            if regularized and not test_only:
                regularize.catch_up(W, lazy, acc, lam1, lam2 > 0, c_idx, a, b)
            if regularized and test_only:
                raw = np.float64(regularize.predict_caught_up(W, lazy, acc, lam1, lam2 > 0, c_idx,
                                                              c_val, a, b, numbers[e, 2]))
            else:
                raw = np.float64(_predict(W, c_idx, c_val, a, b, numbers[e, 2], False))
            if np.isnan(raw):
                raw = 0.0
            scores[k] = min(max(raw, state[S_MIN]), state[S_MAX])
            if scores[k] > scores[best]:
                best = k
        indexing = state[S_INDEXING]
        shown = np.float64(best + (0 if indexing == 0 else 1))
        probability = np.nan
        if probabilities:  # float32, as VW computes them
            total = np.float32(0.0)
            for k in range(k_classes):
                probs[k] = np.float32(1.0) / (np.float32(1.0) + np.exp(np.float32(-scores[k])))
                total += probs[k]
            inverse = np.float32(1.0) / total
            for k in range(k_classes):
                probs[k] *= inverse
                preds[e, 2 + k] = probs[k]
            probability = np.float64(probs[best])
        else:
            for k in range(k_classes):
                preds[e, 2 + k] = scores[k]
        preds[e, 0] = shown
        preds[e, 1] = scores[best]
        if learn and indexing == oaa.AUTO:  # VW's rule: label 0 or K decides, once
            if y == 0:
                indexing = 0.0
            elif y == k_classes:
                indexing = 1.0
            state[S_INDEXING] = indexing
        if labeled:
            reported = (shown != y) * imp
            log_loss = 0.0
            if probabilities:
                p_true = probs[_class_label(y, indexing, k_classes)]
                log_loss = -np.log(p_true) * imp if p_true > 0 else 999.0
        if held and labeled:
            _count_held_out(stats, reported, imp)
            stats[R_HOLDOUT_MC_LOG_LOSS] += log_loss
            continue
        if labeled:
            stats[R_SUM_LOSS] += reported
            stats[R_W_LABELED] += imp
            stats[R_MC_LOG_LOSS] += log_loss
            if learn:
                first = 0 if indexing == 0 else 1
                for k in range(k_classes):
                    yk = 1.0 if y == k + first else -1.0
                    if not fixed_range:
                        state[S_MIN] = min(state[S_MIN], yk)
                        state[S_MAX] = max(state[S_MAX], yk)
                    a = c_lo[k]
                    b = c_lo[k + 1]
                    pk = scores[k]
                    if poly_on and heuristic == 1:
                        stage_poly.add_ssm(ssm, c_idx, c_val, a, b, yk - pk)
                    shared = shared_term(loss_code, pk, yk)
                    if loss_value_shared(loss_code, loss_param, pk, yk, shared) > 0:
                        if regularized:  # the earlier classes' proximal steps, as VW's gravity
                            regularize.catch_up(W, lazy, acc, lam1, lam2 > 0, c_idx, a, b)
                        state[S_NORM] = classes[k, oaa.CLASS_NORM]
                        state[S_TOTAL] = classes[k, oaa.CLASS_TOTAL]
                        eta_bar = _update(W, state, params, c_idx, c_val, a, b, pk, yk, imp,
                                          shared, work, False)
                        classes[k, oaa.CLASS_NORM] = state[S_NORM]
                        classes[k, oaa.CLASS_TOTAL] = state[S_TOTAL]
                        if regularized and eta_bar > 0.0:
                            regularize.advance(W, lazy, acc, lam1, lam2, eta_bar)
                if poly_on:
                    stage_poly.after_training(counters, first_line + lines[e], doubling)
            state[S_T] += imp
        else:
            stats[R_W_UNLABELED] += imp
        nrows = _count_example(stats, rows, nrows, params, y, shown, probability,
                               c_lo[1] + not_linear)
    return nrows
