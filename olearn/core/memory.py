"""Arrays whose memory is mapped only where it is used."""
from __future__ import annotations

import mmap

import numpy as np

_HUGE_PAGE = 2 << 20


def sparse_zeros(shape: tuple[int, ...], dtype=np.float64) -> np.ndarray:
    """Zeros in small pages, each mapped when first touched. numpy asks the kernel for huge
    pages (2 MiB) on large arrays; an array of many rows of which only a prefix is used (the
    experts' state: a row per 2^b coordinates, per instance) would then cost 2 MiB per row
    touched, about 2 GB for --saew_calibrate at -b 18 whatever the data."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if size < _HUGE_PAGE:
        return np.zeros(shape, dtype)
    buffer = mmap.mmap(-1, size)  # anonymous: zero pages, mapped on first touch
    if hasattr(mmap, "MADV_NOHUGEPAGE"):  # (Linux)
        buffer.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(buffer, dtype).reshape(shape)
