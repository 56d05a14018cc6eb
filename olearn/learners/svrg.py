"""--svrg: streaming stochastic variance reduced gradient, as VW's svrg.cc runs it.

Passes come in stages of 1 + --stage_size: the first pass of a stage copies the weights into
the stable point and only sums, per coordinate, the gradients at the stable point (its
examples learn nothing else); each of the next --stage_size passes steps every feature of an
example by w −= η·((g_w − g_stable)·x + Σ g_stable·x / n), with g = ℓ'(p, y)·i at the weights'
and at the stable point's clipped predictions, and n the examples the stable sum took. The
weight table's w is the working weight (what prediction reads); per coordinate (float32) the
stable weight and its gradient sum. The stage's counters (``stage``: the pass, the pass the
last learned example saw, n) start afresh with each run, as VW's.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from olearn.core.fields import Field, Layout
from olearn.core.option import MAX_COUNT, flag, number
from olearn.kernel.layouts import S_MAX, S_MIN
from olearn.learners.family import Kernels
from olearn.learners.ftrl import Ftrl, predict
from olearn.learners.losses import derivative32, shared_term
from olearn.learners.weights import W_W

OPTIONS = (
    flag("--svrg", model=True,
         help="Streaming stochastic variance reduced gradient (replaces gradient descent; "
              "-l is its step)."),
    number("--stage_size", kind=int, default=1, low=1, high=MAX_COUNT, model=True,
           help="--svrg: passes of steps after each pass that sums the stable gradient."),
)

COLUMNS = Layout("svrg", Field("stable", "the stable point's weight", merge="mean"),
                 Field("stable_grad", "the sum of gradients at the stable point", merge="mean"))
C_STABLE, C_STABLE_GRAD = COLUMNS.indices("stable", "stable_grad")
SIZE = len(COLUMNS)
STAGE = Layout("svrg_stage", Field("pass", "this run's pass", saved=False),
               Field("previous", "the pass of the last learned example", saved=False,
                     default=-1.0),
               Field("count", "the examples in the stable gradient sum", saved=False))
G_PASS, G_PREVIOUS, G_COUNT = STAGE.indices("pass", "previous", "count")
STAGE_SIZE = len(STAGE)


SvrgState = namedtuple("SvrgState", ["slots", "stage", "stage_size"])


class Svrg(Ftrl):
    """SVRG; --stage_size travels in the bundle."""

    OPTION = "svrg"
    GROUP = "SVRG"
    OPTIONS = OPTIONS
    COLUMNS = COLUMNS
    BUNDLE = SvrgState
    SHOWS_FIRST = False
    NAME = "svrg"
    WARM_UP = {"svrg": True}
    UNMERGEABLE = ("--svrg's stages follow one process's passes (partitions would sum and step "
                   "apart)")

    def __init__(self, config):
        super().__init__(config)
        self.stage = STAGE.defaults()

    def bundle(self) -> tuple:
        return self.BUNDLE(self.slots, self.stage, self.config.stage_size)

    def end_pass(self, weights: np.ndarray, params: np.ndarray, holdout: float | None) -> bool:
        """The stages count the run's passes."""
        self.stage[G_PASS] += 1
        return False

    @classmethod
    def describe(cls, config) -> str:
        return f"{cls.NAME} (stage_size {config.stage_size})"


@njit(cache=True, nogil=True, _nrt=False)
def _fits(family, model):
    return (family.slots.shape[0] == model.W.shape[0] and family.slots.shape[1] == SIZE
            and family.stage.shape[0] == STAGE_SIZE and family.stage_size >= 1)


@njit(cache=True, nogil=True, inline="always")
def _gradient(s, p, y, imp):
    """ℓ'(p, y)·i in VW's float32."""
    return derivative32(s.loss, s.loss_param, p, y, shared_term(s.loss, p, y)) * np.float32(imp)


@njit(cache=True, nogil=True, inline="always")
def _stable_gradient(family, model, features, scored, s):
    """The gradient at the stable point's clipped prediction (from the initial value)."""
    slots = family.slots
    index, value, lo, hi, _ = features
    p = np.float32(scored.initial)
    for k in range(lo, hi):
        p += value[k] * slots[index[k], C_STABLE]
    clipped = min(max(0.0 if np.isnan(p) else np.float64(p), model.state[S_MIN]),
                  model.state[S_MAX])
    return _gradient(s, clipped, scored.y, scored.imp)


# numpy's error model: a stage whose gradient pass learned nothing divides by 0, giving VW's
# inf/NaN rather than an exception (not inlined: an inlined function takes the loop's model).
@njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def _steps(family, W, features, inner, stable, eta):
    """One step of every feature of the example."""
    slots = family.slots
    count = np.float32(family.stage[G_COUNT])
    index, value, lo, hi, _ = features
    for k in range(lo, hi):
        j = index[k]
        W[j, W_W] -= eta * ((inner - stable) * value[k] + slots[j, C_STABLE_GRAD] / count)


@njit(cache=True, nogil=True, inline="always")
def _update(family, model, features, scored, s, work, prefetch):
    W = model.W
    slots = family.slots
    stage = family.stage
    now = stage[G_PASS]
    if now % (family.stage_size + 1) == 0:  # the stage's first pass: the stable gradient
        if stage[G_PREVIOUS] != now:
            for j in range(W.shape[0]):
                slots[j, C_STABLE] = W[j, W_W]
                slots[j, C_STABLE_GRAD] = 0.0
            stage[G_COUNT] = 0.0
        g = _stable_gradient(family, model, features, scored, s)
        index, value, lo, hi, _ = features
        for k in range(lo, hi):
            slots[index[k], C_STABLE_GRAD] += g * value[k]
        stage[G_COUNT] += 1.0
    else:
        _steps(family, W, features, _gradient(s, scored.p, scored.y, scored.imp),
               _stable_gradient(family, model, features, scored, s), np.float32(s.eta))
    stage[G_PREVIOUS] = now


Svrg.KERNELS = Kernels(_fits, predict, predict, _update)
