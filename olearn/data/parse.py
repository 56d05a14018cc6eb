"""Block parser: newline-aligned bytes → ExampleBatch, one numba kernel (nogil) per block."""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.core.arrays import LOW7, NEWLINES, TOPS, at, first_flagged, word
from olearn.data.batch import ExampleBatch
from olearn.data.csv_header import Csv, no_csv
from olearn.data.csv_text import parse_csv_line
from olearn.data.hashing import CONSTANT_HASH, CONSTANT_NAMESPACE
from olearn.data.labels import LABEL_SIMPLE, Labels, labels_of
from olearn.data.parsed import AUDIT_COLS, W_CSV_EMPTY, Hashing, Parsed, add_warning
from olearn.data.svmlight import parse_svm_line
from olearn.data.vw_text import group_namespaces, parse_vw_line

FORMAT_VW = 0
FORMAT_SVMLIGHT = 1
FORMAT_CSV = 2
MAX_WARNINGS_PER_BLOCK = 10000
IDENTITY = np.arange(256, dtype=np.uint8)  # every namespace byte its own index
SIMPLE_LABELS = labels_of(LABEL_SIMPLE, None)
NO_CSV = no_csv()


@njit(cache=True, nogil=True)
def line_ends(buf):
    """The offsets of the newlines in ``buf``, then ``len(buf)`` when the last line has none.

    Eight bytes are tested at once (a byte's top bit is set in ``hits`` iff it is a newline,
    exactly): a byte-at-a-time search cost about a sixth of the parser's time on 460-byte
    lines. The output is sized for the worst case; only the pages written are touched.
    """
    n = buf.shape[0]
    ends = np.empty(n + 1, dtype=np.int64)
    k = 0
    p = np.int64(0)
    while p + 8 <= n:
        x = word(buf, p) ^ NEWLINES
        hits = ~(((x & LOW7) + LOW7) | x) & TOPS
        while hits:
            ends[k] = p + first_flagged(hits)
            k += 1
            hits &= hits - np.uint64(1)
        p += 8
    while p < n:
        if at(buf, p) == 10:
            ends[k] = p
            k += 1
        p += 1
    if n > 0 and at(buf, n - 1) != 10:
        ends[k] = n
        k += 1
    return ends[:k]


@njit(cache=True, nogil=True)
def parse_vw_block(buf, mask, seed, hash_all, add_constant, audit, ns_hash, index_of, labels,
                   csv):
    """:func:`parse_block` of VW text."""
    return _parse_block(buf, FORMAT_VW, mask, seed, hash_all, add_constant, audit, ns_hash,
                        index_of, labels, csv)


@njit(cache=True, nogil=True)
def parse_svmlight_block(buf, mask, seed, hash_all, add_constant, audit, ns_hash, index_of,
                         labels, csv):
    """:func:`parse_block` of svmlight text."""
    return _parse_block(buf, FORMAT_SVMLIGHT, mask, seed, hash_all, add_constant, audit,
                        ns_hash, index_of, labels, csv)


@njit(cache=True, nogil=True)
def parse_csv_block(buf, mask, seed, hash_all, add_constant, audit, ns_hash, index_of, labels,
                    csv):
    """:func:`parse_block` of CSV text."""
    return _parse_block(buf, FORMAT_CSV, mask, seed, hash_all, add_constant, audit, ns_hash,
                        index_of, labels, csv)


# A kernel per format, so that a run compiles the parser of the formats it reads only (numba
# compiles a kernel's every branch: the three parsers together took 50 s of a first run).
PARSERS = {FORMAT_VW: parse_vw_block, FORMAT_SVMLIGHT: parse_svmlight_block,
           FORMAT_CSV: parse_csv_block}


def parse_block(buf: np.ndarray, fmt: int, *arguments) -> tuple:
    """Parse ``buf`` (uint8, whole lines; a last line may lack its newline) of format ``fmt``,
    by its kernel (``PARSERS``); ``arguments``: as :func:`_parse_block`'s after ``fmt``."""
    if fmt not in PARSERS:
        raise ValueError(f"parse_block: unknown format {fmt}")
    return PARSERS[fmt](buf, *arguments)


# inline: each format's kernel compiles this body with ``fmt`` a constant, its branches on the
# other formats pruned before they are typed (numba would compile the parsers in them)
@njit(cache=True, nogil=True, inline="always")
def _parse_block(buf, fmt, mask, seed, hash_all, add_constant, audit, ns_hash, index_of, labels,
                 csv):
    """Parse ``buf`` (uint8, whole lines; a last line may lack its newline) of format ``fmt``
    (a constant of the format's kernel).

    ``index_of`` (256 bytes) maps the first byte of a VW namespace's name to its index
    (--redefine; the identity otherwise). ``labels`` (data/labels.py ``Labels``): how a VW
    or CSV line's label reads (svmlight's are simple). ``csv`` (data/csv_header.py ``Csv``):
    a CSV source's columns (empty for the other formats); a CSV header line is skipped, and
    an empty CSV line is an error (a fatal warning).

    Every output is sized once, from the bytes alone, for the most any bytes can hold: a line
    of k bytes holds at most (k + 1) // 2 features (each needs a byte and a separator) plus
    the constant, so the block's lines hold at most n // 2 + 2 * lines features. Nothing is
    grown or rebound inside the line loop (a rebound array costs numba a reference count per
    line); pages never written are never touched.
    ``ns_hash`` is the default namespace's seed (VW) or namespace ``f``'s (svmlight).
    A cost-sensitive label or multilabel holds at most a class per two bytes of its line.
    Returns the arrays of an :class:`ExampleBatch` and the number of lines found.
    """
    if index_of.shape[0] != 256:
        raise ValueError("parse_block: index_of must map all 256 namespace bytes")
    n = buf.shape[0]
    ends = line_ends(buf)
    n_lines = ends.shape[0]
    ex_num = np.empty((n_lines, 3), dtype=np.float32)
    ex_tag = np.empty((n_lines, 2), dtype=np.int64)
    ex_line = np.empty(n_lines, dtype=np.int64)
    ex_off = np.empty(n_lines + 1, dtype=np.int64)
    cap = n // 2 + 2 * n_lines + 16
    f_idx = np.empty(cap, dtype=np.uint32)
    f_val = np.empty(cap, dtype=np.float32)
    f_ns = np.empty(cap, dtype=np.uint8)
    f_audit = np.empty((cap if audit else 0, AUDIT_COLS), dtype=np.int64)
    warns = np.empty((MAX_WARNINGS_PER_BLOCK, 4), dtype=np.int64)
    ns_rank = np.zeros((256, 2), dtype=np.int64)
    constant = CONSTANT_HASH & mask
    hashing = Hashing(mask, seed, hash_all, ns_hash)
    costs = labels.kind != LABEL_SIMPLE
    cost_offsets = np.zeros(n_lines + 1 if costs else 0, dtype=np.int64)
    cost_class = np.empty(n // 2 + n_lines if costs else 0, dtype=np.uint32)
    cost_value = np.empty(cost_class.shape[0], dtype=np.float32)
    out = Parsed(ex_num, ex_tag, f_idx, f_val, f_ns, f_audit, warns, cost_offsets, cost_class,
                 cost_value)
    nf = np.int64(0)  # not a literal: numba would compile the line parsers for it too
    nw = np.int64(0)
    ex = np.int64(0)
    p = np.int64(0)
    for line in range(n_lines):
        s = p
        e = ends[line]
        p = e + 1
        if e > s and at(buf, e - 1) == 13:
            e -= 1
        if e - s >= 3 and at(buf, s) == 0xEF and at(buf, s + 1) == 0xBB and at(buf, s + 2) == 0xBF:
            s += 3
        if fmt == FORMAT_CSV and (line == 0 and csv.skip or e == s):
            if e == s:
                nw = add_warning(warns, nw, line, W_CSV_EMPTY, s, e)
            continue
        if e > s:
            if nf + (e - s + 1) // 2 + 2 > cap:
                raise ValueError("parse_block: a line holds more features than its bytes allow")
            ex_tag[ex, 0] = ex_tag[ex, 1] = -1
            ex_off[ex] = nf
            ex_line[ex] = line
            if costs:
                cost_offsets[ex + 1] = cost_offsets[ex]
            first = nf
            kept = True
            if fmt == FORMAT_VW:
                nf, nw, regroup = parse_vw_line(buf, s, e, ex, line, hashing, labels, out, nf,
                                                nw, ns_rank, index_of)
            elif fmt == FORMAT_CSV:
                nf, nw, regroup, kept = parse_csv_line(buf, s, e, ex, line, hashing, labels,
                                                       out, nf, nw, ns_rank, csv)
            else:
                nf, nw = parse_svm_line(buf, s, e, ex, line, hashing, out, nf, nw)
                regroup = False
            if not kept:
                continue
            if regroup:
                group_namespaces(f_idx, f_val, f_ns, f_audit, first, nf, ns_rank)
            if add_constant:
                f_idx[nf] = constant
                f_val[nf] = 1.0
                f_ns[nf] = CONSTANT_NAMESPACE
                if audit:
                    f_audit[nf, :] = -1
                nf += 1
            ex += 1
    ex_off[ex] = nf
    # The feature and warning arrays are copied out of their worst-case-sized buffers (several
    # times the block's needs): views would keep whole buffers alive in every batch queued
    # between the parser and the learner.
    nc = cost_offsets[ex] if costs else 0
    return (ex_num[:ex], ex_tag[:ex], ex_line[:ex], ex_off[: ex + 1], f_idx[:nf].copy(),
            f_val[:nf].copy(), f_ns[:nf].copy(), f_audit[: nf if audit else 0].copy(),
            warns[: min(nw, warns.shape[0])].copy(), nw, n_lines,
            cost_offsets[: ex + 1 if costs else 0].copy(), cost_class[:nc].copy(),
            cost_value[:nc].copy())


def parse(text: np.ndarray, fmt: int, mask: int, seed: int, hash_all: bool,
          add_constant: bool, audit: bool, ns_hash: int, source: str = "",
          index_of: np.ndarray = IDENTITY,
          labels: Labels = SIMPLE_LABELS, csv: Csv = NO_CSV) -> ExampleBatch:
    """Parse one block of whole lines into an :class:`ExampleBatch` (the batch counts the lines
    the parser found; its first line is line 0 and its bytes read 0 until the caller sets
    them; ``index_of``: the
    namespaces' indices, ``labels``: how labels read, ``csv``: a CSV source's columns, see
    :func:`parse_block`). A CSV batch's text is ``csv.text``: its tags and names point there."""
    (numbers, tags, lines, offsets, index, value, namespace, audit_spans, warnings,
     n_warnings, n_lines, cost_offsets, cost_class, cost_value) = parse_block(
        text, fmt, mask, seed, hash_all, add_constant, audit, ns_hash, index_of, labels, csv)
    if fmt == FORMAT_CSV:
        text = csv.text
    return ExampleBatch(text, source, 0, numbers, tags, lines, offsets, index, value,
                        namespace, audit_spans, warnings, int(n_warnings), 0, 0,
                        int(n_lines), cost_offsets=cost_offsets, cost_class=cost_class,
                        cost_value=cost_value)
