"""--freegrad: diagonal FreeGrad (Mhammedi & Koolen 2020), as VW's freegrad.cc runs it.

Per coordinate (float32): G, the sum of gradients; V, the sum of squared gradients; h1, the
first nonzero |gradient| (the hint, or --flipschitz_const); ht, the largest |gradient|; and S,
the sum of |clipped gradient|/ht. The weight table's w holds the weight of the coordinate's
last update (what test-only prediction reads). A coordinate with h1 > 0 bets

    w = −G·ε·(2V + ht|G|)·h1² / (2(V + ht|G|)²·√V) · exp(G² / (2V + 2ht|G|))

(ε: --fepsilon). The learn-time prediction is Σ w·x (no initial prediction, as VW's); with
--project it is scaled down to the l2 ball of --radius (not given: ε·√(1 + Σ the examples'
normalized clipped gradient norms)). The update takes g = ℓ'(p, y)·x per feature (the
importance i enters the sums as VW's does: the clipped gradient once, the rest i − 1 times),
clips g to ht, and with --restart starts a coordinate again when ht/h1 > S + 2. Globally
(``sums``, float32 values as VW's): Σ i·‖clipped‖/max‖clipped‖ (from 1) and the largest clipped
gradient norm. The learner state's ``total`` counts the importance learned, as VW's.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from olearn.core.checks import require
from olearn.core.fields import Field, Layout
from olearn.core.option import flag, number
from olearn.kernel.layouts import S_TOTAL
from olearn.learners.family import Kernels
from olearn.learners.ftrl import Ftrl, predict
from olearn.learners.losses import derivative32
from olearn.learners.weights import W_W

OPTIONS = (
    flag("--freegrad", model=True,
         help="Diagonal FreeGrad optimization (replaces gradient descent)."),
    flag("--restart", model=True, help="--freegrad: FreeRange restarts."),
    flag("--project", model=True,
         help="--freegrad: project the predictions onto an l2 ball (--radius, else adaptive)."),
    number("--fepsilon", kind=float, default=1.0, model=True,
           help="--freegrad: initial wealth epsilon."),
    number("--flipschitz_const", kind=float, default=0.0, low=0.0, model=True,
           help="--freegrad: a known bound on the gradients' norm (0: none)."),
)

COLUMNS = Layout("freegrad", Field("G", "the sum of gradients", merge="mean"),
                 Field("V", "the sum of squared gradients", merge="mean"),
                 Field("h1", "the first nonzero |gradient| (the hint)", merge="max"),
                 Field("ht", "the largest |gradient| seen", merge="max"),
                 Field("S", "the sum of |clipped gradient| / ht", merge="mean"))
C_G, C_V, C_H1, C_HT, C_S = COLUMNS.indices("G", "V", "h1", "ht", "S")
SIZE = len(COLUMNS)
SUMS = Layout("freegrad_sums",
              Field("grad_norms", "1 + Σ i·‖clipped gradient‖/the largest", merge="mean",
                    default=1.0),
              Field("top", "the largest clipped gradient norm", merge="max"))
U_GRAD_NORMS, U_TOP = SUMS.indices("grad_norms", "top")
SUMS_SIZE = len(SUMS)


FreegradState = namedtuple("FreegradState", ["slots", "sums", "epsilon", "lipschitz", "restart",
                                             "project", "radius"])


class Freegrad(Ftrl):
    """FreeGrad; its options travel in the bundle (``radius`` < 0: adaptive)."""

    OPTION = "freegrad"
    GROUP = "FreeGrad"
    OPTIONS = OPTIONS
    COLUMNS = COLUMNS
    BUNDLE = FreegradState
    SHOWS_FIRST = False
    NAME = "freegrad"
    WARM_UP = {"freegrad": True, "project": True, "restart": True}

    def __init__(self, config):
        super().__init__(config)
        self.sums = SUMS.defaults()

    def bundle(self) -> tuple:
        config = self.config
        return self.BUNDLE(self.slots, self.sums, config.fepsilon, config.flipschitz_const,
                           config.restart, config.project,
                           -1.0 if config.radius is None else config.radius)

    def model_arrays(self) -> dict:
        return {**super().model_arrays(), "freegrad_sums": self.sums}

    def restore(self, arrays: dict, path: str) -> None:
        super().restore(arrays, path)
        self.sums[:] = arrays["freegrad_sums"]

    @classmethod
    def check(cls, arrays: dict, config) -> None:
        super().check(arrays, config)
        sums = arrays["freegrad_sums"]
        require(bool(np.isfinite(sums).all() and (sums >= 0).all()),
                "freegrad_sums: not two finite sums")

    def merged(self) -> tuple:
        means, highs = super().merged()
        return ((*means, self.sums[SUMS.merged_by("mean")]),
                (*highs, self.sums[SUMS.merged_by("max")]))

    def put_merged(self, means: tuple, highs: tuple) -> None:
        super().put_merged(means[:1], highs[:1])
        self.sums[SUMS.merged_by("mean")] = means[1]
        self.sums[SUMS.merged_by("max")] = highs[1]

    @classmethod
    def describe(cls, config) -> str:
        return cls.NAME


@njit(cache=True, nogil=True, _nrt=False)
def _fits(family, model):
    return (family.slots.shape[0] == model.W.shape[0] and family.slots.shape[1] == SIZE
            and family.sums.shape[0] == SUMS_SIZE)


@njit(cache=True, nogil=True, inline="always")
def _weight(slots, j, epsilon):
    """Coordinate j's bet (0 before a nonzero gradient), in VW's float32 order."""
    h1 = slots[j, C_H1]
    if not h1 > 0:
        return np.float32(0.0)
    big_g = slots[j, C_G]
    v = slots[j, C_V]
    ht = slots[j, C_HT]
    size = abs(big_g)
    two = np.float32(2.0)
    vh = v + ht * size
    return (-big_g * epsilon * (two * v + ht * size) * (h1 * h1) / (two * (vh * vh) * np.sqrt(v))
            * np.exp(size * size / (two * v + two * ht * size)))


@njit(cache=True, nogil=True, inline="always")
def _radius(family):
    """The projection's radius: --radius, or ε·√(the sum of normalized gradient norms)."""
    if family.radius >= 0:
        return np.float32(family.radius)
    return np.float32(family.epsilon) * np.sqrt(np.float32(family.sums[U_GRAD_NORMS]))


# numpy's error model in the two functions below: a division by 0 (a sum of squares that
# vanished in float32, a restart's negative V) gives VW's inf or NaN instead of an exception.
# They are not inlined: a function inlined into the loop takes the loop's error model.
@njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def _bets(family, features):
    """Σ w·x over the example's bets, and Σ w²."""
    slots = family.slots
    epsilon = np.float32(family.epsilon)
    index, value, lo, hi, _ = features
    total = np.float32(0.0)
    squares = np.float32(0.0)
    for k in range(lo, hi):
        w = _weight(slots, index[k], epsilon)
        squares += w * w
        total += w * value[k]
    return total, squares


@njit(cache=True, nogil=True, inline="always")
def _learn_predict(family, model, features, initial, imp, s, prefetch):
    """The bets' dot product (no initial prediction, as VW's), projected with --project."""
    total, squares = _bets(family, features)
    model.state[S_TOTAL] += imp
    if family.project:
        radius = _radius(family)
        norm = np.sqrt(squares)
        if norm > radius:
            total *= radius / norm
    return np.float64(total)


@njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def _learn(family, W, features, d, weight):
    """Each feature's update from the loss derivative ``d`` at its value, in order, and the
    global sums after them."""
    slots = family.slots
    sums = family.sums
    epsilon = np.float32(family.epsilon)
    lipschitz = np.float32(family.lipschitz)
    more = weight - np.float32(1.0)  # the importance beyond the clipped gradient's once
    index, value, lo, hi, _ = features
    dot = np.float32(0.0)
    squares = np.float32(0.0)
    for k in range(lo, hi):  # the gradient's dot product with the bets, and their norm
        w = _weight(slots, index[k], epsilon)
        dot += d * value[k] * w
        squares += w * w
    norm = np.sqrt(squares)
    tilt = family.project and norm > _radius(family) and dot < 0
    clipped_squares = np.float32(0.0)
    for k in range(lo, hi):
        j = index[k]
        g = d * value[k]
        h1 = slots[j, C_H1]
        ht = slots[j, C_HT]
        if h1 > 0:
            W[j, W_W] = _weight(slots, j, epsilon)
        if tilt:  # Cutkosky's reduction for the ball: the gradient's outward part removed
            g = g - dot * W[j, W_W] / (norm * norm)
        if g == 0:
            continue
        clipped = g
        size = abs(g)
        if h1 == 0:
            hint = size if lipschitz == 0 else lipschitz
            slots[j, C_H1] = hint
            slots[j, C_HT] = hint
            slots[j, C_V] += weight * (size * size)
        elif size > ht:
            clipped *= ht / size
            slots[j, C_HT] = size
        clipped_squares += clipped * clipped
        step_g = clipped + more * g
        step_v = clipped * clipped + more * (g * g)
        if family.restart and slots[j, C_HT] / slots[j, C_H1] > slots[j, C_S] + np.float32(2.0):
            slots[j, C_H1] = slots[j, C_HT]
            slots[j, C_G] = step_g
            slots[j, C_V] = step_v
        else:
            slots[j, C_G] += step_g
            slots[j, C_V] += step_v
        if ht > 0:
            slots[j, C_S] += abs(clipped) / ht + more * size / slots[j, C_HT]
    clipped_norm = np.sqrt(clipped_squares)
    top = np.float32(sums[U_TOP])
    if clipped_norm > top:
        top = clipped_norm
        sums[U_TOP] = top
    if top > 0:
        sums[U_GRAD_NORMS] = np.float32(sums[U_GRAD_NORMS]) + weight * clipped_norm / top


@njit(cache=True, nogil=True, inline="always")
def _update(family, model, features, scored, s, work, prefetch):
    """The update takes the loss's derivative alone; the importance enters the sums."""
    d = derivative32(s.loss, s.loss_param, scored.p, scored.y, scored.shared)
    _learn(family, model.W, features, d, np.float32(scored.imp))


# the global sums beside the table (set here: CoordinateFamily declares the table's arrays when
# the class is made)
Freegrad.ARRAYS = {**Freegrad.ARRAYS, "freegrad_sums": ("<f8", (SUMS_SIZE,))}
Freegrad.NAMED = {**Freegrad.NAMED, "freegrad_sums": (SUMS, 0)}
Freegrad.KERNELS = Kernels(_fits, predict, _learn_predict, _update)
