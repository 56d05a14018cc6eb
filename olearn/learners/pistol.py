"""--pistol: PiSTOL (Orabona 2014), as VW's ftrl.cc runs it (docs/ftrl.md).

Per coordinate (float32): θ = −Σ g, G = Σ |g| and a, the largest |x| seen; the weight table's
w holds the weight of the last prediction that learned (what test-only prediction reads). The
learn-time prediction computes each feature's weight from its state, a taking |x| first:
w = √G·β·θ·exp(θ²τ/2)·τ with τ = 1/(α·a·(G + a)); the update then takes θ −= g, G += |g|
with g = ℓ'(p, y)·i·x. α is --ftrl_alpha (default 1), β --ftrl_beta (default 0.5).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from olearn.core.fields import Field, Layout
from olearn.core.option import flag
from olearn.learners.family import Kernels
from olearn.learners.ftrl import Ftrl, gradient, predict
from olearn.learners.weights import W_W, storable

OPTIONS = (flag("--pistol", model=True,
                help="PiSTOL optimization (replaces gradient descent; --ftrl_alpha, "
                     "--ftrl_beta)."),)

COLUMNS = Layout("pistol", Field("theta", "minus the sum of gradients", merge="mean"),
                 Field("G", "the sum of |gradient|", merge="mean"),
                 Field("a", "the largest |x| seen", merge="max"))
C_THETA, C_G, C_A = COLUMNS.indices("theta", "G", "a")
SIZE = len(COLUMNS)


PistolState = namedtuple("PistolState", ["slots", "alpha", "beta"])


class Pistol(Ftrl):
    """PiSTOL; α and β travel in the bundle (``--ftrl_alpha``, ``--ftrl_beta``)."""

    OPTION = "pistol"
    GROUP = Ftrl.GROUP
    OPTIONS = OPTIONS
    COLUMNS = COLUMNS
    BUNDLE = PistolState
    SHOWS_FIRST = False
    DEFAULTS = (1.0, 0.5)
    NAME = "ftrl-PiSTOL"
    WARM_UP = {"pistol": True}

    @staticmethod
    def storable(rows: np.ndarray) -> bool:
        """w is a copy whose exponential may have overflowed (VW saves it as it is, and a NaN
        prediction counts as 0): the other columns are checked."""
        rows = rows.copy()
        rows[:, W_W] = 0
        return storable(rows)


@njit(cache=True, nogil=True, _nrt=False)
def _fits(family, model):
    return family.slots.shape[0] == model.W.shape[0] and family.slots.shape[1] == SIZE


@njit(cache=True, nogil=True, inline="always")
def _learn_predict(family, model, features, initial, imp, s, prefetch):
    """Each feature's weight from its state (stored as the weight table's w), and their dot
    product (no initial prediction, as VW's)."""
    W = model.W
    slots = family.slots
    alpha = np.float32(family.alpha)
    beta = np.float32(family.beta)
    index, value, lo, hi, _ = features
    total = np.float32(0.0)
    for k in range(lo, hi):
        j = index[k]
        x = value[k]
        a = max(slots[j, C_A], abs(x))
        slots[j, C_A] = a
        big_g = slots[j, C_G]
        theta = slots[j, C_THETA]
        tau = np.float32(1.0) / (alpha * a * (big_g + a))
        w = np.sqrt(big_g) * beta * theta * np.exp(theta * theta / np.float32(2.0) * tau) * tau
        W[j, W_W] = w
        total += w * x
    return np.float64(total)


@njit(cache=True, nogil=True, inline="always")
def _update(family, model, features, scored, s, work, prefetch):
    slots = family.slots
    d = gradient(scored, s)
    index, value, lo, hi, _ = features
    for k in range(lo, hi):
        j = index[k]
        g = d * value[k]
        slots[j, C_THETA] -= g
        slots[j, C_G] += abs(g)


Pistol.KERNELS = Kernels(_fits, predict, _learn_predict, _update)
