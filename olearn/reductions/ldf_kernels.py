"""--csoaa_ldf's and --wap_ldf's kernels (reductions/ldf.py holds the configuration): the example
loop (kernel/loop.py) calls them by the bundle type ``LdfState`` (reductions/table.py), once
per multi-line example, at its first line (``unit_end``); each line is an action, expanded in
turn into the loop's expansion scratch (kernel/example_features.py).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.data.labels import NO_COST
from olearn.data.multiline import group_end
from olearn.kernel import dispatch
from olearn.kernel.bundles import Features, Predicted
from olearn.kernel.example_features import example_features
from olearn.kernel.layouts import P
from olearn.reductions.one_problem import learn_scalar

WAP_SAME = 1e-6  # VW's: a pair whose weighted-all-pairs values differ less is not learned


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """One scalar problem, and a prediction and a raw score per line."""
    return model.params[P.classes] == 0 and out.preds.shape[1] >= 2


@njit(cache=True, nogil=True, _nrt=False)
def room(reduction, features, s, scratch):
    """Nothing beyond the expansion scratch, which the loop sizes for the example's lines."""
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def unit_end(numbers, e):
    """The end of the multi-line example that line ``e`` starts; ``e`` when it starts none."""
    if numbers[e, 2] != 0:
        return e
    return group_end(numbers, e)


@njit(cache=True, nogil=True, _nrt=False)
def _listed(j, examples):
    """Action ``j``'s span of the batch's classes and costs (none in a batch without costs:
    learn_batch checked the arrays, empty or one row per line)."""
    if examples.cost_offsets.shape[0] == 0:
        return 0, 0
    return examples.cost_offsets[j], examples.cost_offsets[j + 1]


@njit(cache=True, nogil=True, _nrt=False)
def _class_of(j, examples):
    """Action ``j``'s class (its label's first), 0 when its line lists none."""
    lo, hi = _listed(j, examples)
    return np.int64(examples.cost_class[lo]) if hi > lo else 0


@njit(cache=True, nogil=True, _nrt=False)
def _cost_of(j, examples):
    """Action ``j``'s cost (its label's first; NO_COST when it lists none)."""
    lo, hi = _listed(j, examples)
    return np.float64(examples.cost_value[lo]) if hi > lo else np.float64(NO_COST)


@njit(cache=True, nogil=True, _nrt=False)
def _names(j, examples, c):
    """Whether action ``j``'s label lists class ``c``."""
    lo, hi = _listed(j, examples)
    for k in range(lo, hi):
        if examples.cost_class[k] == c:
            return True
    return False


# inline: returns arrays (Features), which only code compiled into the loop may do
@njit(cache=True, nogil=True, inline="always")
def _action(j, unit, expander, s, scratch, interacting):
    """Action ``j``'s features (after the interactions, in the expansion scratch, which the
    loop sized for them)."""
    features, _, _, _ = example_features(j, unit.examples, expander, s, False, interacting,
                                         scratch.expansion, False)
    return features


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """Predict every action: each line's raw score, and what -p writes of it; the predicted
    class (the cheapest-scored action's, or the most probable's)."""
    unit = ex.unit
    examples, preds = unit.examples, unit.preds
    interacting = expanded and expander.terms.shape[0] > 0
    best = -1
    best_score = np.inf
    n_features = 0
    total = 0.0
    for j in range(unit.first, unit.end):
        action = _action(j, unit, expander, s, scratch, interacting)
        n_features += action.hi - action.lo
        raw = dispatch.predict(family, model, action, 0.0, 1.0, s, False)
        if np.isnan(raw):
            raw = 0.0
        preds[j, 1] = raw
        if reduction.probabilities:
            preds[j, 0] = 1.0 / (1.0 + np.exp(np.float32(raw)))
            total += preds[j, 0]
        elif raw < best_score:
            best = j
            best_score = raw
    if reduction.probabilities:
        most = -1.0
        for j in range(unit.first, unit.end):
            if total > 0:  # every score so high that each probability underflowed: all 0
                preds[j, 0] /= total
            if preds[j, 0] > most:
                most = preds[j, 0]
                best = j
    chosen = _class_of(best, examples) if best >= 0 else 0
    if not reduction.probabilities:
        for j in range(unit.first, unit.end):
            shown = reduction.rank or _names(j, examples, chosen)
            preds[j, 0] = preds[j, 1] if reduction.rank else (chosen if shown else 0)
    return Predicted(np.float64(chosen), np.nan, n_features, 0)


@njit(cache=True, nogil=True, inline="always")
def score(reduction, model, predicted, ex, s, scratch):
    """The reported loss, the cost of the first action whose label names the predicted class
    (0: none does); with --probabilities, the multiclass log loss of the cheapest action."""
    unit = ex.unit
    examples = unit.examples
    reported = 0.0
    for j in range(unit.first, unit.end):
        if _names(j, examples, np.int64(predicted.shown)):
            reported = _cost_of(j, examples)
            break
    log_loss = 0.0
    if reduction.probabilities:
        cheapest = unit.first
        for j in range(unit.first, unit.end):
            if _cost_of(j, examples) < _cost_of(cheapest, examples):
                cheapest = j
        p = unit.preds[cheapest, 0]
        log_loss = -np.log(p) if p > 0 else 999.0
    return reported, log_loss, 0


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """Learn each action in order (regression on its cost, or as a classifier), or with
    --wap_ldf every pair of actions."""
    interacting = expanded and expander.terms.shape[0] > 0
    if reduction.wap:
        _learn_pairs(family, model, expander, ex.unit, s, scratch, interacting)
        return
    unit = ex.unit
    examples = unit.examples
    low = np.inf
    high = -np.inf
    for j in range(unit.first, unit.end):
        low = min(low, _cost_of(j, examples))
        high = max(high, _cost_of(j, examples))
    for j in range(unit.first, unit.end):
        cost = _cost_of(j, examples)
        y = cost
        imp = 1.0
        if reduction.classifier:
            y = -1.0 if cost <= low else 1.0
            imp = high - low if cost <= low else cost - low
        action = _action(j, unit, expander, s, scratch, interacting)
        learn_scalar(y, imp, family, model, action, 0.0, s, scratch)


@njit(cache=True, nogil=True, inline="always")
def _learn_pairs(family, model, expander, unit, s, scratch, interacting):
    """--wap_ldf: each pair (j, k), j before k, of different values learns j's features less
    k's (in the expansion scratch), -1 when j is cheaper, with their values' difference as
    importance."""
    first, end = unit.first, unit.end
    examples = unit.examples
    ranges, pos, x_idx, x_val, no_src = scratch.expansion
    if end - first < 2:  # no pair (the loop grows the scores for two lines and more)
        return
    values = scratch.classes.scores  # a score per line of a multi-line example
    _wap_values(unit, values)
    for j in range(first, end):
        for k in range(j + 1, end):
            diff = abs(values[k - first] - values[j - first])
            if diff < WAP_SAME:
                continue
            theirs = _action(k, unit, expander, s, scratch, interacting)
            n_k = theirs.hi - theirs.lo
            for r in range(n_k):  # k's, negated, after the room j's rows take
                x_idx[x_idx.shape[0] - n_k + r] = theirs.index[theirs.lo + r]
                x_val[x_idx.shape[0] - n_k + r] = -theirs.value[theirs.lo + r]
            mine = _action(j, unit, expander, s, scratch, interacting)
            n_j = mine.hi - mine.lo
            for r in range(n_j):
                x_idx[r] = mine.index[mine.lo + r]
                x_val[r] = mine.value[mine.lo + r]
            for r in range(n_k):
                x_idx[n_j + r] = x_idx[x_idx.shape[0] - n_k + r]
                x_val[n_j + r] = x_val[x_idx.shape[0] - n_k + r]
            y = -1.0 if _cost_of(j, examples) < _cost_of(k, examples) else 1.0
            learn_scalar(y, diff, family, model,
                         Features(x_idx, x_val, 0, n_j + n_k, mine.namespace), 0.0, s, scratch)


@njit(cache=True, nogil=True, _nrt=False)
def _wap_values(unit, values):
    """Each action's weighted-all-pairs value, into ``values`` (by line from the first): over
    the costs sorted increasingly, c_(0) .. c_(i) = the action's, the sum of
    (c_(r) - c_(r-1)) / r for r = 1..i (ties: by line)."""
    examples = unit.examples
    value = 0.0
    previous = -1
    previous_cost = 0.0
    for rank in range(unit.end - unit.first):  # the actions in increasing (cost, line) order
        nxt = -1
        nxt_cost = np.inf
        for k in range(unit.first, unit.end):
            c = _cost_of(k, examples)
            after = previous < 0 or c > previous_cost or (c == previous_cost and k > previous)
            if after and (c < nxt_cost or (c == nxt_cost and k < nxt)):
                nxt, nxt_cost = k, c
        if rank > 0:
            value += (nxt_cost - previous_cost) / rank
        if nxt < 0:  # the rest have NaN costs, which sort nowhere
            for k in range(unit.first, unit.end):
                if not _cost_of(k, examples) >= -np.inf:
                    values[k - unit.first] = value
            return
        values[nxt - unit.first] = value
        previous, previous_cost = nxt, nxt_cost
