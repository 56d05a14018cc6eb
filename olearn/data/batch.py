"""ExampleBatch: a block of parsed, hashed examples in CSR layout."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numba import njit

from olearn.core.arrays import at
from olearn.data.parsed import AUDIT_COLS

NO_PARTS = np.full((0, 1), -1, dtype=np.int64)
NO_COST_OFFSETS = np.zeros(0, dtype=np.int64)
NO_COST_CLASSES = np.zeros(0, dtype=np.uint32)
NO_COSTS = np.zeros(0, dtype=np.float32)


@dataclass
class ExampleBatch:
    """Examples of one newline-aligned block of one source.

    Example ``e`` has features ``offsets[e]:offsets[e+1]`` of ``index``/``value``/``namespace``.
    ``numbers[e]`` is (label, importance, initial); the label is NaN when the example has none.
    ``tags[e]`` is a (start, end) span of ``text`` (start -1: no tag); ``lines[e]`` is the
    0-based line of the example within the block. ``audit`` holds byte spans of names (only
    when parsed for ``--audit``). ``warnings`` rows are (line, code, start, end), the first
    ``len(warnings)`` of ``n_warnings``. The block's ``n_lines`` lines start at line
    ``pass_line`` of the pass over all sources (holdout counts lines of a pass). With
    cost-sensitive labels (--csoaa) or multilabels, example ``e``'s classes and costs are
    ``cost_offsets[e]:cost_offsets[e+1]`` of ``cost_class``/``cost_value`` (all three empty
    otherwise; a class listed without a cost has data/labels.py's ``NO_COST``).
    """

    text: np.ndarray
    source: str
    first_line: int
    numbers: np.ndarray
    tags: np.ndarray
    lines: np.ndarray
    offsets: np.ndarray
    index: np.ndarray
    value: np.ndarray
    namespace: np.ndarray
    audit: np.ndarray
    warnings: np.ndarray
    n_warnings: int
    bytes_read: int
    pass_line: int = 0
    n_lines: int = 0
    # each --ngram gram's components (positions in this batch, -1 padded), with ``audit`` only
    parts: np.ndarray = dataclasses.field(default_factory=lambda: NO_PARTS)
    cost_offsets: np.ndarray = dataclasses.field(default_factory=lambda: NO_COST_OFFSETS)
    cost_class: np.ndarray = dataclasses.field(default_factory=lambda: NO_COST_CLASSES)
    cost_value: np.ndarray = dataclasses.field(default_factory=lambda: NO_COSTS)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def empty(cls) -> "ExampleBatch":
        """A batch of no examples, of the parser's types (data/parse.py): what the kernels
        are compiled for, without parsing."""
        return cls(np.zeros(0, dtype=np.uint8), "", 0, np.zeros((0, 3), dtype=np.float32),
                   np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64),
                   np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint32),
                   np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.uint8),
                   np.zeros((0, AUDIT_COLS), dtype=np.int64), np.zeros((0, 4), dtype=np.int64),
                   0, 0)

    def example(self, e: int) -> "ExampleBatch":
        """Example ``e`` alone, for the learner (views of its arrays; names stay batch-wide)."""
        return self.examples(e, e + 1)

    def examples(self, first: int, end: int) -> "ExampleBatch":
        """Examples ``first:end`` (views of the arrays; names, warnings and line counts stay
        the block's, so each example keeps its line of the pass)."""
        lo, hi = self.offsets[first], self.offsets[end]
        costs = {}
        if len(self.cost_offsets):
            c_lo, c_hi = self.cost_offsets[first], self.cost_offsets[end]
            costs = {"cost_offsets": self.cost_offsets[first:end + 1] - c_lo,
                     "cost_class": self.cost_class[c_lo:c_hi],
                     "cost_value": self.cost_value[c_lo:c_hi]}
        return dataclasses.replace(
            self, numbers=self.numbers[first:end], tags=self.tags[first:end],
            lines=self.lines[first:end], offsets=self.offsets[first:end + 1] - lo,
            index=self.index[lo:hi], value=self.value[lo:hi], namespace=self.namespace[lo:hi],
            **costs)

    def subset(self, keep: np.ndarray) -> "ExampleBatch":
        """The examples where the boolean ``keep`` is true, and their warnings (numpy, no loop
        per example). Only for batches parsed without names (no ``audit`` spans)."""
        if len(self.audit):
            raise ValueError("subset: the batch holds audit spans")
        offsets, features = _kept_rows(self.offsets, keep)
        costs = {}
        if len(self.cost_offsets):
            cost_offsets, listed = _kept_rows(self.cost_offsets, keep)
            costs = {"cost_offsets": cost_offsets, "cost_class": self.cost_class[listed],
                     "cost_value": self.cost_value[listed]}
        warned = np.isin(self.warnings[:, 0], self.lines[keep])
        return dataclasses.replace(
            self, numbers=self.numbers[keep], tags=self.tags[keep], lines=self.lines[keep],
            offsets=offsets, index=self.index[features], value=self.value[features],
            namespace=self.namespace[features], warnings=self.warnings[warned],
            n_warnings=int(warned.sum()), **costs)


def _kept_rows(offsets: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``offsets`` of the examples ``keep`` flags, and which rows they keep."""
    counts = np.diff(offsets)
    kept = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
    np.cumsum(counts[keep], out=kept[1:])
    return kept, np.repeat(keep, counts)


@njit(cache=True, nogil=True, _nrt=False)
def valid_offsets(offsets, length):
    """Whether CSR ``offsets`` are non-decreasing from >= 0 to at most ``length``."""
    if offsets.shape[0] == 0 or offsets[0] < 0:
        return False
    for e in range(offsets.shape[0] - 1):
        if at(offsets, e + 1) < at(offsets, e):
            return False
    return offsets[offsets.shape[0] - 1] <= length


@njit(cache=True, nogil=True)
def valid_batch(offsets, index, value, namespace, max_index):
    """Whether CSR arrays hold examples the kernels can read: ``offsets`` non-decreasing from
    >= 0 to at most the feature arrays' length, and every feature index at most ``max_index``.
    O(examples + features), branch-free over the indices (it vectorizes)."""
    if not valid_offsets(offsets, min(index.shape[0], value.shape[0], namespace.shape[0])):
        return False
    end = offsets[offsets.shape[0] - 1]
    top = np.uint64(0)
    for k in range(offsets[0], end):  # ``at``: the unsigned index lets the loop vectorize (11×)
        top = max(top, np.uint64(at(index, k)))
    return top <= np.uint64(max_index)
