"""svmlight/libsvm format, one line at a time, in numba.

``label [qid:N] name:value ... [# comment]``. All features go into namespace ``f`` and are hashed
like VW's ``|f name:value``, so an svmlight file and its VW twin give the same model.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.core.arrays import at
from olearn.data.hashing import hash_scanned, name_table, scan_name
from olearn.data.numbers import parse_float
from olearn.data.parsed import (
    W_NOT_FLOAT,
    W_SVM_TOKEN,
    add_warning,
    check_label,
    is_blank,
    push_feature,
)

SVM_NAMESPACE = b"f"
COLON = 58
HASH = 35  # '#': a comment to the end of the line
NAME = name_table(b" \t:#")


@njit(cache=True, nogil=True, inline="always")
def _token_end(buf, p, e):
    """The end of the token running through ``buf[p]``: the next blank, '#' or ``e``."""
    while p < e and not is_blank(at(buf, p)) and at(buf, p) != HASH:
        p += 1
    return p


@njit(cache=True, nogil=True, _nrt=False)  # as vw_text.parse_vw_line: no reference counting
def parse_svm_line(buf, s, e, ex, line, hashing, out, nf, nw):
    """Parse one non-empty svmlight line ``buf[s:e]`` into example ``ex`` of ``out``
    (data/parsed.py ``Parsed``), its names hashed as ``hashing`` says; returns (nf, nw).

    One pass: a '#' is found where a token would start or end, and a name is hashed as it is
    read (:func:`olearn.data.hashing.scan_name`).
    """
    mask, _, hash_all, ns_hash = hashing
    ex_num, warns = out.numbers, out.warns
    ex_num[ex, 0] = np.nan
    ex_num[ex, 1] = 1.0
    ex_num[ex, 2] = 0.0
    p = s
    while p < e and is_blank(at(buf, p)):
        p += 1
    if p >= e or at(buf, p) == HASH:
        return nf, nw
    te = _token_end(buf, p, e)
    value, used = parse_float(buf, p, te)
    if used != te - p:
        nw = add_warning(warns, nw, line, W_NOT_FLOAT, p, te)
        value = np.float32(0)
    ex_num[ex, 0] = value
    nw = check_label(ex_num, ex, 0, warns, nw, line, p, te)
    p = te
    while True:
        while p < e and is_blank(at(buf, p)):
            p += 1
        if p >= e or at(buf, p) == HASH:
            break
        ts = p
        p, digit_value, digits = scan_name(buf, p, e, NAME)
        if p >= e or at(buf, p) != COLON:
            nw = add_warning(warns, nw, line, W_SVM_TOKEN, ts, p)  # no ':'
            continue
        colon = p
        v = colon + 1
        if (colon - ts == 3 and at(buf, ts) == 113 and at(buf, ts + 1) == 105
                and at(buf, ts + 2) == 100):
            p = _token_end(buf, v, e)  # qid:N
            continue
        if colon == ts or v >= e or is_blank(at(buf, v)) or at(buf, v) == HASH:
            p = _token_end(buf, v, e)
            nw = add_warning(warns, nw, line, W_SVM_TOKEN, ts, p)  # no name or no value
            continue
        value, used = parse_float(buf, v, e)
        p = v + used
        if used == 0 or (p < e and not is_blank(at(buf, p))):
            # the number did not end the token: read it again within the token, as the whole
            # token must be the number (a '#' right after it ends the token and the line)
            p = _token_end(buf, p, e)
            value, used = parse_float(buf, v, p)
        if used != p - v or not np.isfinite(value):
            nw = add_warning(warns, nw, line, W_SVM_TOKEN, ts, p)
            continue
        if value != 0:
            h = hash_scanned(buf, ts, colon, digit_value, digits, ns_hash, hash_all)
            nf = push_feature(out, nf, h & mask, value, np.uint8(102), ts, colon, -1, -1, -1,
                              -1)
    return nf, nw
