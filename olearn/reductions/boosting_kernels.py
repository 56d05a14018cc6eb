"""--boosting's kernels (reductions/boosting.py holds its configuration and state): the example
loop (kernel/loop.py) calls them by the bundle type ``BoostingState`` (reductions/table.py).

As VW's boosting (docs/vw-reference.md §9.7), in float32 as VW computes: weak learner i
predicts the example (its clipped score; the first one before the label joins the range, as
VW's scorer sees it) and, when the example is learned, learns the label right away with its own
normalizer sums and the example's importance times the algorithm's weight for it. The reported
loss is the last weak learner's (with the importance it learned with), as VW's scorer leaves it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.kernel import dispatch
from olearn.kernel.bundles import Predicted
from olearn.kernel.layouts import S_MAX, S_MIN, P
from olearn.learners.losses import loss_value_shared, shared_term
from olearn.learners.weights import merand48
from olearn.reductions.boosting import ADAPTIVE, BBM, L_ALPHA, L_V, LEARNER_FIELDS
from olearn.reductions.oaa_kernels import _class_features, fits_classes, learn_class

F32 = np.float32
ALPHA_BOUND = F32(2.0)  # VW clips each α to [-2, 2]
MISTAKE_DECAY = F32(0.36788)  # VW's exp(-1) for v after a mistake of the partial sum


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """--oaa's checks, a row of α and v per weak learner, the clock and the generator."""
    k = model.params[P.classes]
    return (fits_classes(reduction, model) and reduction.learners.shape[0] >= k
            and reduction.learners.shape[1] >= LEARNER_FIELDS
            and reduction.clock.shape[0] >= 1 and reduction.random.shape[0] >= 1
            and out.preds.shape[1] >= 2)


@njit(cache=True, nogil=True, _nrt=False)
def choose(n, k):
    """C(n, k) in int64 as VW computes it (each step's product, then C's truncating division)."""
    if k > n or k < 0:
        return np.int64(0)
    r = np.int64(1)
    for d in range(1, k + 1):
        r *= n
        n -= 1
        q = abs(r) // d
        r = q if r >= 0 else -q
    return r


@njit(cache=True, nogil=True, _nrt=False)
def bbm_weight(n, i, s_sum, gamma):
    """Online BBM's weight of weak learner ``i`` of ``n`` given the partial margin ``s_sum``:
    C(n - i - 1, k) (1/2 + γ)^k (1/2 - γ)^(n - i - 1 - k), k = ⌊(n - i - s) / 2⌋; 0 for a k
    outside 0..n - i - 1."""
    k = np.floor((F32(n - i) - s_sum) / F32(2.0))
    rest = n - i - 1
    if not 0 <= k <= rest:  # NaN too
        return F32(0.0)
    c = choose(np.int64(rest), np.int64(k))
    g = np.float64(gamma)
    return (F32(c) * F32((0.5 + g) ** np.float64(k))
            * F32((0.5 - g) ** np.float64(F32(rest) - k)))


@njit(cache=True, nogil=True, _nrt=False)
def _logistic_weight(s_sum):
    """AdaBoost.OL's weight given the partial margin: 1 / (1 + e^s)."""
    return F32(1.0) / (F32(1.0) + np.exp(s_sum))


@njit(cache=True, nogil=True, _nrt=False)
def _update_alpha(learners, i, eta, z, s_sum):
    """α_i += η z / (1 + e^s), clipped to [-2, 2]."""
    a = learners[i, L_ALPHA] + eta * z / (F32(1.0) + np.exp(s_sum))
    learners[i, L_ALPHA] = min(max(a, -ALPHA_BOUND), ALPHA_BOUND)


@njit(cache=True, nogil=True, _nrt=False)
def _loss(s, p, y):
    return loss_value_shared(s.loss, s.loss_param, p, y, shared_term(s.loss, p, y))


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """The weak learners in turn, each learning as it is predicted when the example is
    learned. Writes the boosted prediction VW shows (its predict call before it learns: every
    weak learner clipped to the range before the label, α and v before the example, with a
    draw of its own for adaptive) and the last weak learner's raw score; returns the reported
    loss in ``inner``."""
    state = model.state
    learners = reduction.learners
    n = np.int64(model.params[P.classes])
    alg = np.int64(model.params[P.boost_alg])
    gamma = F32(model.params[P.gamma])
    adaptive = alg == ADAPTIVE
    stop_shown = F32(merand48(reduction.random, 0)) if adaptive else F32(0.0)
    if ex.learn:
        reduction.clock[0] += 1
        if adaptive:  # the learning pass's own draw, whose prediction VW drops
            merand48(reduction.random, 0)
    eta = F32(4.0) / np.sqrt(F32(max(reduction.clock[0], 1)))
    low, high = state[S_MIN], state[S_MAX]  # the range before the label
    y = F32(ex.y)
    u = F32(ex.imp)
    shown_sum = F32(0.0)
    shown_v = F32(0.0)
    shown_loss = 0.0
    stopped = False  # adaptive: the prediction shown stopped at a learner
    partial = F32(0.0)
    s_sum = F32(0.0)
    v_norm = F32(0.0)
    learned_loss = np.nan
    raw = 0.0
    p_learned = 0.0
    imp = F32(0.0)
    for i in range(n):
        alpha = learners[i, L_ALPHA] if alg != BBM else F32(1.0)
        v = learners[i, L_V]
        class_features = _class_features(i, features, s, expander, False, scratch)
        if ex.learn:
            w = bbm_weight(n, i, s_sum, gamma) if alg == BBM else _logistic_weight(s_sum)
            imp = u * w
            raw, p_learned = learn_class(i, ex.y, np.float64(imp), reduction, family, model,
                                         class_features, ex, s, scratch)
        else:
            raw = dispatch.predict(family, model, class_features, ex.initial, ex.imp, s, False)
        raw = 0.0 if np.isnan(raw) else raw
        p_before = F32(min(max(raw, low), high))
        if not stopped:  # VW's scorer leaves the loss of the last learner predicted
            shown_loss = _loss(s, np.float64(p_before), ex.y) * ex.imp
            if not adaptive or shown_v <= stop_shown:
                shown_sum += p_before * alpha
                shown_v += v
            else:
                stopped = True
        if not ex.learn:
            if stopped:
                break
            continue
        # VW's learning pass: learner 0 predicts before the label joins the range
        if imp > 0:  # VW's scorer leaves the loss of the last learner that learned
            learned_loss = _loss(s, p_learned, ex.y) * np.float64(imp)
        p = p_before if i == 0 else F32(p_learned)
        z = y * p
        s_sum += z * alpha
        if alg == BBM:
            continue
        if adaptive:
            partial += p * alpha
            if y * partial < 0:
                learners[i, L_V] *= MISTAKE_DECAY
            v_norm += learners[i, L_V]
        _update_alpha(learners, i, eta, z, s_sum)
    if ex.learn and adaptive and v_norm != 0:
        for i in range(n):
            learners[i, L_V] /= v_norm
    shown = np.float64(shown_sum)
    if s.binary:  # VW's binary reduction sits above boosting: the sign of the sum
        shown = 1.0 if shown > 0 else -1.0
    pred[0] = shown
    pred[1] = raw
    return Predicted(shown, np.nan, features.hi - features.lo,
                     shown_loss if np.isnan(learned_loss) else learned_loss)


@njit(cache=True, nogil=True, inline="always")
def score(reduction, model, predicted, ex, s, scratch):
    """The last weak learner's loss (--binary: the sum's error), as VW reports them."""
    if s.binary:
        return (predicted.shown != ex.y) * ex.imp, 0.0, 0
    return predicted.inner, 0.0, 0


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """Nothing: each weak learner learned as it was predicted (:func:`predict`)."""
