"""VW's number reader, in numba.

VW reads numbers with a fast float32 path (not correctly rounded) and falls back to ``strtof``
when the text does not end at whitespace. Emulating the fast path makes parsed values equal
VW's bit for bit in the common case; the fallback here parses in float64 and rounds once.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from olearn.core.arrays import BYTE, TOPS, U8, at, first_flagged, word


def _powers() -> tuple[np.ndarray, np.ndarray]:
    up = np.empty(39, dtype=np.float32)
    down = np.empty(38, dtype=np.float32)
    up[0] = down[0] = np.float32(1)
    for i in range(1, 39):
        up[i] = np.float32(up[i - 1] * np.float32(10))
    for i in range(1, 38):
        down[i] = np.float32(down[i - 1] / np.float32(10))
    return up, down


POW10_UP, POW10_DOWN = _powers()


@njit(cache=True, nogil=True, inline="always")
def is_space(c: int) -> bool:
    return c == 32 or c == 9


@njit(cache=True, nogil=True, inline="always")
def _digit(c: int) -> bool:
    return 48 <= c <= 57


@njit(cache=True, nogil=True, inline="always")
def _lower(c: int) -> int:
    return c | 32 if 65 <= c <= 90 else c


@njit(cache=True, nogil=True)
def _match_word(buf, p, end, word):
    n = len(word)
    if p + n > end:
        return False
    for i in range(n):
        if _lower(at(buf, p + i)) != word[i]:
            return False
    return True


_INF = np.array([105, 110, 102], dtype=np.uint8)  # "inf"
_INFINITY = np.array([105, 110, 102, 105, 110, 105, 116, 121], dtype=np.uint8)  # "infinity"
_NAN = np.array([110, 97, 110], dtype=np.uint8)  # "nan"


@njit(cache=True, nogil=True)
def _hex_digit(c: int) -> int:
    c = _lower(c)
    if _digit(c):
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    return -1


@njit(cache=True, nogil=True)
def _hex_float(buf, p, end):
    """The part after ``0x``: hex digits, an optional hex fraction and ``p``-exponent."""
    start = p
    value = 0.0
    seen = False
    while p < end and _hex_digit(at(buf, p)) >= 0:
        value = value * 16.0 + _hex_digit(at(buf, p))
        seen = True
        p += 1
    if p < end and at(buf, p) == 46:
        q = p + 1
        unit = 1.0 / 16.0
        while q < end and _hex_digit(at(buf, q)) >= 0:
            value += _hex_digit(at(buf, q)) * unit
            unit /= 16.0
            seen = True
            q += 1
        if seen:
            p = q
    if not seen:
        return 0.0, 0
    if p < end and _lower(at(buf, p)) == 112:  # 'p': a binary exponent
        q = p + 1
        esign = 1
        if q < end and (at(buf, q) == 43 or at(buf, q) == 45):
            esign = -1 if at(buf, q) == 45 else 1
            q += 1
        if q < end and _digit(at(buf, q)):
            e = 0
            while q < end and _digit(at(buf, q)):
                e = min(e * 10 + (at(buf, q) - 48), 100000)
                q += 1
            value *= 2.0 ** (esign * e) if e < 2000 else (np.inf if esign > 0 else 0.0)
            p = q
    return value, p - start


@njit(cache=True, nogil=True)
def strtof(buf: np.ndarray, start: int, end: int):
    """C ``strtof`` on ``buf[start:end]``: (value as float32, bytes consumed; 0 if no number)."""
    p = start
    while p < end and (is_space(at(buf, p)) or at(buf, p) == 10 or at(buf, p) == 13):
        p += 1
    sign = 1.0
    if p < end and (at(buf, p) == 43 or at(buf, p) == 45):
        if at(buf, p) == 45:
            sign = -1.0
        p += 1
    if _match_word(buf, p, end, _INFINITY):
        return np.float32(sign * np.inf), p + 8 - start
    if _match_word(buf, p, end, _INF):
        return np.float32(sign * np.inf), p + 3 - start
    if _match_word(buf, p, end, _NAN):
        return np.float32(np.nan), p + 3 - start
    if p + 1 < end and at(buf, p) == 48 and _lower(at(buf, p + 1)) == 120:
        value, used = _hex_float(buf, p + 2, end)
        if used == 0:
            return np.float32(0.0), p + 1 - start  # just the "0"
        return np.float32(sign * value), p + 2 + used - start
    mant = np.int64(0)
    ndigits = 0
    exp10 = 0
    seen = False
    while p < end and _digit(at(buf, p)):
        seen = True
        if ndigits < 19:
            mant = mant * 10 + (at(buf, p) - 48)
            if mant:
                ndigits += 1
        else:
            exp10 += 1
        p += 1
    if p < end and at(buf, p) == 46:
        p += 1
        while p < end and _digit(at(buf, p)):
            seen = True
            if ndigits < 19:
                mant = mant * 10 + (at(buf, p) - 48)
                if mant:
                    ndigits += 1
                exp10 -= 1
            p += 1
    if not seen:
        return np.float32(0.0), 0
    if p < end and _lower(at(buf, p)) == 101:
        q = p + 1
        esign = 1
        if q < end and (at(buf, q) == 43 or at(buf, q) == 45):
            if at(buf, q) == 45:
                esign = -1
            q += 1
        if q < end and _digit(at(buf, q)):
            e = 0
            while q < end and _digit(at(buf, q)):
                if e < 100000:
                    e = e * 10 + (at(buf, q) - 48)
                q += 1
            exp10 += esign * e
            p = q
    if mant == 0:
        return np.float32(sign * 0.0), p - start
    if exp10 > 400:
        return np.float32(sign * np.inf), p - start
    if exp10 < -400:
        return np.float32(sign * 0.0), p - start
    if exp10 >= 0:
        value = mant * 10.0 ** exp10
    else:
        value = mant / 10.0 ** (-exp10) if exp10 > -300 else (mant / 1e300) / 10.0 ** (-exp10 - 300)
    return np.float32(sign * value), p - start


@njit(cache=True, nogil=True)
def _float32_digits(buf, p, end):
    """VW's digit loop in float32, each step rounded: integer part, then up to 35 decimals."""
    ten = np.float32(10)
    acc = np.float32(0)
    while p < end and _digit(at(buf, p)):
        acc = (acc * ten + np.float32(at(buf, p))) - np.float32(48)
        p += 1
    if p < end and at(buf, p) == 46:
        p += 1
        ndec = 0
        while p < end and _digit(at(buf, p)) and ndec < 35:
            acc = acc * ten + np.float32(at(buf, p) - 48)
            ndec += 1
            p += 1
    return acc


_ZEROS = np.uint64(0x3030303030303030)  # '0' in every byte
_ABOVE_NINE = np.uint64(0x7676767676767676)  # + this sets a byte's top bit iff it is above 9


@njit(cache=True, nogil=True, inline="always")
def _below(k):
    """A mask of the ``k`` low bytes of a uint64 (0 <= k <= 7)."""
    return (np.uint64(1) << (U8 * np.uint64(k))) - np.uint64(1)


@njit(cache=True, nogil=True, inline="always")
def _eight_bytes(buf, p):
    """The common case of :func:`parse_float` read from the 8 bytes at ``p`` at once (no
    per-byte branches): ``digits[.digits]`` with 1 to 7 digits, then a blank or a newline,
    all inside the 8 bytes. Returns (digits as an integer, decimals, bytes before the
    terminator), or a length of -1 when the bytes are anything else."""
    w = word(buf, p)
    d = w ^ _ZEROS  # a digit's value in its byte; any other byte becomes above 9
    other = ((d + _ABOVE_NINE) | d) & TOPS  # exact up to the first byte above 0x89
    k = first_flagged(other)  # bytes before the first non-digit
    if k >= 8:
        return 0, 0, -1
    end = k
    digits = d & _below(k)
    decimals = 0
    if (w >> (U8 * np.uint64(k))) & BYTE == 46:  # '.'
        other &= ~(np.uint64(0x80) << (U8 * np.uint64(k)))
        end = first_flagged(other)
        if end >= 8:
            return 0, 0, -1
        decimals = end - k - 1
        digits |= ((d >> (U8 * np.uint64(k + 1))) & _below(decimals)) << (U8 * np.uint64(k))
    n = k + decimals
    c = (w >> (U8 * np.uint64(end))) & BYTE
    if n == 0 or n > 7 or not (c == 32 or c == 9 or c == 10 or c == 13):
        return 0, 0, -1
    # the n digits, first digit in the low byte, as leading-zero-padded 8 digits; then pairs,
    # quads and the whole, each step one multiply and shift (no carries: 10·9 + 9 < 256, ...)
    v = digits << (U8 * np.uint64(8 - n))
    v = ((v * np.uint64(10)) + (v >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    v = ((v * np.uint64(100)) + (v >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    v = ((v * np.uint64(10000)) + (v >> np.uint64(32))) & np.uint64(0xFFFFFFFF)
    return np.int64(v), decimals, end


@njit(cache=True, nogil=True, inline="always")
def parse_float(buf: np.ndarray, start: int, end: int):
    """VW's ``parse_float`` on ``buf[start:end]``: (float32 value, bytes consumed).

    The common case, ``[-]digits[.digits]`` with at most 7 digits ending at a blank or a
    newline at or before ``end``, is read inline from 8 bytes at once when they lie inside
    ``buf`` (exactly: such a value fits float32's 24-bit significand); the bytes after ``end``
    decide nothing, as the number ends before them. Anything else, including a number at the
    very end of ``buf``, is a call of :func:`parse_float_general`, which gives the same result
    (an inline byte loop here halved the speed of a micro-benchmark's feature loop).
    """
    p = start
    negative = p < end and at(buf, p) == 45
    if negative:
        p += 1
    if p + 8 <= buf.shape[0]:  # a line's last number and a label: their 8 bytes pass ``end``
        acc, decimals, used = _eight_bytes(buf, p)
        if used >= 0 and p + used <= end:
            value = np.float32(acc) * POW10_DOWN[decimals]
            return (-value if negative else value), p + used - start
    return parse_float_general(buf, start, end)


@njit(cache=True, nogil=True)
def parse_float_general(buf: np.ndarray, start: int, end: int):
    """VW's ``parse_float`` on ``buf[start:end]``: (float32 value, bytes consumed).

    Leading blanks are skipped. The fast path applies when the number ends at a blank, a
    newline or ``end``; anything else goes to :func:`strtof`.
    """
    p = start
    while p < end and is_space(at(buf, p)):
        p += 1
    sign = np.float32(1)
    if p < end and at(buf, p) == 45:
        sign = np.float32(-1)
        p += 1
    digits_start = p
    iacc = np.int64(0)
    ndigits = 0
    while p < end and _digit(at(buf, p)):
        iacc = iacc * 10 + (at(buf, p) - 48)
        ndigits += 1
        p += 1
    ndec = 0
    if p < end and at(buf, p) == 46:
        p += 1
        while p < end and _digit(at(buf, p)):
            if ndec < 35:
                iacc = iacc * 10 + (at(buf, p) - 48)
                ndigits += 1
                ndec += 1
            p += 1
    if ndigits <= 7:  # below 2^24 every float32 step of VW's loop is exact
        acc = np.float32(iacc)
    else:
        acc = _float32_digits(buf, digits_start, p)
    exp = 0
    if p < end and (at(buf, p) == 101 or at(buf, p) == 69):
        p += 1
        esign = 1
        if p < end and at(buf, p) == 45:
            esign = -1
            p += 1
        while p < end and _digit(at(buf, p)):
            exp = exp * 10 + (at(buf, p) - 48)
            if exp > 100000:
                exp = 100000
            p += 1
        exp *= esign
    if p < end and not (is_space(at(buf, p)) or at(buf, p) == 10 or at(buf, p) == 13):
        return strtof(buf, start, end)
    # VW keeps this difference in an int8, so 1e999 reads as 1e-25 there: olearn does not wrap
    # (an overflow is inf, which the parser then refuses; an underflow is 0)
    e = exp - ndec
    if e < -37:
        scale = np.float32(0)
    elif e > 38:
        scale = np.float32(np.inf)
    elif e >= 0:
        scale = POW10_UP[e]
    else:
        scale = POW10_DOWN[-e]
    return sign * (acc * scale), p - start
