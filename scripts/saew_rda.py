"""The SAEW paper's baseline: regularized dual averaging with an l1 term (Xiao 2010, "Dual
averaging methods for regularized stochastic learning and online optimization", JMLR 11), in
plain numpy, for scripts/saew_experiment.py. A baseline of the experiment, not an olearn learner.

l1-RDA with h(w) = ||w||^2 / 2 and beta_t = gamma sqrt(t) (Xiao's Section 3.1, rho = 0):

    w_{t+1} = argmin_w  <gbar_t, w> + lam ||w||_1 + (gamma / sqrt(t)) ||w||^2 / 2,

where gbar_t is the average of the subgradients g_1..g_t, each taken at the point that made the
prediction (w_1 = 0). Per coordinate the minimizer is

    w_{t+1,i} = 0                                              if |gbar_{t,i}| <= lam,
              = -(sqrt(t) / gamma) (gbar_{t,i} - lam sign(gbar_{t,i}))   otherwise.

Losses: square 0.5 (yhat - y)^2 (gradient (yhat - y) x) and pinball at level tau
(gradient -(tau - 1{y < yhat}) x). RDA does not know ||theta*||_1 (no ball), as in the paper.
Several (lam, gamma) pairs run at once, one row each, so that a tuning grid costs one loop.
"""
from __future__ import annotations

import numpy as np


def rda_step(gbar: np.ndarray, t: int, lam: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """The l1-RDA point after t gradients with average ``gbar`` (rows: parameter pairs; ``lam``
    and ``gamma`` broadcast against ``gbar``)."""
    shrunk = np.maximum(np.abs(gbar) - lam, 0.0)
    return -(np.sqrt(t) / gamma) * np.sign(gbar) * shrunk


def rda_run(X: np.ndarray, y: np.ndarray, lam, gamma, cps: np.ndarray,
            tau: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Run l1-RDA over the rows of ``X`` (one pass, predicting each example before learning it)
    for every pair (lam[p], gamma[p]). ``tau``: pinball loss at this level (None: square loss).

    Returns the estimates after each checkpoint t in ``cps`` (w_{t+1}, shape (len(cps), P, d))
    and the progressive predictions (shape (T, P))."""
    lam = np.asarray(lam, dtype=float).reshape(-1, 1)
    gamma = np.asarray(gamma, dtype=float).reshape(-1, 1)
    if lam.shape != gamma.shape or np.any(gamma <= 0) or np.any(lam < 0):
        raise ValueError("rda_run: lam >= 0 and gamma > 0, one of each per pair")
    T, d = X.shape
    if len(y) != T or len(cps) == 0 or cps[0] < 1 or cps[-1] > T or np.any(np.diff(cps) <= 0):
        raise ValueError("rda_run: y has one label per row; checkpoints increase within [1, T]")
    P = lam.shape[0]
    w = np.zeros((P, d))
    gsum = np.zeros((P, d))
    preds = np.empty((T, P))
    est = np.empty((len(cps), P, d))
    with np.errstate(over="ignore", invalid="ignore"):  # a too small gamma diverges: nan/inf
        _loop(X, y, lam, gamma, tau, cps, w, gsum, preds, est)
    return est, preds[:cps[-1]]


def _loop(X, y, lam, gamma, tau, cps, w, gsum, preds, est) -> None:
    """rda_run's pass, filling ``preds`` and ``est`` in place."""
    k = 0
    for t in range(1, int(cps[-1]) + 1):
        x = X[t - 1]
        yhat = w @ x
        preds[t - 1] = yhat
        if tau is None:
            scale = yhat - y[t - 1]
        else:
            scale = (y[t - 1] < yhat) - tau
        gsum += scale[:, None] * x[None, :]
        w = rda_step(gsum / t, t, lam, gamma)
        if t == cps[k]:
            est[k] = w
            k += 1
            if k == len(cps):
                return
