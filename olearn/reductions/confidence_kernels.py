"""--confidence's kernels (reductions/confidence.py holds its configuration): the example loop
(kernel/loop.py) calls them by the bundle type ``ConfidenceState`` (reductions/table.py). The
problem is one problem's (reductions/one_problem.py); these add the confidence column.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.kernel.bundles import Predicted
from olearn.kernel.layouts import P
from olearn.learners import gd
from olearn.reductions import one_problem
from olearn.reductions.confidence import CONFIDENCE_COLUMN


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """One scalar problem, and a confidence column."""
    return model.params[P.classes] == 0 and out.preds.shape[1] > CONFIDENCE_COLUMN


@njit(cache=True, nogil=True, inline="always")
def _sensed(p, s):
    """The prediction a labeled example's sensitivity takes: VW takes it before its learner
    predicts, from an example that holds none yet (0), unless after training."""
    return p if s.confidence_after else 0.0


@njit(cache=True, nogil=True, inline="always")
def _confidence(model, features, p, sensed, y, imp, scratch, pred):
    """|p| over the sensitivity of ``features`` to (``sensed``, ``y``, ``imp``), into
    ``pred``."""
    s = gd.sensitivity(model, features.index, features.value, features.lo, features.hi, sensed,
                       y, imp, scratch.work)
    pred[CONFIDENCE_COLUMN] = abs(p) / s


# inline: returns arrays (its inner features), as the loop's other inlined helpers
@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """One problem's prediction; an example not learned takes its confidence here: with its
    label, or unlabeled with the label opposite to its prediction's sign (after training, VW
    reads the missing label itself, whose sensitivity is infinite: confidence inf, or NaN for
    p = 0)."""
    predicted = one_problem.predict(reduction, family, model, expander, features, ex, s,
                                    scratch, pred, expanded)
    inner, p = predicted.inner[0], predicted.inner[1]
    if not ex.learn:
        if ex.labeled:
            _confidence(model, inner, p, _sensed(p, s), ex.y, ex.imp, scratch, pred)
        elif s.confidence_after:  # VW's sensitivity to its missing label: infinite
            pred[CONFIDENCE_COLUMN] = np.inf if p != 0 else np.nan
        else:
            _confidence(model, inner, p, p, -1.0 if p > 0 else 1.0, ex.imp, scratch, pred)
    return Predicted(predicted.shown, predicted.probability, predicted.n_features,
                     (inner, p, pred))


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """One problem's update, the confidence taken before it (after it with
    --confidence_after_training)."""
    inner, p, pred = predicted.inner
    if not s.confidence_after:
        _confidence(model, inner, p, _sensed(p, s), ex.y, ex.imp, scratch, pred)
    one_problem.learn(reduction, family, model, expander, features, predicted, scored, ex, s,
                      scratch, expanded)
    if s.confidence_after:
        _confidence(model, inner, p, p, ex.y, ex.imp, scratch, pred)
