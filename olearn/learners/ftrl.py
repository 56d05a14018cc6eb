"""--ftrl: FTRL-Proximal (McMahan et al. 2013), as VW's ftrl.cc runs it (docs/ftrl.md).

Per coordinate (float32, VW's strided weight): the weight w (the weight table's, which
test-only prediction reads), z and n, the sum of squared gradients. The prediction is the
plain dot product; after it, each feature of the example, in order, with g = ℓ'(p, y)·i·x:
n' = n + g², σ = (√n' − √n)/α, z += g − σ·w, n = n', and w = 0 where |z| ≤ λ1, else
w = −(z − sign(z)·λ1) / (λ2 + (β + √n')/α). The table and -p show the prediction before the
label widens the range; the loss is scored on the one after (VW's order).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from olearn.core.fields import Field, Layout
from olearn.core.option import flag, number
from olearn.errors import OptionError
from olearn.learners.coordinates import CoordinateFamily
from olearn.learners.family import Kernels
from olearn.learners.gd import predict as weights_predict
from olearn.learners.losses import derivative32
from olearn.learners.weights import W_W

OPTIONS = (
    flag("--ftrl", model=True, help="FTRL-Proximal optimization (replaces gradient descent)."),
    number("--ftrl_alpha", kind=float, default=None, low=0.0, low_allowed=False, model=True,
           help="--ftrl, --pistol, --coin: alpha [default: 0.5, 1 and 4 respectively]."),
    number("--ftrl_beta", kind=float, default=None, low=0.0, model=True,
           help="--ftrl, --pistol, --coin: beta [default: 1, 0.5 and 1 respectively]."),
)

COLUMNS = Layout("ftrl", Field("z", "the sum of gradients less σ·w", merge="mean"),
                 Field("n", "the sum of squared gradients", merge="mean"))
C_Z, C_N = COLUMNS.indices("z", "n")
SIZE = len(COLUMNS)


FtrlState = namedtuple("FtrlState", ["slots", "alpha", "beta"])


class Ftrl(CoordinateFamily):
    """FTRL-Proximal; α and β travel in the bundle (``--ftrl_alpha``, ``--ftrl_beta``)."""

    OPTION = "ftrl"
    GROUP = "FTRL, PiSTOL and coin betting"
    OPTIONS = OPTIONS
    COLUMNS = COLUMNS
    BUNDLE = FtrlState
    SHOWS_FIRST = True
    DEFAULTS = (0.5, 1.0)  # α, β
    NAME = "ftrl-Proximal-FTRL"  # as VW's "Enabled learners" line names it
    WARM_UP = {"ftrl": True, "l1": 1e-6}

    def bundle(self) -> tuple:
        return self.BUNDLE(self.slots, *self.alpha_beta(self.config))

    @classmethod
    def alpha_beta(cls, config) -> tuple[float, float]:
        """--ftrl_alpha and --ftrl_beta, or this family's defaults."""
        alpha, beta = cls.DEFAULTS
        return (alpha if config.ftrl_alpha is None else config.ftrl_alpha,
                beta if config.ftrl_beta is None else config.ftrl_beta)

    @classmethod
    def describe(cls, config) -> str:
        alpha, beta = cls.alpha_beta(config)
        return f"{cls.NAME} (alpha {alpha:g}, beta {beta:g})"

    @classmethod
    def check_options(cls, config) -> None:
        for name in ("oaa", "csoaa", "multilabel_oaa", "stage_poly"):
            if getattr(config, name) not in (None, False):
                raise OptionError(f"--{name} works with gradient descent, not with "
                                  f"--{cls.OPTION}")


@njit(cache=True, nogil=True, _nrt=False)
def _fits(family, model):
    """A row of z and n per weight."""
    return family.slots.shape[0] == model.W.shape[0] and family.slots.shape[1] == SIZE


@njit(cache=True, nogil=True, inline="always")
def predict(family, model, features, initial, imp, s, prefetch):
    """The dot product of the weights (VW's slot 0)."""
    index, value, lo, hi, _ = features
    return np.float64(weights_predict(model.W, index, value, lo, hi, initial, prefetch))


@njit(cache=True, nogil=True, _nrt=False)
def gradient(scored, s):
    """The loss's first derivative at the clipped prediction, times the importance (float32,
    as VW's)."""
    return derivative32(s.loss, s.loss_param, scored.p, scored.y, scored.shared) * np.float32(
        scored.imp)


@njit(cache=True, nogil=True, inline="always")
def _update(family, model, features, scored, s, work, prefetch):
    W = model.W
    slots = family.slots
    alpha = np.float32(family.alpha)
    beta = np.float32(family.beta)
    l1 = np.float32(s.l1)
    l2 = np.float32(s.l2)
    d = gradient(scored, s)
    index, value, lo, hi, _ = features
    for k in range(lo, hi):
        j = index[k]
        g = d * value[k]
        n = slots[j, C_N]
        n_new = n + g * g
        root = np.sqrt(n_new)
        sigma = (root - np.sqrt(n)) / alpha
        z = slots[j, C_Z] + (g - sigma * W[j, W_W])
        slots[j, C_Z] = z
        slots[j, C_N] = n_new
        sign = np.sign(z)
        size = z * sign
        if size <= l1:
            W[j, W_W] = 0.0
        else:  # VW's rounding: the step's reciprocal first
            step = np.float32(1.0) / (l2 + (beta + root) / alpha)
            W[j, W_W] = step * sign * (l1 - size)

Ftrl.KERNELS = Kernels(_fits, predict, predict, _update)
