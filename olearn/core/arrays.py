"""Array access helpers for numba kernels."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def at(a: np.ndarray, i: int):
    """``a[i]`` for a known non-negative ``i``: an unsigned index skips numba's negative-index
    wraparound, which otherwise costs about half the speed of a byte-scanning loop."""
    return a[np.uint64(i)]


# Eight bytes at a time (SWAR): a uint64 word of a byte buffer, and its bytes' top bits as flags.
U8 = np.uint64(8)
BYTE = np.uint64(0xFF)
TOPS = np.uint64(0x8080808080808080)  # every byte's top bit
LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)  # every byte's other bits
ONES = np.uint64(0x0101010101010101)
NEWLINES = np.uint64(0x0A0A0A0A0A0A0A0A)  # '\n' in every byte


@njit(cache=True, nogil=True, inline="always")
def word(buf, p):
    """``buf[p:p + 8]`` as a little-endian uint64 (LLVM folds the bytes into one load)."""
    return (np.uint64(at(buf, p)) | (np.uint64(at(buf, p + 1)) << np.uint64(8))
            | (np.uint64(at(buf, p + 2)) << np.uint64(16))
            | (np.uint64(at(buf, p + 3)) << np.uint64(24))
            | (np.uint64(at(buf, p + 4)) << np.uint64(32))
            | (np.uint64(at(buf, p + 5)) << np.uint64(40))
            | (np.uint64(at(buf, p + 6)) << np.uint64(48))
            | (np.uint64(at(buf, p + 7)) << np.uint64(56)))


@njit(cache=True, nogil=True)
def first_flagged(flags):
    """The index of the first byte of ``flags`` (only bytes' top bits set) that is flagged; 8
    when none is. Branch-free: the bytes below the lowest flag each count 1, summed by a
    multiply into the top byte."""
    low = flags & (~flags + np.uint64(1))
    below = (low >> np.uint64(7)) - np.uint64(1)
    return np.int64(((below & ONES) * ONES) >> np.uint64(56))


@njit(cache=True, nogil=True)
def heapsort(a, n):
    """Sort ``a[:n]`` ascending in place, allocating nothing (numba's ``sort`` allocates its
    stack, which code without numba's runtime cannot). Any values, NaN included, keep every
    access inside ``a[:n]``; NaNs leave the order unspecified."""
    for root in range(n // 2 - 1, -1, -1):
        _sift_down(a, root, n)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift_down(a, 0, end)


@njit(cache=True, nogil=True)
def _sift_down(a, i, n):
    """Restore the max-heap ``a[:n]`` below node ``i``."""
    while True:
        child = 2 * i + 1
        if child >= n:
            return
        if child + 1 < n and a[child + 1] > a[child]:
            child += 1
        if not a[child] > a[i]:
            return
        a[i], a[child] = a[child], a[i]
        i = child
