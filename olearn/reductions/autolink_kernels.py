"""--autolink's kernels (reductions/autolink.py holds its configuration): the example loop
(kernel/loop.py) calls them by the bundle type ``AutolinkState`` (reductions/table.py). Its
``score`` and ``learn`` are one problem's (reductions/one_problem.py): the example learned is
the one with the powers.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.kernel import dispatch
from olearn.kernel.bundles import Features, Predicted
from olearn.kernel.layouts import P
from olearn.learners import gd
from olearn.reductions.one_problem import clipped, raw_score, widen_range


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """One scalar problem, and the powers' rows in the table."""
    rows = reduction.rows
    for i in range(rows.shape[0]):
        if not 0 <= rows[i] < model.W.shape[0]:
            return False
    return model.params[P.classes] == 0


@njit(cache=True, nogil=True, _nrt=False)
def room(reduction, features, s, scratch):
    """The rows the example's copy with its powers needs beyond the scratch's (0: they
    fit)."""
    need = features.hi - features.lo + reduction.rows.shape[0]
    return 0 if need <= scratch.classes.index.shape[0] else need


# inline: returns arrays, as the loop's other inlined helpers (kernel/loop.py)
@njit(cache=True, nogil=True, inline="always")
def _with_powers(reduction, features, p0, scratch):
    """The example's features then p0's powers (float32, as VW's: none once one is 0)."""
    index, value = scratch.classes.index, scratch.classes.value
    n = features.hi - features.lo
    for j in range(n):
        index[j] = features.index[features.lo + j]
        value[j] = features.value[features.lo + j]
    power = np.float32(p0)
    for i in range(reduction.rows.shape[0]):
        if power != 0:
            index[n] = reduction.rows[i]
            value[n] = power
            n += 1
            power = np.float32(power * np.float32(p0))
    return Features(index, value, 0, n, features.namespace)


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """Predict the example as it is (the label joined the range), then with its prediction's
    powers: learning, the family's ``learn_predict`` of those, which ``learn`` updates."""
    state = model.state
    if ex.learn:
        widen_range(state, ex.y, s)
    p0 = clipped(dispatch.predict(family, model, features, ex.initial, ex.imp, s, expanded),
                 state)
    linked = _with_powers(reduction, features, p0, scratch)
    raw = raw_score(family, model, linked, ex, s, expanded)
    p = clipped(raw, state)
    shown = gd.output(model.params, p)
    pred[0] = shown
    pred[1] = raw
    return Predicted(shown, np.nan, features.hi - features.lo, (linked, p))
