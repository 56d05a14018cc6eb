"""--bootstrap's kernels (reductions/bootstrap.py holds its configuration and state): the
example loop (kernel/loop.py) calls them by the bundle type ``BootstrapState``
(reductions/table.py).

As VW's bs: copy i draws its Poisson(1) multiplier from the shared generator, then predicts
and (when the example is learned) learns right away with its own normalizer sums (--oaa's
per-class state): the label joins the range, the copy's clipped score is its prediction, and
it learns the label with the example's importance times the draw (a draw of 0 learns
nothing). The copies' mean, or their vote, is the prediction.

Under --oaa K (bundle type ``BootstrapClassesState``), as VW's oaa over bs: each class's score
is its B copies' mean (or vote), each copy drawing its multiplier as it predicts (and using it
for nothing); the prediction is --oaa's first best class; then each class learns ±1 through
its copies, each drawing again, learning at once with the example's importance times the
draw.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.kernel import dispatch
from olearn.kernel.bundles import Predicted
from olearn.kernel.layouts import S_INDEXING, P
from olearn.learners.losses import loss_value_shared, shared_term
from olearn.learners.weights import merand48
from olearn.reductions import bootstrap, oaa
from olearn.reductions.oaa_kernels import (
    _class_features,
    class_numbering,
    fits_classes,
    learn_class,
    predict_class,
)
from olearn.reductions.one_problem import clipped

# VW's Poisson(1) table: the draw is the first k whose cumulative probability reaches u
POISSON = np.array([0.3678794411714423215955, 0.735758882342884643191, 0.919698602928605803989,
                    0.9810118431238461909214, 0.9963401531726562876545,
                    0.9994058151824183070012, 0.9999167588507119768923,
                    0.9999897508033253583053, 0.9999988747974020309819,
                    0.9999998885745216612793, 0.9999999899522336243091,
                    0.9999999991683892573118, 0.9999999999364022267287,
                    0.999999999995480147453, 0.9999999999996999989333,
                    0.9999999999999813223654, 0.9999999999999989050799,
                    0.9999999999999999393572, 0.999999999999999996817,
                    0.9999999999999999998412])


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """--oaa's checks, the generator's state, and a column per copy."""
    k = model.params[P.classes]
    return (fits_classes(reduction, model) and reduction.random.shape[0] >= 1
            and out.preds.shape[1] >= bootstrap.COPY_COLUMN + k)


@njit(cache=True, nogil=True, _nrt=False)
def fits_copies(reduction, model, out):
    """Under --oaa: the sums of every class's copies, the generator's state, each class's
    column and a column per copy."""
    k = model.params[P.classes]
    b = reduction.copies
    return (k == np.floor(k) and 1 <= k and 1 <= b and k * b <= model.W.shape[0]
            and reduction.classes.shape[0] >= k * b and reduction.classes.shape[1] >= 2
            and reduction.random.shape[0] >= 1
            and out.preds.shape[1] >= oaa.CLASS_COLUMN + k + b)


@njit(cache=True, nogil=True, _nrt=False)
def poisson_draw(random):
    """VW's Poisson(1) draw: the generator's next number (:func:`merand48`), then its
    table."""
    u = np.float64(merand48(random, 0))
    for k in range(POISSON.shape[0]):
        if u <= POISSON[k]:
            return k
    return POISSON.shape[0]


@njit(cache=True, nogil=True, _nrt=False)
def _rounded(scores, i):
    return np.int64(np.floor(scores[i] + 0.5))


@njit(cache=True, nogil=True, _nrt=False)
def vote(scores, n):
    """VW's vote of the copies' predictions rounded to integers (``floor(x + 0.5)``): the
    Boyer-Moore candidate; when more than two distinct votes were seen and it has no majority,
    VW's pass over the sorted votes: a run longer than the longest so far (1 at first) takes
    over, the last run never considered (VW's loop ends before comparing it)."""
    counter = 0
    current = np.int64(1)
    first = np.int64(1)
    several = False
    for i in range(n):
        v = _rounded(scores, i)
        if not several:
            if i == 0:
                first = v
                current = v
            elif first != current and v != current and v != first:
                several = True
        if counter == 0:
            counter = 1
            current = v
        elif v == current:
            counter += 1
        else:
            counter -= 1
    if not several:
        return current
    if counter > 0:
        count = 0
        for i in range(n):
            count += _rounded(scores, i) == current
        if 2 * count > n:
            return current
    longest = 1
    previous = np.iinfo(np.int64).min
    while True:  # the distinct votes in ascending order (no sort: nothing is allocated here)
        value = np.iinfo(np.int64).max
        found = False
        larger = False
        for i in range(n):
            v = _rounded(scores, i)
            if previous < v < value:
                if found:
                    larger = True
                value = v
                found = True
            elif v > value:
                larger = True
        if not found:
            return current
        if not larger:  # the last run
            return current
        count = 0
        for i in range(n):
            count += _rounded(scores, i) == value
        if count > longest:
            current = value
            longest = count
        previous = value


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """Each copy draws its multiplier, predicts and (learning) learns in turn; writes the
    mean or the vote, the lowest and highest copy's prediction, and each copy's raw score."""
    state = model.state
    k_copies = np.int64(model.params[P.classes])
    predictions = scratch.classes.scores
    total = 0.0
    low = np.inf
    high = -np.inf
    for k in range(k_copies):
        imp = ex.imp * poisson_draw(reduction.random)
        class_features = _class_features(k, features, s, expander, False, scratch)
        if ex.learn:
            raw, p = learn_class(k, ex.y, imp, reduction, family, model, class_features, ex, s,
                                 scratch)
        else:
            raw = dispatch.predict(family, model, class_features, ex.initial, imp, s, False)
            p = clipped(raw, state)
        predictions[k] = p
        pred[bootstrap.COPY_COLUMN + k] = raw
        total += p
        low = min(low, p)
        high = max(high, p)
    if model.params[P.vote] != 0:
        shown = np.float64(vote(predictions, k_copies))
    else:
        shown = np.float64(np.float32(total) / np.float32(k_copies))
    if s.binary:  # VW's binary reduction sits above bs: the sign of the aggregate
        shown = 1.0 if shown > 0 else -1.0
    pred[0] = shown
    pred[1] = shown
    pred[bootstrap.LOW_COLUMN] = low
    pred[bootstrap.HIGH_COLUMN] = high
    return Predicted(shown, np.nan, features.hi - features.lo, 0)


@njit(cache=True, nogil=True, inline="always")
def score(reduction, model, predicted, ex, s, scratch):
    """The mean's loss, or the vote's (or --binary's) error (VW's)."""
    if model.params[P.vote] != 0 or s.binary:
        return (predicted.shown != ex.y) * ex.imp, 0.0, 0
    shared = shared_term(s.loss, predicted.shown, ex.y)
    return loss_value_shared(s.loss, s.loss_param, predicted.shown, ex.y, shared) * ex.imp, 0.0, 0


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """Nothing: each copy learned as it was predicted (:func:`predict`)."""


@njit(cache=True, nogil=True, _nrt=False)
def aggregate(predictions, n, vote_on):
    """The copies' vote, or their mean (VW's: the float32 of the sum, over the count)."""
    if vote_on:
        return np.float64(vote(predictions, n))
    total = 0.0
    for i in range(n):
        total += predictions[i]
    return np.float64(np.float32(total) / np.float32(n))


@njit(cache=True, nogil=True, inline="always")
def predict_copies(reduction, family, model, expander, features, ex, s, scratch, pred,
                   expanded):
    """Each class's copies draw and predict (their clipped predictions, kept after the class
    columns of ``pred``), the class's score is their aggregate; then --oaa's first best
    class."""
    raw_first, first = class_numbering(model, ex)
    k_classes = np.int64(model.params[P.classes])
    b = np.int64(reduction.copies)
    copies = pred[oaa.CLASS_COLUMN + k_classes:oaa.CLASS_COLUMN + k_classes + b]
    scores = scratch.classes.scores
    for k in range(k_classes):
        for i in range(b):
            poisson_draw(reduction.random)
            class_features = _class_features(k * b + i, features, s, expander, False, scratch)
            copies[i] = clipped(dispatch.predict(family, model, class_features, ex.initial,
                                                 ex.imp, s, False), model.state)
        scores[k] = aggregate(copies, b, model.params[P.vote] != 0)
    return predict_class(model, scratch, pred, raw_first, first, features.hi - features.lo)


@njit(cache=True, nogil=True, inline="always")
def learn_copies(reduction, family, model, expander, features, predicted, scored, ex, s,
                 scratch, expanded):
    """Each class learns ±1 (+1 for the label's class) through its copies: each draws its
    multiplier, then predicts and learns at once with its own sums."""
    first = 0 if model.state[S_INDEXING] == 0 else 1
    b = np.int64(reduction.copies)
    for k in range(np.int64(model.params[P.classes])):
        yk = 1.0 if ex.y == k + first else -1.0
        for i in range(b):
            imp = ex.imp * poisson_draw(reduction.random)
            class_features = _class_features(k * b + i, features, s, expander, True, scratch)
            learn_class(k * b + i, yk, imp, reduction, family, model, class_features, ex, s,
                        scratch)
