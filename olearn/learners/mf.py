"""--rank K: matrix factorization by gradient descent, as VW's gd_mf.cc runs it.

Per coordinate (float32, VW's strided weight): the linear weight (slot 0), then K left factors
(slots 1..K) and K right factors (slots K+1..2K), drawn at start as VW draws them: slot i of
row h is 0.1 times draw i + 1 of VW's generator seeded with h·S (S the power of two ≥ 2K + 1,
VW's stride), the state stepped by one more between draws. With one -q pair ``ab`` (the pair is
the family's, not the interactions' expansion) the raw score of an example is

    p = initial + Σ w₀·x + Σ_k (Σ_{a's features} w_k·x)(Σ_{b's features} w_{K+k}·x),

every sum in float32, the factors' only where both namespaces have features. Learning (VW's
plain rule, no adaptive or normalized state): η_t = η / (t + i)^power_t / 3 · i, u = the loss's
update of the clipped prediction with step η_t and unit norm (``classic``: 2(y − p)·η_t), and
each weight steps w += u·g·x − η_t·λ2·w, g = 1 for the linear weights, the other side's dot
product for a factor (all computed before any factor moves). η defaults to 10 and initial_t to
1, as VW's.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from olearn.core.checks import require
from olearn.core.option import number
from olearn.errors import OptionError
from olearn.kernel.layouts import S_T
from olearn.learners.family import Kernels, LearnerFamily
from olearn.learners.losses import invariant_update_shared
from olearn.learners.weights import LCG_INCREMENT, LCG_MULTIPLIER, W_W, draws

OPTIONS = (
    number("--rank", kind=int, default=None, low=0, high=1 << 10, model=True,
           help="Matrix factorization of rank K over the one -q pair (replaces gradient "
                "descent; VW's gd_mf)."),
)

# module level, under its own name: numba's cache index pickles the class by reference
MatrixFactorizationState = namedtuple("MatrixFactorizationState",
                                      ["slots", "rank", "left", "right"])


def vw_stride(rank: int) -> int:
    """VW's floats per weight for rank ``rank``: the power of two ≥ 2·rank + 1."""
    return 1 << (2 * rank).bit_length()


def initial_slots(rows: int, rank: int) -> np.ndarray:
    """The table VW's gd_mf starts from (see the module's docstring)."""
    columns = 2 * rank + 1
    a, c = np.uint64(LCG_MULTIPLIER), np.uint64(LCG_INCREMENT)
    states = np.arange(rows, dtype=np.uint64) * np.uint64(vw_stride(rank))
    slots = np.empty((rows, columns), dtype=np.float32)
    for i in range(columns):
        states = a * states + c
        slots[:, i] = np.float32(0.1) * draws(states)
        states += np.uint64(1)
    return slots


class MatrixFactorization(LearnerFamily):
    """VW's gd_mf: a table of 2K + 1 float32 slots per coordinate (``slots``), the pair's
    namespaces (``left``, ``right``: -1 without a pair) and K in the bundle."""

    OPTION = "rank"
    GROUP = "Matrix factorization"
    OPTIONS = OPTIONS
    BUNDLE = MatrixFactorizationState
    ARRAYS = {"rank_slots": ("<f4", (None, None))}
    OWNS_TERMS = True
    AUDIT_SYNC = True
    UNMERGEABLE = "--rank's factors have no merge rule yet"
    WARM_UP = {"rank": 2, "quadratic": ["ab"]}

    def __init__(self, config):
        super().__init__(config)
        self.slots = initial_slots(1 << config.bit_precision, config.rank)
        # the pair's namespaces (VW's first characters), or none
        self.left, self.right = ((ord(config.terms[0][0]), ord(config.terms[0][1]))
                                 if config.terms else (-1, -1))

    @classmethod
    def chosen(cls, config) -> bool:
        return config.rank is not None

    @classmethod
    def check_options(cls, config) -> None:
        """VW's refusals (adaptive or normalized rules), one pair of two namespaces, and no
        reduction, --stage_poly or --l1 (which VW's gd_mf ignores)."""
        for name in ("adaptive", "normalized", "oaa", "csoaa", "multilabel_oaa", "bootstrap",
                     "stage_poly"):
            if getattr(config, name) not in (None, False):
                raise OptionError(f"--{name} does not work with --rank")
        if config.l1 > 0:
            raise OptionError("--l1 does not work with --rank (VW's gd_mf ignores it)")
        if config.cubic or config.interactions or len(config.quadratic) > 1 or any(
                ":" in term for term in config.quadratic):
            raise OptionError("--rank factors one -q pair of two namespaces")

    def bundle(self) -> tuple:
        return self.BUNDLE(self.slots, self.config.rank, self.left, self.right)

    @staticmethod
    def describe(config) -> str:
        return f"rank {config.rank}"

    def sync(self, weights, state) -> None:
        """The linear weights into the table's w (for --invert_hash and the like)."""
        weights[:, W_W] = self.slots[:, 0]

    def model_arrays(self) -> dict:
        return {"rank_slots": self.slots}

    def restore(self, arrays: dict, path: str) -> None:
        self.slots[:] = arrays["rank_slots"]

    @staticmethod
    def check(arrays: dict, config) -> None:
        slots = arrays["rank_slots"]
        require(slots.shape == (1 << config.bit_precision, 2 * config.rank + 1)
                and not bool(np.isnan(slots).any()),
                "rank_slots: not 2K + 1 numbers per coordinate")

    def readable_rows(self, weights: np.ndarray, predict_only: bool) -> tuple:
        """The coordinates whose slots moved from their random start, their 2K + 1 slots each
        (VW writes every coordinate, unmoved ones too)."""
        start = initial_slots(len(self.slots), self.config.rank)
        moved = np.flatnonzero(np.any(self.slots != start, axis=1))
        return moved, self.slots[moved]


@njit(cache=True, nogil=True, _nrt=False)
def _fits(family, model):
    slots = family.slots
    return (slots.shape[0] == model.W.shape[0] and family.rank >= 0
            and slots.shape[1] == 2 * family.rank + 1)


@njit(cache=True, nogil=True, _nrt=False)
def _count(namespace, lo, hi, ns):
    n = 0
    for k in range(lo, hi):
        n += namespace[k] == ns
    return n


@njit(cache=True, nogil=True, inline="always")
def _paired(family, features):
    """Whether the example has features in both namespaces of the pair (its rows being the
    batch's own, whose namespaces ``features.namespace`` holds)."""
    index, value, lo, hi, namespace = features
    if family.left < 0 or hi > namespace.shape[0]:
        return False
    return (_count(namespace, lo, hi, family.left) > 0
            and _count(namespace, lo, hi, family.right) > 0)


@njit(cache=True, nogil=True, _nrt=False)
def _dot(slots, column, index, value, namespace, lo, hi, ns):
    """Σ slots[j, column]·x over the features of namespace ``ns``, in order, in float32."""
    total = np.float32(0.0)
    for k in range(lo, hi):
        if namespace[k] == ns:
            total += slots[index[k], column] * value[k]
    return total


@njit(cache=True, nogil=True, inline="always")
def _predict(family, model, features, initial, imp, s, prefetch):
    slots = family.slots
    rank = family.rank
    index, value, lo, hi, namespace = features
    linear = np.float32(0.0)
    for k in range(lo, hi):
        linear += slots[index[k], 0] * value[k]
    p = np.float32(initial) + linear
    if _paired(family, features):
        for k in range(1, rank + 1):
            p += (_dot(slots, k, index, value, namespace, lo, hi, family.left)
                  * _dot(slots, k + rank, index, value, namespace, lo, hi, family.right))
    return np.float64(p)


@njit(cache=True, nogil=True, _nrt=False)
def _step(slots, column, index, value, namespace, lo, hi, ns, u, reg):
    """w += u·x − reg·w for slot ``column`` of each feature of namespace ``ns`` (every
    feature: ``ns`` < 0), in order."""
    for k in range(lo, hi):
        if ns < 0 or namespace[k] == ns:
            j = index[k]
            slots[j, column] += u * value[k] - reg * slots[j, column]


@njit(cache=True, nogil=True, inline="always")
def _update(family, model, features, scored, s, work, prefetch):
    """VW's mf_train: the linear step, then each k's left and right factors' steps, each
    from the other side's dot product before either moved."""
    slots = family.slots
    rank = family.rank
    index, value, lo, hi, namespace = features
    imp = np.float32(scored.imp)
    t = np.float32(model.state[S_T]) + imp
    eta_t = np.float32(s.eta) / t ** np.float32(s.power_t) / np.float32(3.0) * imp
    u = np.float32(invariant_update_shared(s.loss, s.loss_param, scored.p, scored.y,
                                           np.float64(eta_t), 1.0, scored.shared))
    reg = eta_t * np.float32(s.l2)
    _step(slots, 0, index, value, namespace, lo, hi, -1, u, reg)
    if _paired(family, features):
        for k in range(1, rank + 1):
            left = _dot(slots, k, index, value, namespace, lo, hi, family.left)
            right = _dot(slots, k + rank, index, value, namespace, lo, hi, family.right)
            _step(slots, k, index, value, namespace, lo, hi, family.left, u * right, reg)
            _step(slots, k + rank, index, value, namespace, lo, hi, family.right, u * left,
                  reg)


@njit(cache=True, nogil=True, inline="always")
def _feature_count(family, features):
    """VW's count: the example's features and K more per feature of either side of the pair
    (the pair's products are not counted)."""
    index, value, lo, hi, namespace = features
    n = hi - lo
    if family.left >= 0 and hi <= namespace.shape[0]:
        n += family.rank * (_count(namespace, lo, hi, family.left)
                            + _count(namespace, lo, hi, family.right))
    return n


MatrixFactorization.KERNELS = Kernels(_fits, _predict, _predict, _update, _feature_count)
