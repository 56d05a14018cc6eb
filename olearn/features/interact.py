"""``--interact AB``: VW's interact reduction (element-wise products of two namespaces), applied
on the parse threads after every other feature option, as VW applies it before learning.

Namespace A's and B's first features are anchors of value 1; each other feature is known by its
offset from its namespace's anchor (indices modulo the table). Walking both namespaces in the
order their features came, a feature of A whose offset equals one of B's becomes their product
(A's index, the values' product), as do the anchors; A's other features, and all of B's, are
left out. Offsets must increase within each namespace: where one does not, the walk stops
there (VW's "interact features are out of order") and the products so far are kept. An
example without both namespaces, or whose first value in one is not 1, is learned as it is.
VW logs both problems as errors; here they are parse warnings (file and line).
"""
from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from olearn.core.option import option_bytes, text
from olearn.data.batch import ExampleBatch, valid_offsets
from olearn.data.parsed import W_INTERACT_ANCHOR, W_INTERACT_ORDER

OPTIONS = (
    text("--interact", metavar="AB", model=True, parsing=True,
         help="Replace namespace A's features by their element-wise products with namespace "
              "B's (matched by offset from each namespace's first feature, of value 1); B's "
              "features are left out."),
)


def check(config) -> None:
    """Two namespace letters, and one-line examples."""
    from olearn.errors import OptionError
    if config.interact is None:
        return
    if len(option_bytes(config.interact)) != 2:
        raise OptionError(f"--interact takes two namespace letters, not {config.interact!r}")
    for name, on in (("csoaa_ldf", config.csoaa_ldf is not None),
                     ("wap_ldf", config.wap_ldf is not None)):
        if on:
            raise OptionError(f"--interact does not take --{name} (multi-line examples)")


class Interact:
    """--interact's two namespaces, applied to each parsed batch."""

    def __init__(self, first: int, second: int, mask: int):
        self.first, self.second, self.mask = first, second, mask

    @classmethod
    def of(cls, config) -> "Interact | None":
        if config.interact is None:
            return None
        first, second = option_bytes(config.interact)
        return cls(first, second, config.mask)

    def apply(self, batch: ExampleBatch) -> ExampleBatch:
        """``batch`` with each example's A features replaced by the products (names follow
        A's features); an example whose anchor is not 1 or whose offsets fall gets a parse
        warning."""
        offsets, kept, value, problems = interacted(
            batch.offsets, batch.index, batch.value, batch.namespace, self.first,
            self.second, self.mask)
        more = {}
        if len(batch.audit):
            more["audit"] = batch.audit[kept]
        found = np.flatnonzero(problems)
        if len(found):
            rows = np.zeros((len(found), batch.warnings.shape[1]), dtype=batch.warnings.dtype)
            rows[:, 0] = batch.lines[found]
            rows[:, 1] = problems[found]
            more["warnings"] = np.concatenate([batch.warnings, rows])
            more["n_warnings"] = batch.n_warnings + len(found)
        return dataclasses.replace(batch, offsets=offsets, index=batch.index[kept],
                                   value=value, namespace=batch.namespace[kept], **more)


# an example's problem, if any: its parse warning
BAD_ANCHOR, OUT_OF_ORDER = W_INTERACT_ANCHOR, W_INTERACT_ORDER


@njit(cache=True, nogil=True)
def interacted(offsets, index, value, namespace, first, second, mask):
    """The batch's new offsets, the positions of the features kept (in order), their values,
    and each example's problem (0, BAD_ANCHOR, OUT_OF_ORDER). ValueError for arrays that do
    not fit each other."""
    if not valid_offsets(offsets, min(index.shape[0], value.shape[0], namespace.shape[0])):
        raise ValueError("interacted: arrays that do not fit each other")
    n = offsets.shape[0] - 1
    kept = np.empty(index.shape[0], dtype=np.int64)
    new_value = np.empty(index.shape[0], dtype=value.dtype)
    new_offsets = np.zeros(n + 1, dtype=np.int64)
    problems = np.zeros(n, dtype=np.int64)
    k = 0
    for e in range(n):
        lo, hi = offsets[e], offsets[e + 1]
        ones = np.empty(hi - lo, dtype=np.int64)  # namespace A's positions, then B's
        twos = np.empty(hi - lo, dtype=np.int64)
        n1 = n2 = 0
        for j in range(lo, hi):
            if namespace[j] == first:
                ones[n1] = j
                n1 += 1
            elif namespace[j] == second:
                twos[n2] = j
                n2 += 1
        usable = n1 > 0 and n2 > 0 and value[ones[0]] == 1 and value[twos[0]] == 1
        if n1 > 0 and n2 > 0 and not usable:
            problems[e] = BAD_ANCHOR
        for j in range(lo, hi):
            if not usable or (namespace[j] != first and namespace[j] != second):
                kept[k] = j
                new_value[k] = value[j]
                k += 1
            elif j == ones[0]:  # the products, where A's features were
                kept[k] = j
                new_value[k] = value[j] * value[twos[0]]
                k += 1
                k, problem = _products(ones, n1, twos, n2, index, value, mask, kept,
                                       new_value, k)
                problems[e] = problem
        new_offsets[e + 1] = k
    return new_offsets, kept[:k], new_value[:k], problems


@njit(cache=True, nogil=True)
def _products(ones, n1, twos, n2, index, value, mask, kept, new_value, k):
    """The matched pairs after the anchors, written from ``k``; returns the new ``k`` and the
    example's problem."""
    base1 = np.int64(index[ones[0]]) & mask
    base2 = np.int64(index[twos[0]]) & mask
    previous1 = previous2 = 0
    i1 = i2 = 1
    while i1 < n1 and i2 < n2:
        offset1 = ((np.int64(index[ones[i1]]) & mask) - base1) & mask
        offset2 = ((np.int64(index[twos[i2]]) & mask) - base2) & mask
        if offset1 < previous1 or offset2 < previous2:
            return k, OUT_OF_ORDER
        if offset1 == offset2:
            kept[k] = ones[i1]
            new_value[k] = value[ones[i1]] * value[twos[i2]]
            k += 1
            i1 += 1
            i2 += 1
        elif offset1 < offset2:
            i1 += 1
        else:
            i2 += 1
        previous1, previous2 = offset1, offset2
    return k, 0
