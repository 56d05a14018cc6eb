"""An example's features as the learner family sees them: the batch's own, or after the
interactions and --ignore_linear, in the example loop's expansion scratch (kernel/loop.py; the
multi-line reductions, reductions/ldf_kernels.py, expand each line of an example with it).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.features.interactions import expand, expanded_size
from olearn.kernel.bundles import Features


@njit(cache=True, nogil=True, _nrt=False)
def drop_linear(x_idx, x_val, n, namespace, lo, hi, linear):
    """Leave out of an expanded example (``n`` rows: the batch's features ``lo:hi`` in order,
    then the interactions) the linear features of namespaces ``linear`` does not flag; returns
    the new count and how many were left out."""
    kept = 0
    for k in range(n):
        if k >= hi - lo or linear[namespace[lo + k]]:
            x_idx[kept] = x_idx[k]
            x_val[kept] = x_val[k]
            kept += 1
    return kept, n - kept


@njit(cache=True, nogil=True, inline="always")
def expansion_scratch(terms, rows):
    """The interactions' scratch: namespace ranges, component positions, ``rows`` rows for an
    expanded example, and no source rows (no --audit here)."""
    return (np.zeros((256, 2), dtype=np.int64), np.empty(terms.shape[1], dtype=np.int64),
            np.empty(rows, dtype=np.uint32), np.empty(rows, dtype=np.float32),
            np.empty((0, terms.shape[1]), dtype=np.int64))


# inline: a function compiled on its own with numba's runtime counts a reference to an array it
# returns, which the example loop (without the runtime) would never give back: the batch's
# arrays would never be freed. Inlined, it is compiled as part of the loop. (The loop's other
# callees return numbers only.)
@njit(cache=True, nogil=True, inline="always")
def example_features(e, examples, expander, s, some_not_linear, interacting, expansion):
    """Example ``e``'s features (kernel/bundles.py ``Features``): the batch's own, or
    (``interacting``) after the interactions and --ignore_linear, written to the scratch of
    :func:`expansion_scratch`. Returns (features, how many --ignore_linear left out, 0), or
    with rows needed last when the scratch holds fewer rows than the expansion may need (then
    nothing is written). ``s``: the loop's settings (kernel/loop.py)."""
    offsets, index, value, namespace = (examples.offsets, examples.index, examples.value,
                                        examples.namespace)
    if not interacting:
        return Features(index, value, offsets[e], offsets[e + 1], namespace), 0, 0
    ranges, pos, x_idx, x_val, no_src = expansion
    lo = offsets[e]
    hi = offsets[e + 1]
    need = expanded_size(namespace, lo, hi, expander.terms, ranges)
    if need > x_idx.shape[0]:
        return Features(x_idx, x_val, 0, 0, namespace), 0, need
    n = expand(index, value, lo, hi, expander.terms, ranges, s.mask, s.permutations, x_idx,
               x_val, no_src, pos)
    left_out = 0
    if some_not_linear:
        n, left_out = drop_linear(x_idx, x_val, n, namespace, lo, hi, expander.linear)
    return Features(x_idx, x_val, 0, n, namespace), left_out, 0


@njit(cache=True, nogil=True, _nrt=False)
def unit_rows(first, end, examples, expander, interacting, expansion):
    """The expansion rows a multi-line example (lines ``first:end``) needs: room for two of its
    lines' features (--wap_ldf learns one action's less another's); 0 when the scratch has
    them."""
    offsets, namespace = examples.offsets, examples.namespace
    ranges, _, x_idx, _, _ = expansion
    most = 0
    for j in range(first, end):
        lo = offsets[j]
        hi = offsets[j + 1]
        need = expanded_size(namespace, lo, hi, expander.terms, ranges) if interacting else (
            hi - lo)
        most = max(most, need)
    return 2 * most if 2 * most > x_idx.shape[0] else 0
