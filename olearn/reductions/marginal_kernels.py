"""--marginal's kernels (reductions/marginal.py holds its configuration and state): the example
loop (kernel/loop.py) calls them by the bundle type ``MarginalState`` (reductions/table.py).

``predict`` writes the example with its pairs replaced by their marginals into the per-class
scratch (as --autolink's copy) and predicts it; ``learn`` updates the family on that copy, then
the marginals. The experts' arithmetic is float32, as VW's.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.kernel import dispatch
from olearn.kernel.bundles import Features, Predicted, Scored
from olearn.kernel.layouts import S_MAX, S_MIN, P
from olearn.learners import gd
from olearn.learners.losses import CLASSIC, SQUARED, loss_value, loss_value_shared, shared_term
from olearn.reductions.marginal import (
    M_DEN,
    M_NUM,
    O_BEFORE,
    O_COMPETE,
    O_DECAY,
    O_DENOMINATOR,
    O_NUMERATOR,
    O_UNWEIGHTED,
    X_ABS_REGRET,
    X_FEATURE_ABS_REGRET,
    X_FEATURE_REGRET,
    X_FEATURE_WEIGHT,
    X_REGRET,
    X_WEIGHT,
)
from olearn.reductions.one_problem import clipped, raw_score, widen_range


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """One scalar problem; a flag per namespace, and a seen flag, sums and (--compete)
    experts per row of the table."""
    size = model.W.shape[0]
    r = reduction
    if r.options.shape[0] <= O_UNWEIGHTED or r.experts.shape[1] < 6:
        return False
    experts = r.options[O_COMPETE] == 0 or r.experts.shape[0] == size
    return (model.params[P.classes] == 0 and r.namespaces.shape[0] == 256
            and r.seen.shape[0] == size and r.sums.shape[0] == size and r.sums.shape[1] >= 2
            and experts)


@njit(cache=True, nogil=True, _nrt=False)
def room(reduction, features, s, scratch):
    """The rows the example's copy needs beyond the scratch's (0: they fit)."""
    need = features.hi - features.lo
    return 0 if need <= scratch.classes.index.shape[0] else need


@njit(cache=True, nogil=True, _nrt=False)
def vw_loss(s, state, p, y):
    """The loss of prediction ``p`` as VW's ``get_loss``: the squared loss grows linearly
    beyond the label range (0 when the label is at the crossed end), so a marginal or a
    mixture outside the range is charged as VW charges it; NaN stays NaN."""
    if s.loss != SQUARED and s.loss != CLASSIC:
        return loss_value(s.loss, s.loss_param, p, y)
    low, high = state[S_MIN], state[S_MAX]
    if low <= p <= high:
        return (p - y) * (p - y)
    if p < low:
        return 0.0 if y == low else (y - low) * (y - low) + 2.0 * (y - low) * (low - p)
    return 0.0 if y == high else (high - y) * (high - y) + 2.0 * (high - y) * (p - high)


@njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def hedge_weight(regret, squares):
    """AdaNormalHedge's weight of an expert with regret sum ``regret`` and squared regrets
    ``squares`` (float32; 0 without positive regret)."""
    r = regret if regret > 0 else np.float32(0.0)
    if squares == 0 or r == 0:
        return np.float32(0.0)
    three_c = np.float32(3.0) * squares
    return np.float32(2.0) * r * np.exp(r * r / three_c) / three_c


@njit(cache=True, nogil=True, _nrt=False)
def _run_end(namespace, k, hi):
    """Where the run of namespace ``namespace[k]``'s features from ``k`` ends."""
    end = k
    while end < hi and namespace[end] == namespace[k]:
        end += 1
    return end


@njit(cache=True, nogil=True, _nrt=False)
def _new_key(reduction, key, numerator, denominator):
    """A key seen the first time: its sums start at these, its experts fresh."""
    reduction.seen[key] = True
    reduction.sums[key, M_NUM] = numerator
    reduction.sums[key, M_DEN] = denominator
    if reduction.options[O_COMPETE] != 0:
        reduction.experts[key, X_REGRET] = reduction.experts[key, X_ABS_REGRET] = 0.0
        reduction.experts[key, X_FEATURE_REGRET] = 0.0
        reduction.experts[key, X_FEATURE_ABS_REGRET] = 0.0
        reduction.experts[key, X_WEIGHT] = reduction.experts[key, X_FEATURE_WEIGHT] = 1.0


# error_model numpy: a key first met in an update is 0/0, whose marginal is NaN (as VW's)
@njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def _marginal(reduction, key):
    """A key's marginal, num/den in float32 (VW's)."""
    return np.float32(reduction.sums[key, M_NUM] / reduction.sums[key, M_DEN])


@njit(cache=True, nogil=True, _nrt=False)
def marginalize(reduction, features, y, learn, s, state, index, value):
    """Write the example's features to ``index``/``value`` with each pair ``x id`` of a
    marginal namespace as x with the id's marginal (a new id starts at the initial sums); a
    pair not both of value 1 and an odd last feature are left out. Returns the count, and for
    --compete the marginal experts' weighted sum of marginals, their weight, the learner
    experts' weight and (``learn``) the marginal experts' weighted loss."""
    lo, hi, namespace = features.lo, features.hi, features.namespace
    compete = reduction.options[O_COMPETE] != 0
    total = weights = feature_weights = loss = np.float32(0.0)
    n = 0
    k = lo
    while k < hi:
        if not reduction.namespaces[namespace[k]]:
            index[n] = features.index[k]
            value[n] = features.value[k]
            n += 1
            k += 1
            continue
        end = _run_end(namespace, k, hi)
        for first in range(k, end - 1, 2):
            if features.value[first] != 1 or features.value[first + 1] != 1:
                continue
            key = features.index[first + 1]
            if not reduction.seen[key]:
                _new_key(reduction, key, reduction.options[O_NUMERATOR],
                         reduction.options[O_DENOMINATOR])
            m = _marginal(reduction, key)
            index[n] = features.index[first]
            value[n] = m
            n += 1
            if compete:
                w = reduction.experts[key, X_WEIGHT]
                total += w * m
                weights += w
                feature_weights += reduction.experts[key, X_FEATURE_WEIGHT]
                if learn:
                    loss += w * np.float32(vw_loss(s, state, np.float64(m), y))
        k = end
    return n, total, weights, feature_weights, loss


@njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def mixed(total, weights, feature_weights, loss, p, y, s, state):
    """--compete's prediction from :func:`marginalize`'s sums and the learner's prediction
    ``p`` (the learner alone when no expert has weight), and the mixture's loss (from the
    marginal experts' weighted loss)."""
    p32 = np.float32(p)
    if weights + feature_weights > 0:
        total += feature_weights * p32
    else:
        feature_weights = np.float32(1.0)
        total = p32
    inverse = np.float32(1.0) / (weights + feature_weights)
    loss += feature_weights * np.float32(vw_loss(s, state, p, y))
    return total * inverse, loss * inverse


@njit(cache=True, nogil=True, _nrt=False)
def update(reduction, features, y, imp, loss, p, s, state, marginalized):
    """A learned example's update of its ids (every pair of the marginal namespaces, of any
    values; a new id from 0/0 as VW's): with --compete each id's experts first, by their
    regrets against the mixture's ``loss`` (the learner predicted ``p``), then its sums.

    ``marginalized`` (--update_before_learn): VW's update then reads the example as
    marginalized, one feature per valid pair, and takes those features in pairs: the keys
    it updates are x's indices of every second valid pair, not the ids. So does this."""
    lo, hi, namespace = features.lo, features.hi, features.namespace
    options = reduction.options
    compete = options[O_COMPETE] != 0
    weight = np.float32(1.0 if options[O_UNWEIGHTED] != 0 else imp)
    keep = np.float64(np.float32(1.0) - np.float32(options[O_DECAY]))
    added = np.float64(np.float32(y) * weight)
    loss32 = np.float32(loss)
    learner_regret = loss32 - np.float32(vw_loss(s, state, p, y))
    k = lo
    while k < hi:
        if not reduction.namespaces[namespace[k]]:
            k += 1
            continue
        end = _run_end(namespace, k, hi)
        valid = 0
        for first in range(k, end - 1, 2):
            key = features.index[first + 1]
            if marginalized:
                if features.value[first] != 1 or features.value[first + 1] != 1:
                    continue
                valid += 1
                if valid % 2 == 1:
                    continue
                key = features.index[first]
            if not reduction.seen[key]:
                _new_key(reduction, key, 0.0, 0.0)
            if compete:
                marginal_regret = loss32 - np.float32(
                    vw_loss(s, state, np.float64(_marginal(reduction, key)), y))
                _regret(reduction.experts[key], X_REGRET, marginal_regret, weight)
                _regret(reduction.experts[key], X_FEATURE_REGRET, learner_regret, weight)
            reduction.sums[key, M_NUM] = reduction.sums[key, M_NUM] * keep + added
            reduction.sums[key, M_DEN] = reduction.sums[key, M_DEN] * keep + np.float64(weight)
        k = end


@njit(cache=True, nogil=True, _nrt=False)
def _regret(expert, at, regret, weight):
    """One expert (fields ``at``: regret, squared regrets, weight) takes a regret."""
    expert[at] += regret * weight
    expert[at + 1] += regret * regret * weight
    expert[at + 2] = hedge_weight(expert[at], expert[at + 1])


# inline: returns arrays, as the loop's other inlined helpers (kernel/loop.py)
@njit(cache=True, nogil=True, inline="always")
def _copy(reduction, features, ex, s, state, scratch):
    """The example marginalized into the per-class scratch, with :func:`marginalize`'s sums."""
    index, value = scratch.classes.index, scratch.classes.value
    n, total, weights, feature_weights, loss = marginalize(reduction, features, ex.y, ex.learn,
                                                           s, state, index, value)
    return (Features(index, value, 0, n, features.namespace), total, weights, feature_weights,
            loss)


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """Predict the marginalized example (learning: after the label joined the range). With
    --compete the prediction shown (and raw) is the experts' mixture. With
    --update_before_learn a learned example is first predicted, its marginals updated, and
    the example marginalized again for the learn-time prediction; the first prediction is
    the one shown."""
    state = model.state
    compete = reduction.options[O_COMPETE] != 0
    if ex.learn:
        widen_range(state, ex.y, s)
    copy, total, weights, feature_weights, loss = _copy(reduction, features, ex, s, state,
                                                        scratch)
    if ex.learn and reduction.options[O_BEFORE] != 0:
        shown = clipped(dispatch.predict(family, model, copy, ex.initial, ex.imp, s, expanded),
                        state)
        if compete:
            loss = mixed(total, weights, feature_weights, loss, shown, ex.y, s, state)[1]
        update(reduction, features, ex.y, ex.imp, loss, shown, s, state, True)
        copy = _copy(reduction, features, ex, s, state, scratch)[0]
        raw = raw_score(family, model, copy, ex, s, expanded)
        p = clipped(raw, state)
    else:
        raw = raw_score(family, model, copy, ex, s, expanded)
        p = clipped(raw, state)
        shown = p
        if compete:
            mixture, loss = mixed(total, weights, feature_weights, loss, p, ex.y, s, state)
            shown = raw = np.float64(mixture)
    output = gd.output(model.params, shown)
    pred[0] = output
    pred[1] = raw
    return Predicted(output, np.nan, features.hi - features.lo, (copy, p, shown, loss))


@njit(cache=True, nogil=True, inline="always")
def score(reduction, model, predicted, ex, s, scratch):
    """The reported loss of the prediction shown (--binary: the error, for a label of -1 or 1;
    as VW, the loss for another), no multiclass log loss, and the learner's scored example
    (its own prediction)."""
    _, p, shown, _ = predicted.inner
    shared = shared_term(s.loss, p, ex.y)
    loss = loss_value_shared(s.loss, s.loss_param, p, ex.y, shared)
    error = s.binary and abs(ex.y) == 1.0
    reported = ((predicted.shown != ex.y) * ex.imp if error
                else vw_loss(s, model.state, shown, ex.y) * ex.imp)
    return reported, 0.0, Scored(p, ex.y, ex.imp, ex.initial, loss, shared)


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """The family's update on the marginalized example, then (unless --update_before_learn
    did already) the marginals'."""
    copy, p, _, loss = predicted.inner
    dispatch.update(family, model, copy, scored, s, scratch.work, expanded)
    if reduction.options[O_BEFORE] == 0:
        update(reduction, features, ex.y, ex.imp, loss, p, s, model.state, False)


@njit(cache=True, nogil=True)
def new_pairs(offsets, index, value, namespace, namespaces, named):
    """--invert_hash's names of a batch's ids not ``named`` before (flagged now): each one's
    key and the batch positions of the features VW names it by. VW takes those from a count
    of the namespace's new ids, not from the pair (a new id after a known one is named by an
    earlier pair); so does this."""
    keys = np.empty(index.shape[0], dtype=np.int64)
    sources = np.empty((index.shape[0], 2), dtype=np.int64)
    found = 0
    for e in range(offsets.shape[0] - 1):
        k = offsets[e]
        hi = offsets[e + 1]
        while k < hi:
            end = _run_end(namespace, k, hi)
            if namespaces[namespace[k]]:
                new = 0
                for first in range(k, end - 1, 2):
                    key = index[first + 1]
                    if (value[first] != 1 or value[first + 1] != 1 or key >= named.shape[0]
                            or named[key]):
                        continue
                    named[key] = True
                    keys[found] = key
                    sources[found, 0] = k + new
                    sources[found, 1] = k + new + 1
                    found += 1
                    new += 2
            k = end
    return keys[:found], sources[:found]
