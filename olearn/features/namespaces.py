"""Namespace control: ``--ignore``, ``--keep`` and ``--redefine`` (VW's; docs/vw-reference.md
§1.6), applied as each block is parsed, before it is learned or cached.

A namespace is known by its index, the first byte of its name (the default namespace's is
``' '``, the constant's 128). ``--redefine N:=S`` gives the namespaces whose index is in S the
index N (``:`` in S: every namespace); features keep their hashes, only what selects by index
(``-q``, ``--ignore``, ``--keep``) sees the new one. The VW text parser applies it
(``index_of``), so that namespaces sharing an index are merged as VW merges them; svmlight's
single namespace is mapped by :func:`select`. Then the namespaces whose index is ignored
(``--ignore``, or every one not listed by ``--keep``) lose their features (:func:`select`).
The constant is never ignored nor redefined, and, as in VW's text parser, the default
namespace is never redefined. ``--ignore_linear`` acts in the learning kernel instead
(:func:`linear_terms`, loop.learn_batch): those namespaces' features only form interactions.
"""
from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from olearn.core.option import option_bytes, repeated
from olearn.data.batch import ExampleBatch
from olearn.data.hashing import CONSTANT_NAMESPACE, DEFAULT_NAMESPACE
from olearn.data.parse import IDENTITY
from olearn.errors import OptionError

OPTIONS = (
    repeated("--ignore", metavar="ABC", model=True, parsing=True,
             help="Ignore the namespaces whose name begins with any of these characters "
                  "(repeatable; \\xHH escapes; never the constant)."),
    repeated("--keep", metavar="ABC", model=True, parsing=True,
             help="Keep only the namespaces whose name begins with any of these characters "
                  "(repeatable; overrides --ignore; the constant stays)."),
    repeated("--ignore_linear", metavar="ABC", model=True,
             help="Use the features of the namespaces beginning with these characters in "
                  "interactions only, not as linear terms (repeatable; \\xHH escapes)."),
    repeated("--redefine", metavar="N:=S", model=True, parsing=True,
             help="Give the namespaces beginning with a character of S the index N (empty N: "
                  "the default namespace; ':' in S: every namespace); repeatable, in order."),
)

def _redefinition(text: str) -> tuple[int, bytes]:
    """``N:=S`` as (N's index, S)."""
    raw = option_bytes(text)
    if b":=" not in raw:
        raise OptionError(f"--redefine {text!r}: expected N:=S (N a namespace letter or "
                          "nothing, S the letters of the namespaces to redefine)")
    target, sources = raw.split(b":=", 1)
    return (target[0] if target else DEFAULT_NAMESPACE), sources


@dataclasses.dataclass(frozen=True)
class Selection:
    """Which namespaces survive (``dropped[i]``: index i loses its features) and each one's
    index after --redefine (``index_of``)."""

    dropped: np.ndarray
    index_of: np.ndarray

    @classmethod
    def of(cls, config) -> "Selection | None":
        """The selection a configuration asks for, or None when every namespace stays as is."""
        if not (config.ignore or config.keep or config.redefine):
            return None
        dropped = np.zeros(256, dtype=np.bool_)
        for text in config.ignore:
            dropped[list(option_bytes(text))] = True
        if config.keep:
            dropped[:] = True
            for text in config.keep:
                dropped[list(option_bytes(text))] = False
        index_of = np.arange(256, dtype=np.uint8)
        for text in config.redefine:
            target, sources = _redefinition(text)
            if not sources:
                continue  # VW's text parser never redefines the default namespace
            chosen = slice(None) if b":" in sources else list(sources)
            index_of[chosen] = target
        index_of[[DEFAULT_NAMESPACE, CONSTANT_NAMESPACE]] = [DEFAULT_NAMESPACE,
                                                             CONSTANT_NAMESPACE]
        dropped[CONSTANT_NAMESPACE] = False
        return cls(dropped, index_of)

    def apply(self, batch: ExampleBatch, has_constant: bool, redefined: bool) -> ExampleBatch:
        """``batch`` without the ignored namespaces' features; unless already ``redefined``
        (the VW text parser does it, merging namespaces as it goes), with the new indices."""
        offsets, index, value, namespace, audit = select(
            batch.offsets, batch.index, batch.value, batch.namespace, batch.audit,
            self.dropped, IDENTITY if redefined else self.index_of, has_constant)
        return dataclasses.replace(batch, offsets=offsets, index=index, value=value,
                                   namespace=namespace, audit=audit)


def linear_terms(config) -> np.ndarray:
    """Whether each namespace index's features are linear terms (all but --ignore_linear's;
    the constant's 128 included, as in VW)."""
    linear = np.ones(256, dtype=np.bool_)
    for text in config.ignore_linear:
        linear[list(option_bytes(text))] = False
    return linear


def check(config) -> None:
    """Refuse a malformed --redefine when the options are checked."""
    for text in config.redefine:
        _redefinition(text)


@njit(cache=True, nogil=True)
def select(offsets, index, value, namespace, audit, dropped, index_of, has_constant):
    """New CSR arrays of the batch: each feature's namespace index mapped by ``index_of`` and
    the features of ``dropped`` indices left out, in order. With ``has_constant`` the last
    feature of each example is the constant, kept as it is.

    Raises ValueError unless the arrays fit each other (so no argument reads outside them).
    """
    n = offsets.shape[0] - 1
    nf = index.shape[0]
    if (n < 0 or offsets[0] != 0 or offsets[n] != nf or value.shape[0] != nf
            or namespace.shape[0] != nf or (audit.shape[0] != nf and audit.shape[0] != 0)
            or dropped.shape[0] != 256 or index_of.shape[0] != 256):
        raise ValueError("select: batch arrays of different lengths")
    for e in range(n):
        if offsets[e + 1] < offsets[e] or (has_constant and offsets[e + 1] == offsets[e]):
            raise ValueError("select: malformed batch offsets")
    with_audit = audit.shape[0] == nf
    out_off = np.empty(n + 1, dtype=np.int64)
    out_idx = np.empty(nf, dtype=np.uint32)
    out_val = np.empty(nf, dtype=np.float32)
    out_ns = np.empty(nf, dtype=np.uint8)
    out_audit = np.empty((nf if with_audit else 0, audit.shape[1]), dtype=audit.dtype)
    out_off[0] = 0
    m = 0
    for e in range(n):
        last = offsets[e + 1] - 1
        for k in range(offsets[e], offsets[e + 1]):
            constant = has_constant and k == last
            b = namespace[k] if constant else index_of[namespace[k]]
            if dropped[b] and not constant:
                continue
            out_idx[m] = index[k]
            out_val[m] = value[k]
            out_ns[m] = b
            if with_audit:
                out_audit[m, :] = audit[k, :]
            m += 1
        out_off[e + 1] = m
    return (out_off, out_idx[:m].copy(), out_val[:m].copy(), out_ns[:m].copy(),
            out_audit[:m if with_audit else 0].copy())
