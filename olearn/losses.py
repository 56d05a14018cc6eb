"""Loss functions (vw-reference.md §4): value, first derivative, squared gradient and update.

Each function takes the loss code first; the learner kernel branches on it once per example.
``p`` is the clipped prediction, ``s`` the update scale, ``q`` the prediction change per unit
update (VW's ``pred_per_update``).
"""
from __future__ import annotations

import numpy as np
from numba import njit

SQUARED = 0
NAMES = {"squared": SQUARED}


@njit(cache=True, nogil=True, inline="always")
def loss_value(code: int, p: float, y: float) -> float:
    d = p - y
    return d * d


@njit(cache=True, nogil=True, inline="always")
def square_grad(code: int, p: float, y: float) -> float:
    d = p - y
    return 4.0 * d * d


@njit(cache=True, nogil=True, inline="always")
def invariant_update(code: int, p: float, y: float, s: float, q: float) -> float:
    """Importance-invariant update: the closed form of infinitely many tiny gradient steps."""
    if s * q < 1e-6:
        return 2.0 * (y - p) * s
    return (y - p) * (1.0 - np.exp(-2.0 * s * q)) / q


@njit(cache=True, nogil=True, inline="always")
def gradient_update(code: int, p: float, y: float, s: float) -> float:
    """Plain (non-invariant) step: minus the derivative times the scale."""
    return 2.0 * (y - p) * s


@njit(cache=True, nogil=True, inline="always")
def best_constant(code: int, label1: float, count1: float, label2: float, count2: float) -> float:
    return (label1 * count1 + label2 * count2) / (count1 + count2)
