"""Multi-line examples (--csoaa_ldf, --wap_ldf; docs/vw-reference.md §9.5): the lines up to a
blank line are one example, an action per line, after an optional ``shared`` line.

The reader cuts blocks at blank lines only (data/sources.py), so a block holds whole
multi-line examples, and a batch's lines of one example are consecutive examples of the batch:
a new one starts where the batch's line numbers skip a line (the blank one). :class:`Grouping`
turns a parsed batch into its actions, as VW's shared-feature merger does: the shared line's
features (but its constant) are appended to each action's, and the shared line itself leaves
the batch. Each action's ``numbers`` row then says where it stands: column 2 its position in
its example (0: the first action), column 0 whether the whole example is labeled (0) or not
(NaN: an action without a cost, or with other than one, makes it a test example, as VW).
"""
from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from olearn.core.arrays import at
from olearn.data.batch import ExampleBatch, valid_offsets
from olearn.data.hashing import CONSTANT_NAMESPACE
from olearn.data.labels import NO_COST, SHARED_COST
from olearn.errors import OlearnError

POSITION = 2  # the numbers column of an action's position in its multi-line example


@njit(cache=True, nogil=True, _nrt=False)
def _is_shared(e, cost_offsets, cost_value):
    lo = cost_offsets[e]
    return cost_offsets[e + 1] - lo == 1 and cost_value[lo] == SHARED_COST


@njit(cache=True, nogil=True, _nrt=False)
def _labeled(first, end, cost_offsets, cost_value):
    """Whether the actions ``first:end`` each have exactly one cost (VW's test otherwise)."""
    for e in range(first, end):
        lo = cost_offsets[e]
        if cost_offsets[e + 1] - lo != 1 or cost_value[lo] == NO_COST:
            return False
    return True


@njit(cache=True, nogil=True)
def merged(offsets, namespace, lines, cost_offsets, cost_value):
    """The actions of a parsed batch's multi-line examples: which examples stay (the actions),
    their features as positions in the batch's (each action's own, then its example's shared
    features but the constant), the new CSR offsets, each action's position and whether its
    example is labeled; and the first misplaced ``shared`` line (a shared line that does not
    start its example; -1: none)."""
    n = offsets.shape[0] - 1
    if not (lines.shape[0] >= n and cost_offsets.shape[0] == n + 1
            and valid_offsets(offsets, namespace.shape[0])
            and valid_offsets(cost_offsets, cost_value.shape[0])):
        raise ValueError("merged: batch arrays of different lengths")
    keep = np.empty(n, dtype=np.int64)
    shared_line = np.empty(n, dtype=np.int64)  # each action's example's shared line (-1: none)
    position = np.empty(n, dtype=np.float32)
    labeled = np.empty(n, dtype=np.bool_)
    new_offsets = np.zeros(n + 1, dtype=np.int64)
    size = 0
    kept = 0
    e = 0
    while e < n:  # one multi-line example: lines e:end
        end = e + 1
        while end < n and at(lines, end) == at(lines, end - 1) + 1:
            end += 1
        shared = _is_shared(e, cost_offsets, cost_value)
        first = e + 1 if shared else e
        for j in range(first, end):
            if _is_shared(j, cost_offsets, cost_value):
                return keep[:0], np.empty(0, dtype=np.int64), new_offsets[:1], position[:0], \
                    labeled[:0], j
        extra = 0
        if shared:
            for k in range(offsets[e], offsets[e + 1]):
                extra += namespace[k] != CONSTANT_NAMESPACE
        is_labeled = _labeled(first, end, cost_offsets, cost_value)
        for j in range(first, end):
            keep[kept] = j
            shared_line[kept] = e if shared else -1
            position[kept] = j - first
            labeled[kept] = is_labeled
            size += offsets[j + 1] - offsets[j] + extra
            new_offsets[kept + 1] = size
            kept += 1
        e = end
    take = np.empty(size, dtype=np.int64)
    o = 0
    for a in range(kept):
        j = keep[a]
        for k in range(offsets[j], offsets[j + 1]):
            take[o] = k
            o += 1
        s = shared_line[a]
        if s >= 0:
            for k in range(offsets[s], offsets[s + 1]):
                if namespace[k] != CONSTANT_NAMESPACE:
                    take[o] = k
                    o += 1
    return keep[:kept], take, new_offsets[:kept + 1], position[:kept], labeled[:kept], -1


def chosen(config) -> bool:
    """Whether examples are multi-line (--csoaa_ldf, --wap_ldf)."""
    return config.csoaa_ldf is not None or config.wap_ldf is not None


class Grouping:
    """--csoaa_ldf's and --wap_ldf's multi-line examples, applied to each parsed batch."""

    @classmethod
    def of(cls, config) -> "Grouping | None":
        return cls() if chosen(config) else None

    @staticmethod
    def apply(batch: ExampleBatch) -> ExampleBatch:
        """``batch``'s actions, their features merged with their shared line's (names follow
        their features)."""
        keep, take, offsets, position, labeled, bad = merged(
            batch.offsets, batch.namespace, batch.lines, batch.cost_offsets, batch.cost_value)
        if bad >= 0:
            raise OlearnError("a 'shared' line must be the first line of its multi-line example",
                              batch.source, batch.first_line + int(batch.lines[bad]) + 1)
        numbers = batch.numbers[keep].copy()
        numbers[:, 0] = np.where(labeled, np.float32(0), np.float32(np.nan))
        numbers[:, 1] = 1.0
        numbers[:, POSITION] = position
        counts = np.diff(batch.cost_offsets)[keep]
        cost_offsets = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(counts, out=cost_offsets[1:])
        listed = np.repeat(batch.cost_offsets[keep], counts) + (
            np.arange(cost_offsets[-1]) - np.repeat(cost_offsets[:-1], counts))
        more = {"audit": batch.audit[take]} if len(batch.audit) else {}
        return dataclasses.replace(
            batch, numbers=numbers, tags=batch.tags[keep], lines=batch.lines[keep],
            offsets=offsets, index=batch.index[take], value=batch.value[take],
            namespace=batch.namespace[take], cost_offsets=cost_offsets,
            cost_class=batch.cost_class[listed], cost_value=batch.cost_value[listed], **more)


@njit(cache=True, nogil=True, _nrt=False)
def group_end(numbers, e):
    """The end of the multi-line example whose first action is ``e``: the next action at
    position 0, or the batch's end."""
    n = numbers.shape[0]
    h = e + 1
    while h < n and numbers[h, POSITION] != 0:
        h += 1
    return h
