"""--oaa_subsample's kernels (reductions/subsample.py holds its configuration and state): the
example loop (kernel/loop.py) calls them by the bundle type ``SubsampledState``
(reductions/table.py). An example is predicted and scored as --oaa's kernels do (VW predicts
before its learn_randomized, whose own prediction it drops); a learned one then learns its
label's class and N others (:func:`learn`)."""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.kernel.layouts import S_INDEXING, P
from olearn.reductions import oaa_kernels
from olearn.reductions.oaa_kernels import _class_features, learn_class


@njit(cache=True, nogil=True, _nrt=False)
def fits(reduction, model, out):
    """--oaa's checks, and an order of the K classes with its position inside it."""
    if not oaa_kernels.fits(reduction, model, out):
        return False
    order = reduction.order
    k = np.int64(model.params[P.classes])
    if (order.shape[0] != k or reduction.position.shape[0] < 1
            or not 0 <= reduction.position[0] < k or not 1 <= reduction.negatives < k):
        return False
    for i in range(k):
        if order[i] >= k:
            return False
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _positive_class(y, indexing, k_classes):
    """The class that learns +1 (VW's validation: a label outside the classes is class 0
    when 0-based, the last class when 1-based), modulo the K classes."""
    if indexing == 0 and not 0 <= y < k_classes:
        return 0
    if indexing == 1 and not 1 <= y <= k_classes:
        return k_classes - 1
    return oaa_kernels.class_label(y, indexing, k_classes)


@njit(cache=True, nogil=True, inline="always")
def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    """VW's learn_randomized: the label's class learns +1, then the order's next N classes
    other than (VW's arithmetic) class ``(label + K - 1) mod K`` learn -1 with importance times
    K/N, each predicting as it learns; the order's position moves on. (VW shows the
    prediction --oaa made before: its learn does not return one.)"""
    k_classes = np.int64(model.params[P.classes])
    indexing = model.state[S_INDEXING]
    label = _positive_class(ex.y, indexing, k_classes)
    class_features = _class_features(label, features, s, expander, True, scratch)
    learn_class(label, 1.0, ex.imp, reduction, family, model, class_features, ex, s, scratch)
    negatives = np.int64(reduction.negatives)
    imp = np.float64(np.float32(ex.imp) * (np.float32(k_classes) / np.float32(negatives)))
    # VW skips (label + K - 1) mod K: the label's class when classes are 1-based
    skipped = (np.int64(ex.y) + k_classes - 1) % k_classes if 0 <= ex.y < 4294967296.0 else -1
    p = np.int64(reduction.position[0])
    count = 0
    # a permutation (fits) gives N classes within 2K steps; the bound keeps any order finite
    for _ in range(2 * k_classes):
        if count == negatives:
            break
        c = np.int64(reduction.order[p])
        p = (p + 1) % k_classes
        if c == skipped:
            continue
        class_features = _class_features(c, features, s, expander, True, scratch)
        learn_class(c, -1.0, imp, reduction, family, model, class_features, ex, s, scratch)
        count += 1
    reduction.position[0] = p
