"""--coin: coin betting (Orabona & Pál 2016, KT-style, "without sigmoid"), as VW's ftrl.cc runs
it (docs/ftrl.md).

Per coordinate (float32): θ = −Σ g, G = Σ |g|, a (the largest |x|), the wealth W = −Σ g·w̃ and
L (the largest |ℓ'|·i seen, at least β); the weight table's w holds w̃/A of the last update
(what test-only prediction reads). Globally, in the learner state's normalizer sums: N = Σ i·ν
(ν: the example's Σ (x/a)²) and T = Σ i. The learn-time prediction bets
w̃ = (α + W)/(L·a·(L·a + G))·θ on each feature and divides the sum by A = (N + 1e-6)/T. α is
--ftrl_alpha (default 4, the initial wealth), β --ftrl_beta (default 1).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from olearn.core.fields import Field, Layout
from olearn.core.option import flag
from olearn.kernel.layouts import S_NORM, S_TOTAL
from olearn.learners.family import Kernels
from olearn.learners.ftrl import Ftrl, gradient, predict
from olearn.learners.weights import W_W

OPTIONS = (flag("--coin", model=True,
                help="Coin-betting optimization (replaces gradient descent; --ftrl_alpha, "
                     "--ftrl_beta)."),)

COLUMNS = Layout("coin", Field("theta", "minus the sum of gradients", merge="mean"),
                 Field("G", "the sum of |gradient|", merge="mean"),
                 Field("a", "the largest |x| seen", merge="max"),
                 Field("wealth", "the wealth: minus the sum of gradient times bet", merge="mean"),
                 Field("L", "the largest |loss derivative| seen, at least beta", merge="max"))
C_THETA, C_G, C_A, C_WEALTH, C_L = COLUMNS.indices("theta", "G", "a", "wealth", "L")
SIZE = len(COLUMNS)


CoinState = namedtuple("CoinState", ["slots", "alpha", "beta"])


class Coin(Ftrl):
    """Coin betting; α and β travel in the bundle (``--ftrl_alpha``, ``--ftrl_beta``)."""

    OPTION = "coin"
    GROUP = Ftrl.GROUP
    OPTIONS = OPTIONS
    COLUMNS = COLUMNS
    BUNDLE = CoinState
    SHOWS_FIRST = True
    DEFAULTS = (4.0, 1.0)
    NAME = "ftrl-Coin Betting"
    WARM_UP = {"coin": True}


@njit(cache=True, nogil=True, _nrt=False)
def _fits(family, model):
    return family.slots.shape[0] == model.W.shape[0] and family.slots.shape[1] == SIZE


@njit(cache=True, nogil=True, inline="always")
def _bet(alpha, wealth, theta, big_g, la):
    """A coordinate's bet w̃ (0 before it has a scale)."""
    if la > 0:
        return (alpha + wealth) / (la * (la + big_g)) * theta
    return np.float32(0.0)


@njit(cache=True, nogil=True, inline="always")
def _normalizer(state):
    return np.float32((state[S_NORM] + 1e-6) / state[S_TOTAL])


@njit(cache=True, nogil=True, inline="always")
def _learn_predict(family, model, features, initial, imp, s, prefetch):
    """The bets' dot product over the normalizer A, after N and T took the example (no initial
    prediction, as VW's)."""
    slots = family.slots
    alpha = np.float32(family.alpha)
    index, value, lo, hi, _ = features
    total = np.float32(0.0)
    nu = np.float32(0.0)
    for k in range(lo, hi):
        j = index[k]
        x = value[k]
        a = max(slots[j, C_A], abs(x))
        total += _bet(alpha, slots[j, C_WEALTH], slots[j, C_THETA], slots[j, C_G],
                      slots[j, C_L] * a) * x
        if a > 0:
            nu += (x / a) * (x / a)
    state = model.state
    state[S_NORM] += imp * nu
    state[S_TOTAL] += imp
    return np.float64(total / _normalizer(state))


@njit(cache=True, nogil=True, inline="always")
def _update(family, model, features, scored, s, work, prefetch):
    W = model.W
    slots = family.slots
    alpha = np.float32(family.alpha)
    beta = np.float32(family.beta)
    d = gradient(scored, s)
    scale = _normalizer(model.state)
    index, value, lo, hi, _ = features
    for k in range(lo, hi):
        j = index[k]
        x = value[k]
        g = d * x
        a = max(slots[j, C_A], abs(x))
        slots[j, C_A] = a
        if abs(d) > slots[j, C_L]:
            slots[j, C_L] = max(abs(d), beta)
        bet = _bet(alpha, slots[j, C_WEALTH], slots[j, C_THETA], slots[j, C_G],
                   slots[j, C_L] * a)
        slots[j, C_THETA] -= g
        slots[j, C_G] += abs(g)
        slots[j, C_WEALTH] -= g * bet
        W[j, W_W] = bet / scale


Coin.KERNELS = Kernels(_fits, predict, _learn_predict, _update)
