"""``--affix``: VW's prefix and suffix features (docs/vw-reference.md §2.7), added on the parse
threads after --ignore/--keep/--redefine and before --ngram.

``--affix +2a,-3,+1b``: for each named feature of namespace ``a`` a feature of its name's first
2 bytes, for the default namespace's its last 3, for ``b``'s its first 1 (a name no longer
than the affix is used whole). The affix is hashed as a name of the feature's namespace and
multiplied by ``13903957 + code · 27942141`` (code: the affix's 4 bits, length·2 + prefix), as
VW; it takes the feature's value and goes to VW's affix namespace (index 132), after the
example's features and before its constant. The names come from the parser's name spans
(parsed for --affix).
"""
from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from olearn.core.option import option_bytes, text
from olearn.data.batch import ExampleBatch, valid_offsets
from olearn.data.hashing import hash_name
from olearn.data.parsed import Hashing

AFFIX_NAMESPACE = 132
AFFIX_CONSTANT = 13903957
QUADRATIC_CONSTANT = 27942141

OPTIONS = (
    text("--affix", metavar="[+-]L[NS],...", model=True, parsing=True,
         help="Add prefix (+) or suffix (-) features of length L (1..7) of the names in "
              "namespace NS (the default namespace without NS), comma-separated."),
)


def codes_of(config) -> np.ndarray | None:
    """Each namespace index's affixes, 4 bits each (the last given lowest; VW's), or None
    without --affix; OptionError for a malformed one."""
    from olearn.errors import OptionError
    if not config.affix:
        return None
    codes = np.zeros(256, dtype=np.uint64)
    for item in option_bytes(config.affix).split(b","):
        if not item:
            continue
        prefix = 0 if item[:1] == b"-" else 1
        rest = item[1:] if item[:1] in (b"+", b"-") else item
        if not rest[:1] or not 49 <= rest[0] <= 55:
            raise OptionError(f"--affix: malformed affix {item.decode(errors='replace')!r} "
                              "(length must be 1..7)")
        if len(rest) > 2 or (len(rest) == 2 and rest[1] in b" :|"):
            raise OptionError(f"--affix: malformed affix {item.decode(errors='replace')!r}")
        ns = rest[1] if len(rest) == 2 else 32
        codes[ns] = (codes[ns] << np.uint64(4)) | np.uint64(((rest[0] - 48) << 1) | prefix)
    return codes


class Affixes:
    """--affix's codes, applied to each parsed batch (parsed with name spans)."""

    def __init__(self, codes: np.ndarray):
        self.codes = codes

    @classmethod
    def of(cls, config) -> "Affixes | None":
        codes = codes_of(config)
        return cls(codes) if codes is not None else None

    def apply(self, batch: ExampleBatch, has_constant: bool, mask: int, seed: int,
              hash_all: bool, default_hash: int) -> ExampleBatch:
        """``batch`` with each example's affix features after its own (before its constant)."""
        offsets, index, value, namespace, audit = add_affixes(
            batch.offsets, batch.index, batch.value, batch.namespace, batch.audit, batch.text,
            self.codes, mask, seed, hash_all, default_hash, has_constant)
        return dataclasses.replace(batch, offsets=offsets, index=index, value=value,
                                   namespace=namespace, audit=audit)


@njit(cache=True, nogil=True)
def _spans_fit(audit, k, length):
    """Whether feature ``k``'s name and namespace spans lie inside a text of ``length``."""
    return (0 <= audit[k, 0] <= audit[k, 1] <= length
            and (audit[k, 4] < 0 or 0 <= audit[k, 4] <= audit[k, 5] <= length))


@njit(cache=True, nogil=True)
def add_affixes(offsets, index, value, namespace, audit, text, codes, mask, seed, hash_all,
                default_hash, has_constant):
    """New CSR arrays (and name spans) of the batch with the affix features added; ValueError
    for arrays that do not fit each other (offsets, spans outside the text)."""
    if not (valid_offsets(offsets, min(index.shape[0], value.shape[0], namespace.shape[0]))
            and audit.shape[0] >= index.shape[0] and audit.shape[1] >= 6
            and codes.shape[0] == 256):
        raise ValueError("add_affixes: arrays that do not fit each other")
    extra = 0
    for k in range(index.shape[0]):
        code = codes[namespace[k]]
        if code > 0 and audit[k, 1] > audit[k, 0]:
            if not _spans_fit(audit, k, text.shape[0]):
                raise ValueError("add_affixes: a name outside the text")
            while code > 0:
                extra += 1
                code >>= np.uint64(4)
    size = index.shape[0] + extra
    n = offsets.shape[0] - 1
    new_offsets = np.zeros(n + 1, dtype=np.int64)
    new_index = np.empty(size, dtype=np.uint32)
    new_value = np.empty(size, dtype=np.float32)
    new_namespace = np.empty(size, dtype=np.uint8)
    new_audit = np.empty((size, audit.shape[1]), dtype=np.int64)
    o = 0
    for e in range(n):
        lo, hi = offsets[e], offsets[e + 1]
        own = hi - 1 if has_constant and hi > lo else hi
        # the example's own features, its affixes, then its constant
        for first, end, affixing in ((lo, own, False), (lo, own, True), (own, hi, False)):
            for k in range(first, end):
                if not affixing:
                    new_index[o] = index[k]
                    new_value[o] = value[k]
                    new_namespace[o] = namespace[k]
                    new_audit[o] = audit[k]
                    o += 1
                elif codes[namespace[k]] > 0 and audit[k, 1] > audit[k, 0]:
                    o = _affix(k, o, (value, namespace, audit, text), codes,
                               Hashing(mask, seed, hash_all, default_hash),
                               (new_index, new_value, new_namespace, new_audit))
        new_offsets[e + 1] = o
    return new_offsets, new_index, new_value, new_namespace, new_audit


@njit(cache=True, nogil=True)
def _affix(k, o, batch, codes, hashing, out):
    """Write feature ``k``'s affix features (``batch``: its values, namespaces, name spans and
    text) to ``out``'s arrays from row ``o``, hashed as ``hashing`` says (its ``ns_hash`` the
    default namespace's); returns the next row."""
    value, namespace, audit, text = batch
    mask, seed, hash_all, default_hash = hashing
    new_index, new_value, new_namespace, new_audit = out
    start, end = audit[k, 0], audit[k, 1]
    ns_hash = default_hash
    if audit[k, 4] >= 0:
        ns_hash = hash_name(text, audit[k, 4], audit[k, 5], seed, hash_all)
    code = codes[namespace[k]]
    while code > 0:
        nibble = np.int64(code & np.uint64(15))
        length = (nibble >> 1) & 7
        s, t = start, end
        if t - s > length:
            if nibble & 1:
                t = s + length
            else:
                s = t - length
        h = hash_name(text, s, t, ns_hash, hash_all)
        new_index[o] = (h * (AFFIX_CONSTANT + nibble * QUADRATIC_CONSTANT)) & mask
        new_value[o] = value[k]
        new_namespace[o] = AFFIX_NAMESPACE
        new_audit[o, 0] = s
        new_audit[o, 1] = t
        new_audit[o, 2:] = -1
        o += 1
        code >>= np.uint64(4)
    return o
