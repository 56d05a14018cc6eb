"""The -p file: one line per example, formatted by a numba kernel."""
from __future__ import annotations

import math

import numpy as np
from numba import njit


# _nrt=False (here, in format_number and _end_line, which run once per line or more): a function
# compiled with numba's runtime counts a reference to each array it is passed, atomically, on
# every call; these allocate nothing and return no array.
@njit(cache=True, nogil=True, _nrt=False)
def _put_int(out, o, v):
    """Write ``v`` >= 0 in decimal."""
    n = 1
    rest = v
    while rest >= 10:
        rest //= 10
        n += 1
    for i in range(n):
        out[o + n - 1 - i] = 48 + v % 10
        v //= 10
    return o + n


@njit(cache=True, nogil=True, inline="always")
def _put_word(out, o, a, b, c):
    """Write the three bytes ``a b c`` (nan, inf)."""
    out[o] = a
    out[o + 1] = b
    out[o + 2] = c
    return o + 3


@njit(cache=True, nogil=True, _nrt=False)
def format_number(out, o, x):
    """Write ``x`` as VW does: an integral value with no decimals, else 6 decimals (%f)."""
    if np.isnan(x):
        return _put_word(out, o, 110, 97, 110)
    if x < 0:
        out[o] = 45
        o += 1
        x = -x
    if np.isinf(x):
        return _put_word(out, o, 105, 110, 102)
    if x >= 1e18:  # beyond int64 fixed point: integral anyway at float32 precision
        return _put_whole(out, o, x)
    if x == np.floor(x):
        return _put_int(out, o, np.int64(x))
    return _six_decimals(out, o, x)


FLOAT32_MAX = 3.4028234663852886e38
# digits of the largest float32, the most _put_whole writes
WHOLE_DIGITS = 39


@njit(cache=True, nogil=True, _nrt=False)
def _put_whole(out, o, x):
    """Write the integral ``x`` >= 2^53 exactly in decimal, as printf's %.0f does (1e20 as a
    float32 is 100000002004087734272); beyond float32's range (predictions are float32, as
    VW's), ``inf``. ``x`` is m·2^e with m < 2^53: m's digits are written, then doubled e
    times in place, a carry out of the top digit shifting them one place right."""
    if x > FLOAT32_MAX:
        return _put_word(out, o, 105, 110, 102)
    fraction, exponent = math.frexp(x)
    doublings = exponent - 53
    n = _put_int(out, o, np.int64(math.ldexp(fraction, 53))) - o
    for i in range(n):
        out[o + i] -= 48
    for _ in range(doublings):
        carry = 0
        for i in range(n - 1, -1, -1):
            d = 2 * out[o + i] + carry
            out[o + i] = d % 10
            carry = d // 10
        if carry:
            for i in range(n, 0, -1):
                out[o + i] = out[o + i - 1]
            out[o] = carry
            n += 1
    for i in range(n):
        out[o + i] += 48
    return o + n


@njit(cache=True, nogil=True, _nrt=False)
def _six_decimals(out, o, x):
    """``x`` >= 0 (below 1e18) with 6 decimals, rounded half up."""
    micro = np.int64(np.floor(x * 1e6 + 0.5))
    o = _put_int(out, o, micro // 1000000)
    out[o] = 46
    frac = micro % 1000000
    for i in range(6):
        out[o + 6 - i] = 48 + frac % 10
        frac //= 10
    return o + 7


@njit(cache=True, nogil=True)
def _six_digits(x, exp10):
    """x's 6 significant digits below 10^(exp10 + 1), rounded half to even as printf rounds
    (exact for a float32 x within 1e-4..1e6: x times a power of ten up to 10^10 is exact)."""
    if exp10 <= 5:
        return np.int64(np.rint(x * 10.0 ** (5 - exp10)))
    return np.int64(np.rint(x / 10.0 ** (exp10 - 5)))


@njit(cache=True, nogil=True)
def format_general(out, o, x):
    """Write ``x`` as C++'s default stream format does (printf's %g: 6 significant digits,
    trailing zeros dropped), as VW writes --oaa's per-class scores."""
    if np.isnan(x) or np.isinf(x):
        return format_number(out, o, x)
    if np.copysign(1.0, x) < 0:
        out[o] = 45
        o += 1
        x = -x
    if x == 0:
        out[o] = 48
        return o + 1
    exp10 = np.int64(np.floor(np.log10(x)))
    digits = _six_digits(x, exp10)
    if digits >= 1000000:  # rounding carried into another digit
        exp10 += 1
        digits = _six_digits(x, exp10)
    if digits < 100000:  # the estimate of the exponent was one too high
        exp10 -= 1
        digits = _six_digits(x, exp10)
    text = np.empty(6, dtype=np.uint8)
    for i in range(6):
        text[5 - i] = 48 + digits % 10
        digits //= 10
    used = 6
    while used > 1 and text[used - 1] == 48:
        used -= 1
    if -4 <= exp10 < 6:
        if exp10 < 0:
            out[o] = 48
            out[o + 1] = 46
            o += 2
            for _ in range(-exp10 - 1):
                out[o] = 48
                o += 1
            out[o:o + used] = text[:used]
            return o + used
        whole = exp10 + 1
        for i in range(max(used, whole)):
            if i == whole:
                out[o] = 46
                o += 1
            out[o] = text[i] if i < used else 48
            o += 1
        return o
    out[o] = text[0]
    o += 1
    if used > 1:
        out[o] = 46
        out[o + 1:o + used] = text[1:used]
        o += used
    out[o] = 101
    out[o + 1] = 45 if exp10 < 0 else 43
    o += 2
    if abs(exp10) < 10:
        out[o] = 48
        o += 1
    return _put_int(out, o, abs(exp10))


@njit(cache=True, nogil=True)
def _tag_room(tags, text, n):
    """Bytes the tags of the first ``n`` examples need; raises ValueError for tags that do not
    fit ``text``."""
    if tags.shape[0] < n or tags.shape[1] < 2:
        raise ValueError("format_predictions: fewer tags than predictions")
    size = 0
    for e in range(n):
        if tags[e, 1] > tags[e, 0]:
            if tags[e, 0] < 0 or tags[e, 1] > text.shape[0]:
                raise ValueError("format_predictions: a tag outside the text")
            size += 1 + tags[e, 1] - tags[e, 0]
    return size


@njit(cache=True, nogil=True, _nrt=False)
def _end_line(out, o, tags, e, text):
    """`` tag`` when example ``e`` has one (an empty tag prints nothing, as VW), then the end
    of the line."""
    if tags[e, 1] > tags[e, 0]:
        out[o] = 32
        o += 1
        for k in range(tags[e, 0], tags[e, 1]):
            out[o] = text[k]
            o += 1
    out[o] = 10
    return o + 1


@njit(cache=True, nogil=True)
def format_predictions(preds, tags, text):
    """One line per prediction: the number, then `` tag`` when the example has one (a span
    ``text[tags[e, 0]:tags[e, 1]]``; -1 or an empty span: none). Raises ValueError for tags that
    do not fit ``preds`` or ``text``."""
    out = np.empty((WHOLE_DIGITS + 3) * preds.shape[0] + _tag_room(tags, text, preds.shape[0]),
                   dtype=np.uint8)
    o = 0
    for e in range(preds.shape[0]):
        o = format_number(out, o, np.float64(preds[e]))
        o = _end_line(out, o, tags, e, text)
    return out[:o]


@njit(cache=True, nogil=True)
def format_pairs(classes, scores, counts, lead, tags, text, comma):
    """Lines of ``c:x`` pairs: example ``e``'s first ``counts[e]`` classes ``classes[e, j]``
    (whole numbers >= 0) and their ``scores[e, j]`` (C++'s default format), space-separated
    (``comma``: comma-separated, --csoaa_rank's), then `` tag`` as :func:`format_predictions`;
    with ``lead`` (--oaa's -r, VW's) a space before the first pair too."""
    n, k = classes.shape
    if scores.shape[0] < n or scores.shape[1] < k or counts.shape[0] < n:
        raise ValueError("format_pairs: fewer scores or counts than classes")
    out = np.empty(n * (k * 40 + 2) + _tag_room(tags, text, n), dtype=np.uint8)
    o = 0
    for e in range(n):
        m = np.int64(counts[e]) if 0 <= counts[e] <= k else k
        for j in range(m):
            if j > 0 or lead:
                out[o] = 44 if comma and j > 0 else 32
                o += 1
            c = classes[e, j]
            o = _put_int(out, o, np.int64(c) if 0 <= c < 1e18 else 0)
            out[o] = 58
            o = format_general(out, o + 1, np.float64(scores[e, j]))
        o = _end_line(out, o, tags, e, text)
    return out[:o]


@njit(cache=True, nogil=True, _nrt=False)
def _fixed6(out, o, x):
    """``x`` with 6 decimals (C++'s std::fixed), as :func:`format_number` beyond its range."""
    if np.isnan(x) or np.isinf(x) or abs(x) >= 1e18:
        return format_number(out, o, x)
    if x < 0 and np.floor(-x * 1e6 + 0.5) > 0:
        out[o] = 45
        o += 1
    return _six_decimals(out, o, abs(x))


@njit(cache=True, nogil=True)
def format_intervals(preds, low, high, tags, text):
    """--bootstrap's -p lines (VW's): the prediction with 6 decimals, `` tag``, then the lowest
    and the highest copy's prediction."""
    n = preds.shape[0]
    if low.shape[0] < n or high.shape[0] < n:
        raise ValueError("format_intervals: fewer bounds than predictions")
    # three numbers, each a sign and WHOLE_DIGITS digits at most, and a space or end of line
    out = np.empty(n * 3 * (WHOLE_DIGITS + 2) + _tag_room(tags, text, n), dtype=np.uint8)
    o = 0
    for e in range(n):
        o = _fixed6(out, o, np.float64(preds[e]))
        if tags[e, 1] > tags[e, 0]:
            out[o] = 32
            o += 1
            for k in range(tags[e, 0], tags[e, 1]):
                out[o] = text[k]
                o += 1
        for bound in (low[e], high[e]):
            out[o] = 32
            o = _fixed6(out, o + 1, np.float64(bound))
        out[o] = 10
        o += 1
    return out[:o]


@njit(cache=True, nogil=True)
def format_confidence(preds, confidence, tags, text):
    """--confidence's -p lines (VW's): the prediction and its confidence with 6 decimals, a
    space, then the tag if any."""
    n = preds.shape[0]
    if confidence.shape[0] < n:
        raise ValueError("format_confidence: fewer confidences than predictions")
    # two numbers of a sign and WHOLE_DIGITS digits at most, two spaces, the end of the line
    out = np.empty(n * (2 * WHOLE_DIGITS + 5) + _tag_room(tags, text, n), dtype=np.uint8)
    o = 0
    for e in range(n):
        o = _fixed6(out, o, np.float64(preds[e]))
        out[o] = 32
        o = _fixed6(out, o + 1, np.float64(confidence[e]))
        out[o] = 32
        o += 1
        for k in range(tags[e, 0], tags[e, 1]):
            out[o] = text[k]
            o += 1
        out[o] = 10
        o += 1
    return out[:o]


@njit(cache=True, nogil=True)
def format_class_sets(outputs, cut, probabilities, tags, text):
    """--multilabel_oaa's -p lines (VW's): the classes whose ``outputs[e, k]`` exceed
    ``cut[e]``, comma-separated, then a space and `` tag``; with ``probabilities`` every class's
    ``k:output`` first, on a line of its own, and an empty set after it."""
    n, k = outputs.shape
    if cut.shape[0] < n:
        raise ValueError("format_class_sets: fewer thresholds than predictions")
    out = np.empty(n * (k * 40 + 4) + 2 * _tag_room(tags, text, n), dtype=np.uint8)
    o = 0
    for e in range(n):
        if probabilities:
            for c in range(k):
                if c > 0:
                    out[o] = 32
                    o += 1
                o = _put_int(out, o, c)
                out[o] = 58
                o = format_general(out, o + 1, np.float64(outputs[e, c]))
            o = _end_line(out, o, tags, e, text)
        else:
            first = True
            for c in range(k):
                if outputs[e, c] > cut[e]:
                    if not first:
                        out[o] = 44
                        o += 1
                    o = _put_int(out, o, c)
                    first = False
        out[o] = 32
        o = _end_line(out, o + 1, tags, e, text)
    return out[:o]


@njit(cache=True, nogil=True)
def format_names(classes, names, name_ends, tags, text):
    """-p's lines with --named_labels: class ``c``'s name (the bytes of ``names`` up to
    ``name_ends[c - 1]``; none for a class without a name), then `` tag``."""
    n = classes.shape[0]
    longest = 0
    start = 0
    for i in range(name_ends.shape[0]):
        if not start <= name_ends[i] <= names.shape[0]:
            raise ValueError("format_names: names outside their bytes")
        longest = max(longest, name_ends[i] - start)
        start = name_ends[i]
    out = np.empty(n * (longest + 1) + _tag_room(tags, text, n), dtype=np.uint8)
    o = 0
    for e in range(n):
        if 1 <= classes[e] <= name_ends.shape[0]:
            c = np.int64(classes[e])
            first = name_ends[c - 2] if c > 1 else 0
            for i in range(first, name_ends[c - 1]):
                out[o] = names[i]
                o += 1
        o = _end_line(out, o, tags, e, text)
    return out[:o]
