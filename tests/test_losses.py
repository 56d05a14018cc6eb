"""Loss functions, every one of the table: derivatives against finite differences, invariant
updates against many tiny gradient steps, best constants against brute force, and the kernel's
refusal of a code outside the table."""
import math

import numpy as np
import pytest

from olearn import Learner
from olearn.data import sources
from olearn.kernel import layouts
from olearn.learners import losses

# Each loss, with its parameter's values worth testing (0: a loss without one).
CASES = [(loss.code, param) for loss in losses.LOSSES
         for param in ((0.2, 0.8) if loss.parameter else (0.0,))]
IDS = [f"{losses.LOSSES[code].name}-{param:g}" for code, param in CASES]
# VW reports poisson's deviance, twice the negative log-likelihood its updates descend.
REPORTED_SCALE = {losses.POISSON: 2.0}
POINTS = [(-1.3, 1.0), (0.4, -1.0), (2.0, 1.0), (0.2, 0.7), (-0.5, -0.2)]


def _label(code: int, y: float) -> float:
    """A label of the loss's domain: ±1 for the classifiers, a count for poisson."""
    if code in (losses.LOGISTIC, losses.HINGE):
        return 1.0 if y > 0 else -1.0
    if code == losses.POISSON:
        return abs(y) * 3.0
    return y


@pytest.mark.parametrize("code, param", CASES, ids=IDS)
def test_derivative_matches_finite_difference(code, param):
    for p, y in POINTS:
        h = 1e-6
        y = _label(code, y)
        numeric = (losses.loss_value(code, param, p + h, y)
                   - losses.loss_value(code, param, p - h, y))
        numeric /= 2 * h * REPORTED_SCALE.get(code, 1.0)
        assert losses.derivative(code, param, p, y) == pytest.approx(numeric, abs=1e-5)


def _softplus(x: float) -> float:
    """log(1 + e^x) in plain Python, stable at any magnitude."""
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


@pytest.mark.parametrize("y", [1.0, -1.0, 0.3])
@pytest.mark.parametrize("p", [-800.0, -50.0, -3.0, -1e-9, 0.0, 1e-9, 2.0, 40.0, 800.0])
def test_logistic_loss_is_the_plain_formula_at_any_magnitude(p, y):
    # the kernel's value shares e^(y·p) with the derivative (losses.shared_term)
    share = (y + 1.0) / 2.0
    want = share * _softplus(-p) + (1.0 - share) * _softplus(p)
    assert losses.loss_value(losses.LOGISTIC, 0.0, p, y) == pytest.approx(want, rel=1e-14)


def _many_small_steps(code, param, p, y, s, q, steps=20000):
    """The gradient flow the invariant update solves in closed form, integrated numerically."""
    start = p
    for _ in range(steps):
        p -= losses.derivative(code, param, p, y) * (s / steps) * q
    return (p - start) / q


INVARIANT = [(case, name) for case, name in zip(CASES, IDS) if case[0] != losses.CLASSIC]


@pytest.mark.parametrize("code, param", [c for c, _ in INVARIANT], ids=[i for _, i in INVARIANT])
@pytest.mark.parametrize("s, q", [(0.3, 1.0), (2.0, 0.7), (1e-8, 1.0)])
def test_invariant_update_is_the_gradient_flow(code, param, s, q):
    for p, y in POINTS:
        y = _label(code, y)
        want = _many_small_steps(code, param, p, y, s, q)
        got = losses.invariant_update(code, param, p, y, s, q)
        assert got == pytest.approx(want, rel=2e-3, abs=1e-6)


@pytest.mark.parametrize("s, q", [(0.3, 1.0), (2.0, 0.7)])
def test_classic_update_is_one_plain_gradient_step_as_vw(s, q):
    for p, y in POINTS:
        step = -losses.derivative(losses.CLASSIC, 0.0, p, y) * s
        assert losses.invariant_update(losses.CLASSIC, 0.0, p, y, s, q) == step


def test_expectile_weighs_the_squared_loss_by_the_side_of_the_label():
    for p, y in POINTS:
        weight = 0.2 if y < p else 0.8
        assert (losses.loss_value(losses.EXPECTILE, 0.2, p, y)
                == pytest.approx(weight * losses.loss_value(losses.SQUARED, 0.0, p, y)))


def test_poisson_invariant_update_stays_finite_where_exp_overflows():
    for p, y in ((800.0, 0.0), (800.0, 977.0), (-50.0, 977.0)):
        assert np.isfinite(losses.invariant_update(losses.POISSON, 0.0, p, y, 1.0, 1.0))


@pytest.mark.parametrize("z", [-40.0, -3.0, 0.0, 0.7, 5.0, 1e4])
def test_lambert_w_exp_solves_its_equation(z):
    w = losses.lambert_w_exp(z)
    assert w > 0 and w + np.log(w) == pytest.approx(z, abs=1e-9 * max(1, abs(z)))


def _slow_lambert_w_exp(z: np.ndarray) -> np.ndarray:
    """W(e^z) by the plainest means: for z <= 0 the fixed point w = e^(z - w) (a contraction,
    w < 0.6, and exact to rounding even where w is tiny); above, bisection of w + ln w = z
    between 0.5 and max(z, 1) down to the last bit."""
    negative = z <= 0
    w = np.exp(np.minimum(z, 0.0))
    for _ in range(200):
        w = np.where(negative, np.exp(np.minimum(z - w, 0.0)), w)
    lo, hi = np.full_like(z, 0.5), np.maximum(z, 1.0)
    for _ in range(1100):
        mid = 0.5 * (lo + hi)
        below = mid + np.log(mid) < z
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.where(negative, w, 0.5 * (lo + hi))


def test_lambert_w_exp_matches_a_slow_reference_over_its_whole_range():
    # every region of the initial approximation, their edges, and the extremes: e^z near
    # float64's smallest normal, and w beyond 1e154 (where the step's products overflow)
    edges = [-2.0, np.nextafter(-2.0, 0.0), 1.0, np.nextafter(1.0, 2.0), 0.0]
    z = np.concatenate([-np.logspace(-12, np.log10(700.0), 400), np.linspace(-3.0, 3.0, 601),
                        np.logspace(-12, 300, 600), edges])
    want = _slow_lambert_w_exp(z)
    got = np.array([losses.lambert_w_exp(v) for v in z])
    assert np.all(np.abs(got - want) <= 1e-14 * want)


@pytest.mark.parametrize("y", [-1.0, -0.4, 0.0, 0.6, 1.0])
def test_logistic_with_a_label_in_between_mixes_the_two_classes(y):
    share = (y + 1.0) / 2.0
    for p in (-3.0, -0.2, 0.0, 1.5):
        for f, args in ((losses.loss_value, ()), (losses.derivative, ()),
                        (losses.invariant_update, (0.8, 0.6))):
            mixed = share * f(losses.LOGISTIC, 0.0, p, 1.0, *args) + (1.0 - share) * f(
                losses.LOGISTIC, 0.0, p, -1.0, *args)
            assert f(losses.LOGISTIC, 0.0, p, y, *args) == pytest.approx(mixed, rel=1e-15)


@pytest.mark.parametrize("code, param",
                         [c for c in CASES if losses.LOSSES[c[0]].two_label_constant],
                         ids=[i for c, i in zip(CASES, IDS)
                              if losses.LOSSES[c[0]].two_label_constant])
def test_best_constant_minimizes_the_loss_of_two_labels(code, param):
    labels = (-1.0, 1.0)
    for counts in ((30.0, 10.0), (10.0, 30.0), (5.0, 40.0)):
        best = losses.LOSSES[code].two_label_constant(param, labels[0], counts[0], labels[1],
                                                      counts[1])

        def total(c):
            return sum(losses.loss_value(code, param, c, y) * n for y, n in zip(labels, counts))
        grid = np.linspace(-3, 3, 6001)
        assert total(best) <= min(total(c) for c in grid) + 1e-6 * sum(counts)


def test_every_loss_is_known_to_the_kernels_and_no_other_code():
    assert [losses.known(loss.code) for loss in losses.LOSSES] == [True] * len(losses.LOSSES)
    assert not losses.known(len(losses.LOSSES)) and not losses.known(-1)


def test_the_kernel_refuses_an_unknown_loss_code():
    learner = Learner()._learner
    learner.params[layouts.P.loss] = len(losses.LOSSES)
    batch = next(learner.batches(sources.blocks_of_lines(["1 |a x"])))
    with pytest.raises(ValueError, match="unknown loss code"):
        learner.learn(batch, np.empty((len(batch), 2), dtype=np.float32))
