"""VW's feature hashing: MurmurHash3 (x86, 32-bit) and the 'strings'/'all' hashers, in numba.

All integers are int64 holding unsigned 32-bit values; products wrap in 64 bits and are masked,
which keeps the low 32 bits exact without numba's unsigned/signed promotion pitfalls.
"""
from __future__ import annotations

import mmh3
import numpy as np
from numba import njit

from olearn.core.arrays import at
from olearn.core.option import MAX_COUNT, choice, flag, number

M32 = 0xFFFFFFFF
CONSTANT_HASH = 11650396  # VW's constant feature, masked by 2^b - 1
CONSTANT_NAMESPACE = 128
DEFAULT_NAMESPACE = 32  # ' '

OPTIONS = (
    number("-b", "--bit_precision", kind=int, default=18, low=1, high=30, model=True,
           parsing=True, help="Number of bits in the feature table (1..30)."),
    flag("--noconstant", help="Don't add a constant feature.", model=True, parsing=True),
    choice("--hash", choices=("strings", "all"), default="strings", model=True, parsing=True,
           help="How to hash features: strings (all-digit names as numbers) or all."),
    # VW reads -N as 2^32 - N (Config keeps it modulo 2^32)
    number("--hash_seed", kind=int, default=0, low=-MAX_COUNT, high=MAX_COUNT, model=True,
           parsing=True, help="Seed for hashing, a uint32 (-N is 2^32 - N, as VW reads it)."),
)


@njit(cache=True, nogil=True, inline="always")
def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF


@njit(cache=True, nogil=True)
def murmur3_32(buf: np.ndarray, start: int, end: int, seed: int) -> int:
    """MurmurHash3 x86_32 of ``buf[start:end]`` (uint8) with ``seed``, as an int in [0, 2^32)."""
    c1 = 0xCC9E2D51
    c2 = 0x1B873593
    h = seed & 0xFFFFFFFF
    n = end - start
    nblocks = n // 4
    for i in range(nblocks):
        p = start + 4 * i
        k = (np.int64(at(buf, p)) | (np.int64(at(buf, p + 1)) << 8)
             | (np.int64(at(buf, p + 2)) << 16) | (np.int64(at(buf, p + 3)) << 24))
        k = (k * c1) & 0xFFFFFFFF
        k = _rotl32(k, 15)
        k = (k * c2) & 0xFFFFFFFF
        h ^= k
        h = _rotl32(h, 13)
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    tail = start + 4 * nblocks
    rem = n & 3
    k = np.int64(0)
    if rem == 3:
        k ^= np.int64(at(buf, tail + 2)) << 16
    if rem >= 2:
        k ^= np.int64(at(buf, tail + 1)) << 8
    if rem >= 1:
        k ^= np.int64(at(buf, tail))
        k = (k * c1) & 0xFFFFFFFF
        k = _rotl32(k, 15)
        k = (k * c2) & 0xFFFFFFFF
        h ^= k
    h ^= n & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h


@njit(cache=True, nogil=True)
def hash_name(buf: np.ndarray, start: int, end: int, seed: int, hash_all: bool) -> int:
    """VW's hasher for a name in ``buf[start:end]``.

    'strings' (default): trim bytes <= 0x20 at both ends; an all-digit name hashes to
    (its integer value + seed) mod 2^32, anything else to murmur of the trimmed bytes.
    'all' (``hash_all``): murmur of the bytes as they are.
    """
    if hash_all:
        return murmur3_32(buf, start, end, seed)
    while start < end and at(buf, start) <= 0x20:
        start += 1
    while end > start and at(buf, end - 1) <= 0x20:
        end -= 1
    value = np.int64(0)
    for p in range(start, end):
        c = at(buf, p)
        if c < 48 or c > 57:
            return murmur3_32(buf, start, end, seed)
        # wraps like VW's size_t; only the low bits are used
        value = value * 10 + (np.int64(c) - 48)
    return (value + seed) & 0xFFFFFFFF


NAME_STOP = 32  # a name table's entry for a byte that ends the name
_NOT_DIGIT = 16


def name_table(stops: bytes) -> np.ndarray:
    """A tokenizer's table for :func:`scan_name`: each digit's value, ``NAME_STOP`` for the
    bytes in ``stops``, 16 for any other name byte."""
    table = np.full(256, _NOT_DIGIT, dtype=np.uint8)
    table[48:58] = np.arange(10)
    table[list(stops)] = NAME_STOP
    return table


@njit(cache=True, nogil=True, inline="always")
def scan_name(buf: np.ndarray, p: int, end: int, table: np.ndarray):
    """Read a name from ``buf[p]`` up to its first stop byte (``table``, see :func:`name_table`)
    or ``end``: returns (its end, its decimal value, whether it is all digits).

    One pass reads the name and its value, so that :func:`hash_scanned` needs no second pass
    for an all-digit name, the usual case of numeric data sets.
    """
    value = np.int64(0)
    seen = 0
    while p < end:
        t = table[at(buf, p)]
        if t >= NAME_STOP:
            break
        seen |= t
        value = value * 10 + t  # wraps like VW's size_t; only the low bits are used
        p += 1
    return p, value, seen < _NOT_DIGIT


@njit(cache=True, nogil=True, inline="always")
def hash_scanned(buf: np.ndarray, start: int, end: int, value: int, digits: bool, seed: int,
                 hash_all: bool) -> int:
    """:func:`hash_name` of ``buf[start:end]`` read by :func:`scan_name` (``value``,
    ``digits``): an all-digit name (never trimmed) costs no second pass."""
    if digits and not hash_all:
        return (value + seed) & 0xFFFFFFFF
    return hash_name(buf, start, end, seed, hash_all)


def hash_bytes(name: bytes, seed: int = 0, hash_all: bool = False) -> int:
    """:func:`hash_name` in plain Python (on mmh3), for the few hashes computed outside kernels:
    calling a kernel from Python would load it, which costs start-up time."""
    if not hash_all:
        name = name.strip(bytes(range(33)))
        if all(48 <= c <= 57 for c in name):
            return (int(name or b"0") + seed) & M32
    return mmh3.hash(name, seed & M32, signed=False)


def namespace_hash(name: bytes, seed: int = 0, hash_all: bool = False) -> int:
    """Seed of the features of namespace ``name``; the default namespace is ``b" "``."""
    if name == b" ":
        return 0 if seed == 0 else mmh3.hash(b"", seed & M32, signed=False)
    return hash_bytes(name, seed, hash_all)
