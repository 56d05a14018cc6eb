"""Loss functions (vw-reference.md §4): value, derivative and updates.

Each function takes the loss code first (and τ, used by quantile); the learner kernel branches
on it once per example. ``p`` is the clipped prediction, ``s`` the update scale, ``q`` the
prediction change per unit of update (VW's ``pred_per_update``).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

SQUARED = 0
LOGISTIC = 1
HINGE = 2
QUANTILE = 3
NAMES = {"squared": SQUARED, "logistic": LOGISTIC, "hinge": HINGE, "quantile": QUANTILE}


@njit(cache=True, nogil=True)
def _log1pexp(x: float) -> float:
    """log(1 + e^x) without overflow."""
    return x + np.log1p(np.exp(-x)) if x > 0 else np.log1p(np.exp(x))


@njit(cache=True, nogil=True)
def loss_value(code: int, tau: float, p: float, y: float) -> float:
    if code == SQUARED:
        return (p - y) * (p - y)
    if code == LOGISTIC:  # a label in [-1, 1] mixes the two classes; 0 is the midpoint
        share = (y + 1.0) / 2.0
        return share * _log1pexp(-p) + (1.0 - share) * _log1pexp(p)
    if code == HINGE:
        return max(0.0, 1.0 - y * p)
    e = y - p
    return tau * e if e > 0 else (tau - 1.0) * e


@njit(cache=True, nogil=True)
def derivative(code: int, tau: float, p: float, y: float) -> float:
    """d loss / d p."""
    if code == SQUARED:
        return 2.0 * (p - y)
    if code == LOGISTIC:
        share = (y + 1.0) / 2.0
        return -share / (1.0 + np.exp(p)) + (1.0 - share) / (1.0 + np.exp(-p))
    if code == HINGE:
        return -y if y * p < 1.0 else 0.0
    e = y - p
    if e > 0:
        return -tau
    return 1.0 - tau if e < 0 else 0.0


@njit(cache=True, nogil=True)
def lambert_w_exp(z: float) -> float:
    """W(e^z): the w > 0 with w + ln w = z (Newton's method from an asymptotic guess)."""
    w = z - np.log(z) if z > 1.0 else np.exp(z) if z < -2.0 else 0.3 + 0.35 * (z + 2.0)
    for _ in range(50):
        step = (w + np.log(w) - z) / (1.0 + 1.0 / w)
        w = max(w - step, w * 0.1)
        if abs(step) <= 1e-14 * w:
            break
    return w


@njit(cache=True, nogil=True)
def _logistic_toward(label: float, p: float, s: float, q: float) -> float:
    """Invariant update toward class ``label`` = ±1.

    With v = label·p the gradient flow is dv/dh = s·q / (1 + e^v), so v + e^v grows by s·q;
    its end point is v1 = ln W(e^C) with C = s·q + v + e^v.
    """
    if s * q < 1e-6:
        return label * s / (1.0 + np.exp(label * p))
    v = label * p
    w = lambert_w_exp(s * q + v + np.exp(v))
    return (label * np.log(w) - p) / q


@njit(cache=True, nogil=True)
def invariant_update(code: int, tau: float, p: float, y: float, s: float, q: float) -> float:
    """Importance-invariant update: the closed form of infinitely many tiny gradient steps."""
    if code == SQUARED:
        if s * q < 1e-6:
            return 2.0 * (y - p) * s
        return (y - p) * (1.0 - np.exp(-2.0 * s * q)) / q
    if code == LOGISTIC:
        share = (y + 1.0) / 2.0
        up = _logistic_toward(1.0, p, s, q) if share > 0 else 0.0
        down = _logistic_toward(-1.0, p, s, q) if share < 1 else 0.0
        return share * up + (1.0 - share) * down
    if code == HINGE:
        if y * p >= 1.0:
            return 0.0
        margin = 1.0 - y * p  # reached after a step of margin / q (never, when q is 0)
        return y * (margin / q if margin < s * q else s)
    e = y - p
    if e > 0:
        return tau * s if tau * s * q < e else e / q
    if e < 0:
        return (tau - 1.0) * s if -(1.0 - tau) * s * q > e else e / q
    return 0.0


@njit(cache=True, nogil=True)
def gradient_update(code: int, tau: float, p: float, y: float, s: float) -> float:
    """Plain (non-invariant) step: minus the derivative times the scale."""
    return -derivative(code, tau, p, y) * s


def best_constant(code: int, tau: float, label1: float, count1: float, label2: float,
                  count2: float) -> float:
    """The constant prediction with the least loss on a two-label sample (VW's summary line)."""
    total = count1 + count2
    if code == LOGISTIC:
        positive = count1 if label1 > label2 else count2
        return math.log(positive / (total - positive)) if 0 < positive < total else 0.0
    if code == HINGE:
        positive = count1 if label1 > label2 else count2
        return 1.0 if positive > total - positive else -1.0
    if code == QUANTILE:  # the τ-quantile (VW prints the (1-τ)-quantile here; see README)
        (low, low_count), (high, _) = sorted(((label1, count1), (label2, count2)))
        return low if low_count / total >= tau else high
    return (label1 * count1 + label2 * count2) / total


def constant_loss(code: int, tau: float, constant: float, label: float) -> float:
    """Loss of a constant prediction, in plain Python (summary only)."""
    return float(loss_value(code, tau, constant, label))
