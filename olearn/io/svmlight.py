"""svmlight/libsvm format, one line at a time, in numba.

``label [qid:N] name:value ... [# comment]``. All features go into namespace ``f`` and are hashed
like VW's ``|f name:value``, so an svmlight file and its VW twin give the same model.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.arrays import at

from olearn.hashing import hash_name
from olearn.io.layout import (W_NOT_FLOAT, W_SVM_TOKEN, add_warning, check_label, is_blank,
                              push_feature)
from olearn.io.numbers import parse_float

SVM_NAMESPACE = b"f"


@njit(cache=True, nogil=True)
def parse_svm_line(buf, s, e, ex, line, mask, ns_hash, hash_all, ex_num, ex_tag,
                   f_idx, f_val, f_ns, f_audit, nf, warns, nw):
    """Parse one non-empty svmlight line ``buf[s:e]`` into example ``ex``; returns (nf, nw)."""
    for p in range(s, e):
        if at(buf, p) == 35:  # '#': a comment to the end of the line
            e = p
            break
    ex_num[ex, 0] = np.nan
    ex_num[ex, 1] = 1.0
    ex_num[ex, 2] = 0.0
    p = s
    first = True
    while True:
        while p < e and is_blank(at(buf, p)):
            p += 1
        if p >= e:
            break
        ts = p
        colon = -1
        while p < e and not is_blank(at(buf, p)):
            if at(buf, p) == 58 and colon < 0:
                colon = p
            p += 1
        te = p
        if first:
            first = False
            value, used = parse_float(buf, ts, te)
            if used != te - ts:
                nw = add_warning(warns, nw, line, W_NOT_FLOAT, ts, te)
                value = np.float32(0)
            ex_num[ex, 0] = value
            nw = check_label(ex_num, ex, 0, warns, nw, line, ts, te)
            continue
        if colon - ts == 3 and at(buf, ts) == 113 and at(buf, ts + 1) == 105 and at(buf, ts + 2) == 100:
            continue  # qid:N
        if colon <= ts or colon + 1 >= te:
            nw = add_warning(warns, nw, line, W_SVM_TOKEN, ts, te)
            continue
        value, used = parse_float(buf, colon + 1, te)
        if used != te - colon - 1 or not np.isfinite(value):
            nw = add_warning(warns, nw, line, W_SVM_TOKEN, ts, te)
            continue
        if value != 0:
            h = hash_name(buf, ts, colon, ns_hash, hash_all)
            nf = push_feature(f_idx, f_val, f_ns, f_audit, nf, h & mask, value, np.uint8(102),
                              ts, colon, -1, -1, -1, -1)
    return nf, nw
