"""No reduction: each example is one scalar problem for the learner family.

The kernels the example loop (kernel/loop.py) calls for it, by its bundle type ``NoReduction``
(reductions/table.py): the example's features (or, with --stage_poly, its synthetic example)
are predicted, scored by the loss and learned as they are; a wide example's chunk by chunk
(kernel/example_features.py).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.features import stage_poly
from olearn.kernel import dispatch
from olearn.kernel.bundles import Chunks, Features, Predicted, Scored
from olearn.kernel.example_features import chunk, chunks_done
from olearn.kernel.layouts import S_MAX, S_MIN, P
from olearn.learners import gd
from olearn.learners.losses import loss_value_shared, shared_term


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """One scalar problem: no class count."""
    return model.params[P.classes] == 0


@njit(cache=True, nogil=True, _nrt=False)
def room(reduction, features, s, scratch):
    """Nothing to copy: the family reads the example's own features."""
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def clipped(raw, state):
    """A raw score clipped to the label range (0 for NaN)."""
    return min(max(0.0 if np.isnan(raw) else raw, state[S_MIN]), state[S_MAX])


@njit(cache=True, nogil=True, _nrt=False)
def widen_range(state, y, s):
    """``y`` joins the label range the predictions are clipped to (unless --min_prediction and
    --max_prediction fixed it)."""
    if not s.fixed_range:
        state[S_MIN] = min(state[S_MIN], y)
        state[S_MAX] = max(state[S_MAX], y)


@njit(cache=True, nogil=True, inline="always")
def raw_score(family, model, features, ex, s, expanded):
    """The family's raw score of ``features`` for example ``ex``: its learn-time prediction
    when the example is learned (it may update the family's state, as VW's learners that
    predict inside their learn), else its prediction; NaN read as 0."""
    raw = _score_from(family, model, features, ex.initial, ex.imp, ex.learn, s, expanded)
    return 0.0 if np.isnan(raw) else raw


@njit(cache=True, nogil=True, inline="always")
def _score_from(family, model, features, initial, imp, learning, s, expanded):
    """The family's learn-time prediction (``learning``) or prediction, from ``initial``."""
    if learning:
        return dispatch.learn_predict(family, model, features, initial, imp, s, expanded)
    return dispatch.predict(family, model, features, initial, imp, s, expanded)


@njit(cache=True, nogil=True, inline="always")
def wide_score(family, model, chunks, initial, imp, learning, s, expanded):
    """The raw score (as :func:`raw_score`'s, NaN read as 0) of a wide example's ``chunks``
    (kernel/bundles.py ``Chunks``), each chunk's score the next one's start; and its feature
    count."""
    raw = initial
    n = 0
    restart = True
    while restart or not chunks_done(chunks):
        part = chunk(chunks, s, restart)
        restart = False
        raw = _score_from(family, model, part, raw, imp, learning, s, expanded)
        n += part.hi - part.lo
    return 0.0 if np.isnan(raw) else raw, n


@njit(cache=True, nogil=True, inline="always")
def chunks_of(ex, expander, scratch, shift):
    """A wide example's chunks (kernel/bundles.py ``Chunks``), each index shifted by
    ``shift``."""
    return Chunks(ex.unit.examples, ex.unit.first, expander, scratch.expansion, shift)


# inline: these return arrays (Features), which only code compiled into the loop may do (it
# runs without numba's runtime, kernel/loop.py)
@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """Predict the example (learning: the family's ``learn_predict``, after the label widened
    the range), write its prediction and raw score to ``pred``. Where VW predicts before it
    learns (some families, and --stage_poly, which predicts on its walk without training),
    the prediction shown is that one, clipped to the range before the label."""
    state = model.state
    stage = expanded and s.stage_poly
    first = ex.learn and (stage or dispatch.shows_first(family))
    shown_p = 0.0
    if first:
        shown = features
        if stage:
            n = stage_poly.expand(features, s.constant, s.mask, expander.poly, False,
                                  scratch.synthetic, 0)
            shown = Features(scratch.synthetic.index, scratch.synthetic.value, 0, n,
                             features.namespace)
        shown_p = clipped(dispatch.predict(family, model, shown, ex.initial, ex.imp, s,
                                           expanded), state)
    if stage:
        n = stage_poly.expand(features, s.constant, s.mask, expander.poly, ex.learn,
                              scratch.synthetic, 0)
        features = Features(scratch.synthetic.index, scratch.synthetic.value, 0, n,
                             features.namespace)
    if ex.learn:
        widen_range(state, ex.y, s)
    if ex.wide:
        raw, n = wide_score(family, model, chunks_of(ex, expander, scratch, 0), ex.initial,
                            ex.imp, ex.learn, s, expanded)
    else:
        raw, n = raw_score(family, model, features, ex, s, expanded), dispatch.count(family,
                                                                                    features)
    p = clipped(raw, state)
    shown = gd.output(model.params, shown_p if first else p)
    pred[0] = shown
    pred[1] = raw
    return Predicted(shown, np.nan, n, (features, p))


@njit(cache=True, nogil=True, inline="always")
def score(reduction, model, predicted, ex, s, scratch):
    """The reported loss (--binary: the error, for a label of -1 or 1; as VW, the loss for
    another), no multiclass log loss, and the scored example the update takes (the loss and its
    shared term, computed once)."""
    p = predicted.inner[1]
    shared = shared_term(s.loss, p, ex.y)
    loss = loss_value_shared(s.loss, s.loss_param, p, ex.y, shared)
    error = s.binary and abs(ex.y) == 1.0
    reported = (predicted.shown != ex.y) * ex.imp if error else loss * ex.imp
    return reported, 0.0, Scored(p, ex.y, ex.imp, ex.initial, loss, shared)


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """The family's update on the features predicted (with --stage_poly's SSM sums first;
    a wide example's chunk by chunk)."""
    if ex.wide:
        dispatch.update_wide(family, model, chunks_of(ex, expander, scratch, 0), scored, s,
                             scratch.work, expanded, expanded)
        return
    predicted_features = predicted.inner[0]
    if s.stage_poly and s.heuristic == 1:
        stage_poly.add_ssm(expander.poly[2], predicted_features.index, predicted_features.value,
                           predicted_features.lo, predicted_features.hi, ex.y - scored.p)
    dispatch.update(family, model, predicted_features, scored, s, scratch.work, expanded)


@njit(cache=True, nogil=True, inline="always")
def scored_prediction(y, imp, family, model, features, initial, s):
    """A problem about to learn ``y`` (VW's scorer then learner): ``y`` joins the label range,
    the family predicts at learn time; returns the raw score (NaN read as 0) and the scored
    prediction (clipped to the range) the update takes."""
    state = model.state
    widen_range(state, y, s)
    raw = dispatch.learn_predict(family, model, features, initial, imp, s, False)
    if np.isnan(raw):
        raw = 0.0
    p = clipped(raw, state)
    shared = shared_term(s.loss, p, y)
    return raw, Scored(p, y, imp, initial, loss_value_shared(s.loss, s.loss_param, p, y, shared),
                       shared)


@njit(cache=True, nogil=True, inline="always")
def learn_scalar(y, imp, family, model, features, initial, s, scratch):
    """``features`` predict and learn ``y`` with importance ``imp`` at once, in the learner's
    one state (VW's multi-line reductions' base learner): updated when the prediction has a
    loss and ``imp`` > 0. Returns the raw score."""
    raw, scored = scored_prediction(y, imp, family, model, features, initial, s)
    if scored.loss > 0 and imp > 0:
        dispatch.update(family, model, features, scored, s, scratch.work, False)
    return raw
