"""--lrq's and --lrqfa's kernels (reductions/lrq.py holds their configuration): the example
loop (kernel/loop.py) calls them by the bundle type ``LowRankState`` (reductions/table.py).

The example's copy with its low-rank features is written to the per-class scratch
(``scratch.classes``, grown by :func:`room`) in VW's order: each namespace's features, then
the low-rank features that namespace (as the right side) receives, pair by pair. The left
factors are first read (and, learning, started off 0) in VW's order of pairs, left features
and n, their products ``scale·w·x_l`` kept at the scratch's end, so that --lrqdropout's draws
come in VW's order too.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.kernel import dispatch
from olearn.kernel.bundles import Features, Predicted
from olearn.kernel.layouts import P
from olearn.learners import gd
from olearn.learners.weights import W_W, merand48, next_draw
from olearn.reductions import lrq
from olearn.reductions.one_problem import (
    clipped,
    raw_score,
    scored_prediction,
    widen_range,
)
from olearn.reductions.one_problem import learn as learn_one


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """One scalar problem; the pair table's namespaces, ranks and fields; the settings,
    counters and spans' shapes."""
    pairs, settings = reduction.pairs, reduction.settings
    if not (model.params[P.classes] == 0 and pairs.shape[1] == 5 and settings.shape[0] >= 4
            and reduction.counters.shape[0] >= 2 and reduction.spans.shape[0] == 256
            and reduction.spans.shape[1] >= 5 and 1 <= settings[lrq.SET_WIDTH] <= 1 << 32
            and 0 <= settings[lrq.SET_STRIDE_SHIFT] <= 8):
        return False
    for p in range(pairs.shape[0]):
        for c in (lrq.PAIR_A, lrq.PAIR_B):
            if not 0 <= pairs[p, c] < 256:
                return False
        for c in (lrq.PAIR_K, lrq.PAIR_FIELD_A, lrq.PAIR_FIELD_B):
            if not 0 <= pairs[p, c] <= lrq.MAX_RANK:
                return False
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _spans(reduction, features):
    """Fill the spans of the example's namespaces and of the pairs' (count, first and last
    row); False when the rows are not the batch's own (an expansion: no low-rank
    features)."""
    spans, pairs = reduction.spans, reduction.pairs
    namespace = features.namespace
    if features.hi > namespace.shape[0]:
        return False
    for p in range(pairs.shape[0]):
        spans[pairs[p, lrq.PAIR_A], lrq.SPAN_COUNT] = 0
        spans[pairs[p, lrq.PAIR_B], lrq.SPAN_COUNT] = 0
    for j in range(features.lo, features.hi):
        spans[namespace[j], lrq.SPAN_COUNT] = 0
    for j in range(features.lo, features.hi):
        row = spans[namespace[j]]
        if row[lrq.SPAN_COUNT] == 0:
            row[lrq.SPAN_FIRST] = j
        row[lrq.SPAN_COUNT] += 1
        row[lrq.SPAN_LAST] = j
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _sizes(reduction, features):
    """The rows of the example's copy at most (its features and every low-rank feature) and
    the left factors' rows (for either side as left); (n, 0) without low-rank features."""
    n = features.hi - features.lo
    if not _spans(reduction, features):
        return n, 0
    spans, pairs = reduction.spans, reduction.pairs
    extra = 0
    factors = 0
    for p in range(pairs.shape[0]):
        a = spans[pairs[p, lrq.PAIR_A], lrq.SPAN_COUNT]
        b = spans[pairs[p, lrq.PAIR_B], lrq.SPAN_COUNT]
        k = pairs[p, lrq.PAIR_K]
        extra += k * a * b
        factors += k * max(a, b)
    return n + extra, factors


@njit(cache=True, nogil=True, _nrt=False)
def room(reduction, features, s, scratch):
    """The rows the example's two copies (the first is kept while the second is written) and
    the left factors need beyond the scratch's (0: they fit)."""
    rows, factors = _sizes(reduction, features)
    need = 2 * rows + factors
    return 0 if need <= scratch.classes.index.shape[0] else need


@njit(cache=True, nogil=True, inline="always")
def _sides(reduction, p, which):
    """Pair ``p``'s left and right namespaces and fields for the example's ``which``: --lrq's
    left is its first namespace for an even ``which``, --lrqfa's its second."""
    pairs = reduction.pairs
    flip = (which + reduction.settings[lrq.SET_FIELD_AWARE]) % 2
    first = (pairs[p, lrq.PAIR_A], pairs[p, lrq.PAIR_FIELD_A])
    second = (pairs[p, lrq.PAIR_B], pairs[p, lrq.PAIR_FIELD_B])
    return (second, first) if flip else (first, second)


@njit(cache=True, nogil=True, _nrt=False)
def _left_factors(reduction, model, features, which, learning, s, scratch, start):
    """Each pair's left features' factors times their values (times 0.5 when a --lrqdropout
    model predicts), from row ``start`` of the scratch, in VW's order; a dropped one's row
    is marked 0 in the scratch's index (kept: 1). A factor still at 0 starts, when
    ``learning``, at VW's draw of its index (--lrqfa: times 0.5/√k)."""
    W = model.W
    pairs, settings, spans = reduction.pairs, reduction.settings, reduction.spans
    index, value = scratch.classes.index, scratch.classes.value
    width = np.int64(settings[lrq.SET_WIDTH])
    shift = np.uint64(settings[lrq.SET_STRIDE_SHIFT])
    field_aware = settings[lrq.SET_FIELD_AWARE] != 0
    dropout = settings[lrq.SET_DROPOUT] != 0
    scale = np.float32(0.5) if dropout and not learning else np.float32(1.0)
    f = start
    for p in range(pairs.shape[0]):
        (left, _), (_, right_field) = _sides(reduction, p, which)
        k = pairs[p, lrq.PAIR_K]
        sqrtk = np.float32(np.sqrt(np.float32(k)))
        span = spans[left]
        if span[lrq.SPAN_COUNT] == 0:
            continue
        for j in range(span[lrq.SPAN_FIRST], span[lrq.SPAN_LAST] + 1):
            if features.namespace[j] != left:
                continue
            x = features.value[j]
            h = np.int64(features.index[j]) * width
            for n in range(1, k + 1):
                if dropout and learning and not merand48(reduction.counters,
                                                         lrq.COUNT_RANDOM) > 0.5:
                    index[f] = 0
                    f += 1
                    continue
                slot = h + right_field * k + n
                row = slot & s.mask
                w = np.float32(W[row, W_W])
                if learning and w == 0:
                    w = next_draw(np.uint64(slot) << shift)
                    if field_aware:
                        w = np.float32(w * np.float32(0.5)) / sqrtk
                    W[row, W_W] = w
                index[f] = 1
                value[f] = scale * w * x
                f += 1
    return f


@njit(cache=True, nogil=True, _nrt=False)
def _right_features(reduction, features, which, ns, n, s, scratch, start, second):
    """After row ``n`` of the copy, the low-rank features namespace ``ns`` receives as the
    right side of each pair: per kept left factor (rows from ``start``), one per feature of
    ``ns``, the factor times the feature's value. Returns the copy's new row count. The
    ``second`` copy of --lrqfa takes VW's indices (:func:`_vw_indices`)."""
    pairs, spans = reduction.pairs, reduction.spans
    index, value = scratch.classes.index, scratch.classes.value
    width = np.int64(reduction.settings[lrq.SET_WIDTH])
    namespace = features.namespace
    right = spans[ns]
    begin = n
    f = start
    for p in range(pairs.shape[0]):
        (left, left_field), (right_ns, _) = _sides(reduction, p, which)
        k = pairs[p, lrq.PAIR_K]
        factors = k * spans[left, lrq.SPAN_COUNT]
        if right_ns != ns or right[lrq.SPAN_COUNT] == 0:
            f += factors
            continue
        for q in range(f, f + factors):
            if index[q] == 0:
                continue
            m = (q - f) % k + 1  # the factor's n
            for j in range(right[lrq.SPAN_FIRST], right[lrq.SPAN_LAST] + 1):
                if namespace[j] != ns:
                    continue
                index[n] = (np.int64(features.index[j]) * width + left_field * k + m) & s.mask
                value[n] = value[q] * features.value[j]
                n += 1
        f += factors
    span = spans[ns]
    if second and reduction.settings[lrq.SET_FIELD_AWARE] != 0:
        _vw_indices(index, span[lrq.SPAN_PUSHED_AT], span[lrq.SPAN_PUSHED], begin, n)
    span[lrq.SPAN_PUSHED_AT] = begin
    span[lrq.SPAN_PUSHED] = n - begin
    return n


@njit(cache=True, nogil=True, _nrt=False)
def _vw_indices(index, first, pushed, lo, hi):
    """--lrqfa's second copy as VW learns it: VW cuts a namespace's values back after the first
    expansion but not its indices, so the j-th value a namespace receives again takes the
    j-th index of the list of both expansions' (the first's ``pushed`` from row ``first``,
    then the second's, rows ``lo:hi``). Rewritten from the last, each reads rows not yet
    rewritten."""
    for j in range(hi - lo - 1, -1, -1):
        index[lo + j] = index[lo + j - pushed] if j >= pushed else index[first + j]


# inline: returns arrays, as the loop's other inlined helpers (kernel/loop.py)
@njit(cache=True, nogil=True, inline="always")
def _expand(reduction, model, features, which, learning, second, s, scratch):
    """The example's copy with its low-rank features for ``which`` (see the module's
    docstring): its features widened to ``h·W``, each namespace's followed by the low-rank
    features it receives. The first copy starts at row 0; the ``second`` (a learned example's,
    the sides swapped) after the first copy's room and the left factors', so that the first
    stays as it was. ``learning``: left factors at 0 start at their draw."""
    index, value = scratch.classes.index, scratch.classes.value
    width = np.int64(reduction.settings[lrq.SET_WIDTH])
    rows, factors = _sizes(reduction, features)
    if factors > 0:
        _left_factors(reduction, model, features, which, learning, s, scratch, rows)
    base = rows + factors if second else 0
    n = base
    for j in range(features.lo, features.hi):
        index[n] = (np.int64(features.index[j]) * width) & s.mask
        value[n] = features.value[j]
        n += 1
        if factors > 0:
            ns = features.namespace[j]
            if reduction.spans[ns, lrq.SPAN_LAST] == j:
                n = _right_features(reduction, features, which, ns, n, s, scratch, rows,
                                    second)
    return Features(index, value, base, n, features.namespace)


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """Predict the example with its low-rank features (learning: after the label widened the
    range, with the family's ``learn_predict``, the first of the two sides); counts the
    example (VW's example counter)."""
    counters = reduction.counters
    which = np.int64(counters[lrq.COUNT_EXAMPLE] % np.uint64(2)) if ex.learn else 0
    counters[lrq.COUNT_EXAMPLE] += np.uint64(1)
    if ex.learn:
        widen_range(model.state, ex.y, s)
    copy = _expand(reduction, model, features, which, ex.learn, False, s, scratch)
    raw = raw_score(family, model, copy, ex, s, expanded)
    p = clipped(raw, model.state)
    shown = gd.output(model.params, p)
    pred[0] = shown
    pred[1] = raw
    return Predicted(shown, np.nan, features.hi - features.lo, (copy, p, which))


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """The first side's update, then the other side: the copy for the next ``which``
    predicted at learn time and learned (its prediction is not shown)."""
    learn_one(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
              expanded)
    copy = _expand(reduction, model, features, predicted.inner[2] + 1, True, True, s, scratch)
    _, second = scored_prediction(ex.y, ex.imp, family, model, copy, ex.initial, s)
    dispatch.update(family, model, copy, second, s, scratch.work, expanded)
