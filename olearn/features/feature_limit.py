"""``--feature_limit``: VW's cap on each namespace's features per example (docs/vw-reference.md
§2.6), applied on the parse threads after --ngram, constant included.

A namespace of an example holding more features than its limit has them sorted by (index,
value), repeats of an index dropped (the first kept), and the first ``limit`` unique ones
kept, as VW's ``unique_features``. A limit is VW's: ``N`` for every namespace, ``aN`` for the
namespace whose name starts with ``a``, N read by C's ``atoi`` (so ``a:10`` is 0: namespace a
emptied, as VW does).
"""
from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from olearn.core.option import option_bytes, repeated
from olearn.data.batch import ExampleBatch, valid_offsets

NO_LIMIT = np.iinfo(np.int64).max

OPTIONS = (
    repeated("--feature_limit", metavar="[NS]N", model=True, parsing=True,
             help="Keep at most N unique features of namespace NS per example (every "
                  "namespace without NS; VW's reading, so 'a:10' empties namespace a)."),
)


def _atoi(text: bytes) -> int:
    """C's atoi: leading blanks, an optional sign, then digits (none: 0)."""
    text = text.lstrip(b" \t\n\r\f\v")
    sign = -1 if text[:1] == b"-" else 1
    text = text[1:] if text[:1] in (b"-", b"+") else text
    digits = len(text) - len(text.lstrip(b"0123456789"))
    return sign * int(text[:digits]) if digits else 0


def limits_of(config) -> np.ndarray | None:
    """Each namespace index's limit (None without --feature_limit)."""
    if not config.feature_limit:
        return None
    limits = np.full(256, NO_LIMIT, dtype=np.int64)
    for text in config.feature_limit:
        raw = option_bytes(text)
        if raw[:1].isdigit():
            limits[:] = _atoi(raw)
        elif len(raw) > 1:
            limits[raw[0]] = _atoi(raw[1:])
    limits[limits < 0] = NO_LIMIT  # VW keeps limits in uint32: a negative one is no limit
    return limits


def check(config) -> None:
    """--ngram's names point at their components' positions, which a limit moves: not both
    when names are printed (--audit, --invert_hash)."""
    from olearn.errors import OptionError
    if (config.feature_limit and (config.ngram or config.skips)
            and (config.audit or config.invert_hash)):
        raise OptionError("--feature_limit with --ngram cannot name features "
                          "(--audit, --invert_hash)")


class FeatureLimit:
    """--feature_limit's limits, applied to each parsed batch."""

    def __init__(self, limits: np.ndarray):
        self.limits = limits

    @classmethod
    def of(cls, config) -> "FeatureLimit | None":
        limits = limits_of(config)
        return cls(limits) if limits is not None else None

    def apply(self, batch: ExampleBatch) -> ExampleBatch:
        """``batch`` with each namespace of each example limited (names follow their
        features)."""
        offsets, kept = limited(batch.offsets, batch.index, batch.value, batch.namespace,
                                self.limits)
        more = {}
        if len(batch.audit):
            more["audit"] = batch.audit[kept]
        return dataclasses.replace(batch, offsets=offsets, index=batch.index[kept],
                                   value=batch.value[kept], namespace=batch.namespace[kept],
                                   **more)


@njit(cache=True, nogil=True)
def limited(offsets, index, value, namespace, limits):
    """The batch's new offsets and the positions of the features kept, in their new order:
    each example's namespaces in order of first appearance, a namespace over its limit sorted
    by (index, value) and cut to its first ``limit`` unique indices. ValueError for arrays
    that do not fit each other."""
    if not (valid_offsets(offsets, min(index.shape[0], value.shape[0], namespace.shape[0]))
            and limits.shape[0] == 256):
        raise ValueError("limited: arrays that do not fit each other")
    n = offsets.shape[0] - 1
    kept = np.empty(index.shape[0], dtype=np.int64)
    new_offsets = np.zeros(n + 1, dtype=np.int64)
    seen = np.zeros(256, dtype=np.int64)  # example number + 1 that last took the namespace
    k = 0
    for e in range(n):
        lo, hi = offsets[e], offsets[e + 1]
        for j in range(lo, hi):
            ns = namespace[j]
            if seen[ns] == e + 1:
                continue
            seen[ns] = e + 1
            count = 0
            for i in range(j, hi):
                count += namespace[i] == ns
            if count <= limits[ns]:
                for i in range(j, hi):
                    if namespace[i] == ns:
                        kept[k] = i
                        k += 1
                continue
            members = np.empty(count, dtype=np.int64)
            m = 0
            for i in range(j, hi):
                if namespace[i] == ns:
                    members[m] = i
                    m += 1
            # by value, then (stably) by index: sorted by (index, value)
            members = members[np.argsort(value[members], kind="mergesort")]
            members = members[np.argsort(index[members], kind="mergesort")]
            taken = 0
            last = -1
            for i in members:
                if taken >= limits[ns]:
                    break
                if np.int64(index[i]) != last:
                    kept[k] = i
                    k += 1
                    taken += 1
                    last = np.int64(index[i])
        new_offsets[e + 1] = k
    return new_offsets, kept[:k]
