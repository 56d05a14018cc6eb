"""--bfgs and --conjugate_gradient: batch L-BFGS (Nocedal 1980, Liu and Nocedal 1989) over
passes, as VW's bfgs.cc runs it (docs/algorithms.md §8).

The examples only accumulate: in a *gradient pass* the loss and its gradient g at the current
weights (and, in the first pass, the diagonal preconditioner: Σ ℓ''·i·x²); in a *curvature
pass* the second derivative along the search direction d, Σ (d·x)²·ℓ''·i, with ℓ'' at the
predictions the gradient pass stored. Everything else happens at the end of a pass
(:meth:`Bfgs.end_pass`, plain numpy over the table once per pass): the first pass starts the
search along −precond·g and measures its curvature in the second pass, which gives the step;
every later gradient pass either steps back (the step halved, when the loss grew or Wolfe's
first condition fails) or takes the L-BFGS direction from the last ``--mem`` steps (m = 0: a
conjugate-gradient direction) with step 1, or with --hessian_on a step from one more curvature
pass. The run ends when the loss's relative decrease is below --termination, at zero or
negative curvature, or after --passes.

Per coordinate (float32): the weight (the weight table's w), the summed gradient g, the
direction d and the preconditioner, and 2m float32 of history (s and y of each stored step).
The curvature pass predicts with the gradient pass's stored predictions, by the count of
examples learned: VW's order, held-out examples included (the first pass has none).
"""
from __future__ import annotations

import math
import sys
from collections import namedtuple

import numpy as np
from numba import njit

from olearn.core.option import flag, number, text
from olearn.errors import OptionError
from olearn.kernel.layouts import S_MAX, S_MIN, P
from olearn.learners.family import Kernels, LearnerFamily
from olearn.learners.ftrl import gradient, predict
from olearn.learners.losses import (
    CLASSIC,
    EXPECTILE,
    LOGISTIC,
    POISSON,
    SQUARED,
)
from olearn.learners.weights import W_W

GROUP = "LBFGS and conjugate gradient"
OPTIONS = (
    flag("--bfgs", model=True,
         help="Batch L-BFGS over passes (needs --passes >= 2 and a cache; replaces gradient "
              "descent)."),
    flag("--conjugate_gradient", model=True,
         help="Batch conjugate gradient over passes (--bfgs with --mem 0, curvature on)."),
    number("--mem", kind=int, default=15, low=0, high=1000,
           help="--bfgs: the number of past steps L-BFGS keeps."),
    number("--termination", kind=float, default=0.001,
           help="--bfgs: stop when the loss decreases by less than this fraction in a pass."),
    flag("--hessian_on",
         help="--bfgs: a curvature pass after each direction gives its step (else step 1)."),
    flag("--no_bias_regularization",
         help="--bfgs: --l2 leaves the constant feature's weight alone."),
    text("--output_feature_regularizer_binary", metavar="FILE",
         help="--bfgs: on convergence, write each coordinate's Gaussian prior (precision, "
              "mean) to FILE in VW's binary model layout."),
    text("--output_feature_regularizer_text", metavar="FILE",
         help="--bfgs: as --output_feature_regularizer_binary, as text."),
    text("--input_feature_regularizer", metavar="FILE",
         help="--bfgs: start from, and regularize toward, the prior of a "
              "--output_feature_regularizer_binary file."),
)

# the per-coordinate columns besides the weight (VW's strided slots 1-3)
C_G, C_DIR, C_COND = range(3)
# the scalars the per-example kernels keep (float64)
(K_LOSS, K_IMPORTANCE, K_CURVATURE, K_EXAMPLE, K_STORED, K_FIRST, K_GRADIENT,
 K_PRECONDITION) = range(8)
MAX_PRECOND_RATIO = np.float32(10000.0)
WOLFE1_BOUND = 0.01
CURVATURE_MESSAGE = ("Zero or negative curvature detected.\n"
                     "To increase curvature you can increase regularization or rescale "
                     "features.\nIt is also possible that you have reached numerical accuracy\n"
                     "and further decrease in the objective cannot be reliably detected.")
OK, CURVED, CONVERGED = range(3)

BfgsState = namedtuple("BfgsState", ["coords", "stored", "sums"])


class Bfgs(LearnerFamily):
    """L-BFGS (or conjugate gradient) over passes: the kernels accumulate, :meth:`end_pass`
    moves."""

    OPTION = "bfgs"
    GROUP = GROUP
    OPTIONS = OPTIONS
    BUNDLE = BfgsState
    PROGRESS_TABLE = False
    KEPT_CALLS = False
    UNMERGEABLE = ("--bfgs/--conjugate_gradient: the search's state (direction, history, "
                   "step) has no averaging rule to merge partitions with")
    WARM_UP = {"bfgs": True, "cache": True, "passes": 3, "l2": 0.5, "hessian_on": True}

    def __init__(self, config):
        super().__init__(config)
        size = 1 << config.bit_precision
        self.m = 0 if config.conjugate_gradient else config.mem
        self.hessian_on = config.hessian_on or self.m == 0
        self.stride = 2 * self.m if self.m > 0 else 1
        self.coords = np.zeros((size, 3), dtype=np.float32)
        self.history = np.zeros((self.stride, size), dtype=np.float32)
        self.stored = np.zeros(1024, dtype=np.float32)
        self.sums = np.zeros(8)
        self.sums[[K_FIRST, K_GRADIENT, K_PRECONDITION]] = 1.0
        self.rho = np.zeros(max(self.m, 1))
        self.alpha = np.zeros(max(self.m, 1))
        self.lastj = self.origin = 0
        self.previous_loss = 0.0
        self.step = np.float32(0.0)
        self.current_pass = 0
        self.final_pass = config.passes
        self.l2 = config.l2
        self.prior = None  # (precision, mean) per coordinate, with --input_feature_regularizer
        # whether to write the regularizer files (VW's: only after convergence)
        self.output_prior = bool(config.output_feature_regularizer_binary
                                 or config.output_feature_regularizer_text)

    @classmethod
    def chosen(cls, config) -> bool:
        return bool(config.bfgs or config.conjugate_gradient)

    @classmethod
    def flag(cls, config) -> str:
        return "--bfgs" if config.bfgs else "--conjugate_gradient"

    @classmethod
    def check_options(cls, config) -> None:
        if config.bfgs and config.conjugate_gradient:
            raise OptionError("'conjugate_gradient' and 'bfgs' cannot be used together.")
        # (asked for now: a saved model of --bfgs loads to predict with any --passes)
        asked = {"bfgs", "conjugate_gradient"} & config.explicit
        if asked and config.passes < 2 and not config.testonly:
            raise OptionError("At least 2 passes must be used for BFGS")
        for name in ("oaa", "csoaa", "multilabel_oaa", "stage_poly", "bootstrap"):
            if getattr(config, name) not in (None, False):
                raise OptionError(f"--{name} works with gradient descent, not with "
                                  f"{cls.flag(config)}")

    def bundle(self) -> tuple:
        return BfgsState(self.coords, self.stored, self.sums)

    def before_batch(self, batch, terms: np.ndarray) -> None:
        """Room to store the predictions of the batch's examples."""
        need = int(self.sums[K_STORED]) + len(batch)
        if need > self.stored.shape[0]:
            grown = np.zeros(max(need, 2 * self.stored.shape[0]), dtype=np.float32)
            grown[:self.stored.shape[0]] = self.stored
            self.stored = grown

    @staticmethod
    def describe(config) -> str:
        return "bfgs"

    @staticmethod
    def header_lines(config) -> list[str]:
        """What VW says when it starts: the method and its table's heading."""
        m = 0 if config.conjugate_gradient else config.mem
        hessian_on = config.hessian_on or m == 0
        method = ("enabling BFGS based optimization " if m > 0
                  else "enabling conjugate gradient optimization via BFGS ")
        curvature = ("with curvature calculation" if hessian_on
                     else "**without** curvature calculation")
        heading = (f"{'##':>2s} {'avg. loss':<10s}\t{'der. mag.':<10s}\t{'d. m. cond.':<10s}\t "
                   f"{'wolfe1':<10s}\t{'wolfe2':<10s}\t{'mix fraction':<10s}\t"
                   f"{'curvature':<10s}\t{'dir. magnitude':<10s}\t{'step size':<s}")
        return [method + curvature, heading]

    # -- the end of a pass --------------------------------------------------------------------

    def end_pass(self, weights: np.ndarray, params: np.ndarray, holdout: float | None) -> bool:
        """VW's end of a bfgs pass: the pass's step (:meth:`_process`), its line of the table
        (stderr), and whether the run is done (converged, or --passes reached). ``holdout``:
        the pass's held-out loss when a holdout is on after the first pass (NaN: none)."""
        if self.current_pass >= self.final_pass:
            return True
        out = None if self.config.quiet else []
        status = self._process(weights, params, holdout, out)
        notes = []
        if self.final_pass == self.current_pass:
            notes.append("Maximum number of passes reached. ")
            if self.output_prior:
                notes.append("\nRegular model file has been created. Output feature "
                             "regularizer file is created only when the convergence is "
                             "reached. Try increasing the number of passes for convergence\n")
                self.output_prior = False
            else:
                notes.append("To optimize further, increase the number of passes\n")
        if status != OK and self.final_pass > self.current_pass:
            self.final_pass = self.current_pass
        else:
            self.coords[:, C_COND] = 0.0  # (never recomputed: VW's)
        done = self.final_pass == self.current_pass
        if out is not None:
            sys.stderr.write("".join(out) + "".join(notes))
        return done

    def _process(self, weights, params, holdout, out) -> int:
        """VW's process_pass: returns OK, CURVED or CONVERGED."""
        sums, coords, w = self.sums, self.coords, weights[:, W_W]
        say = out.append if out is not None else (lambda _: None)
        status = OK
        importance = sums[K_IMPORTANCE]
        self._finalize_preconditioner()
        if sums[K_FIRST]:
            if self.l2 > 0:
                sums[K_LOSS] += self._add_regularization(w, params)
            say(f"{self.current_pass + 1:2d} {sums[K_LOSS] / importance:<10.5f}\t")
            self.previous_loss = sums[K_LOSS]
            self._restart_sums()
            self._iter_start(w, importance, say)
            sums[K_GRADIENT] = 0.0  # VW always measures the first direction's curvature
        elif sums[K_GRADIENT]:
            if self.l2 > 0:
                sums[K_LOSS] += self._add_regularization(w, params)
            if holdout is not None:
                say(f"{self.current_pass + 1:2d} h unknown    " if math.isnan(holdout)
                    else f"{self.current_pass + 1:2d} h{holdout:<10.5f}\t")
            else:
                say(f"{self.current_pass + 1:2d} {sums[K_LOSS] / importance:<10.5f}\t")
            wolfe1, new_step = self._wolfe(importance, say)
            if math.isnan(np.float32(wolfe1)):
                say("\n")
                self._info("Derivative 0 detected.")
                self.step = np.float32(0.0)
                status = CONVERGED
            elif wolfe1 < WOLFE1_BOUND or sums[K_LOSS] > self.previous_loss:
                ratio = 0.0 if self.step == 0 else np.float32(new_step) / self.step
                say(f"{'':<10s}\t{'':<10s}\t(revise x {ratio:.1f})\t{new_step:<.5f}\n")
                self._move(w, np.float32(new_step - float(self.step)))
                self.step = np.float32(new_step)
                coords[:, C_G] = 0.0
                sums[K_LOSS] = 0.0
            else:
                previous = self.previous_loss
                decrease = (previous - sums[K_LOSS]) / previous if previous else math.nan
                if not math.isnan(np.float32(decrease)) and abs(decrease) < (
                        self.config.termination):
                    self._info("")
                    self._info(f"Termination condition reached in pass {self.current_pass + 1}"
                               f": decrease in loss less than "
                               f"{self.config.termination * 100:.3f}%.\n"
                               "If you want to optimize further, decrease termination "
                               "threshold.")
                    status = CONVERGED
                self.previous_loss = sums[K_LOSS]
                self._restart_sums()
                self.step = np.float32(1.0)
                if not self._iter_middle(w, say):
                    self._info("In bfgs_iter_middle: " + CURVATURE_MESSAGE)
                    self.step = np.float32(0.0)
                    status = CURVED
                if self.hessian_on:
                    sums[K_GRADIENT] = 0.0
                else:
                    say(f"{'':<10s}\t{self._direction_magnitude():<10.5f}\t{self.step:<.5f}\n")
                    self._move(w, self.step)
        else:
            if self.l2 > 0:
                sums[K_CURVATURE] += self._regularizer_direction_magnitude()
            dd = np.float32(np.dot(self.history[self._at(0)].astype(np.float64),
                                   coords[:, C_DIR]))
            curvature = sums[K_CURVATURE]
            if curvature == 0 and dd != 0:
                self._info(CURVATURE_MESSAGE)
                self.step = np.float32(0.0)
                status = CURVED
            elif dd == 0:
                self._info("Derivative 0 detected.")
                self.step = np.float32(0.0)
                status = CONVERGED
            else:
                self.step = -dd / np.float32(curvature)
            magnitude = self._direction_magnitude()
            self._move(w, self.step)
            say(f"{curvature / importance:<10.5f}\t{magnitude:<10.5f}\t{self.step:<.5f}\n")
            sums[K_GRADIENT] = 1.0
        self.current_pass += 1
        sums[K_FIRST] = sums[K_PRECONDITION] = 0.0
        return status

    def _info(self, message: str) -> None:
        """VW's info lines, on stdout as VW's."""
        if not self.config.quiet:
            sys.stderr.flush()
            sys.stdout.write(f"[info] {message}\n")
            sys.stdout.flush()

    def _at(self, k: int) -> int:
        """Row ``k`` of the history, relative to its rotating origin."""
        return (k + self.origin) % self.stride

    def _restart_sums(self) -> None:
        self.sums[[K_LOSS, K_EXAMPLE, K_CURVATURE]] = 0.0

    def _move(self, w: np.ndarray, step: np.float32) -> None:
        """w += step·d (float32), forgetting the stored predictions."""
        w += np.float32(step) * self.coords[:, C_DIR]
        self.sums[K_STORED] = 0.0

    def _precision(self):
        """Each coordinate's regularization: --l2's λ, or the prior's precision."""
        return np.float32(self.l2) if self.prior is None else self.prior[0]

    def _finalize_preconditioner(self) -> None:
        """precond = 1/(Σ ℓ''x² + λ), at most 10⁴ times its smallest value."""
        cond = self.coords[:, C_COND]
        cond += self._precision()
        top = np.float32(max(float(cond.max()), 0.0))
        positive = cond > 0
        cond[positive] = np.float32(1.0) / cond[positive]
        limit = np.float32(0.0) if top == 0 else MAX_PRECOND_RATIO / top
        cond[np.isinf(cond) | (cond > limit)] = limit

    def _add_regularization(self, w: np.ndarray, params: np.ndarray) -> float:
        """Add λ(w − mean) to g; the penalty ½λ(w − mean)², less the constant's with
        --no_bias_regularization."""
        g = self.coords[:, C_G]
        if self.prior is None:
            precision, delta = np.float32(self.l2), w
        else:
            precision, delta = self.prior[0], w - self.prior[1]
        g += precision * delta
        penalty = 0.5 * precision * delta.astype(np.float64)
        total = float(np.dot(penalty, delta))
        if self.config.no_bias_regularization:
            c = int(params[P.constant])
            lam = precision if self.prior is None else precision[c]
            g[c] -= lam * delta[c]
            total -= 0.5 * float(lam) * float(delta[c]) * float(delta[c])
        return total

    def _iter_start(self, w, importance, say) -> None:
        """The first direction: −precond·g; the history takes x and g."""
        coords = self.coords
        self.origin = 0
        g = coords[:, C_G]
        if self.m > 0:
            self.history[self._at(1)] = w
        self.history[self._at(0)] = g
        g64 = g.astype(np.float64)
        g_hg = float(np.dot(g64 * g, coords[:, C_COND]))
        g_g = float(np.dot(g64, g))
        coords[:, C_DIR] = -coords[:, C_COND] * g
        coords[:, C_G] = 0.0
        self.lastj = 0
        say(f"{g_g / (importance * importance):<10.5f}\t{g_hg / importance:<10.5f}\t"
            f"{'':<10s}\t{'':<10s}\t{'':<10s}\t")

    def _iter_middle(self, w, say) -> bool:
        """The next direction: conjugate gradient (m = 0) or L-BFGS's two loops; False on
        zero or negative curvature."""
        coords, mem = self.coords, self.history
        g, d, cond = coords[:, C_G], coords[:, C_DIR], coords[:, C_COND]
        if self.m == 0:
            old = mem[self._at(0)]
            y = (g - old).astype(np.float64)
            g_hy = float(np.dot(g.astype(np.float64) * cond, y))
            g_hg = float(np.dot(old.astype(np.float64) * cond, old))
            with np.errstate(divide="ignore", invalid="ignore"):
                beta = np.float32(np.float64(g_hy) / g_hg)
            if beta < 0 or math.isnan(beta):
                beta = np.float32(0.0)
            mem[self._at(0)] = g
            d *= beta
            d -= cond * g
            g[:] = 0.0
            say(f"{beta:f}\t")
            return True
        say(f"{'':<10s}\t")
        y_row, s_row = mem[self._at(0)], mem[self._at(1)]
        y_row[:] = g - y_row
        s_row[:] = w - s_row
        d[:] = g
        y64 = y_row.astype(np.float64)
        y_s = float(np.dot(y64, s_row))
        y_hy = float(np.dot(y64 * y_row, cond))
        s_q = float(np.dot(s_row.astype(np.float64), g))
        if y_s <= 0 or y_hy <= 0:
            return False
        rho, alpha, lastj = self.rho, self.alpha, self.lastj
        rho[0] = 1 / y_s
        gamma = np.float32(y_s / y_hy)
        for j in range(lastj):
            alpha[j] = rho[j] * s_q
            d -= np.float32(alpha[j]) * mem[self._at(2 * j)]
            s_q = float(np.dot(mem[self._at(2 * j + 3)].astype(np.float64), d))
        alpha[lastj] = rho[lastj] * s_q
        d -= np.float32(alpha[lastj]) * mem[self._at(2 * lastj)]
        d *= gamma * cond
        y_r = float(np.dot(mem[self._at(2 * lastj)].astype(np.float64), d))
        for j in range(lastj, 0, -1):
            coef = alpha[j] - rho[j] * y_r
            d += np.float32(coef) * mem[self._at(2 * j + 1)]
            y_r = float(np.dot(mem[self._at(2 * j - 2)].astype(np.float64), d))
        coef = alpha[0] - rho[0] * y_r
        d[:] = -d - np.float32(coef) * mem[self._at(1)]
        self.lastj = min(lastj + 1, self.m - 1)
        self.origin = (self.origin + self.stride - 2) % self.stride
        mem[self._at(0)] = g
        mem[self._at(1)] = w
        g[:] = 0.0
        rho[1:self.lastj + 1] = rho[:self.lastj].copy()
        return True

    def _wolfe(self, importance, say) -> tuple[float, float]:
        """Wolfe's two ratios of the step just taken; the halved step."""
        coords = self.coords
        g, d = coords[:, C_G].astype(np.float64), coords[:, C_DIR]
        g0_d = float(np.dot(self.history[self._at(0)].astype(np.float64), d))
        g1_d = float(np.dot(g, d))
        g_hg = float(np.dot(g * coords[:, C_G], coords[:, C_COND]))
        g_g = float(np.dot(g, coords[:, C_G]))
        with np.errstate(divide="ignore", invalid="ignore"):
            denominator = np.float64(self.step) * g0_d
            wolfe1 = float(np.float64(self.sums[K_LOSS] - self.previous_loss) / denominator)
            wolfe2 = float(np.float64(g1_d) / g0_d)
        say(f"{g_g / (importance * importance):<10.5f}\t{g_hg / importance:<10.5f}\t "
            f"{wolfe1:<10f}\t{wolfe2:<10f}\t")
        return wolfe1, 0.5 * float(self.step)

    def _direction_magnitude(self) -> np.float32:
        d = self.coords[:, C_DIR]
        return np.float32(np.dot(d.astype(np.float64), d))

    def _regularizer_direction_magnitude(self) -> float:
        if self.l2 == 0 and self.prior is None:
            return 0.0
        d = self.coords[:, C_DIR].astype(np.float64)
        return float(np.dot(self._precision() * d, d))

    def prior_to_write(self, weights: np.ndarray) -> np.ndarray:
        """VW's regularizer array (precision, mean per coordinate, interleaved) after
        convergence: the precision λ + 1/precond (the prior's, plus 1/precond, when there is
        one: VW adds it again for each file written), the mean the weight."""
        cond = self.coords[:, C_COND]
        inverse = np.zeros_like(cond)
        positive = cond > 0
        inverse[positive] = np.float32(1.0) / cond[positive]
        if self.prior is None:
            self.prior = (np.float32(self.l2) + inverse, weights[:, W_W].copy())
        else:
            self.prior[0][:] += inverse
            self.prior[1][:] = weights[:, W_W]
        out = np.empty(2 * len(cond), dtype=np.float32)
        out[0::2], out[1::2] = self.prior
        return out

    def take_prior(self, prior: np.ndarray, weights: np.ndarray) -> None:
        """Start from a regularizer array (--input_feature_regularizer): its means as the
        weights, its precisions as the preconditioner's start and the regularization."""
        self.prior = (prior[0::2].copy(), prior[1::2].copy())
        self.coords[:, C_COND] = self.prior[0]
        weights[:, W_W] = self.prior[1]
        self.l2 = 1.0  # VW's: the regularization is on, each coordinate its own


@njit(cache=True, nogil=True, _nrt=False)
def _fits(family, model):
    return (family.coords.shape[0] == model.W.shape[0] and family.coords.shape[1] == 3
            and family.sums.shape[0] == 8)


@njit(cache=True, nogil=True, _nrt=False)
def second_derivative32(code, param, p, y, state):
    """The loss's second derivative at ``p`` in VW's float32 (0 outside the label range for
    the squared loss, as VW's)."""
    p32 = np.float32(p)
    one = np.float32(1.0)
    if code == SQUARED or code == EXPECTILE:
        inside = state[S_MIN] <= p32 <= state[S_MAX]
        two = np.float32(2.0) if inside else np.float32(0.0)
        if code == EXPECTILE:
            q = np.float32(param)
            return two * (q if np.float32(y) - p32 < 0 else one - q)
        return two
    if code == CLASSIC:
        return np.float32(2.0)
    if code == LOGISTIC:
        share = (np.float32(y) + one) / np.float32(2.0)
        up = one / (one + np.exp(p32))
        down = one / (one + np.exp(-p32))
        return share * (up * (one - up)) + (one - share) * (down * (one - down))
    if code == POISSON:
        return np.exp(min(max(p32, np.float32(-44.0)), np.float32(44.0)))
    return np.float32(0.0)  # hinge, quantile: piecewise linear


@njit(cache=True, nogil=True, inline="always")
def _learn_predict(family, model, features, initial, imp, s, prefetch):
    """A gradient pass predicts; a curvature pass replays the gradient pass's prediction of
    the example with the same number (the last one if there are more examples now)."""
    sums = family.sums
    if sums[K_GRADIENT] != 0:
        return predict(family, model, features, initial, imp, s, prefetch)
    stored = np.int64(sums[K_STORED])
    if stored == 0:
        return 0.0
    k = min(np.int64(sums[K_EXAMPLE]), stored - 1)
    sums[K_EXAMPLE] = k
    return np.float64(family.stored[k])


@njit(cache=True, nogil=True, inline="always")
def _update(family, model, features, scored, s, work, prefetch):
    """Accumulate the example: importance (first pass), loss, gradient and stored prediction
    (gradient pass) or curvature along the direction (curvature pass), and the
    preconditioner's Σ ℓ''·i·x² (first pass)."""
    coords, sums = family.coords, family.sums
    index, value, lo, hi, _ = features
    imp = np.float32(scored.imp)
    if sums[K_FIRST] != 0:
        sums[K_IMPORTANCE] += scored.imp
    p = scored.p
    if sums[K_GRADIENT] != 0:
        d = gradient(scored, s)
        for k in range(lo, hi):
            coords[index[k], C_G] += d * value[k]
        sums[K_LOSS] += np.float64(np.float32(scored.loss) * imp)
        n = np.int64(sums[K_STORED])
        if n < family.stored.shape[0]:
            family.stored[n] = p
            sums[K_STORED] = n + 1
    else:
        along = np.float32(scored.initial)
        for k in range(lo, hi):
            along += coords[index[k], C_DIR] * value[k]
        second = second_derivative32(s.loss, s.loss_param, p, scored.y, model.state)
        sums[K_CURVATURE] += np.float64(along) * along * second * imp
        sums[K_EXAMPLE] += 1
    if sums[K_PRECONDITION] != 0:
        c = second_derivative32(s.loss, s.loss_param, p, scored.y, model.state) * imp
        for k in range(lo, hi):
            x = value[k]
            coords[index[k], C_COND] += c * x * x


Bfgs.KERNELS = Kernels(_fits, predict, _learn_predict, _update)
