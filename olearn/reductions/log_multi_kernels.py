"""--log_multi's kernels (reductions/log_multi.py holds its configuration and tree): the example
loop (kernel/loop.py) calls them by the bundle type ``LogMultiState`` (reductions/table.py).

As VW's log_multi: the prediction walks from the root, each internal node's problem sending the
example left when its clipped score is below 0, to a leaf's most frequent label; it is made
before the example is learned. Learning walks the same way: each node the example reaches
counts its label (a leaf that has seen two labels splits, or takes over a problem by a swap),
and each internal node's problem learns ±1 from the node's and the label's mean scores, then
predicts again, adding its raw score to those means and choosing the child. Counts wrap as
VW's uint32 counters do.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.kernel import dispatch
from olearn.kernel.bundles import Predicted
from olearn.kernel.layouts import P
from olearn.reductions.log_multi import (
    C_COUNT,
    C_EHK,
    C_NK,
    C_NORM_EHK,
    K_NODES,
    K_PREDICTORS,
    K_SWAPS,
    M_EH,
    M_NORM_EH,
    T_INTERNAL,
    T_LABELS,
    T_LEFT,
    T_MAX_COUNT,
    T_MAX_LABEL,
    T_MIN_COUNT,
    T_N,
    T_PARENT,
    T_PREDICTOR,
    T_RIGHT,
)
from olearn.reductions.oaa_kernels import _class_features, fits_classes, learn_class
from olearn.reductions.one_problem import clipped

U32 = np.int64(1) << 32


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """--oaa's checks over the K - 1 problems, and a tree whose links, problems and labels stay
    inside its arrays."""
    tree, counters = reduction.tree, reduction.counters
    problems = np.int64(model.params[P.classes])
    if not (fits_classes(reduction, model) and out.preds.shape[1] >= 2
            and counters.shape[0] >= 3 and tree.shape[1] >= 10
            and reduction.margins.shape[0] >= tree.shape[0] and reduction.margins.shape[1] >= 2
            and reduction.labels.shape[0] >= tree.shape[0] and reduction.labels.shape[2] >= 4):
        return False
    nodes = counters[K_NODES]
    k = reduction.labels.shape[1]
    if not (1 <= nodes <= tree.shape[0] and tree.shape[0] >= 2 * k - 1
            and 0 <= counters[K_PREDICTORS] <= problems and problems >= k - 1):
        return False
    for i in range(tree.shape[0]):
        for c in (T_PARENT, T_LEFT, T_RIGHT):
            if not 0 <= tree[i, c] < nodes:
                return False
        if not (0 <= tree[i, T_PREDICTOR] < problems and 1 <= tree[i, T_MAX_LABEL] <= k):
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _score(problem, family, model, expander, features, ex, s, scratch):
    """Problem ``problem``'s raw score (NaN read as 0) and its score clipped to the range."""
    class_features = _class_features(problem, features, s, expander, False, scratch)
    raw = dispatch.predict(family, model, class_features, ex.initial, ex.imp, s, False)
    raw = 0.0 if np.isnan(raw) else raw
    return raw, clipped(raw, model.state)


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """From the root to a leaf (left below 0); writes the leaf's most frequent label and the
    last problem's raw score. A walk longer than the tree (a cycle) stops."""
    tree = reduction.tree
    node = 0
    raw = 0.0
    for _ in range(tree.shape[0]):
        if tree[node, T_INTERNAL] == 0:
            break
        raw, p = _score(tree[node, T_PREDICTOR], family, model, expander, features, ex, s,
                        scratch)
        node = tree[node, T_LEFT] if p < 0 else tree[node, T_RIGHT]
    shown = np.float64(tree[node, T_MAX_LABEL])
    pred[0] = shown
    pred[1] = raw
    return Predicted(shown, np.nan, features.hi - features.lo, 0)


@njit(cache=True, nogil=True, inline="always")
def score(reduction, model, predicted, ex, s, scratch):
    """The reported loss (the error); nothing is scored as one."""
    return (predicted.shown != ex.y) * ex.imp, 0.0, 0


@njit(cache=True, nogil=True, _nrt=False)
def _update_min_count(tree, node):
    """Up from ``node``: each parent's count becomes its children's smaller one, until one
    does not change."""
    for _ in range(tree.shape[0]):
        if node == 0:
            return
        previous = node
        node = tree[node, T_PARENT]
        if tree[node, T_MIN_COUNT] == tree[previous, T_MIN_COUNT]:
            return
        tree[node, T_MIN_COUNT] = min(tree[tree[node, T_LEFT], T_MIN_COUNT],
                                      tree[tree[node, T_RIGHT], T_MIN_COUNT])


@njit(cache=True, nogil=True, _nrt=False)
def _clear_leaf(reduction, node):
    """``node`` as a fresh leaf (its count and parent kept, as VW's init_leaf)."""
    tree, margins, labels = reduction.tree, reduction.margins, reduction.labels
    for c in range(tree.shape[1]):
        if c != T_PARENT and c != T_MIN_COUNT:
            tree[node, c] = 0
    tree[node, T_MAX_LABEL] = 1
    margins[node, M_EH] = 0.0
    margins[node, M_NORM_EH] = 0.0
    for label in range(labels.shape[1]):
        for c in range(labels.shape[2]):
            labels[node, label, c] = 0.0


@njit(cache=True, nogil=True, _nrt=False)
def _swap_leaf(tree):
    """The leaf reached from the root by always taking the child with fewer examples."""
    leaf = 0
    for _ in range(tree.shape[0]):
        if tree[leaf, T_INTERNAL] == 0:
            break
        left, right = tree[leaf, T_LEFT], tree[leaf, T_RIGHT]
        leaf = left if tree[left, T_MIN_COUNT] < tree[right, T_MIN_COUNT] else right
    return leaf


@njit(cache=True, nogil=True, _nrt=False)
def _swap_leaves(reduction, leaf):
    """``leaf`` and its parent freed: the leaf's sibling takes the parent's place. Returns
    (the leaf, the parent, the parent's problem)."""
    tree = reduction.tree
    parent = tree[leaf, T_PARENT]
    grandparent = tree[parent, T_PARENT]
    reduction.counters[K_SWAPS] += 1
    sibling = tree[parent, T_LEFT] if leaf == tree[parent, T_RIGHT] else tree[parent, T_RIGHT]
    if parent == tree[grandparent, T_LEFT]:
        tree[grandparent, T_LEFT] = sibling
    else:
        tree[grandparent, T_RIGHT] = sibling
    tree[sibling, T_PARENT] = grandparent
    _update_min_count(tree, sibling)
    problem = tree[parent, T_PREDICTOR]
    _clear_leaf(reduction, leaf)
    _clear_leaf(reduction, parent)
    return leaf, parent, problem


@njit(cache=True, nogil=True, _nrt=False)
def _see_label(reduction, node, label, swap_resistance):
    """``node`` counts ``label`` (0-based); a leaf that has seen two labels splits while
    problems remain, or else when it has enough examples of other labels, by a swap. Returns
    whether ``node`` is internal."""
    tree, labels, counters = reduction.tree, reduction.labels, reduction.counters
    if labels[node, label, C_COUNT] == 0:
        tree[node, T_LABELS] += 1
    labels[node, label, C_COUNT] += 1
    count = np.int64(labels[node, label, C_COUNT])
    if count > tree[node, T_MAX_COUNT]:
        tree[node, T_MAX_COUNT] = count
        tree[node, T_MAX_LABEL] = label + 1
    if tree[node, T_INTERNAL] != 0:
        return True
    spare = counters[K_PREDICTORS] < reduction.classes.shape[0]
    others = (tree[node, T_MIN_COUNT] - tree[node, T_MAX_COUNT]) % U32  # VW's uint32
    resistance = (swap_resistance * (tree[0, T_MIN_COUNT] + 1)) % U32
    if tree[node, T_LABELS] <= 1 or not (spare or others > resistance):
        return False
    if spare and counters[K_NODES] + 2 <= tree.shape[0]:
        left, right = counters[K_NODES], counters[K_NODES] + 1
        counters[K_NODES] += 2
        for child in (left, right):  # fresh nodes (a model's unused rows may hold anything)
            tree[child, T_PARENT] = 0
            tree[child, T_MIN_COUNT] = 0
            _clear_leaf(reduction, child)
        tree[node, T_PREDICTOR] = counters[K_PREDICTORS]
        counters[K_PREDICTORS] += 1
    elif spare:  # no room: the tree's arrays were not sized for K (fits refuses that)
        return False
    else:
        leaf = _swap_leaf(tree)
        if leaf == node or tree[leaf, T_PARENT] == 0:
            # VW would make the node its own child, or free the root, and then walk the
            # cycle forever (docs/vw-differences.md): the node stays a leaf
            return False
        left, right, problem = _swap_leaves(reduction, leaf)
        tree[node, T_PREDICTOR] = problem
    for child in (left, right):
        tree[child, T_PARENT] = node
    tree[node, T_LEFT] = left
    tree[node, T_RIGHT] = right
    tree[left, T_MIN_COUNT] = tree[node, T_MIN_COUNT] // 2
    tree[right, T_MIN_COUNT] = tree[node, T_MIN_COUNT] - tree[left, T_MIN_COUNT]
    _update_min_count(tree, left)
    tree[left, T_MAX_LABEL] = tree[node, T_MAX_LABEL]
    tree[right, T_MAX_LABEL] = tree[node, T_MAX_LABEL]
    tree[node, T_INTERNAL] = 1
    return True


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """The label's walk: each node it reaches counts it (and may split); an internal node's
    problem learns -1 when the node's mean score is above the label's there, else +1, then
    predicts again: its raw score joins both means (float32, as VW's) and its clipped score
    chooses the child. The leaf reached counts the example. A label outside 1..K is not
    learned."""
    tree, margins, labels = reduction.tree, reduction.margins, reduction.labels
    k = labels.shape[1]
    if not 1 <= ex.y <= k:
        return
    label = np.int64(ex.y) - 1
    resistance = np.int64(s.swap_resistance)
    node = 0
    for _ in range(tree.shape[0]):
        if not _see_label(reduction, node, label, resistance):
            break
        problem = tree[node, T_PREDICTOR]
        y = -1.0 if margins[node, M_NORM_EH] > labels[node, label, C_NORM_EHK] else 1.0
        class_features = _class_features(problem, features, s, expander, True, scratch)
        learn_class(problem, y, ex.imp, reduction, family, model, class_features, ex, s,
                    scratch)
        raw = dispatch.predict(family, model, class_features, ex.initial, ex.imp, s, False)
        raw = 0.0 if np.isnan(raw) else raw
        raw32 = np.float64(np.float32(raw))  # VW's partial prediction is a float
        margins[node, M_EH] += raw32
        labels[node, label, C_EHK] += raw32
        tree[node, T_N] = (tree[node, T_N] + 1) % U32
        labels[node, label, C_NK] += 1
        margins[node, M_NORM_EH] = np.float32(np.float32(margins[node, M_EH])
                                              / np.float32(tree[node, T_N]))
        labels[node, label, C_NORM_EHK] = np.float32(np.float32(labels[node, label, C_EHK])
                                                     / np.float32(labels[node, label, C_NK]))
        node = tree[node, T_LEFT] if clipped(raw, model.state) < 0 else tree[node, T_RIGHT]
    tree[node, T_MIN_COUNT] = (tree[node, T_MIN_COUNT] + 1) % U32
    _update_min_count(tree, node)
