"""--OjaNewton: online Newton steps with Oja's sketch (Luo, Agarwal, Cesa-Bianchi and Langford
2016, "Efficient second order online learning by sketching"), as VW's OjaNewton runs it.

The model is w̄ + Z'·D·b: the weight table's w is w̄; per coordinate (float32) m sketch
directions Z (``--sketch_size``) and, with ``--normalize true``, a normalizer N (from 0.1,
each feature's x read as x/√N). Globally (float32): the m×m matrices A (lower triangular) and
K, the eigenvalue estimates ev, b and the diagonal D (always 1: VW's rescaling is off).

A fresh sketch is the Gram-Schmidt orthonormalization (sums in float64) of m directions over
the whole table: with ``--random_init true`` VW's Box-Muller draws from its generator
(``--random_seed``), coordinate by coordinate; else the unit vectors of coordinates 1..m.

Each learned example: p = Σ x·(w̄ + Σᵢ Zᵢ·Dᵢ·bᵢ) (no initial prediction, as VW's), clipped;
g = ℓ'(p, y)·i/2; N += x²·g² per feature. The example joins the epoch (``--epoch_size``) with
sketch weight c = g/2; when the epoch is full each held example in turn, with γ = min(
``--learning_rate_cnt``/t, 1), moves the sketch: Zx = Z·x̃, AZx = A·Zx, evᵢ = (1−γ)·t·evᵢ/(t−1)
+ γ·t·(AZxᵢ·c)², δ = γ·c·Zx, K += δ·Zx'·c + Zx·δ'·c + δ·δ'·‖x̃‖²c², Z += c·δ·x̃'/D,
w̄ −= c·(δ·b)·x̃, t += 1; then A is orthonormalized against K. After that (every example):
w̄ −= g·x̃/α and bⱼ += g·Σ_{i≥j} evᵢ·AZxᵢ·Aᵢⱼ/(α(α+evᵢ)) (``--alpha``, or 1/``--alpha_inverse``).
When K's largest entry reaches 1e7 the implicit form is made explicit: K = A·K·A',
w̄ += Z'·D·b, b = 0, Z = A·D·Z, A = D = I. Every operation is VW's, in VW's float32 order.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from olearn.core.checks import require
from olearn.core.option import MAX_COUNT, Option, flag, number
from olearn.data.batch import valid_offsets
from olearn.errors import OptionError
from olearn.features.interactions import expanded_sizes
from olearn.learners.family import Kernels, LearnerFamily
from olearn.learners.losses import derivative32
from olearn.learners.weights import W_W, merand48

F32 = np.float32
OPTIONS = (
    flag("--OjaNewton", "--oja_newton", model=True, name="oja_newton",
         help="Online Newton steps with Oja's sketch (replaces gradient descent)."),
    number("--sketch_size", kind=int, default=10, low=0, high=256, model=True,
           help="--OjaNewton: the sketch's size m."),
    number("--epoch_size", kind=int, default=1, low=1, high=MAX_COUNT, model=True,
           help="--OjaNewton: examples per update of the sketch."),
    number("--alpha", kind=float, default=1.0, low=0.0, low_allowed=False, model=True,
           help="--OjaNewton: the multiplicative constant of the identity."),
    number("--alpha_inverse", kind=float, default=None, low=0.0, low_allowed=False, model=True,
           help="--OjaNewton: 1/alpha (a learning rate; wins over --alpha)."),
    number("--learning_rate_cnt", kind=float, default=2.0, model=True,
           help="--OjaNewton: the constant c of the sketch's learning rate min(c/t, 1)."),
    # VW's two words that default to true: any other word is false
    Option(("--normalize",), str, "true", "--OjaNewton: normalize each feature by its "
           "gradients (any word but true: no).", model=True, metavar="true|false",
           show_default=True),
    Option(("--random_init",), str, "true", "--OjaNewton: start the sketch from VW's random "
           "directions (any word but true: from unit vectors).", model=True,
           metavar="true|false", show_default=True),
)
OWN = ("sketch_size", "epoch_size", "alpha", "alpha_inverse", "learning_rate_cnt", "normalize",
       "random_init")
REFUSED = ("oaa", "csoaa", "multilabel_oaa", "stage_poly", "bootstrap", "boosting", "nn",
           "csoaa_ldf", "wap_ldf")
# the global vectors (rows of ``vectors``), the work rows, the clock's fields
V_EV, V_B, V_D = range(3)
X_ZX, X_AZX, X_DELTA, X_ZV, X_VV, X_TMP = range(6)
T_T, T_HELD = range(2)
EXPLICIT_AT = 1e7  # K's largest entry that makes the implicit form explicit (VW's)

OjaState = namedtuple("OjaState", ["sketch", "A", "K", "vectors", "clock", "held_offsets",
                                   "held_index", "held_value", "held_weight", "work", "alpha",
                                   "rate_count", "normalize"])


class OjaNewton(LearnerFamily):
    """Online Newton with Oja's sketch; the sketch and its norms beside the weight table."""

    OPTION = "oja_newton"
    GROUP = "OjaNewton"
    OPTIONS = OPTIONS
    BUNDLE = OjaState
    LEARNS_WEIGHTLESS = True  # VW's: an example of importance 0 advances the sketch's clock
    ARRAYS = {"oja_index": ("<u4", (None,)), "oja_rows": ("<f4", (None, None)),
              "oja_matrices": ("<f4", (2, None, None)), "oja_vectors": ("<f4", (3, None)),
              "oja_clock": ("<f8", (2,)), "oja_held_offsets": ("<i8", (None,)),
              "oja_held_index": ("<u4", (None,)), "oja_held_value": ("<f4", (None,)),
              "oja_held_weight": ("<f4", (None,))}
    UNMERGEABLE = ("--OjaNewton's sketch (its directions, A, K, b) has no averaging rule to "
                   "merge partitions with")
    WARM_UP = {"oja_newton": True, "epoch_size": 2, "sketch_size": 3, "quadratic": ["ab"]}

    def __init__(self, config):
        super().__init__(config)
        m = config.sketch_size
        self.sketch = fresh_sketch(config)
        self.A = np.eye(m, dtype=np.float32)
        self.K = np.eye(m, dtype=np.float32)
        self.vectors = np.zeros((3, m), dtype=np.float32)
        self.vectors[V_D] = 1.0
        self.clock = np.array([1.0, 0.0])  # t (VW's starts at 1), the examples held
        epoch = config.epoch_size
        self.held_offsets = np.zeros(epoch + 1, dtype=np.int64)
        self.held_weight = np.zeros(epoch, dtype=np.float32)
        self.held_index = np.zeros(0, dtype=np.uint32)
        self.held_value = np.zeros(0, dtype=np.float32)
        self.work = np.zeros((6, m), dtype=np.float32)
        # the held examples' buffer grows between batches (before_batch): no kept call holds it
        self.KEPT_CALLS = epoch == 1

    @classmethod
    def check_options(cls, config) -> None:
        for name in REFUSED:
            if getattr(config, name) not in (None, False):
                raise OptionError(f"--{name} works with gradient descent, not with --OjaNewton")

    @staticmethod
    def check_own(config) -> None:
        """Its options without --OjaNewton are a usage error (--alpha is not --stage_poly's);
        with -i, the model's options may name it."""
        given = sorted(set(OWN) & set(config.explicit))
        if given and not config.oja_newton and config.initial_regressor is None:
            raise OptionError(f"--{given[0]} works with --OjaNewton only")

    @classmethod
    def flag(cls, config) -> str:
        return "--OjaNewton"

    @staticmethod
    def describe(config) -> str:
        return "OjaNewton"

    def bundle(self) -> tuple:
        config = self.config
        alpha = (config.alpha if config.alpha_inverse is None
                 else float(F32(1.0) / F32(config.alpha_inverse)))
        return OjaState(self.sketch, self.A, self.K, self.vectors, self.clock, self.held_offsets,
                        self.held_index, self.held_value, self.held_weight, self.work, alpha,
                        config.learning_rate_cnt, config.normalize == "true")

    def before_batch(self, batch, terms: np.ndarray) -> None:
        """Room for the examples held now and the rest of their epoch, and for a whole epoch,
        of the batch's largest expanded example."""
        epoch = self.config.epoch_size
        if epoch == 1:
            return
        most = expanded_sizes(batch.offsets, batch.namespace, terms).max(initial=0)
        held = int(self.clock[T_HELD])
        used = int(self.held_offsets[held])
        need = max(used + (epoch - held) * most, epoch * most)
        if need > self.held_index.shape[0]:
            index = np.zeros(need, dtype=np.uint32)
            value = np.zeros(need, dtype=np.float32)
            index[:used] = self.held_index[:used]
            value[:used] = self.held_value[:used]
            self.held_index, self.held_value = index, value

    def model_arrays(self) -> dict:
        """The sketch's rows that differ from a fresh one (regenerated when loaded), the global
        state and the epoch's held examples."""
        moved = np.flatnonzero(np.any(self.sketch != fresh_sketch(self.config), axis=1))
        held = int(self.clock[T_HELD])
        used = int(self.held_offsets[held])
        return {"oja_index": moved, "oja_rows": self.sketch[moved],
                "oja_matrices": np.stack([self.A, self.K]), "oja_vectors": self.vectors,
                "oja_clock": self.clock, "oja_held_offsets": self.held_offsets[:held + 1],
                "oja_held_index": self.held_index[:used], "oja_held_value": self.held_value[:used],
                "oja_held_weight": self.held_weight[:held]}

    def restore(self, arrays: dict, path: str) -> None:
        self.sketch[arrays["oja_index"]] = arrays["oja_rows"]
        self.A[:], self.K[:] = arrays["oja_matrices"]
        self.vectors[:] = arrays["oja_vectors"]
        self.clock[:] = arrays["oja_clock"]
        held = int(self.clock[T_HELD])
        self.held_offsets[:held + 1] = arrays["oja_held_offsets"]
        self.held_weight[:held] = arrays["oja_held_weight"]
        self.held_index = arrays["oja_held_index"].astype(np.uint32)
        self.held_value = arrays["oja_held_value"].astype(np.float32)

    @staticmethod
    def check(arrays: dict, config) -> None:
        """Rows of the table's width inside it, each once; A and K m×m; a clock whose held
        examples fit the epoch, with offsets into their features; their indices in the table."""
        m, size, epoch = config.sketch_size, 1 << config.bit_precision, config.epoch_size
        index, rows = arrays["oja_index"], arrays["oja_rows"]
        require(len(np.unique(index)) == len(index)
                and (len(index) == 0 or int(index.max()) < size)
                and rows.shape == (len(index), m + 1), "oja_index/oja_rows: not a row per index")
        require(arrays["oja_matrices"].shape == (2, m, m)
                and arrays["oja_vectors"].shape == (3, m), "oja_matrices/oja_vectors: not m×m, m")
        clock = arrays["oja_clock"]
        t, held = clock
        require(bool(np.isfinite(clock).all()) and t >= 1 and t == int(t) and held == int(held)
                and 0 <= held < epoch,
                "oja_clock: not a count of examples and an epoch's held examples")
        offsets, held_index = arrays["oja_held_offsets"], arrays["oja_held_index"]
        require(offsets.shape == (int(held) + 1,) and offsets[0] == 0
                and valid_offsets(offsets, len(held_index))
                and offsets[-1] == len(held_index) == len(arrays["oja_held_value"])
                and len(arrays["oja_held_weight"]) == int(held)
                and (len(held_index) == 0 or int(held_index.max()) < size),
                "oja_held_*: not the epoch's held examples")


def fresh_sketch(config) -> np.ndarray:
    """A fresh table of sketch directions and normalizers (a row per coordinate)."""
    sketch = np.zeros((1 << config.bit_precision, config.sketch_size + 1), dtype=np.float32)
    initial_sketch(sketch, config.normalize == "true", config.random_init == "true",
                   np.array([config.random_seed], dtype=np.uint64))
    return sketch


@njit(cache=True, nogil=True)
def initial_sketch(sketch, normalize, random_init, random):
    """Fill a zeroed table (a row per coordinate: m directions, then the normalizer) as VW's
    OjaNewton starts: normalizers 0.1, directions drawn (Box-Muller from ``random[0]``, r1 > 0)
    or unit vectors of coordinates 1..m, then orthonormalized (Gram-Schmidt, float64 sums)."""
    size = sketch.shape[0]
    m = sketch.shape[1] - 1
    if m < 0 or random.shape[0] < 1:
        raise ValueError("initial_sketch: no normalizer column or no generator")
    if normalize:
        sketch[:, m] = F32(0.1)
    if random_init:
        two_pi = np.float64(F32(2.0) * F32(3.1415927))
        for j in range(size):
            for i in range(m):
                r1 = F32(0.0)
                r2 = F32(0.0)
                while r1 == 0:
                    r1 = merand48(random, 0)
                    r2 = merand48(random, 0)
                sketch[j, i] = np.sqrt(F32(-2.0) * np.log(r1)) * F32(np.cos(two_pi * r2))
    else:
        for i in range(min(m, size - 1)):
            sketch[i + 1, i] = 1.0
    for i in range(m):
        for k in range(i):
            dot = 0.0
            for j in range(size):
                dot += np.float64(sketch[j, i]) * sketch[j, k]
            along = F32(dot)
            for j in range(size):
                sketch[j, i] -= along * sketch[j, k]
        norm = 0.0
        for j in range(size):
            norm += np.float64(sketch[j, i]) * sketch[j, i]
        length = F32(np.sqrt(norm))
        for j in range(size):
            sketch[j, i] /= length


@njit(cache=True, nogil=True, _nrt=False)
def _fits(family, model):
    m = family.A.shape[0]
    held = family.clock[T_HELD] if family.clock.shape[0] == 2 else -1.0
    epoch = family.held_weight.shape[0]
    return (family.sketch.shape[0] == model.W.shape[0] and family.sketch.shape[1] == m + 1
            and family.A.shape[1] == m and family.K.shape[0] == m and family.K.shape[1] == m
            and family.vectors.shape[0] == 3 and family.vectors.shape[1] == m
            and family.work.shape[0] == 6 and family.work.shape[1] == m
            and family.held_offsets.shape[0] == epoch + 1 and epoch >= 1
            and 0 <= held < epoch and held == np.int64(held)
            and family.held_value.shape[0] == family.held_index.shape[0]
            and valid_offsets(family.held_offsets[:np.int64(held) + 1],
                              family.held_index.shape[0])
            and family.held_offsets[0] == 0 and _held_inside(family, model.W.shape[0]))


@njit(cache=True, nogil=True, _nrt=False)
def _held_inside(family, size):
    """Whether the held examples' indices are rows of the table."""
    for k in range(family.held_offsets[np.int64(family.clock[T_HELD])]):
        if family.held_index[k] >= size:
            return False
    return True


# numpy's error model in the functions below: a normalizer or a norm of 0 divides by 0 as VW's
# does (inf or NaN) instead of raising; not inlined, so that the loop's model does not apply.
@njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def _x(family, j, x):
    """A feature's value as the learner reads it (over √N with --normalize)."""
    if family.normalize:
        return x / np.sqrt(family.sketch[j, family.sketch.shape[1] - 1])
    return x


@njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def _score(family, W, features):
    """Σ x̃·(w̄ + Σᵢ Zᵢ·Dᵢ·bᵢ), in VW's float32 order."""
    sketch, vectors = family.sketch, family.vectors
    m = family.A.shape[0]
    index, value, lo, hi, _ = features
    total = F32(0.0)
    for k in range(lo, hi):
        j = index[k]
        x = _x(family, j, value[k])
        total += W[j, W_W] * x
        for i in range(m):
            total += sketch[j, i] * x * vectors[V_D, i] * vectors[V_B, i]
    return total


@njit(cache=True, nogil=True, inline="always")
def predict(family, model, features, initial, imp, s, prefetch):
    """The sketched model's score (no initial prediction, as VW's)."""
    return np.float64(_score(family, model.W, features))


@njit(cache=True, nogil=True, _nrt=False)
def _times_a(family, row):
    """work[AZx] = A·work[row] (A lower triangular)."""
    A, work = family.A, family.work
    for i in range(A.shape[0]):
        total = F32(0.0)
        for j in range(i + 1):
            total += A[i, j] * work[row, j]
        work[X_AZX, i] = total


@njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def _sketch_example(family, W, index, value, lo, hi, c):
    """One held example (features ``lo:hi``, sketch weight ``c``) moves the sketch, K, ev and
    w̄; the clock advances."""
    sketch, vectors, work, K = family.sketch, family.vectors, family.work, family.K
    m = family.A.shape[0]
    work[X_ZX] = 0.0
    squares = F32(0.0)
    for k in range(lo, hi):
        j = index[k]
        x = _x(family, j, value[k])
        for i in range(m):
            work[X_ZX, i] += sketch[j, i] * x * vectors[V_D, i]
        squares += x * x
    _times_a(family, X_ZX)
    t = np.int64(family.clock[T_T])
    gamma = min(F32(family.rate_count) / F32(t), F32(1.0))
    for i in range(m):
        scaled = work[X_AZX, i] * c
        if t == 1:
            vectors[V_EV, i] = gamma * scaled * scaled
        else:
            vectors[V_EV, i] = ((F32(1.0) - gamma) * F32(t) * vectors[V_EV, i] / F32(t - 1)
                                + gamma * F32(t) * scaled * scaled)
    along_b = F32(0.0)
    for i in range(m):
        work[X_DELTA, i] = gamma * work[X_ZX, i] * c
        along_b += work[X_DELTA, i] * vectors[V_B, i]
    both = squares * c * c
    for i in range(m):
        for j in range(m):
            K[i, j] += work[X_DELTA, i] * work[X_ZX, j] * c
            K[i, j] += work[X_DELTA, j] * work[X_ZX, i] * c
            K[i, j] += work[X_DELTA, i] * work[X_DELTA, j] * both
    for k in range(lo, hi):
        j = index[k]
        step = c * _x(family, j, value[k])
        for i in range(m):
            sketch[j, i] += work[X_DELTA, i] * step / vectors[V_D, i]
        W[j, W_W] -= step * along_b
    family.clock[T_T] += 1.0


@njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def _orthonormalize(family):
    """A's rows made K-orthonormal, each against the rows above it (VW's update of A)."""
    A, K, work = family.A, family.K, family.work
    m = A.shape[0]
    for i in range(m):
        for j in range(i):
            total = F32(0.0)
            for k in range(i + 1):
                total += A[i, k] * K[k, j]
            work[X_ZV, j] = total
        for j in range(i):
            total = F32(0.0)
            for k in range(j + 1):
                total += A[j, k] * work[X_ZV, k]
            work[X_VV, j] = total
        for j in range(i):
            for k in range(j, i):
                A[i, j] -= work[X_VV, k] * A[k, j]
        norm = F32(0.0)
        for j in range(i + 1):
            total = F32(0.0)
            for k in range(i + 1):
                total += K[j, k] * A[i, k]
            norm += A[i, j] * total
        norm = np.sqrt(norm)
        for j in range(i + 1):
            A[i, j] /= norm


@njit(cache=True, nogil=True, _nrt=False)
def _make_explicit(family, W):
    """When K's largest entry (upper triangle) reaches 1e7: K = A·K·A', w̄ += Z'·D·b, b = 0,
    Z = A·D·Z, A = D = I."""
    A, K, vectors, work, sketch = family.A, family.K, family.vectors, family.work, family.sketch
    m = A.shape[0]
    largest = 0.0
    for i in range(m):
        for j in range(i, m):
            largest = max(largest, np.float64(abs(K[i, j])))
    if largest < EXPLICIT_AT:
        return
    for j in range(m):  # K = A·K, a column at a time
        for i in range(m):
            total = F32(0.0)
            for h in range(m):
                total += A[i, h] * K[h, j]
            work[X_TMP, i] = total
        for i in range(m):
            K[i, j] = work[X_TMP, i]
    for i in range(m):  # K = K·A', a row at a time
        for j in range(m):
            total = F32(0.0)
            for h in range(m):
                total += K[i, h] * A[j, h]
            work[X_TMP, j] = total
        for j in range(m):
            K[i, j] = work[X_TMP, j]
    for r in range(sketch.shape[0]):
        w = W[r, W_W]
        for j in range(m):
            w += sketch[r, j] * vectors[V_B, j] * vectors[V_D, j]
        W[r, W_W] = w
    vectors[V_B] = 0.0
    for r in range(sketch.shape[0]):
        for j in range(m):
            total = F32(0.0)
            for h in range(m):
                total += A[j, h] * vectors[V_D, h] * sketch[r, h]
            work[X_TMP, j] = total
        for j in range(m):
            sketch[r, j] = work[X_TMP, j]
    A[:] = 0.0
    for i in range(m):
        A[i, i] = 1.0
    vectors[V_D] = 1.0


@njit(cache=True, nogil=True, _nrt=False)
def _hold(family, index, value, lo, hi, c):
    """The example joins the epoch's held examples; False (nothing held) when the buffer,
    which before_batch sizes for a whole epoch, has no room for it."""
    held = np.int64(family.clock[T_HELD])
    start = family.held_offsets[held]
    end = start + hi - lo
    if end > family.held_index.shape[0]:
        return False
    for k in range(lo, hi):
        family.held_index[start + k - lo] = index[k]
        family.held_value[start + k - lo] = value[k]
    family.held_offsets[held + 1] = end
    family.held_weight[held] = c
    family.clock[T_HELD] = held + 1
    return True


@njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def _learn(family, W, features, g):
    """VW's OjaNewton learn after its prediction, with g = ℓ'·i/2."""
    sketch, vectors, work, A = family.sketch, family.vectors, family.work, family.A
    m = A.shape[0]
    index, value, lo, hi, _ = features
    if family.normalize:
        for k in range(lo, hi):
            x = value[k]
            sketch[index[k], m] += x * x * g * g
    c = g / F32(2.0)
    epoch = family.held_weight.shape[0]
    if epoch == 1:
        _sketch_example(family, W, index, value, lo, hi, c)
        _orthonormalize(family)
    elif _hold(family, index, value, lo, hi, c) and family.clock[T_HELD] == epoch:
        offsets = family.held_offsets
        for e in range(epoch):
            _sketch_example(family, W, family.held_index, family.held_value, offsets[e],
                            offsets[e + 1], family.held_weight[e])
        _orthonormalize(family)
        family.clock[T_HELD] = 0.0
    alpha = F32(family.alpha)
    work[X_ZX] = 0.0
    for k in range(lo, hi):
        j = index[k]
        x = _x(family, j, value[k])
        for i in range(m):
            work[X_ZX, i] += sketch[j, i] * x * vectors[V_D, i]
        W[j, W_W] -= g * x / alpha
    _times_a(family, X_ZX)
    for j in range(m):
        total = F32(0.0)
        for i in range(j, m):
            ev = vectors[V_EV, i]
            total += ev * work[X_AZX, i] * A[i, j] / (alpha * (alpha + ev))
        vectors[V_B, j] += total * g
    _make_explicit(family, W)


@njit(cache=True, nogil=True, inline="always")
def _update(family, model, features, scored, s, work, prefetch):
    d = derivative32(s.loss, s.loss_param, scored.p, scored.y, scored.shared)
    _learn(family, model.W, features, d * F32(scored.imp) / F32(2.0))


OjaNewton.KERNELS = Kernels(_fits, predict, predict, _update)
