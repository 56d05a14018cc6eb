"""VW text format, one line at a time, in numba (grammar: docs/vw-reference.md §1)."""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.core.arrays import at
from olearn.data.hashing import hash_name, hash_scanned, name_table, scan_name
from olearn.data.labels import parse_label
from olearn.data.numbers import parse_float
from olearn.data.parsed import (
    W_BAD_SCALE,
    W_BAD_VALUE,
    W_MALFORMED,
    add_warning,
    is_blank,
    push_feature,
)

BAR = 124
COLON = 58
NAME = name_table(b" \t:|")  # a namespace's or feature's name ends at a blank, ':' or '|'


@njit(cache=True, nogil=True)
def group_namespaces(f_idx, f_val, f_ns, f_audit, first, nf, ns_rank):
    """Stable regrouping of a line's features by namespace, in order of first appearance:
    VW merges a repeated namespace (``|a x |b y |a z``) into its first segment. Rare, so a
    simple pass per namespace."""
    idx = f_idx[first:nf].copy()
    val = f_val[first:nf].copy()
    ns = f_ns[first:nf].copy()
    audit = f_audit[first:nf].copy() if f_audit.shape[0] > 0 else f_audit[:0]
    n_ranks = 0
    for k in range(nf - first):
        n_ranks = max(n_ranks, ns_rank[ns[k], 1] + 1)
    out = first
    for rank in range(n_ranks):
        for k in range(nf - first):
            if ns_rank[ns[k], 1] == rank:
                f_idx[out] = idx[k]
                f_val[out] = val[k]
                f_ns[out] = ns[k]
                if audit.shape[0] > 0:
                    f_audit[out] = audit[k]
                out += 1


# _nrt=False: the line is parsed without reference counting (numba's runtime off here and in
# what it calls, which allocates nothing): the arrays stay owned by parse_block, and counting
# each array argument once per line was about a fifth of the parser's time.
@njit(cache=True, nogil=True, _nrt=False)
def parse_vw_line(buf, s, e, ex, line, hashing, labels, out, nf, nw, ns_rank, index_of):
    """Parse one non-empty line ``buf[s:e]`` into example ``ex`` of ``out`` (data/parsed.py
    ``Parsed``), its names hashed as ``hashing`` says (``Hashing``), its label read as
    ``labels`` says (data/labels.py ``Labels``); returns (nf, nw, regroup):
    ``regroup`` when a namespace came back after another (then :func:`group_namespaces`).

    ``ns_rank`` is per-block scratch of shape (256, 2): for each namespace index, the example
    that last saw it (plus one) and its rank of first appearance in that example.
    ``index_of`` (256 bytes) maps a named namespace's first byte to its index (--redefine,
    features/namespaces.py); the default namespace's is always ``' '``.
    """
    mask, seed, hash_all, default_ns_hash = hashing
    warns = out.warns
    n_ranks = 0
    regroup = False
    previous_ns = -1
    stamp = ex + 1
    bar = s
    while bar < e and at(buf, bar) != BAR:
        bar += 1
    nw = parse_label(buf, s, bar, ex, out, labels, warns, nw, line)
    p = bar
    while p < e:
        p += 1  # the '|'
        ns_s = ns_e = -1
        scale = np.float32(1)
        if p < e and not is_blank(at(buf, p)) and at(buf, p) != BAR:
            if at(buf, p) == COLON:
                return nf, add_warning(warns, nw, line, W_MALFORMED, s, p), regroup
            ns_s = p
            p, digit_value, digits = scan_name(buf, p, e, NAME)
            ns_e = p
            ns = index_of[at(buf, ns_s)]
            ns_hash = hash_scanned(buf, ns_s, ns_e, digit_value, digits, seed, hash_all)
            if p < e and at(buf, p) == COLON:
                value, used = parse_float(buf, p + 1, e)
                if used == 0:
                    return nf, add_warning(warns, nw, line, W_MALFORMED, s, p + 1), regroup
                p += 1 + used
                if not np.isfinite(value):
                    nw = add_warning(warns, nw, line, W_BAD_SCALE, ns_s, p)
                    value = np.float32(1)
                scale = np.float32(value)
                if p < e and not is_blank(at(buf, p)) and at(buf, p) != BAR:
                    return nf, add_warning(warns, nw, line, W_MALFORMED, s, p), regroup
        else:
            ns = np.uint8(32)
            ns_hash = default_ns_hash
        anon = 0
        ranked = False  # whether this segment has added a feature (then its namespace is ranked)
        while True:
            while p < e and is_blank(at(buf, p)):
                p += 1
            if p >= e or at(buf, p) == BAR:
                break
            fs = p
            p, digit_value, digits = scan_name(buf, p, e, NAME)
            fe = p
            value = scale
            ss = se = -1
            malformed = False
            if p < e and at(buf, p) == COLON:
                p += 1
                if p < e:
                    number, used = parse_float(buf, p, e)
                    if used == 0:  # a string value: the next blank-free run
                        while p < e and is_blank(at(buf, p)):
                            p += 1
                        ss = p
                        while p < e and not is_blank(at(buf, p)):
                            p += 1
                        se = p
                        value = np.float32(1)
                    else:
                        p += used
                        value = np.float32(scale * np.float32(number))
                        if not np.isfinite(value):  # NaN, infinite, or overflowed by the scale
                            nw = add_warning(warns, nw, line, W_BAD_VALUE, fs, p)
                            value = np.float32(0)
                        malformed = p < e and not is_blank(at(buf, p)) and at(buf, p) != BAR
            if fe == fs:
                h = (ns_hash + anon) & 0xFFFFFFFF
                anon += 1
            else:
                h = hash_scanned(buf, fs, fe, digit_value, digits, ns_hash, hash_all)
            if ss >= 0:
                h = hash_name(buf, ss, se, h, hash_all)
            if value != 0:
                # namespaces are ordered by the first segment that adds a feature (VW's rule)
                if not ranked:
                    if ns_rank[ns, 0] != stamp:
                        ns_rank[ns, 0] = stamp
                        ns_rank[ns, 1] = n_ranks
                        n_ranks += 1
                    elif ns != previous_ns:
                        regroup = True
                    previous_ns = ns
                    ranked = True
                nf = push_feature(out, nf, h & mask, value, ns, fs, fe, ss, se, ns_s, ns_e)
            if malformed:
                return nf, add_warning(warns, nw, line, W_MALFORMED, s, p), regroup
    return nf, nw, regroup
