"""The -p file: one line per example, formatted by a numba kernel."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _put_int(out, o, v):
    if v == 0:
        out[o] = 48
        return o + 1
    digits = np.empty(20, dtype=np.uint8)
    n = 0
    while v > 0:
        digits[n] = 48 + v % 10
        v //= 10
        n += 1
    for i in range(n):
        out[o + i] = digits[n - 1 - i]
    return o + n


@njit(cache=True, nogil=True)
def format_number(out, o, x):
    """Write ``x`` as VW does: an integral value with no decimals, else 6 decimals (%f)."""
    if np.isnan(x):
        out[o:o + 3] = np.array([110, 97, 110], dtype=np.uint8)
        return o + 3
    if x < 0:
        out[o] = 45
        o += 1
        x = -x
    if np.isinf(x):
        out[o:o + 3] = np.array([105, 110, 102], dtype=np.uint8)
        return o + 3
    if x >= 1e18:  # beyond int64 fixed point: integral anyway at float32 precision
        return _put_int(out, o, np.int64(9e18)) if x >= 9e18 else _put_int(out, o, np.int64(x))
    if x == np.floor(x):
        return _put_int(out, o, np.int64(x))
    micro = np.int64(np.floor(x * 1e6 + 0.5))
    o = _put_int(out, o, micro // 1000000)
    out[o] = 46
    frac = micro % 1000000
    for i in range(6):
        out[o + 6 - i] = 48 + frac % 10
        frac //= 10
    return o + 7


@njit(cache=True, nogil=True)
def format_predictions(preds, tags, text):
    """One line per prediction: the number, then `` tag`` when the example has one (a span
    ``text[tags[e, 0]:tags[e, 1]]``; -1 or an empty span: none). Raises ValueError for tags that
    do not fit ``preds`` or ``text``."""
    if tags.shape[0] < preds.shape[0] or tags.shape[1] < 2:
        raise ValueError("format_predictions: fewer tags than predictions")
    size = 0
    for e in range(preds.shape[0]):
        size += 32
        if tags[e, 1] > tags[e, 0]:
            if tags[e, 0] < 0 or tags[e, 1] > text.shape[0]:
                raise ValueError("format_predictions: a tag outside the text")
            size += 1 + tags[e, 1] - tags[e, 0]
    out = np.empty(size, dtype=np.uint8)
    o = 0
    for e in range(preds.shape[0]):
        o = format_number(out, o, np.float64(preds[e]))
        if tags[e, 1] > tags[e, 0]:  # an empty tag prints nothing, as VW
            out[o] = 32
            o += 1
            for k in range(tags[e, 0], tags[e, 1]):
                out[o] = text[k]
                o += 1
        out[o] = 10
        o += 1
    return out[:o]
