"""Loss functions: derivatives against finite differences, invariant updates against many tiny
gradient steps, best constants against brute force."""
import numpy as np
import pytest

from olearn import losses

CASES = [(losses.SQUARED, 0.5), (losses.LOGISTIC, 0.5), (losses.HINGE, 0.5),
         (losses.QUANTILE, 0.2), (losses.QUANTILE, 0.8)]
POINTS = [(-1.3, 1.0), (0.4, -1.0), (2.0, 1.0), (0.2, 0.7), (-0.5, -0.2)]


@pytest.mark.parametrize("code, tau", CASES)
def test_derivative_matches_finite_difference(code, tau):
    for p, y in POINTS:
        h = 1e-6
        numeric = (losses.loss_value(code, tau, p + h, y) - losses.loss_value(code, tau, p - h, y)) / (2 * h)
        assert losses.derivative(code, tau, p, y) == pytest.approx(numeric, abs=1e-5)


def _many_small_steps(code, tau, p, y, s, q, steps=20000):
    """The gradient flow the invariant update solves in closed form, integrated numerically."""
    start = p
    for _ in range(steps):
        p -= losses.derivative(code, tau, p, y) * (s / steps) * q
    return (p - start) / q


@pytest.mark.parametrize("code, tau", CASES)
@pytest.mark.parametrize("s, q", [(0.3, 1.0), (2.0, 0.7), (1e-8, 1.0)])
def test_invariant_update_is_the_gradient_flow(code, tau, s, q):
    for p, y in POINTS:
        if code in (losses.LOGISTIC, losses.HINGE):
            y = 1.0 if y > 0 else -1.0
        want = _many_small_steps(code, tau, p, y, s, q)
        got = losses.invariant_update(code, tau, p, y, s, q)
        assert got == pytest.approx(want, rel=2e-3, abs=1e-6)


@pytest.mark.parametrize("z", [-40.0, -3.0, 0.0, 0.7, 5.0, 1e4])
def test_lambert_w_exp_solves_its_equation(z):
    w = losses.lambert_w_exp(z)
    assert w > 0 and w + np.log(w) == pytest.approx(z, abs=1e-9 * max(1, abs(z)))


@pytest.mark.parametrize("code, tau", CASES)
def test_best_constant_minimizes_the_loss_of_two_labels(code, tau):
    labels = (-1.0, 1.0)
    for counts in ((30.0, 10.0), (10.0, 30.0), (5.0, 40.0)):
        best = losses.best_constant(code, tau, labels[0], counts[0], labels[1], counts[1])

        def total(c):
            return sum(losses.loss_value(code, tau, c, y) * n for y, n in zip(labels, counts))
        grid = np.linspace(-3, 3, 6001)
        assert total(best) <= min(total(c) for c in grid) + 1e-6 * sum(counts)
