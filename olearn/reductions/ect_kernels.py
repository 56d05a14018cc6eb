"""--ect's kernels (reductions/ect.py holds its configuration, circuit and state): the example
loop (kernel/loop.py) calls them by the bundle type ``EctState`` (reductions/table.py).

Problem i is the example's features at slots ``(h + i) & mask`` (--oaa's copy,
reductions/oaa_kernels.py), learned with its own normalizer sums. A match's right player wins
when its problem's clipped score is above 0. As VW's ect, the prediction shown is made before
the example is learned; the label's path then learns each match (the class's side, with the
example's importance) and reads who won from the problem's score after that update, and the
final tournament's matches learn with weight 2^(depth left) in place of the importance.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.kernel import dispatch
from olearn.kernel.bundles import Predicted
from olearn.reductions.ect import (
    N_LAST,
    N_LEFT,
    N_LOSER,
    N_RIGHT,
    N_WINNER,
    Z_CLASSES,
    Z_ERRORS,
    Z_HEIGHT,
    Z_LAST_PAIR,
)
from olearn.reductions.oaa_kernels import _class_features, fits_classes, learn_class
from olearn.reductions.one_problem import clipped


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """--oaa's checks over the problems, and a circuit that stays inside them: every match's
    players and successors are nodes, every final a node, E tournaments' room in ``won``."""
    nodes, finals, sizes = reduction.nodes, reduction.finals, reduction.sizes
    if not (fits_classes(reduction, model) and out.preds.shape[1] >= 2
            and sizes.shape[0] >= 4 and nodes.shape[1] >= 6):
        return False
    k, errors, last_pair, height = sizes[Z_CLASSES], sizes[Z_ERRORS], sizes[Z_LAST_PAIR], \
        sizes[Z_HEIGHT]
    n = nodes.shape[0]
    if not (2 <= k <= n and 0 <= errors < finals.shape[0] and errors < reduction.won.shape[0]
            and 0 <= height < 32 and (1 << height) > errors
            and last_pair == n - k and last_pair + errors <= reduction.classes.shape[0]):
        return False
    for i in range(n):
        for c in range(N_WINNER, N_RIGHT + 1):
            if not 0 <= nodes[i, c] < n:
                return False
    for i in range(finals.shape[0]):
        if not k <= finals[i] < n:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _score(problem, reduction, family, model, expander, features, ex, s, scratch):
    """Problem ``problem``'s raw score (NaN read as 0) and its score clipped to the range."""
    class_features = _class_features(problem, features, s, expander, False, scratch)
    raw = dispatch.predict(family, model, class_features, ex.initial, ex.imp, s, False)
    raw = 0.0 if np.isnan(raw) else raw
    return raw, clipped(raw, model.state)


@njit(cache=True, nogil=True, inline="always")
def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    """The final tournament from its root (a match is played only where its winner's index
    stays within the tournaments), then the winning tournament's bracket down to a class.
    Writes the class (1..K) and the last problem's raw score."""
    nodes, sizes = reduction.nodes, reduction.sizes
    k, errors, last_pair = sizes[Z_CLASSES], sizes[Z_ERRORS], sizes[Z_LAST_PAIR]
    winner = 0
    raw = 0.0
    for i in range(sizes[Z_HEIGHT] - 1, -1, -1):
        candidate = winner | (1 << i)
        if candidate <= errors:
            raw, p = _score(last_pair + candidate - 1, reduction, family, model, expander,
                            features, ex, s, scratch)
            if p > 0:
                winner = candidate
    node = reduction.finals[winner]
    while node >= k:
        raw, p = _score(node - k, reduction, family, model, expander, features, ex, s,
                        scratch)
        node = nodes[node, N_RIGHT] if p > 0 else nodes[node, N_LEFT]
    shown = np.float64(node + 1)
    pred[0] = shown
    pred[1] = raw
    return Predicted(shown, np.nan, features.hi - features.lo, 0)


@njit(cache=True, nogil=True, inline="always")
def score(reduction, model, predicted, ex, s, scratch):
    """The reported loss (the error); nothing is scored as one."""
    return (predicted.shown != ex.y) * ex.imp, 0.0, 0


@njit(cache=True, nogil=True, inline="always")
def _learn_side(problem, right, imp, reduction, family, model, expander, features, ex, s,
                scratch):
    """Problem ``problem`` learns the ``right`` (+1) or left (-1) side with importance ``imp``;
    returns its clipped score before the update."""
    class_features = _class_features(problem, features, s, expander, True, scratch)
    _, p = learn_class(problem, 1.0 if right else -1.0, imp, reduction, family, model,
                       class_features, ex, s, scratch)
    return p, class_features


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """The label's class plays its path: each match learns the class's side, and the class wins
    it when the updated problem's clipped score is on that side (VW's second learn with weight
    0, which predicts and does not update); a won final sends it to the next tournament, a
    lost match to its loser's. Then the final tournament's matches between a tournament the
    class won and one it lost learn, level by level, with weight 2^(depth left). A label
    outside 1..K is not learned (VW's warning: reductions/ect.py's label checks)."""
    nodes, sizes, won = reduction.nodes, reduction.sizes, reduction.won
    k, last_pair, height = sizes[Z_CLASSES], sizes[Z_LAST_PAIR], sizes[Z_HEIGHT]
    if not 1 <= ex.y <= k:
        return
    label = np.int64(ex.y) - 1
    n_won = 0
    node = nodes[label, N_WINNER]
    left = nodes[node, N_LEFT] == label
    while True:
        right = not left
        _, class_features = _learn_side(node - k, right, ex.imp, reduction, family, model,
                                        expander, features, ex, s, scratch)
        _, after = learn_class(node - k, 1.0 if right else -1.0, 0.0, reduction, family, model,
                               class_features, ex, s, scratch)
        if after > 0 if right else after < 0:
            if nodes[node, N_LAST] == 0:
                left = nodes[nodes[node, N_WINNER], N_LEFT] == node
            elif n_won < won.shape[0]:
                won[n_won] = 1
                n_won += 1
            node = nodes[node, N_WINNER]
        else:
            if nodes[node, N_LAST] == 0:
                left = nodes[nodes[node, N_LOSER], N_LEFT] == node
            if (nodes[node, N_LAST] != 0 or nodes[node, N_LOSER] == 0) and n_won < won.shape[0]:
                won[n_won] = 0
                n_won += 1
            node = nodes[node, N_LOSER]
        if node < k:  # 0: out of the tournaments
            break
    for i in range(height):
        j = 0
        # VW shortens the list inside this loop, so the bound is read again at each match
        while j < n_won // 2:
            a, b = won[2 * j], won[2 * j + 1]
            if a == b:
                won[j] = a
            else:
                p, _ = _learn_side(last_pair + j * (1 << (i + 1)) + (1 << i) - 1, a == 0,
                                   np.float64(1 << (height - i - 1)), reduction, family, model,
                                   expander, features, ex, s, scratch)
                won[j] = b if p > 0 else a
            if n_won % 2 == 1:
                won[n_won // 2] = won[n_won - 1]
            n_won = (n_won + 1) // 2
            j += 1
