"""--csoaa's kernels (reductions/csoaa.py holds its configuration and state): the example
loop (kernel/loop.py) calls them by the bundle type ``CostSensitiveState``
(reductions/table.py).

As VW's csoaa, an example's listed classes are taken in their order, each predicted and (when
the example is learned and the class has a cost) learned right away: its cost joins the label
range, its raw score is predicted, and its clipped score learns the cost with importance 1 and
the class's own normalizer sums (--oaa's per-class state; reductions/oaa_kernels.py). The
prediction is the listed class of lowest raw score, the first of equal ones; an example
without classes predicts every class.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.data.labels import NO_COST
from olearn.kernel import dispatch
from olearn.kernel.bundles import Predicted
from olearn.kernel.layouts import S_INDEXING, P
from olearn.reductions import csoaa, oaa
from olearn.reductions.oaa_kernels import _class_features, fits_classes, learn_class


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """--oaa's checks, and the prediction array's class and score columns."""
    k = model.params[P.classes]
    return fits_classes(reduction, model) and out.preds.shape[1] >= csoaa.CLASSES_COLUMN + 2 * k


@njit(cache=True, nogil=True, _nrt=False)
def _see_indexing(state, classes, k_classes):
    """VW's indexing rule over a label's classes: the first class 0 makes the classes 0-based,
    the first class K 1-based, while neither --indexing nor an earlier label decided."""
    for j in range(classes.shape[0]):
        if state[S_INDEXING] != oaa.AUTO:
            return
        if classes[j] == 0:
            state[S_INDEXING] = 0.0
        elif classes[j] == k_classes:
            state[S_INDEXING] = 1.0


@njit(cache=True, nogil=True, _nrt=False)
def entry_class(c, indexing, k_classes):
    """A listed class as the classes are numbered: one outside them is class 0 (0-based) or
    the last class (1-based, or while undecided)."""
    c = np.int64(c)
    if indexing == 0:
        return c if c < k_classes else 0
    return c if 1 <= c <= k_classes else k_classes


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """Predict (and, learning, learn) each listed class in turn, or predict every class when
    none is listed; writes the class of lowest raw score and that score, then how many classes
    -r lists (at most K), their numbers and their raw scores."""
    state = model.state
    k_classes = np.int64(model.params[P.classes])
    _see_indexing(state, ex.classes, k_classes)
    indexing = state[S_INDEXING]
    first = 0 if indexing == 0 else 1
    listed = ex.classes.shape[0]
    class_column = csoaa.CLASSES_COLUMN
    score_column = class_column + k_classes
    best = np.int64(first)
    best_score = np.inf
    n_features = features.hi - features.lo
    for j in range(listed if listed > 0 else k_classes):
        c = entry_class(ex.classes[j], indexing, k_classes) if listed > 0 else first + j
        class_features = _class_features(c - first, features, s, expander, False, scratch)
        if listed > 0 and ex.learn and ex.costs[j] != NO_COST:
            raw, _ = learn_class(c - first, np.float64(ex.costs[j]), 1.0, reduction, family,
                                 model, class_features, ex, s, scratch)
        else:
            raw = dispatch.predict(family, model, class_features, ex.initial, 1.0, s, False)
            if np.isnan(raw):
                raw = 0.0
        if raw < best_score or (raw == best_score and c < best):
            best = c
            best_score = raw
        if j < k_classes and listed > 0:
            pred[class_column + j] = c
            pred[score_column + j] = raw
    pred[0] = best
    pred[1] = best_score if best_score < np.inf else 0.0
    pred[csoaa.LISTED_COLUMN] = min(listed, k_classes)
    pred[csoaa.FIRST_COLUMN] = first
    return Predicted(np.float64(best), np.nan, n_features, 0)


@njit(cache=True, nogil=True, inline="always")
def score(reduction, model, predicted, ex, s, scratch):
    """The reported loss: the predicted class's cost (the last listed one's, VW's) less the
    lowest cost, or (--cs_absolute_loss) the cost itself; no multiclass log loss."""
    k_classes = np.int64(model.params[P.classes])
    indexing = model.state[S_INDEXING]
    chosen = np.float64(NO_COST)
    lowest = np.float64(NO_COST)
    for j in range(ex.classes.shape[0]):
        cost = np.float64(ex.costs[j])
        if entry_class(ex.classes[j], indexing, k_classes) == predicted.shown:
            chosen = cost
        lowest = min(lowest, cost)
    reported = chosen if model.params[P.absolute_loss] != 0 else chosen - lowest
    return reported * ex.imp, 0.0, 0


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """Nothing: each class learned as it was predicted (:func:`predict`)."""
