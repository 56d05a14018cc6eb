"""olearn/core/memory.py: arrays whose pages are mapped only where they are used."""
import sys

import numpy as np
import pytest

from olearn.core.memory import sparse_zeros


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_sparse_zeros_are_zeros_of_the_shape_and_writable():
    a = sparse_zeros((3, 5, 1 << 16))
    assert a.shape == (3, 5, 1 << 16) and a.dtype == np.float64 and not a.any()
    a[2, 4, -1] = 7.0
    assert a.sum() == 7.0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_touching_the_start_of_each_row_maps_small_pages_only():
    rows, columns = 200, 1 << 19  # 200 rows of 4 MiB: huge pages would map 400 MiB
    a = sparse_zeros((rows, columns))
    before = _resident_bytes()
    a[:, 0] = 1.0
    assert _resident_bytes() - before < 40 << 20
