"""Loss functions, declared once each (docs/architecture.md, "Add a loss").

A loss is a :class:`Loss` in :data:`LOSSES` (its name, the option holding its parameter, the
clipping range before any label, how the header and the summary name it, its best constant)
plus three numba functions: its value, its derivative and its importance-invariant update. The
dispatchers (:func:`loss_value`, :func:`derivative`, :func:`invariant_update`, and the last two's
``_shared`` forms, which take the term they share, :func:`shared_term`, computed once) are the
only code that branches on a loss's code; the learner kernel calls them once per example, and
its entry point refuses a code outside the table.

Every function takes the loss's parameter (``param``: τ for quantile, q for expectile, unused by
the others), ``p`` the clipped prediction and ``y`` the label; ``s`` is the update scale and
``q`` the prediction change per unit of update (VW's ``pred_per_update``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numba import njit

from olearn.core.option import choice, number

# Each loss's code: its position in LOSSES.
SQUARED = 0
LOGISTIC = 1
HINGE = 2
QUANTILE = 3
POISSON = 4
CLASSIC = 5
EXPECTILE = 6
# Below this update (s·q), an invariant update is a plain gradient step (as VW).
SMALL_STEP = 1e-6
# Algorithm 917's bound for a second step of lambert_w_exp: 72 times double's epsilon.
EPS_72 = 72.0 * float(np.finfo(np.float64).eps)


@njit(cache=True, nogil=True)
def _log1pexp(x: float) -> float:
    """log(1 + e^x) without overflow."""
    return x + np.log1p(np.exp(-x)) if x > 0 else np.log1p(np.exp(x))


# -- squared: (p - y)² -----------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _squared(p, y):
    return (p - y) * (p - y)


@njit(cache=True, nogil=True)
def _squared_derivative(p, y):
    return 2.0 * (p - y)


@njit(cache=True, nogil=True)
def _squared_invariant(p, y, s, q):
    if s * q < SMALL_STEP:
        return 2.0 * (y - p) * s
    return (y - p) * (1.0 - np.exp(-2.0 * s * q)) / q


def _mean_constant(param, label1, count1, label2, count2):
    return (label1 * count1 + label2 * count2) / (count1 + count2)


# -- logistic: log(1 + e^(-y·p)); a label in [-1, 1] mixes the two classes ---------------------

# Each function computes a class's term only when its share is not 0: a label of ±1 (the
# usual) costs one class's exponentials, not both.
@njit(cache=True, nogil=True)
def _logistic(p, y):
    share = (y + 1.0) / 2.0
    up = _log1pexp(-p) if share > 0 else 0.0
    down = _log1pexp(p) if share < 1 else 0.0
    return share * up + (1.0 - share) * down


@njit(cache=True, nogil=True)
def _logistic_shared(p, y, e):
    """:func:`_logistic`, given ``e`` = :func:`_class_exp` of (p, y): for a class label,
    log(1 + e^-v) (v = y·p) is log1p(1/e), or -v + log1p(e) when v < 0 (no overflow either
    way), which takes no exponential of its own."""
    if e < 0:
        return _logistic(p, y)
    v = y * p
    return np.log1p(1.0 / e) if v >= 0 else -v + np.log1p(e)


@njit(cache=True, nogil=True)
def _class_exp(p, y):
    """e^(y·p) for a class label (±1), which the derivative and the invariant update share
    (:func:`shared_term`); else -1 (none: each computes its own)."""
    return np.exp(y * p) if y == 1.0 or y == -1.0 else -1.0


@njit(cache=True, nogil=True)
def _logistic_derivative(p, y, e):
    """``e``: :func:`_class_exp` of (p, y)."""
    share = (y + 1.0) / 2.0
    up = -1.0 / (1.0 + (e if y == 1.0 else np.exp(p))) if share > 0 else 0.0
    down = 1.0 / (1.0 + (e if y == -1.0 else np.exp(-p))) if share < 1 else 0.0
    return share * up + (1.0 - share) * down


@njit(cache=True, nogil=True)
def lambert_w_exp(z: float) -> float:
    """W(e^z), the w > 0 with w + ln w = z (Wright's ω function), to double precision: the
    initial approximations of Lawrence, Corless and Jeffrey (ACM TOMS 35, Algorithm 917) then
    one Fritsch–Shafer–Crowley step (fourth order), and a second one only where their test says
    the first left an error above rounding (z between -2.06 and -0.32, and between 1 and 2.8).
    Half the time of the Newton iterations from a rougher guess it replaces."""
    if z < -2.0:  # ω = e^z - e^2z + 3/2 e^3z - 8/3 e^4z + 125/24 e^5z - ...
        t = np.exp(z)
        w = t * (1.0 - t * (1.0 - t * (1.5 - t * (8.0 / 3.0 - t * (125.0 / 24.0)))))
    elif z <= 1.0:  # the series about z = 1, where ω = 1
        d = z - 1.0
        w = 1.0 + d * (0.5 + d * (1.0 / 16.0 - d * (1.0 / 192.0 + d * (
            1.0 / 3072.0 - d * (13.0 / 61440.0)))))
    else:  # the asymptotic series z - ln z + ln z / z + ...
        lz = np.log(z)
        iz = 1.0 / z
        w = z - lz + lz * iz * (1.0 + iz * ((0.5 * lz - 1.0) + iz * (
            1.0 - 1.5 * lz + lz * lz / 3.0 + iz * (
                -1.0 + 3.0 * lz - 11.0 / 6.0 * lz * lz + 0.25 * lz * lz * lz))))
    for _ in range(2):
        r = z - w - np.log(w)  # the residual
        wp1 = w + 1.0
        # the step's factor (u - r) / (u - 2r), u = 2(w+1)(w+1+2r/3), as (1 - k) / (1 - 2k):
        # u overflows for w beyond 1e154, where k is then 0 (a Newton step)
        k = r / (2.0 * wp1 * (wp1 + 2.0 / 3.0 * r))
        w *= 1.0 + r / wp1 * (1.0 - k) / (1.0 - 2.0 * k)
        r2 = r * r
        w2 = wp1 * wp1
        if abs((2.0 * w * w - 8.0 * w - 1.0) * (r2 * r2)) < EPS_72 * (w2 * w2 * w2):
            break
    return w


@njit(cache=True, nogil=True)
def _logistic_toward(label: float, p: float, s: float, q: float, e: float) -> float:
    """Invariant update toward class ``label`` = ±1; ``e`` = e^(label·p).

    With v = label·p the gradient flow is dv/dh = s·q / (1 + e^v), so v + e^v grows by s·q;
    its end point is v1 = ln W(e^C) with C = s·q + v + e^v.
    """
    if s * q < SMALL_STEP:
        return label * s / (1.0 + e)
    w = lambert_w_exp(s * q + label * p + e)
    return (label * np.log(w) - p) / q


@njit(cache=True, nogil=True)
def _logistic_invariant(p, y, s, q, e):
    """``e``: :func:`_class_exp` of (p, y)."""
    share = (y + 1.0) / 2.0
    up = _logistic_toward(1.0, p, s, q, e if y == 1.0 else np.exp(p)) if share > 0 else 0.0
    down = (_logistic_toward(-1.0, p, s, q, e if y == -1.0 else np.exp(-p)) if share < 1
            else 0.0)
    return share * up + (1.0 - share) * down


def _log_odds_constant(param, label1, count1, label2, count2):
    total = count1 + count2
    positive = count1 if label1 > label2 else count2
    return math.log(positive / (total - positive)) if 0 < positive < total else 0.0


# -- hinge: max(0, 1 - y·p) --------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _hinge(p, y):
    return max(0.0, 1.0 - y * p)


@njit(cache=True, nogil=True)
def _hinge_derivative(p, y):
    return -y if y * p < 1.0 else 0.0


@njit(cache=True, nogil=True)
def _hinge_invariant(p, y, s, q):
    if y * p >= 1.0:
        return 0.0
    margin = 1.0 - y * p  # reached after a step of margin / q (never, when q is 0)
    return y * (margin / q if margin < s * q else s)


def _majority_constant(param, label1, count1, label2, count2):
    positive = count1 if label1 > label2 else count2
    return 1.0 if positive > count1 + count2 - positive else -1.0


# -- quantile (pinball) at τ = param -----------------------------------------------------------

@njit(cache=True, nogil=True)
def _quantile(tau, p, y):
    e = y - p
    return tau * e if e > 0 else (tau - 1.0) * e


@njit(cache=True, nogil=True)
def _quantile_derivative(tau, p, y):
    e = y - p
    if e > 0:
        return -tau
    return 1.0 - tau if e < 0 else 0.0


@njit(cache=True, nogil=True)
def _quantile_invariant(tau, p, y, s, q):
    e = y - p
    if e > 0:
        return tau * s if tau * s * q < e else e / q
    if e < 0:
        return (tau - 1.0) * s if -(1.0 - tau) * s * q > e else e / q
    return 0.0


def _quantile_constant(tau, label1, count1, label2, count2):
    """The τ-quantile (VW prints the (1-τ)-quantile here; see docs/vw-differences.md)."""
    (low, low_count), (high, _) = sorted(((label1, count1), (label2, count2)))
    return low if low_count / (count1 + count2) >= tau else high


# -- poisson: VW's deviance 2·(y·ln y - y·p - y + e^p) of a count y at log rate p ---------------

@njit(cache=True, nogil=True)
def _poisson(p, y):
    return 2.0 * (y * (np.log(y + 1e-6) - p) - (y - np.exp(p)))


@njit(cache=True, nogil=True)
def _poisson_derivative(p, y):
    return np.exp(p) - y


@njit(cache=True, nogil=True)
def _poisson_invariant(p, y, s, q):
    """The gradient flow dp/dh = q·(y - e^p) over h in [0, s]: e^(-p) relaxes exponentially
    toward 1/y (grows linearly when y = 0). Computed in logs, so that no exp overflows."""
    if s * q < SMALL_STEP:
        return (y - np.exp(p)) * s
    if y > 0:
        a = y * s * q
        return -np.logaddexp(-a, p - np.log(y) + np.log(-np.expm1(-a))) / q
    return -np.logaddexp(0.0, p + np.log(s * q)) / q


# -- classic: squared, learned by plain gradient steps (no importance invariance), as VW's -----

@njit(cache=True, nogil=True)
def _classic_invariant(p, y, s, q):
    return 2.0 * (y - p) * s


# -- expectile at q = param: squared, weighted q below the label and 1 - q above it -------------

@njit(cache=True, nogil=True)
def _expectile_weight(q, p, y):
    return q if y < p else 1.0 - q


@njit(cache=True, nogil=True)
def _expectile(q, p, y):
    return _expectile_weight(q, p, y) * _squared(p, y)


@njit(cache=True, nogil=True)
def _expectile_derivative(q, p, y):
    return _expectile_weight(q, p, y) * _squared_derivative(p, y)


@njit(cache=True, nogil=True)
def _expectile_invariant(q, p, y, s, step):
    """The squared loss's update with the scale weighted (VW's): the weight is the side of the
    label the prediction starts on, which the update does not cross."""
    return _squared_invariant(p, y, _expectile_weight(q, p, y) * s, step)


# -- the table ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Loss:
    """A loss as the rest of olearn sees it."""

    name: str             # --loss_function NAME
    code: int             # what the kernels branch on: the loss's position in LOSSES
    header: str = ""      # how the header names it, formatted with {param}: "" for its name
    parameter: str | None = None  # the option (Config field) that holds its parameter
    start_range: tuple[float, float] = (0.0, 0.0)  # predictions' clipping range before labels
    # (param, label1, count1, label2, count2) -> the best constant prediction of two labels
    two_label_constant: Callable[..., float] | None = None
    mean_is_best: bool = False  # the weighted mean label is the best constant of any labels

    def describe(self, param: float) -> str:
        return self.header.format(param=param) if self.header else self.name


LOSSES = (Loss("squared", SQUARED, two_label_constant=_mean_constant, mean_is_best=True),
          Loss("logistic", LOGISTIC, start_range=(-50.0, 50.0),
               two_label_constant=_log_odds_constant),
          Loss("hinge", HINGE, two_label_constant=_majority_constant),
          Loss("quantile", QUANTILE, header="quantile (tau {param:g})",
               parameter="quantile_tau", two_label_constant=_quantile_constant),
          Loss("poisson", POISSON, start_range=(-50.0, 50.0)),
          Loss("classic", CLASSIC, two_label_constant=_mean_constant, mean_is_best=True),
          Loss("expectile", EXPECTILE, header="expectile (q {param:g})",
               parameter="expectile_q"))
BY_NAME = {loss.name: loss for loss in LOSSES}
OPTIONS = (
    choice("--loss_function", choices=tuple(BY_NAME), default="squared", model=True,
           help="Loss function."),
    number("--quantile_tau", kind=float, default=0.5, low=0.0, low_allowed=False, high=1.0,
           model=True, help="τ of the quantile (pinball) loss."),
    number("--expectile_q", kind=float, default=None, low=0.0, low_allowed=False, high=0.5,
           high_allowed=True, model=True,
           help="q of the expectile loss (needed by it): in (0, 0.5]."),
)


def check(config) -> None:
    """--expectile_q goes with the expectile loss, which needs it (VW's rule)."""
    from olearn.errors import OptionError
    expectile = config.loss_function == "expectile"
    if expectile and config.expectile_q is None:
        raise OptionError("--loss_function expectile needs --expectile_q (in (0, 0.5])")
    if config.expectile_q is not None and not expectile:
        raise OptionError("--expectile_q needs --loss_function expectile")
N_LOSSES = len(LOSSES)
assert all(loss.code == i for i, loss in enumerate(LOSSES))


# -- dispatch: the only code that branches on a loss's code -------------------------------------

@njit(cache=True, nogil=True)
def known(code: int) -> bool:
    """Whether ``code`` is a loss of the table (the kernels' entry points check it once)."""
    return 0 <= code < N_LOSSES


@njit(cache=True, nogil=True)
def loss_value(code: int, param: float, p: float, y: float) -> float:
    return loss_value_shared(code, param, p, y, shared_term(code, p, y))


@njit(cache=True, nogil=True)
def loss_value_shared(code: int, param: float, p: float, y: float, shared: float) -> float:
    """:func:`loss_value`, given the example's :func:`shared_term`."""
    if code == SQUARED:
        return _squared(p, y)
    if code == LOGISTIC:
        return _logistic_shared(p, y, shared)
    if code == HINGE:
        return _hinge(p, y)
    if code == QUANTILE:
        return _quantile(param, p, y)
    if code == POISSON:
        return _poisson(p, y)
    if code == CLASSIC:
        return _squared(p, y)
    if code == EXPECTILE:
        return _expectile(param, p, y)
    raise ValueError("unknown loss code")


@njit(cache=True, nogil=True)
def shared_term(code: int, p: float, y: float) -> float:
    """What :func:`derivative_shared` and :func:`invariant_update_shared` of one example share,
    computed once: e^(y·p) for the logistic loss of a class label (±1); else -1 (nothing)."""
    return _class_exp(p, y) if code == LOGISTIC else -1.0


@njit(cache=True, nogil=True)
def derivative(code: int, param: float, p: float, y: float) -> float:
    """d loss / d p."""
    return derivative_shared(code, param, p, y, shared_term(code, p, y))


@njit(cache=True, nogil=True)
def derivative_shared(code: int, param: float, p: float, y: float, shared: float) -> float:
    """:func:`derivative`, given the example's :func:`shared_term`."""
    if code == SQUARED:
        return _squared_derivative(p, y)
    if code == LOGISTIC:
        return _logistic_derivative(p, y, shared)
    if code == HINGE:
        return _hinge_derivative(p, y)
    if code == QUANTILE:
        return _quantile_derivative(param, p, y)
    if code == POISSON:
        return _poisson_derivative(p, y)
    if code == CLASSIC:
        return _squared_derivative(p, y)
    if code == EXPECTILE:
        return _expectile_derivative(param, p, y)
    raise ValueError("unknown loss code")


@njit(cache=True, nogil=True)
def derivative32(code: int, param: float, p: float, y: float, shared: float) -> np.float32:
    """:func:`derivative_shared` as VW computes it, in float32: VW's learners other than gd
    (--ftrl, --pistol, --coin) use the first derivative alone, and where float32 rounds it
    otherwise (the logistic mixture, Poisson's exp) their results follow its bits."""
    if code == LOGISTIC:
        p32 = np.float32(p)
        one = np.float32(1.0)
        share = (np.float32(y) + one) / np.float32(2.0)
        return share * (-one / (one + np.exp(p32))) + (one - share) * (one / (one + np.exp(-p32)))
    if code == POISSON:
        return np.exp(np.float32(p)) - np.float32(y)
    return np.float32(derivative_shared(code, param, p, y, shared))


@njit(cache=True, nogil=True)
def invariant_update(code: int, param: float, p: float, y: float, s: float, q: float) -> float:
    """Importance-invariant update: the closed form of infinitely many tiny gradient steps."""
    return invariant_update_shared(code, param, p, y, s, q, shared_term(code, p, y))


@njit(cache=True, nogil=True)
def invariant_update_shared(code: int, param: float, p: float, y: float, s: float, q: float,
                            shared: float) -> float:
    """:func:`invariant_update`, given the example's :func:`shared_term`."""
    if code == SQUARED:
        return _squared_invariant(p, y, s, q)
    if code == LOGISTIC:
        return _logistic_invariant(p, y, s, q, shared)
    if code == HINGE:
        return _hinge_invariant(p, y, s, q)
    if code == QUANTILE:
        return _quantile_invariant(param, p, y, s, q)
    if code == POISSON:
        return _poisson_invariant(p, y, s, q)
    if code == CLASSIC:
        return _classic_invariant(p, y, s, q)
    if code == EXPECTILE:
        return _expectile_invariant(param, p, y, s, q)
    raise ValueError("unknown loss code")


def constant_loss(code: int, param: float, constant: float, label: float) -> float:
    """Loss of a constant prediction, in plain Python (summary only)."""
    return float(loss_value(code, param, constant, label))
