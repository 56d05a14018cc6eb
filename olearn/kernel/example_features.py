"""An example's features as the learner family sees them: the batch's own, or after the
interactions and --ignore_linear, in the example loop's expansion scratch (kernel/loop.py; the
multi-line reductions, reductions/ldf_kernels.py, expand each line of an example with it).

An example whose expansion holds more than ``s.chunk_rows`` rows (features/interactions.py
CHUNK_ROWS) is, where the stack can learn it so (a family with ``update_wide``,
learners/family.py, under no reduction or --oaa), expanded a chunk at a time into scratch of
that many rows (:func:`chunk`): the memory an example takes does not grow with its width. Each
pass over its features (the prediction, the update's passes) expands it again.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.features.interactions import (
    cursor_size,
    expand,
    expand_part,
    expanded_size,
    expansion_done,
    start_cursor,
)
from olearn.kernel.bundles import Features


@njit(cache=True, nogil=True, _nrt=False)
def some_not_linear(linear):
    """Whether --ignore_linear leaves any namespace's features out of the linear terms."""
    flagged = 0
    for ns in range(256):  # no early exit: LLVM vectorizes the sum
        flagged += linear[ns]
    return flagged < 256


@njit(cache=True, nogil=True, _nrt=False)
def drop_linear(x_idx, x_val, n, namespace, lo, hi, linear):
    """Leave out of expanded rows (``n`` rows: the batch's features ``lo:hi`` in order, then
    interactions) the linear features of namespaces ``linear`` does not flag; returns the new
    count and how many were left out."""
    kept = 0
    for k in range(n):
        if k >= hi - lo or linear[namespace[lo + k]]:
            x_idx[kept] = x_idx[k]
            x_val[kept] = x_val[k]
            kept += 1
    return kept, n - kept


@njit(cache=True, nogil=True, inline="always")
def expansion_scratch(terms, rows):
    """The interactions' scratch: namespace ranges, the expansion's cursor, ``rows`` rows for
    an expanded example (or one chunk of it), and no source rows (no --audit here)."""
    return (np.zeros((256, 2), dtype=np.int64), np.empty(cursor_size(terms), dtype=np.int64),
            np.empty(rows, dtype=np.uint32), np.empty(rows, dtype=np.float32),
            np.empty((0, terms.shape[1]), dtype=np.int64))


# inline: a function compiled on its own with numba's runtime counts a reference to an array it
# returns, which the example loop (without the runtime) would never give back: the batch's
# arrays would never be freed. Inlined, it is compiled as part of the loop. (The loop's other
# callees return numbers only.)
@njit(cache=True, nogil=True, inline="always")
def example_features(e, examples, expander, s, not_linear, interacting, expansion, chunked):
    """Example ``e``'s features (kernel/bundles.py ``Features``): the batch's own, or
    (``interacting``) after the interactions and --ignore_linear (``not_linear``: it leaves
    some namespace out), written to the scratch of :func:`expansion_scratch`. Returns
    (features, how many --ignore_linear left out, rows needed, wide): rows needed > 0 when the
    scratch holds fewer rows than the expansion may need (then nothing is written); wide when
    (``chunked``: the stack learns an example by chunks) the expansion exceeds ``s.chunk_rows``
    (then the features are none: :func:`chunk` gives the chunks). ``s``: the loop's
    settings (kernel/loop.py)."""
    offsets, index, value, namespace = (examples.offsets, examples.index, examples.value,
                                        examples.namespace)
    if not interacting:
        return Features(index, value, offsets[e], offsets[e + 1], namespace), 0, 0, False
    ranges, cursor, x_idx, x_val, no_src = expansion
    lo = offsets[e]
    hi = offsets[e + 1]
    need = expanded_size(namespace, lo, hi, expander.terms, ranges)
    if need > x_idx.shape[0]:
        if chunked and need > s.chunk_rows:
            if x_idx.shape[0] < s.chunk_rows:
                return Features(x_idx, x_val, 0, 0, namespace), 0, s.chunk_rows, False
            left_out = 0
            if not_linear:  # the linear rows left out, counted without expanding
                for k in range(lo, hi):
                    left_out += not expander.linear[namespace[k]]
            # no features: each pass over a wide example walks its chunks from the first
            return Features(x_idx, x_val, 0, 0, namespace), left_out, 0, True
        return Features(x_idx, x_val, 0, 0, namespace), 0, need, False
    n = expand(index, value, lo, hi, expander.terms, ranges, s.mask, s.permutations, x_idx,
               x_val, no_src, cursor)
    left_out = 0
    if not_linear:
        n, left_out = drop_linear(x_idx, x_val, n, namespace, lo, hi, expander.linear)
    return Features(x_idx, x_val, 0, n, namespace), left_out, 0, False


@njit(cache=True, nogil=True, inline="always")
def chunk(chunks, s, restart):
    """The next chunk of a wide example's features (kernel/bundles.py ``Chunks``), or
    (``restart``) its first: at most the scratch's rows, after --ignore_linear (a chunk may
    be empty then), each index shifted by ``chunks.shift``. :func:`chunks_done` tells when the
    last was given."""
    examples, e, expander, expansion, shift = chunks
    namespace = examples.namespace
    ranges, cursor, x_idx, x_val, no_src = expansion
    lo = examples.offsets[e]
    hi = examples.offsets[e + 1]
    if restart:  # the ranges again: they are the scratch of any expansion
        expanded_size(namespace, lo, hi, expander.terms, ranges)
        start_cursor(cursor, lo)
    first = cursor[1] if cursor[0] < 0 else hi  # the batch position of a linear first row
    n = expand_part(examples.index, examples.value, lo, hi, expander.terms, ranges, s.mask,
                    s.permutations, x_idx, x_val, no_src, cursor)
    if some_not_linear(expander.linear):
        n, _ = drop_linear(x_idx, x_val, n, namespace, first, hi, expander.linear)
    if shift != 0:
        for r in range(n):
            x_idx[r] = (np.int64(x_idx[r]) + shift) & s.mask
    return Features(x_idx, x_val, 0, n, namespace)


@njit(cache=True, nogil=True, _nrt=False)
def chunks_done(chunks):
    """Whether :func:`chunk` gave a wide example's last chunk."""
    return expansion_done(chunks.expansion[1], chunks.expander.terms)


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
