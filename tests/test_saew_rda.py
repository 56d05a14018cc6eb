"""The SAEW experiment's RDA baseline (scripts/saew_rda.py) against hand-computed cases."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from saew_rda import rda_run, rda_step  # noqa: E402


def test_rda_step_zeroes_small_averages_and_shrinks_large_ones():
    # t = 1, lam = 1, gamma = 2: |0.5| <= 1 -> 0; -(1/2)(-2 + 1) = 0.5
    assert np.allclose(rda_step(np.array([[0.5, -2.0]]), 1, 1.0, 2.0), [[0.0, 0.5]])
    # t = 4, lam = 1, gamma = 1: -(2/1)(3 - 1) = -4; |-0.2| <= 1 -> 0
    assert np.allclose(rda_step(np.array([[3.0, -0.2]]), 4, 1.0, 1.0), [[-4.0, 0.0]])


def test_rda_step_minimizes_the_rda_objective():
    rng = np.random.default_rng(3)
    gbar, t, lam, gamma = rng.standard_normal(6), 7, 0.4, 1.5
    w = rda_step(gbar[None, :], t, lam, gamma)[0]

    def objective(v):
        return gbar @ v + lam * np.abs(v).sum() + gamma / np.sqrt(t) * (v @ v) / 2

    for _ in range(200):
        assert objective(w) <= objective(w + 0.01 * rng.standard_normal(6)) + 1e-12


def test_rda_run_square_loss_two_steps_by_hand():
    # step 1: yhat 0, g = (0 - 2)(1, 0), gbar = (-2, 0) -> w = (1.5, 0) (lam 0.5, gamma 1);
    # step 2: yhat 1.5, g = 0.5 (1, 1), gbar = (-0.75, 0.25) -> w = (sqrt(2) 0.25, 0)
    X = np.array([[1.0, 0.0], [1.0, 1.0]])
    est, preds = rda_run(X, np.array([2.0, 1.0]), [0.5], [1.0], np.array([1, 2]))
    assert np.allclose(est[:, 0], [[1.5, 0.0], [np.sqrt(2) * 0.25, 0.0]])
    assert np.allclose(preds[:, 0], [0.0, 1.5])


def test_rda_run_pinball_gradient_below_the_label():
    # yhat 0 < y: g = -(0.8) x, gbar = -0.8 -> w = -(1/1)(-0.8 + 0.3) = 0.5
    est, _ = rda_run(np.array([[1.0]]), np.array([1.0]), [0.3], [1.0], np.array([1]), tau=0.8)
    assert np.allclose(est[0, 0], [0.5])


def test_rda_run_pairs_equal_separate_runs():
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((50, 4)), rng.standard_normal(50)
    cps = np.array([10, 50])
    both, pboth = rda_run(X, y, [0.01, 0.1], [1.0, 3.0], cps)
    for p, (lam, gamma) in enumerate(((0.01, 1.0), (0.1, 3.0))):
        one, pone = rda_run(X, y, [lam], [gamma], cps)
        assert np.allclose(both[:, p], one[:, 0]) and np.allclose(pboth[:, p], pone[:, 0])


def test_rda_run_rejects_a_nonpositive_gamma():
    with pytest.raises(ValueError, match="gamma > 0"):
        rda_run(np.ones((2, 1)), np.ones(2), [0.1], [0.0], np.array([2]))
