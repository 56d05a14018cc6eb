"""--nn's kernels (reductions/nn.py holds its configuration and state): the example loop
(kernel/loop.py) calls them by the bundle type ``NeuralState`` (reductions/table.py).

As VW's nn.cc, :func:`predict` does the whole example: hidden biases' and output weights'
first steps, the hidden units, the output layer (learned with the run's loss when the
example is learned) and the hidden units' steps, twice with --dropout; ``learn`` is empty.
The hidden layer and the output weights learn with squared loss (the ``params`` of the bundle:
the run's, loss squared), each offset with its own normalizer sums (--oaa's ``update_class``).
VW's float32 arithmetic is kept where it decides a bit: the scores, tanh's approximation,
the steps' targets.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from olearn.kernel.bundles import Features, Model, Predicted, Scored
from olearn.kernel.layouts import PARAMS_SIZE, P
from olearn.learners import gd
from olearn.learners.losses import (
    SQUARED,
    derivative32,
    loss_value_shared,
    shared_term,
)
from olearn.learners.weights import W_W, merand48
from olearn.reductions import nn
from olearn.reductions.oaa_kernels import _class_features, fits_classes, update_class
from olearn.reductions.one_problem import clipped, raw_score, widen_range

HIDDEN_MIN, HIDDEN_MAX = -3.0, 3.0  # VW's range of a hidden unit's score
TINY = 1e-10  # VW's multipredict skips features this small


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """--oaa's checks for K + 1 offsets, and the bundle's arrays against K."""
    k = np.int64(model.params[P.classes])
    units = k - 1
    mask = model.W.shape[0]  # the table's size: every slot below it
    if not (fits_classes(reduction, model) and k >= 2 and reduction.random.shape[0] >= 2
            and reduction.out_index.shape[0] == k and reduction.out_value.shape[0] == k
            and reduction.one_index.shape[0] >= 2 and reduction.one_value.shape[0] >= 2
            and reduction.hidden.shape[0] >= 2 and reduction.hidden.shape[1] == units
            and reduction.params.shape[0] >= PARAMS_SIZE and reduction.one_index[0] < mask):
        return False
    for i in range(k):
        if reduction.out_index[i] >= mask:
            return False
    return True


@njit(cache=True, nogil=True, _nrt=False)
def room(reduction, features, s, scratch):
    """A hidden unit's copy of the example, or (--inpass) the output layer's: the example
    and the K hidden units' outputs."""
    need = features.hi - features.lo + reduction.out_index.shape[0]
    return need if need > scratch.classes.index.shape[0] else 0


@njit(cache=True, nogil=True, _nrt=False)
def fasttanh(p):
    """VW's fast tanh in float32: ``2 / (1 + 2^(-2p·log2 e)) - 1``, the power by its
    float's bits."""
    one = np.float32(1.0)
    x = np.float32(1.442695040) * (np.float32(-2.0) * np.float32(p))
    offset = one if x < 0 else np.float32(0.0)
    clipp = max(x, np.float32(-126.0))
    z = clipp - np.float32(np.int32(clipp)) + offset
    bits = np.float32(8388608.0) * (clipp + np.float32(121.2740575)
                                    + np.float32(27.7280233) / (np.float32(4.84252568) - z)
                                    - np.float32(1.49012907) * z)
    b = np.int64(np.uint32(bits)) if bits > 0 else np.int64(0)
    exponent = (b >> 23) & 0xFF
    mantissa = np.float64(b & 0x7FFFFF) / 8388608.0
    if exponent == 0:
        power = math.ldexp(mantissa, -126)
    elif exponent == 0xFF:
        power = np.inf
    else:
        power = math.ldexp(1.0 + mantissa, exponent - 127)
    return np.float32(-one + np.float32(2.0) / (one + np.float32(power)))


@njit(cache=True, nogil=True, _nrt=False)
def _finalize(raw, low, high):
    """VW's finalize_prediction: the score clipped to [low, high] (NaN: 0), in float32."""
    return np.float32(0.0) if np.isnan(raw) else np.float32(min(max(raw, low), high))


@njit(cache=True, nogil=True, inline="always")
def _step(offset, index, p, y, reduction, family, squared, s, scratch, namespace):
    """Weight ``index`` (feature value 1) at ``offset`` learns ``y`` from ``p`` with squared
    loss and importance 1 (a hidden bias's or an output weight's first step)."""
    reduction.one_index[1] = index
    one = Features(reduction.one_index, reduction.one_value, 1, 2, namespace)
    shared = shared_term(SQUARED, p, y)
    loss = loss_value_shared(SQUARED, 0.0, p, y, shared)
    update_class(offset, reduction, family, squared, one, Scored(p, y, 1.0, 0.0, loss, shared),
                 s, scratch)


@njit(cache=True, nogil=True, inline="always")
def _hidden_layer(reduction, family, squared, features, initial, s, scratch, dropping):
    """The hidden biases' first steps, the hidden units' clipped scores and (``dropping``)
    which are dropped."""
    W = squared.W
    units = reduction.hidden.shape[1]
    hidden = reduction.hidden
    bias = np.int64(reduction.one_index[0])  # hidden unit 0's bias; [1] is _step's
    for i in range(units):
        slot = (bias + i) & s.mask
        if _finalize(np.float32(W[slot, W_W]), HIDDEN_MIN, HIDDEN_MAX) == 0:
            # learned from its prediction, 0 (its weight is 0, or NaN read as 0)
            y = np.float64(np.float32(merand48(reduction.random, 0) - 0.5))
            _step(i, slot, 0.0, y, reduction, family, squared, s, scratch, features.namespace)
    acc = reduction.out_value
    for i in range(units):
        acc[i] = np.float32(initial)
    for j in range(features.lo, features.hi):
        x = features.value[j]
        if -TINY < x < TINY:
            continue
        h = np.int64(features.index[j])
        for i in range(units):
            acc[i] += x * W[(h + i) & s.mask, W_W]
    for i in range(units):
        hidden[nn.HIDDEN_SCORE, i] = _finalize(acc[i], HIDDEN_MIN, HIDDEN_MAX)
    for i in range(units):
        dropped = dropping and merand48(reduction.random, 1) < 0.5
        hidden[nn.HIDDEN_DROPPED, i] = 1.0 if dropped else 0.0


@njit(cache=True, nogil=True, inline="always")
def _output_features(reduction, family, squared, features, expander, s, scratch, scale, inpass):
    """The output layer's inputs (each kept unit's tanh times ``scale``), each output weight
    predicting 0 first learning a draw; returns the output layer's features."""
    W = squared.W
    units = reduction.hidden.shape[1]
    k = units
    sqrtk = np.float32(np.sqrt(np.float32(units)))
    for i in range(units):
        sigmah = np.float32(scale) * fasttanh(reduction.hidden[nn.HIDDEN_SCORE, i])
        dropped = reduction.hidden[nn.HIDDEN_DROPPED, i] != 0
        reduction.out_value[i] = np.float32(0.0) if dropped else sigmah
        slot = np.int64(reduction.out_index[i])
        wf = _finalize(np.float32(W[slot, W_W]), -1.0, 1.0)
        if wf == 0:
            y = np.float64(np.float32(merand48(reduction.random, 0) - 0.5) / sqrtk)
            _step(k, slot, np.float64(wf), y, reduction, family, squared, s, scratch,
                  features.namespace)
    if not inpass:
        reduction.out_value[units] = 1.0
        return Features(reduction.out_index, reduction.out_value, 0, units + 1,
                        features.namespace)
    copy = _class_features(k, features, s, expander, True, scratch)
    n = copy.hi
    for i in range(units):
        scratch.classes.index[n + i] = reduction.out_index[i]
        scratch.classes.value[n + i] = reduction.out_value[i]
    return Features(copy.index, copy.value, 0, n + units, features.namespace)


@njit(cache=True, nogil=True, inline="always")
def _hidden_steps(reduction, family, squared, features, expander, gradient, ex, s, scratch,
                  scale):
    """Each kept hidden unit steps toward its score less half its output weight times the
    loss's ``gradient`` times tanh's derivative (VW's float32)."""
    W = squared.W
    units = reduction.hidden.shape[1]
    half = np.float32(0.5)
    for i in range(units):
        if reduction.hidden[nn.HIDDEN_DROPPED, i] != 0:
            continue
        sigmah = reduction.out_value[i] / np.float32(scale)
        sigmahprime = np.float32(scale) * (np.float32(1.0) - sigmah * sigmah)
        nu = _finalize(np.float32(W[np.int64(reduction.out_index[i]), W_W]), HIDDEN_MIN,
                       HIDDEN_MAX)
        gradhw = half * nu * gradient * sigmahprime
        h = np.float32(reduction.hidden[nn.HIDDEN_SCORE, i])
        y = _finalize(h - gradhw, HIDDEN_MIN, HIDDEN_MAX)
        if y != h:
            unit = _class_features(i, features, s, expander, True, scratch)
            p = np.float64(h)
            shared = shared_term(SQUARED, p, np.float64(y))
            loss = loss_value_shared(SQUARED, 0.0, p, np.float64(y), shared)
            update_class(i, reduction, family, squared, unit,
                         Scored(p, np.float64(y), ex.imp, ex.initial, loss, shared), s, scratch)


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """The network's prediction of the example and, when it is learned, its learning (VW's
    order, once or with --dropout twice); writes the first round's clipped output and raw
    score."""
    state = model.state
    units = reduction.hidden.shape[1]
    hp = reduction.params
    for j in range(PARAMS_SIZE):
        hp[j] = model.params[j]
    hp[P.loss] = SQUARED
    squared = Model(model.W, state, hp)
    dropping = ex.learn and model.params[P.dropout] != 0
    scale = 2.0 if dropping else 1.0
    inpass = model.params[P.inpass] != 0
    _hidden_layer(reduction, family, squared, features, ex.initial, s, scratch, dropping)
    shown_raw = 0.0
    shown_p = 0.0
    loss_shown = 0.0
    for round_no in range(2 if dropping else 1):
        if round_no == 1:
            for i in range(units):
                reduction.hidden[nn.HIDDEN_DROPPED, i] = reduction.hidden[nn.HIDDEN_DROPPED, i] == 0
        out = _output_features(reduction, family, squared, features, expander, s, scratch, scale,
                               inpass)
        if ex.learn:
            widen_range(state, ex.y, s)
        raw = raw_score(family, model, out, ex, s, False)
        p = clipped(raw, state)
        loss = 0.0
        if ex.labeled:
            shared = shared_term(s.loss, p, ex.y)
            loss = loss_value_shared(s.loss, s.loss_param, p, ex.y, shared)
            if ex.learn:
                update_class(units, reduction, family, model, out,
                             Scored(p, ex.y, ex.imp, ex.initial, loss, shared), s, scratch)
                gradient = derivative32(s.loss, s.loss_param, p, ex.y, shared)
                if abs(gradient) > 0:
                    _hidden_steps(reduction, family, squared, features, expander, gradient,
                                  ex, s, scratch, scale)
        if round_no == 0:
            shown_raw = raw
            shown_p = p
            loss_shown = loss
    shown = gd.output(model.params, shown_p)  # VW's scorer sits above nn: --link, --binary
    pred[0] = shown
    pred[1] = shown_raw
    return Predicted(shown, np.nan, features.hi - features.lo, loss_shown)


@njit(cache=True, nogil=True, inline="always")
def score(reduction, model, predicted, ex, s, scratch):
    """The first round's loss (--binary: the error)."""
    if s.binary:
        return (predicted.shown != ex.y) * ex.imp, 0.0, 0
    return predicted.inner * ex.imp, 0.0, 0


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """Nothing: the network learned as it predicted (:func:`predict`)."""
