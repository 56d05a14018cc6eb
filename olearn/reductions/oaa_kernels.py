"""--oaa's kernels (reductions/oaa.py holds its configuration and state): the K problems of an
example, which the example loop (kernel/loop.py) calls by the bundle type
``OneAgainstAllState`` (reductions/table.py).

Class k's problem is the example's features at the class's slots, ``(h + k) & mask`` (copied
into the per-class scratch, or with --stage_poly walked from the example for class k). As VW's
one-against-all: every class is predicted first (--stage_poly's walk without training), the
first best clipped score is the prediction, then every class learns ±1 from its own clipped
score (the walk now training), with its own normalizer sums, VW's per-model state; the clock t
and the label range are shared. A wide example (kernel/example_features.py) is not copied: each
class walks its chunks, shifted to the class's slots.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.features import stage_poly
from olearn.kernel import dispatch
from olearn.kernel.bundles import Features, Predicted, Scored
from olearn.kernel.layouts import S_INDEXING, S_MAX, S_MIN, S_NORM, S_TOTAL, P
from olearn.learners.losses import loss_value_shared, shared_term
from olearn.reductions import oaa
from olearn.reductions.one_problem import chunks_of, clipped, scored_prediction, wide_score


@njit(cache=True, nogil=True, _nrt=False)
def fits_classes(reduction, model):
    """The class count (the parameter) against the table and the per-class sums."""
    k = model.params[P.classes]
    return (k == np.floor(k) and 1 <= k <= model.W.shape[0]
            and reduction.classes.shape[0] >= k and reduction.classes.shape[1] >= 2)


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """The class count against the per-class sums and the prediction array."""
    return (fits_classes(reduction, model)
            and out.preds.shape[1] >= oaa.CLASS_COLUMN + model.params[P.classes])


@njit(cache=True, nogil=True, _nrt=False)
def room(reduction, features, s, scratch):
    """The rows a class's copy of ``features`` needs beyond the scratch's (0: they fit);
    --stage_poly walks into its synthetic example, which always fits."""
    need = features.hi - features.lo
    if s.stage_poly or need <= scratch.classes.index.shape[0]:
        return 0
    return need


# inline: returns arrays, as the loop's other inlined helpers (kernel/loop.py)
@njit(cache=True, nogil=True, inline="always")
def _class_features(k, features, s, expander, training, scratch):
    """Class ``k``'s problem of the example's ``features``."""
    if s.stage_poly:
        n = stage_poly.expand(features, s.constant, s.mask, expander.poly, training,
                              scratch.synthetic, k)
        return Features(scratch.synthetic.index, scratch.synthetic.value, 0, n,
                        features.namespace)
    index, value = scratch.classes.index, scratch.classes.value
    n = features.hi - features.lo
    for j in range(n):
        index[j] = (np.int64(features.index[features.lo + j]) + k) & s.mask
        value[j] = features.value[features.lo + j]
    return Features(index, value, 0, n, features.namespace)


@njit(cache=True, nogil=True, inline="always")
def update_class(k, reduction, family, model, class_features, scored, s, scratch):
    """Class ``k``'s update, with its own normalizer sums swapped into the learner state."""
    _class_sums(k, reduction, model, True)
    dispatch.update(family, model, class_features, scored, s, scratch.work, False)
    _class_sums(k, reduction, model, False)


@njit(cache=True, nogil=True, _nrt=False)
def _class_sums(k, reduction, model, into_state):
    """Class ``k``'s normalizer sums into the learner state (``into_state``) or back."""
    state = model.state
    classes = reduction.classes
    if into_state:
        state[S_NORM] = classes[k, oaa.CLASS_NORM]
        state[S_TOTAL] = classes[k, oaa.CLASS_TOTAL]
    else:
        classes[k, oaa.CLASS_NORM] = state[S_NORM]
        classes[k, oaa.CLASS_TOTAL] = state[S_TOTAL]


@njit(cache=True, nogil=True, inline="always")
def learn_class(k, y, imp, reduction, family, model, class_features, ex, s, scratch):
    """Class ``k`` predicts and learns ``y`` at once, as VW's reductions that learn each class
    as they predict it (--csoaa, --multilabel_oaa, --bootstrap): ``y`` joins the label range,
    the class's raw score is predicted and, when its clipped score has a loss and ``imp`` > 0,
    learned with importance ``imp``. Returns the raw score (NaN read as 0) and the clipped one."""
    raw, scored = scored_prediction(y, imp, family, model, class_features, ex.initial, s)
    if scored.loss > 0 and imp > 0:
        update_class(k, reduction, family, model, class_features, scored, s, scratch)
    return raw, scored.p


@njit(cache=True, nogil=True, _nrt=False)
def see_indexing(state, ex, k_classes):
    """VW's rule for a learned label while the indexing is undecided: label 0 makes the
    classes 0-based, label K 1-based."""
    if state[S_INDEXING] == oaa.AUTO:
        if ex.y == 0:
            state[S_INDEXING] = 0.0
        elif ex.y == k_classes:
            state[S_INDEXING] = 1.0


@njit(cache=True, nogil=True, _nrt=False)
def class_numbering(model, ex):
    """The first class's number for -r and for the class lists. A learned label 0 or K
    decides the classes' indexing, once (VW's rule): the predicted class and -r are numbered
    as before the label, the class lists of --scores and --probabilities (and their errors)
    as after it, as VW writes them."""
    state = model.state
    raw_first = 0 if state[S_INDEXING] == 0 else 1
    if ex.learn:
        see_indexing(state, ex, np.int64(model.params[P.classes]))
    first = raw_first if model.params[P.class_lists] == 0 else (
        0 if state[S_INDEXING] == 0 else 1)
    return raw_first, first


@njit(cache=True, nogil=True, inline="always")
def predict_class(model, scratch, pred, raw_first, first, n_features):
    """The first best of the classes' clipped scores (``scratch.classes.scores``): writes it,
    its score, the first class's numbers (:func:`class_numbering`), then each class's score
    or (--probabilities) probability to ``pred``."""
    k_classes = np.int64(model.params[P.classes])
    scores = scratch.classes.scores
    best = 0
    for k in range(1, k_classes):
        if scores[k] > scores[best]:
            best = k
    shown = np.float64(best + first)
    pred[oaa.RAW_FIRST_COLUMN] = raw_first
    pred[oaa.FIRST_CLASS_COLUMN] = first
    probability = np.nan
    if model.params[P.probabilities] != 0:  # float32, as VW computes them
        probs = scratch.classes.probabilities
        total = np.float32(0.0)
        for k in range(k_classes):
            probs[k] = np.float32(1.0) / (np.float32(1.0) + np.exp(np.float32(-scores[k])))
            total += probs[k]
        inverse = np.float32(1.0) / total
        for k in range(k_classes):
            probs[k] *= inverse
            pred[oaa.CLASS_COLUMN + k] = probs[k]
        probability = np.float64(probs[best])
    else:
        for k in range(k_classes):
            pred[oaa.CLASS_COLUMN + k] = scores[k]
    pred[0] = shown
    pred[1] = scores[best]
    return Predicted(shown, probability, n_features, 0)


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """Every class's clipped score, then the first best class (:func:`predict_class`); a
    wide example's classes each walk its chunks."""
    raw_first, first = class_numbering(model, ex)
    scores = scratch.classes.scores
    n_features = 0
    for k in range(np.int64(model.params[P.classes])):
        if ex.wide:
            raw, n_features = wide_score(family, model, chunks_of(ex, expander, scratch, k),
                                         ex.initial, ex.imp, False, s, False)
            scores[k] = clipped(raw, model.state)
            continue
        class_features = _class_features(k, features, s, expander, False, scratch)
        if k == 0:
            n_features = class_features.hi - class_features.lo
        scores[k] = clipped(dispatch.predict(family, model, class_features, ex.initial, ex.imp,
                                             s, False), model.state)
    return predict_class(model, scratch, pred, raw_first, first, n_features)


@njit(cache=True, nogil=True, _nrt=False)
def class_label(y, indexing, k):
    """The 0-based class of label ``y`` under ``indexing`` (VW's unsigned arithmetic: label 0
    of 1-based classes wraps), modulo the ``k`` classes; 0 for a label beyond 32 bits."""
    if not 0 <= y < 4294967296.0:
        return 0
    c = np.int64(y) - (0 if indexing == 0 else 1)
    if c < 0:
        c += np.int64(1) << 32
    return c % k


@njit(cache=True, nogil=True, _nrt=False)
def _log_loss(model, ex, scratch):
    """--probabilities: the multiclass log loss of the label's class (999 for probability 0)."""
    if model.params[P.probabilities] == 0:
        return 0.0
    k_classes = np.int64(model.params[P.classes])
    p_true = scratch.classes.probabilities[
        class_label(ex.y, model.state[S_INDEXING], k_classes)]
    return -np.log(p_true) * ex.imp if p_true > 0 else 999.0


@njit(cache=True, nogil=True, inline="always")
def score(reduction, model, predicted, ex, s, scratch):
    """The reported loss (the error) and the multiclass log loss; nothing is scored as one."""
    return (predicted.shown != ex.y) * ex.imp, _log_loss(model, ex, scratch), 0


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """Each class learns ±1 (+1 for the label's class) from its own clipped score, with its
    own normalizer sums, VW's per-model state (the clock t and the range are shared)."""
    state = model.state
    first = 0 if state[S_INDEXING] == 0 else 1
    ssm = expander.poly[2]
    for k in range(np.int64(model.params[P.classes])):
        yk = 1.0 if ex.y == k + first else -1.0
        if not s.fixed_range:
            state[S_MIN] = min(state[S_MIN], yk)
            state[S_MAX] = max(state[S_MAX], yk)
        pk = scratch.classes.scores[k]
        shared = shared_term(s.loss, pk, yk)
        loss = loss_value_shared(s.loss, s.loss_param, pk, yk, shared)
        if not s.stage_poly and loss <= 0:
            continue
        if ex.wide:
            _class_sums(k, reduction, model, True)
            dispatch.update_wide(family, model, chunks_of(ex, expander, scratch, k),
                                 Scored(pk, yk, ex.imp, ex.initial, loss, shared), s,
                                 scratch.work, False, expanded)
            _class_sums(k, reduction, model, False)
            continue
        class_features = _class_features(k, features, s, expander, True, scratch)
        if s.stage_poly and s.heuristic == 1:
            stage_poly.add_ssm(ssm, class_features.index, class_features.value,
                               class_features.lo, class_features.hi, yk - pk)
        if loss > 0:
            update_class(k, reduction, family, model, class_features,
                         Scored(pk, yk, ex.imp, ex.initial, loss, shared), s, scratch)
