"""--multilabel_oaa's kernels (reductions/multilabel.py holds its configuration and state): the
example loop (kernel/loop.py) calls them by the bundle type ``MultilabelState``
(reductions/table.py).

As VW's multilabel_oaa, classes are taken in order, each predicted and (when the example is
learned) learned right away: its label, +1 when it is the label's next listed class and −1
otherwise, joins the label range, then it learns from its clipped score with its own normalizer
sums (--oaa's per-class state); its output (after --link) is its prediction.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.kernel import dispatch
from olearn.kernel.bundles import Predicted
from olearn.kernel.layouts import P
from olearn.learners import gd
from olearn.reductions import multilabel
from olearn.reductions.oaa_kernels import _class_features, fits_classes, learn_class
from olearn.reductions.one_problem import clipped


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """--oaa's checks, and a column per class in the prediction array."""
    k = model.params[P.classes]
    return (fits_classes(reduction, model)
            and out.preds.shape[1] >= multilabel.OUTPUT_COLUMN + k)


@njit(cache=True, nogil=True, _nrt=False)
def threshold(params):
    """The output a predicted class exceeds: 0.5 with a logistic link, else 0 (VW's); none
    with --probabilities, whose prediction VW reports as the empty set."""
    if params[P.probabilities] != 0:
        return np.inf
    return 0.5 if params[P.link] == 1 else 0.0


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """Predict (and, learning, learn) each class in turn; writes how many classes are
    predicted, the threshold, then each class's output (also kept in the scratch's scores)."""
    state = model.state
    k_classes = np.int64(model.params[P.classes])
    cut = threshold(model.params)
    outputs = scratch.classes.scores
    listed = ex.classes.shape[0]
    next_listed = 0
    predicted = 0
    for k in range(k_classes):
        class_features = _class_features(k, features, s, expander, False, scratch)
        if ex.learn:
            y = -1.0
            if next_listed < listed and ex.classes[next_listed] == k:
                y = 1.0
                next_listed += 1
            _, p = learn_class(k, y, ex.imp, reduction, family, model, class_features, ex, s,
                               scratch)
        else:
            p = clipped(dispatch.predict(family, model, class_features, ex.initial, ex.imp, s,
                                         False), state)
        outputs[k] = gd.output(model.params, p)
        pred[multilabel.OUTPUT_COLUMN + k] = outputs[k]
        predicted += outputs[k] > cut
    pred[0] = predicted
    pred[multilabel.THRESHOLD_COLUMN] = cut
    return Predicted(np.float64(predicted), np.nan, features.hi - features.lo, 0)


@njit(cache=True, nogil=True, inline="always")
def score(reduction, model, predicted, ex, s, scratch):
    """The reported loss: the classes in the label or the prediction but not both, counted by
    VW's walk (which reads the label's classes in their order)."""
    cut = threshold(model.params)
    outputs = scratch.classes.scores
    k_classes = np.int64(model.params[P.classes])
    listed = ex.classes.shape[0]
    given = 0
    loss = 0.0
    k = 0
    while k < k_classes and given < listed:
        if outputs[k] <= cut:
            k += 1
        elif k < ex.classes[given]:
            k += 1
            loss += 1.0
        elif k > ex.classes[given]:
            given += 1
            loss += 1.0
        else:
            k += 1
            given += 1
    loss += listed - given
    while k < k_classes:
        loss += outputs[k] > cut
        k += 1
    return loss * ex.imp, 0.0, 0


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """Nothing: each class learned as it was predicted (:func:`predict`)."""
