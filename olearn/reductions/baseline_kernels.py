"""--baseline's kernels (reductions/baseline.py holds its configuration): the example loop
(kernel/loop.py) calls them by the bundle type ``BaselineState`` (reductions/table.py). Its
``score`` is one problem's (reductions/one_problem.py), on the whole example's prediction.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.kernel import dispatch
from olearn.kernel.bundles import Features, Predicted
from olearn.kernel.layouts import S_MAX, S_MIN, P
from olearn.learners import gd
from olearn.learners.weights import W_W
from olearn.reductions import one_problem
from olearn.reductions.baseline import ENABLED_NAMESPACE
from olearn.reductions.one_problem import clipped, widen_range

MAX_RATE = 1000.0  # VW's bound of a multiplier taken from the label range
MIN_RATE = 1e-4


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """One scalar problem, and the global constant's row in the table."""
    row = model.params[P.baseline_row]
    return model.params[P.classes] == 0 and 0 <= row < model.W.shape[0]


@njit(cache=True, nogil=True, _nrt=False)
def room(reduction, features, s, scratch):
    """The scratch rows the baseline's and the residual's features take (0: they fit): the
    global constant's, or the example's features regrouped."""
    need = 1 if s.baseline_global else features.hi - features.lo
    return 0 if need <= scratch.classes.index.shape[0] else need


@njit(cache=True, nogil=True, inline="always")
def _enabled(ex, s):
    """Whether the example takes the baseline (--check_enabled: it holds VW's flag)."""
    if not s.baseline_check:
        return True
    unit = ex.unit
    examples = unit.examples
    for k in range(examples.offsets[unit.first], examples.offsets[unit.first + 1]):
        if examples.namespace[k] == ENABLED_NAMESPACE:
            return True
    return False


# inline: these return arrays (Features), which only code compiled into the loop may do
@njit(cache=True, nogil=True, inline="always")
def _global(features, s, scratch):
    """--global_only's baseline example: its constant alone, in scratch row 0."""
    index, value = scratch.classes.index, scratch.classes.value
    index[0] = s.baseline_row
    value[0] = 1.0
    return Features(index, value, 0, 1, features.namespace)


@njit(cache=True, nogil=True, inline="always")
def _split(features, s, scratch):
    """The residual's features (all but the constant) and the baseline's (the constant), one
    after the other in the scratch."""
    index, value = scratch.classes.index, scratch.classes.value
    cut = 0
    for k in range(features.lo, features.hi):
        if features.index[k] != s.constant:
            index[cut] = features.index[k]
            value[cut] = features.value[k]
            cut += 1
    m = cut
    for k in range(features.lo, features.hi):
        if features.index[k] == s.constant:
            index[m] = features.index[k]
            value[m] = features.value[k]
            m += 1
    return (Features(index, value, 0, cut, features.namespace),
            Features(index, value, cut, m, features.namespace))


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """The whole example's prediction, clipped to the range before its label (VW predicts it
    before either learner learns, which widens the range); with --global_only from the global
    constant's prediction as its initial score. An example without the baseline is one
    problem's, whose label joins the range first. The score the loss is reported on is the
    residual's at learning (the baseline's prediction plus the rest, clipped to the range with
    the label)."""
    state = model.state
    enabled = _enabled(ex, s)
    if ex.learn and not enabled:
        widen_range(state, ex.y, s)
    initial = ex.initial
    base = 0.0  # the baseline's raw score
    if enabled and s.baseline_global:
        base = dispatch.predict(family, model, _global(features, s, scratch), 0.0, ex.imp, s,
                                expanded)
        initial = clipped(base, state)
    elif enabled:
        for k in range(features.lo, features.hi):
            if features.index[k] == s.constant:
                base += model.W[features.index[k], W_W] * features.value[k]
    raw = dispatch.predict(family, model, features, initial, ex.imp, s, expanded)
    if np.isnan(raw):
        raw = 0.0
    p = clipped(raw, state)
    shown = gd.output(model.params, p)
    pred[0] = shown
    pred[1] = raw
    # the residual's score as its learning will take it (VW reports that one's loss): from the
    # baseline's prediction, both clipped to the range with the label
    rest = raw - initial if s.baseline_global else raw - ex.initial - base
    if enabled and ex.learn:
        widen_range(state, ex.y, s)
    learned = clipped(clipped(base, state) + rest, state) if enabled and ex.learn else p
    return Predicted(shown, np.nan, dispatch.count(family, features), (features, learned,
                                                                       enabled))


@njit(cache=True, nogil=True, inline="always")
def _rate(s, state):
    """The baseline's learning-rate multiplier: --lr_multiplier's, or from the label range."""
    if s.baseline_rate != 0.0:
        return s.baseline_rate
    return min(max(MIN_RATE, max(abs(state[S_MIN]), abs(state[S_MAX]))), MAX_RATE)


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """The baseline learns the label (its learning rate scaled), then the residual learns it
    from the baseline's prediction; an example without the baseline is one problem."""
    if not predicted.inner[2]:
        one_problem.learn(reduction, family, model, expander, features, predicted, scored, ex,
                          s, scratch, expanded)
        return
    if s.baseline_global:
        base, residual = _global(features, s, scratch), features
    else:
        residual, base = _split(features, s, scratch)
    params = model.params
    eta = params[P.eta]
    params[P.eta] = eta * np.float32(_rate(s, model.state))
    raw = one_problem.learn_scalar(ex.y, ex.imp, family, model, base, 0.0, s, scratch)
    params[P.eta] = eta
    one_problem.learn_scalar(ex.y, ex.imp, family, model, residual, clipped(raw, model.state),
                             s, scratch)
