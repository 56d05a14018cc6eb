"""CSV lines (--csv), one at a time, in numba; the header's columns come in a ``Csv`` bundle
(data/csv_header.py). VW's rules: docs/vw-reference.md (CSV input)."""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.core.arrays import at
from olearn.data.csv_header import COL_LABEL, COL_TAG, QUOTE
from olearn.data.hashing import hash_name
from olearn.data.labels import count_tokens, read_label
from olearn.data.numbers import parse_float
from olearn.data.parsed import (
    W_BAD_VALUE,
    W_CSV_CELLS,
    W_CSV_QUOTE,
    W_CSV_UNCLOSED,
    add_warning,
    push_feature,
)

APOSTROPHE = 39


@njit(cache=True, nogil=True, inline="always")
def _trimmed(c: int) -> bool:
    """A byte VW trims from both ends of a line: CR, LF, the UTF-8 BOM's, FF or VT."""
    return c == 13 or c == 10 or c == 0xEF or c == 0xBB or c == 0xBF or c == 12 or c == 11


@njit(cache=True, nogil=True, _nrt=False)
def _quoted_end(buf, p, e, sep, text):
    """The end of the quoted cell opening at ``buf[p]``, its content unescaped in place in
    ``text`` (``""`` → ``"``) from ``p + 1``: returns (end, content end), end -1 for an
    unclosed quote, -2 for a quote that neither closes the cell nor is doubled."""
    q = p + 1
    w = p + 1
    while q < e:
        c = at(buf, q)
        if c == QUOTE:
            if q + 1 < e and at(buf, q + 1) == QUOTE:
                text[w] = QUOTE
                w += 1
                q += 2
                continue
            if q + 1 == e or at(buf, q + 1) == sep:
                return q + 1, w
            return -2, w
        text[w] = c
        w += 1
        q += 1
    return -1, w


@njit(cache=True, nogil=True, _nrt=False)
def split_line(buf, s, e, line, csv, warns, nw):
    """Split ``buf[s:e]`` into ``csv.cells`` (per cell: its content's start, end in
    ``csv.text``, end in ``buf``, and 1 if quoted),
    VW's way; returns (cells found, nw), cells -1 after a quoting error (a warning, which
    ends the run). Quoted contents are unescaped into ``csv.text``."""
    sep, cells, text = csv.sep, csv.cells, csv.text
    while s < e and _trimmed(at(buf, s)):
        s += 1
    while e > s and _trimmed(at(buf, e - 1)):
        e -= 1
    n = 0
    p = s
    while True:
        if p < e and at(buf, p) == QUOTE:
            q, content_end = _quoted_end(buf, p, e, sep, text)
            if q < 0:
                code = W_CSV_UNCLOSED if q == -1 else W_CSV_QUOTE
                return -1, add_warning(warns, nw, line, code, p, e)
            start, end, raw_end, quoted = p + 1, content_end, q - 1, 1
        else:
            q = p
            while q < e and at(buf, q) != sep:
                q += 1
            start, end, raw_end, quoted = p, q, q, 0
        if n < cells.shape[0]:
            cells[n, 0] = start
            cells[n, 1] = end
            cells[n, 2] = raw_end
            cells[n, 3] = quoted
        n += 1
        if q >= e:
            return n, nw
        p = q + 1


@njit(cache=True, nogil=True, _nrt=False)
def _label_and_tag(buf, ex, line, csv, labels, out, nw):
    """The ``_label`` cell's tokens as a VW label, the ``_tag`` cell (less a leading ``'``) as
    the tag; with neither, the example is unlabeled. A quoted label is read from the line's
    bytes, its ``""`` not unescaped (a label holding a quote is no number anyway)."""
    cells = csv.cells
    ex_num = out.numbers
    ex_num[ex, 0] = np.nan
    ex_num[ex, 1] = 1.0
    ex_num[ex, 2] = 0.0
    for k in range(csv.kind.shape[0]):
        kind = csv.kind[k]
        s, e = cells[k, 0], cells[k, 1]
        if kind == COL_LABEL:
            raw_end = cells[k, 2]
            nw = read_label(buf, s, raw_end, count_tokens(buf, s, raw_end), ex, out, labels,
                            out.warns, nw, line)
        elif kind == COL_TAG and e > s:
            if csv.text[s] == APOSTROPHE:
                s += 1
            out.tags[ex, 0] = s
            out.tags[ex, 1] = e
    return nw


@njit(cache=True, nogil=True, _nrt=False)
def parse_csv_line(buf, s, e, ex, line, hashing, labels, out, nf, nw, ns_rank, csv):
    """Parse one non-empty CSV line ``buf[s:e]`` into example ``ex`` of ``out`` (data/parsed.py
    ``Parsed``), its columns as ``csv`` says (data/csv_header.py ``Csv``), names hashed as
    ``hashing`` says; returns (nf, nw, regroup, kept): ``regroup`` as for VW text
    (vw_text.group_namespaces, ``ns_rank`` its scratch); ``kept`` is false when every feature
    cell is empty (VW's newline example, which is no example) or the line is malformed.

    A feature cell is a number unless it is quoted or does not read whole as one (then a
    string: hashed after its column's name, value 1); numbers are scaled by their namespace's
    --csv_ns_value, and 0 adds no feature. A nameless column's numbers take the namespace's
    hash plus a counter (VW's anonymous features).
    """
    mask, _, hash_all, _ = hashing
    warns = out.warns
    n, nw = split_line(buf, s, e, line, csv, warns, nw)
    if n < 0:
        return nf, nw, False, False
    if n != csv.kind.shape[0]:
        return nf, add_warning(warns, nw, line, W_CSV_CELLS, s, e), False, False
    nw = _label_and_tag(buf, ex, line, csv, labels, out, nw)
    cells, text, names = csv.cells, csv.text, buf.shape[0]
    empty = True
    regroup = False
    n_ranks = 0
    previous_ns = -1
    group = -1
    anon = 0
    stamp = ex + 1
    for j in range(csv.order.shape[0]):
        k = csv.order[j]
        if csv.group[k] != group:
            group = csv.group[k]
            anon = 0
        cs, ce = cells[k, 0], cells[k, 1]
        quoted = cells[k, 3] == 1
        if ce == cs and not quoted:
            continue
        empty = False
        numeric = False
        if not quoted:
            number, used = parse_float(buf, cs, ce)
            numeric = used == ce - cs and not np.isnan(number)
        name_s, name_e = csv.spans[k, 0], csv.spans[k, 1]
        ss = se = -1
        if numeric:
            value = np.float32(csv.scale[k] * np.float32(number))
            if name_e > name_s:
                h = csv.name_hash[k]
            else:
                h = (csv.ns_hash[k] + anon) & 0xFFFFFFFF
                anon += 1
        else:
            value = np.float32(1)
            ss, se = cs, ce
            h = hash_name(text, cs, ce, csv.name_hash[k], hash_all)
        if not np.isfinite(value):
            nw = add_warning(warns, nw, line, W_BAD_VALUE, cs, ce)
            continue
        if value == 0:
            continue
        ns = csv.ns[k]
        if ns_rank[ns, 0] != stamp:
            ns_rank[ns, 0] = stamp
            ns_rank[ns, 1] = n_ranks
            n_ranks += 1
        elif ns != previous_ns:
            regroup = True
        previous_ns = ns
        ns_s, ns_e = csv.spans[k, 2], csv.spans[k, 3]
        if ns_s >= 0:
            ns_s += names
            ns_e += names
        nf = push_feature(out, nf, h & mask, value, ns, names + name_s, names + name_e, ss, se,
                          ns_s, ns_e)
    return nf, nw, regroup, not empty
