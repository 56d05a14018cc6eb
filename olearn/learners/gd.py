"""VW's gradient descent family (docs/vw-reference.md §3): its options, its class, and the
per-example prediction and update the example loop (olearn/kernel/loop.py) calls.

State per coordinate j is the row ``W[j]`` of the weight table (learners/weights.py: weight, sum
of squared gradients, largest |x| seen, the update's scratch rate), one 16-byte row per feature;
the learner's state and parameters are the float64 arrays of olearn/kernel/layouts.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import literally, njit

from olearn.core.option import choice, flag, number, text
from olearn.core.vmath import prefetch_row
from olearn.kernel.example_features import chunk, chunks_done
from olearn.kernel.layouts import LINKS, S_NORM, S_REFUSING, S_REG, S_T, S_TOTAL, P
from olearn.learners import regularize
from olearn.learners.family import Kernels, LearnerFamily
from olearn.learners.losses import derivative_shared, invariant_update_shared, shared_term
from olearn.learners.weights import W_G, W_N, W_RATE, W_W

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
    number("--sparse_l2", kind=float, default=0.0, low=0.0, model=True,
           help="L2 regularization of the features an example activates: each update also "
                "steps by -λ times the prediction (VW's)."),
    text("--feature_mask", metavar="FILE",
         help="Update only the weights that are nonzero in this model file's (or, with -i, "
              "in the initial model's); without -i it also gives the initial weights."),
)

# module level, under its own name: numba's cache index pickles the class by reference
GradientDescentState = namedtuple("GradientDescentState", ["lazy"])


class GradientDescent(LearnerFamily):
    """VW's gradient descent (adaptive, normalized, invariant or plain SGD) with the lazy
    --l1/--l2 (learners/regularize.py), whose per-coordinate snapshots (``lazy``) it owns; the
    rest of its state is the weight table and the learner state."""

    GROUP = "Gradient descent"
    OPTIONS = OPTIONS
    BUNDLE = GradientDescentState

    def __init__(self, config):
        super().__init__(config)
        size = 1 << config.bit_precision if config.regularized else 1
        self.lazy = np.zeros((size, regularize.snapshot_columns(config.l2 > 0)))

    @classmethod
    def chosen(cls, config) -> bool:
        return True  # the default: the table asks it last

    def bundle(self) -> tuple:
        return self.BUNDLE(self.lazy)

    def start(self, state: np.ndarray) -> None:
        """The normalizer's sums start at initial_t, as VW's (adaptive and normalized)."""
        adaptive, normalized, _ = self.config.update_rule
        if normalized and adaptive and self.config.t0 > 0:
            state[S_NORM] = state[S_TOTAL] = self.config.t0

    @staticmethod
    def describe(config) -> str:
        adaptive, normalized, invariant = config.update_rule
        rule = [name for name, on in (("adaptive", adaptive), ("normalized", normalized),
                                      ("invariant", invariant)) if on] or ["sgd"]
        return f"gd ({', '.join(rule)})"

    def readable_rows(self, weights: np.ndarray, predict_only: bool) -> tuple:
        """VW's: with --predict_only_model or plain SGD every nonzero weight, its value only;
        else each row where the weight, G (adaptive) or N (normalized) is nonzero, with those
        of them the rule keeps (VW's resume form)."""
        adaptive, normalized, _ = self.config.update_rule
        columns = [W_W] if predict_only else [W_W, *[W_G] * adaptive, *[W_N] * normalized]
        values = weights[:, columns]
        listed = np.flatnonzero(np.any(values != 0, axis=1))
        return listed, values[listed]

    def sync(self, weights: np.ndarray, state: np.ndarray) -> None:
        """Apply every pending regularization step, so that ``weights`` hold the model."""
        if self.config.regularized:
            regularize.flush(weights, self.lazy, state[S_REG:S_REG + regularize.SIZE],
                             self.config.l1, self.config.l2 > 0)


UPDATE_BLOCK = 256  # features per block of update's passes: 6 KB of scratch
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
def predict(W, index, value, lo, hi, initial, prefetch):
    """The raw score of the features ``index``/``value`` rows ``lo:hi`` from the weights ``W``,
    starting at ``initial``."""
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
def update(model, index, value, lo, hi, walk, p, y, imp, shared, work, prefetch):
    """One example's update of ``model`` (kernel/bundles.py ``Model``) from its features
    ``index``/``value`` rows ``lo:hi``, or (``walk`` not None) from a wide example's chunks:
    ``walk`` is (kernel/bundles.py ``Chunks``, the loop's settings), and each of the update's
    passes walks them (kernel/example_features.py ``chunk``). VW's gd.cc for every
    adaptive/normalized/invariant combination. (The features come as arrays, not as a
    ``Features`` bundle: --oaa's loop, which counts references, would count two per class per
    example building one; :func:`_update_rule` takes them as a plain tuple.)

    Returns the example's global step η̄ = −u / loss′ (0 when there was no update), the step
    size of the regularization's proximal step. ``work`` is the update's scratch (3 rows, at
    least one column: the features are taken that many at a time); ``shared``: the loss's
    :func:`shared_term` of (p, y), which its value took too. VW's default rule
    (adaptive, normalized, power_t 0.5) and plain SGD (neither adaptive nor normalized, any
    power_t) run copies compiled for them (literal flags: no per-feature branch on them).
    ``prefetch`` (literal): see PREFETCH_AHEAD.
    """
    literally(prefetch)
    features = (index, value, lo, hi)
    target = (p, y, imp, shared)
    params = model.params
    adaptive = params[P.adaptive] != 0
    normalized = params[P.normalized] != 0
    sqrt_rate = params[P.power_t] == 0.5
    masked = params[P.feature_mask] != 0
    if adaptive and normalized and sqrt_rate and not masked:
        return _update_rule(True, True, True, False, model, features, walk, target, work,
                            prefetch)
    if not adaptive and not normalized and not masked:  # sqrt_rate: only with a state
        return _update_rule(False, False, False, False, model, features, walk, target, work,
                            prefetch)
    return _update_rule(adaptive, normalized, sqrt_rate, masked, model, features, walk, target,
                        work, prefetch)


@njit(cache=True, nogil=True, _nrt=False)
def _update_rule(adaptive, normalized, sqrt_rate, masked, model, features, walk, target, work,
                 prefetch):
    """:func:`update` for one rule (``adaptive``, ``normalized``, ``sqrt_rate``: power_t is
    0.5; ``masked``: --feature_mask, a feature whose weight is 0 is left out, as VW's) and
    ``target``, the example's (p, y, importance, the loss's shared term): the features' state
    and sums (:func:`_gather`), the step they give, then one pass of weight steps
    (:func:`_step_all`). The sums are taken in the features' order, chunk after chunk."""
    p, y, imp, shared = target
    W, state, params = model
    invariant = params[P.invariant] != 0
    loss = int(params[P.loss])
    param = params[P.loss_param]
    power_t = params[P.power_t]
    neg_norm_power = power_t - 1.0 if adaptive else -1.0
    d1 = derivative_shared(loss, param, p, y, shared)
    g2 = imp * d1 * d1 if adaptive else 0.0
    sums = (0.0, 0.0)
    if walk is None:
        sums = _gather(adaptive, normalized, sqrt_rate, masked, model, features, g2,
                       neg_norm_power, work, prefetch, sums)
    else:
        chunks, s = walk
        restart = True
        while restart or not chunks_done(chunks):
            part = chunk(chunks, s, restart)
            restart = False
            sums = _gather(adaptive, normalized, sqrt_rate, masked, model,
                           (part.index, part.value, part.lo, part.hi), g2, neg_norm_power,
                           work, prefetch, sums)
    norm_x, ppu = sums
    if normalized:
        state[S_NORM] += imp * norm_x
        state[S_TOTAL] += imp
    multiplier = _multiplier(adaptive, normalized, sqrt_rate, neg_norm_power, state)
    if multiplier == 0.0:  # no example so far had a feature: VW's update is NaN, made 0
        return 0.0
    ppu *= multiplier
    scale = params[P.eta] * imp
    if not adaptive:
        scale *= (state[S_T] + imp) ** -power_t
    if invariant:
        u = invariant_update_shared(loss, param, p, y, scale, ppu, shared)
    else:
        u = -d1 * scale
    eta_bar = -u / d1 if abs(u) > 1e-8 and abs(d1) > 1e-8 else 0.0
    u -= params[P.sparse_l2] * p  # VW's --sparse_l2, after the regularization's step size
    if np.isnan(u):
        u = 0.0
    if not _step_all(W, features, walk, u * multiplier, adaptive or normalized, masked,
                     prefetch):
        state[S_REFUSING] = 1.0
        return 0.0
    return eta_bar


@njit(cache=True, nogil=True, _nrt=False)
def _gather(adaptive, normalized, sqrt_rate, masked, model, features, g2, neg_norm_power, work,
            prefetch, sums):
    """The update's first passes over ``features`` (the rule's flags: see :func:`_update_rule`),
    added to ``sums`` (the normalizer's norm, the prediction per update); returns them. Over
    each block of ``work.shape[1]`` features in turn (their scratch stays in the L1 cache),
    three passes: the weights' sums (in order: a feature repeated in the example sees its
    earlier occurrences), each feature's rate (:func:`_rates`: no memory but ``work``'s, so that
    LLVM can vectorize its divisions and square roots), then the rates' sums, in order (none of
    them when no feature has a state and the update is not invariant: nothing would read their
    sums). ``work``'s rows (x², the sums then the rates, the norms then the normalizer's terms)
    are indexed in place, never taken as views: a view takes and drops a reference, atomically,
    per example."""
    W, _, params = model
    index, value, lo, hi = features
    power_t = params[P.power_t]
    stateful = adaptive or normalized
    norm_x, ppu = sums
    for first in range(lo, hi if stateful or params[P.invariant] != 0 else lo, work.shape[1]):
        n = min(work.shape[1], hi - first)
        for k in range(n):
            if prefetch:
                _prefetch_ahead(W, index, first + k, hi)
            j = index[first + k]
            if masked and W[j, W_W] == 0.0:  # no state, no share of the norms or the rate sum
                work[0, k] = 0.0
                work[1, k] = 1.0
                work[2, k] = 1.0
                continue
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
    return norm_x, ppu


@njit(cache=True, nogil=True, inline="always")
def _multiplier(adaptive, normalized, sqrt_rate, neg_norm_power, state):
    """The normalized rule's factor of every step, from the normalizer's sums in ``state``
    (VW's update multiplier); 1 without the rule, 0 while no example had a feature."""
    return _multiplier_of(adaptive, normalized, sqrt_rate, neg_norm_power, state[S_NORM],
                          state[S_TOTAL])


@njit(cache=True, nogil=True, inline="always")
def _multiplier_of(adaptive, normalized, sqrt_rate, neg_norm_power, norm, total):
    """:func:`_multiplier` of the normalizer's sums ``norm`` and ``total``."""
    if not normalized:
        return 1.0
    avg = norm / total if total > 0.0 else 0.0
    if avg <= 0.0:
        return 0.0
    if sqrt_rate:
        return np.sqrt(1.0 / avg) if adaptive else 1.0 / avg
    return avg ** neg_norm_power


# the largest float32: a weight beyond it would be inf in the table
FLOAT32_MAX = float(np.finfo(np.float32).max)


@njit(cache=True, nogil=True, _nrt=False)
def _step(W, index, value, lo, hi, u, stateful, masked, prefetch):
    """The weight step ``u`` times each feature's value (and rate, ``stateful``); ``masked``
    (--feature_mask): a weight that is 0 stays 0. Returns whether the step was taken: one that
    would make a weight non-finite is refused whole (the weights it moved are moved back, to
    float32 rounding), so that one wild example cannot leave the model NaN, as VW's is left."""
    for k in range(lo, hi):
        if prefetch:
            _prefetch_ahead(W, index, k, hi)
        j = index[k]
        if masked and W[j, W_W] == 0.0:
            continue
        new = W[j, W_W] + _delta(W, j, value[k], u, stateful)
        if not abs(new) <= FLOAT32_MAX:
            _step_back(W, index, value, lo, k, u, stateful, masked)
            return False
        W[j, W_W] = new
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _step_all(W, features, walk, u, stateful, masked, prefetch):
    """:func:`_step` on ``features`` (``index, value, lo, hi``) or (``walk``, as
    :func:`update`'s) on a wide example's chunks: refused whole there too, the chunks stepped
    before the refusing one stepped back."""
    if walk is None:
        index, value, lo, hi = features
        return _step(W, index, value, lo, hi, u, stateful, masked, prefetch)
    chunks, s = walk
    taken = 0
    while taken == 0 or not chunks_done(chunks):
        part = chunk(chunks, s, taken == 0)
        if not _step(W, part.index, part.value, part.lo, part.hi, u, stateful, masked,
                     prefetch):
            for again in range(taken):
                part = chunk(chunks, s, again == 0)
                _step_back(W, part.index, part.value, part.lo, part.hi, u, stateful, masked)
            return False
        taken += 1
    return True


@njit(cache=True, nogil=True, inline="always")
def _delta(W, j, x, u, stateful):
    """A feature's weight step: ``u`` times its value ``x`` (and rate, ``stateful``)."""
    return u * x * W[j, W_RATE] if stateful else u * x


@njit(cache=True, nogil=True, _nrt=False)
def _step_back(W, index, value, lo, hi, u, stateful, masked):
    """Undo :func:`_step`'s steps of the features ``lo:hi``, last first."""
    for k in range(hi - 1, lo - 1, -1):
        j = index[k]
        if not (masked and W[j, W_W] == 0.0):
            W[j, W_W] -= _delta(W, j, value[k], u, stateful)


@njit(cache=True, nogil=True, _nrt=False)
def sensitivity(model, index, value, lo, hi, p, y, imp, work):
    """How far a unit update would move the prediction of the features ``index``/``value``
    rows ``lo:hi`` (VW's gd sensitivity, which --confidence divides by): the update's
    prediction-per-update with the sums it would add for (``p``, ``y``, ``imp``) counted but
    not stored, times the learning rate of an example of importance 1. Writes only ``work``
    (as :func:`update`'s scratch); each feature sees the stored sums alone, a repeated one
    not its earlier occurrences (VW's stateless pass)."""
    W, state, params = model
    adaptive = params[P.adaptive] != 0
    normalized = params[P.normalized] != 0
    power_t = params[P.power_t]
    sqrt_rate = power_t == 0.5
    masked = params[P.feature_mask] != 0
    neg_norm_power = power_t - 1.0 if adaptive else -1.0
    scale = params[P.eta] if adaptive else params[P.eta] * (state[S_T] + 1.0) ** -power_t
    loss = int(params[P.loss])
    d1 = derivative_shared(loss, params[P.loss_param], p, y, shared_term(loss, p, y))
    g2 = imp * d1 * d1
    ppu = 0.0
    norm_x = 0.0
    for first in range(lo, hi, work.shape[1]):
        n = min(work.shape[1], hi - first)
        for k in range(n):
            j = index[first + k]
            x = np.float64(value[first + k])
            x2 = x * x
            if masked and W[j, W_W] == 0.0:  # no share, as in the update
                work[0, k] = 0.0
                work[1, k] = 1.0
                work[2, k] = 1.0
                continue
            if x2 < X2_MIN:
                x = X_MIN if x > 0 else -X_MIN
                x2 = X2_MIN
            work[0, k] = x2
            work[1, k] = np.float32(W[j, W_G] + np.float32(g2 * x2)) if adaptive else 1.0
            work[2, k] = max(np.float64(W[j, W_N]), abs(x)) if normalized else 1.0
        if adaptive or normalized:
            _rates(adaptive, normalized, sqrt_rate, power_t, neg_norm_power, work, n)
        for k in range(n):
            if normalized:
                norm_x += work[2, k]
            ppu += work[0, k] * (work[1, k] if adaptive or normalized else 1.0)
    multiplier = _multiplier_of(adaptive, normalized, sqrt_rate, neg_norm_power,
                                np.float32(state[S_NORM]) + imp * norm_x,
                                np.float32(state[S_TOTAL]) + imp)
    return scale * ppu * multiplier


@njit(cache=True, nogil=True, _nrt=False)
def sparse_step(model, index, value, lo, hi, walk, p, prefetch):
    """--sparse_l2's step on an example the loss does not update (its loss is 0): -λ·p, with
    each feature's rate and the normalizer's factor as the last update left them (VW's).
    ``walk``: as :func:`update`'s."""
    literally(prefetch)
    params = model.params
    adaptive = params[P.adaptive] != 0
    normalized = params[P.normalized] != 0
    power_t = params[P.power_t]
    neg_norm_power = power_t - 1.0 if adaptive else -1.0
    u = -params[P.sparse_l2] * p * _multiplier(adaptive, normalized, power_t == 0.5,
                                                neg_norm_power, model.state)
    if u != 0.0 and not _step_all(model.W, (index, value, lo, hi), walk, u,
                                  adaptive or normalized, params[P.feature_mask] != 0,
                                  prefetch):
        model.state[S_REFUSING] = 1.0


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


@njit(cache=True, nogil=True)
def output(params, p):
    """The prediction as the user sees it: after --link and --binary."""
    if params[P.binary] != 0:
        return 1.0 if p > 0 else -1.0
    link = params[P.link]
    if link == 1:
        return 1.0 / (1.0 + np.exp(-p))
    if link == 2:
        return 2.0 / (1.0 + np.exp(-p)) - 1.0
    if link == 3:
        return np.exp(p)
    return p


@njit(cache=True, nogil=True, _nrt=False)
def _fits(family, model):
    """The lazy regularization's snapshots fit the table (with --l1/--l2)."""
    W, state, params = model
    lam2 = params[P.l2]
    if params[P.l1] > 0 or lam2 > 0:
        return regularize.fits(family.lazy, state[S_REG:S_REG + regularize.SIZE], W.shape[0],
                               lam2 > 0)
    return True


@njit(cache=True, nogil=True, inline="always")
def _predict(family, model, features, initial, imp, s, prefetch):
    """The raw score, the features' pending regularization steps applied first (or, test-only,
    computed aside: a test never moves the model)."""
    W, state, _ = model
    index, value, lo, hi, _ = features
    if s.regularized:
        acc = state[S_REG:S_REG + regularize.SIZE]
        if s.test_only:
            return np.float64(regularize.predict_caught_up(W, family.lazy, acc, s.l1, s.l2 > 0,
                                                           index, value, lo, hi, initial))
        regularize.catch_up(W, family.lazy, acc, s.l1, s.l2 > 0, index, lo, hi)
    return np.float64(predict(W, index, value, lo, hi, initial, prefetch))


@njit(cache=True, nogil=True, inline="always")
def _update(family, model, features, scored, s, work, prefetch):
    """:func:`update` where the loss is positive, then the regularization's proximal step. The
    features' pending steps are applied first: --oaa's earlier classes took steps since the
    prediction (as VW's gravity; otherwise there is nothing to apply)."""
    index, value, lo, hi, _ = features
    _learn(family, model, (index, value, lo, hi), None, scored, s, work, prefetch)


@njit(cache=True, nogil=True, inline="always")
def _update_wide(family, model, chunks, scored, s, work, prefetch):
    """:func:`_update` of a wide example, chunk by chunk (kernel/bundles.py ``Chunks``)."""
    _, _, x_idx, x_val, _ = chunks.expansion
    _learn(family, model, (x_idx, x_val, 0, 0), (chunks, s), scored, s, work, prefetch)


@njit(cache=True, nogil=True, _nrt=False)
def _learn(family, model, features, walk, scored, s, work, prefetch):
    """:func:`_update` of ``features`` or (``walk``) of a wide example's chunks."""
    index, value, lo, hi = features
    if scored.loss > 0:
        if s.regularized:
            acc = model.state[S_REG:S_REG + regularize.SIZE]
            if walk is None:
                regularize.catch_up(model.W, family.lazy, acc, s.l1, s.l2 > 0, index, lo, hi)
            else:
                chunks, _ = walk
                restart = True
                while restart or not chunks_done(chunks):
                    part = chunk(chunks, s, restart)
                    restart = False
                    regularize.catch_up(model.W, family.lazy, acc, s.l1, s.l2 > 0, part.index,
                                        part.lo, part.hi)
        eta_bar = update(model, index, value, lo, hi, walk, scored.p, scored.y, scored.imp,
                         scored.shared, work, prefetch)
        if s.regularized and eta_bar > 0.0:
            regularize.advance(model.W, family.lazy,
                               model.state[S_REG:S_REG + regularize.SIZE], s.l1, s.l2, eta_bar)
    elif s.sparse_l2 > 0.0:
        sparse_step(model, index, value, lo, hi, walk, scored.p, prefetch)


GradientDescent.KERNELS = Kernels(_fits, _predict, _predict, _update,
                                  update_wide=_update_wide)
