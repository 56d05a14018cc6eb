"""``--ngram`` and ``--skips``: VW's n-grams and skip-grams of each namespace's features
(docs/vw-reference.md §1.4.2), added to each parsed batch before it is learned or cached.

Within a namespace (its features in order, x_0 ... x_{L-1}), ``--ngram N`` adds every gram of
2 to N features, and ``--skips K`` lets a gram skip up to K positions in all. A gram's index is
its components' indices combined as h = h·27942141 + x (mod 2^64, from h = the first), masked
to the table; its value is 1. The grams follow the namespace's own features: by size, then
by skip pattern (depth first: for size 3 and K = 1, positions +0+1+2, +0+1+3, +0+2+3), then by
first position. The constant takes part in none.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from numba import njit

from olearn.core.option import option_bytes, repeated
from olearn.data.batch import ExampleBatch
from olearn.errors import OptionError

OPTIONS = (
    repeated("--ngram", metavar="[A]N", model=True, parsing=True,
             help="Add the 2- to N-grams of each namespace's features (AN: of namespaces "
                  "beginning with A only); repeatable, later ones win."),
    repeated("--skips", metavar="[A]K", model=True, parsing=True,
             help="Let the --ngram grams skip up to K features (AK: in namespaces beginning "
                  "with A only); repeatable, later ones win."),
)

GRAM_MULTIPLIER = 27942141
# Skip patterns per namespace at most: n and k grow them combinatorially (C(n - 1 + k, k) of
# size n), and a table this large would take the memory and time before any example.
MAX_PATTERNS = 10_000


def _per_namespace(option: str, values: list[str]) -> np.ndarray:
    """Each namespace index's count: ``N`` sets every index, ``aN`` index ``a``, in order."""
    counts = np.zeros(256, dtype=np.int64)
    for text in values:
        raw = option_bytes(text)
        every = raw[:1].isdigit()
        number = raw if every else raw[1:]
        if not number.isdigit():
            raise OptionError(f"{option} {text!r}: expected N or a namespace letter and N")
        if every:
            counts[:] = int(number)
        else:
            counts[raw[0]] = int(number)
    return counts


def _patterns(n: int, skips: int) -> list[tuple[int, ...]]:
    """The position offsets of the grams of size n with at most ``skips`` skipped in all, in
    VW's order (depth first, fewest skips first at each step)."""
    out: list[tuple[int, ...]] = []

    def extend(offsets: tuple[int, ...], left: int, budget: int) -> None:
        if left == 0:
            out.append(offsets)
            return
        for skip in range(budget + 1):
            extend(offsets + (offsets[-1] + 1 + skip,), left - 1, budget - skip)

    extend((0,), n - 1, skips)
    return out


@dataclasses.dataclass(frozen=True)
class Grams:
    """The grams each namespace index gets: rows ``start[b]:start[b + 1]`` of ``patterns``,
    each row (size, offset 0, offset 1, ...)."""

    start: np.ndarray
    patterns: np.ndarray

    @classmethod
    def of(cls, config) -> "Grams | None":
        """The grams a configuration asks for, or None."""
        if config.skips and not config.ngram:
            raise OptionError("--skips needs --ngram (grams of 2 or more features)")
        if not config.ngram:
            return None
        ngram = _per_namespace("--ngram", config.ngram)
        skips = _per_namespace("--skips", config.skips)
        for n_max, k in {(int(n), int(k)) for n, k in zip(ngram, skips)}:
            if sum(math.comb(n - 1 + k, k) for n in range(2, n_max + 1)) > MAX_PATTERNS:
                raise OptionError(f"--ngram {n_max} with --skips {k}: more than "
                                  f"{MAX_PATTERNS:,} gram patterns per namespace")
        rows: list[list[int]] = []
        start = np.zeros(257, dtype=np.int64)
        width = 1 + max(int(ngram.max()), 1)
        for b in range(256):
            for n in range(2, int(ngram[b]) + 1):
                rows.extend([n, *offsets] for offsets in _patterns(n, int(skips[b])))
            start[b + 1] = len(rows)
        if not rows:
            return None
        patterns = np.full((len(rows), width), -1, dtype=np.int64)
        for r, row in enumerate(rows):
            patterns[r, :len(row)] = row
        return cls(start, patterns)

    def apply(self, batch: ExampleBatch, has_constant: bool, mask: int) -> ExampleBatch:
        """``batch`` with each namespace's grams after its features."""
        offsets, index, value, namespace, audit, parts = add_grams(
            batch.offsets, batch.index, batch.value, batch.namespace, batch.audit, self.start,
            self.patterns, has_constant, mask)
        return dataclasses.replace(batch, offsets=offsets, index=index, value=value,
                                   namespace=namespace, audit=audit, parts=parts)


@njit(cache=True, nogil=True, inline="always")
def _run_end(namespace, g, hi):
    """The end of the run of features of ``namespace[g]``'s namespace that starts at g."""
    end = g
    while end < hi and namespace[end] == namespace[g]:
        end += 1
    return end


@njit(cache=True, nogil=True)
def _gram_count(namespace, lo, hi, start, patterns):
    """Grams of features ``lo:hi`` (contiguous runs of one namespace each)."""
    total = 0
    g = lo
    while g < hi:
        b = namespace[g]
        end = _run_end(namespace, g, hi)
        for r in range(start[b], start[b + 1]):
            total += max(0, end - g - patterns[r, patterns[r, 0]])
        g = end
    return total


@njit(cache=True, nogil=True)
def add_grams(offsets, index, value, namespace, audit, start, patterns, has_constant, mask):
    """New CSR arrays with each namespace run's grams after it (value 1, namespace its own),
    and ``parts``: each gram's components, as positions in the new arrays (-1 padded; all -1
    for a feature of the input), kept only when ``audit`` is (for --audit's names).
    With ``has_constant`` the last feature of each example is the constant: kept last.

    Raises ValueError unless the arrays fit each other (so no argument reads outside them).
    """
    n = offsets.shape[0] - 1
    nf = index.shape[0]
    if (n < 0 or offsets[0] != 0 or offsets[n] != nf or value.shape[0] != nf
            or namespace.shape[0] != nf or (audit.shape[0] != nf and audit.shape[0] != 0)
            or start.shape[0] != 257 or start[0] != 0 or patterns.shape[1] < 2):
        raise ValueError("add_grams: batch arrays of different lengths")
    for b in range(256):
        if start[b + 1] < start[b] or start[b + 1] > patterns.shape[0]:
            raise ValueError("add_grams: malformed gram table")
    for r in range(patterns.shape[0]):
        size = patterns[r, 0]
        if size < 2 or size >= patterns.shape[1] or patterns[r, 1] != 0:
            raise ValueError("add_grams: malformed gram table")
        for j in range(2, size + 1):
            if patterns[r, j] <= patterns[r, j - 1]:
                raise ValueError("add_grams: malformed gram table")
    for e in range(n):
        if offsets[e + 1] < offsets[e] or (has_constant and offsets[e + 1] == offsets[e]):
            raise ValueError("add_grams: malformed batch offsets")
    total = nf
    for e in range(n):
        hi = offsets[e + 1] - 1 if has_constant else offsets[e + 1]
        total += _gram_count(namespace, offsets[e], hi, start, patterns)
    with_audit = audit.shape[0] == nf
    width = patterns.shape[1] - 1
    out_off = np.empty(n + 1, dtype=np.int64)
    out_idx = np.empty(total, dtype=np.uint32)
    out_val = np.empty(total, dtype=np.float32)
    out_ns = np.empty(total, dtype=np.uint8)
    out_audit = np.full((total if with_audit else 0, audit.shape[1]), -1, dtype=audit.dtype)
    parts = np.full((total if with_audit else 0, width), -1, dtype=np.int64)
    multiplier = np.uint64(GRAM_MULTIPLIER)
    out_off[0] = 0
    m = 0
    for e in range(n):
        lo = offsets[e]
        hi = offsets[e + 1] - 1 if has_constant else offsets[e + 1]
        g = lo
        while g < hi:
            b = namespace[g]
            end = _run_end(namespace, g, hi)
            first = m  # where the namespace's own features start in the output
            for k in range(g, end):
                out_idx[m] = index[k]
                out_val[m] = value[k]
                out_ns[m] = b
                if with_audit:
                    out_audit[m, :] = audit[k, :]
                m += 1
            for r in range(start[b], start[b + 1]):
                size = patterns[r, 0]
                for i in range(g, end - patterns[r, size]):
                    h = np.uint64(index[i])
                    for j in range(2, size + 1):
                        h = h * multiplier + np.uint64(index[i + patterns[r, j]])
                    out_idx[m] = np.uint32(h & np.uint64(mask))
                    out_val[m] = 1.0
                    out_ns[m] = b
                    if with_audit:
                        for j in range(1, size + 1):
                            parts[m, j - 1] = first + i - g + patterns[r, j]
                    m += 1
            g = end
        if has_constant:
            k = offsets[e + 1] - 1
            out_idx[m] = index[k]
            out_val[m] = value[k]
            out_ns[m] = namespace[k]
            if with_audit:
                out_audit[m, :] = audit[k, :]
            m += 1
        out_off[e + 1] = m
    return out_off, out_idx, out_val, out_ns, out_audit, parts
