"""``--stage_poly``: APPLE, the adaptive polynomial expansion (docs/algorithms.md §5; VW's behaviour
in docs/vw-reference.md §7).

The learner sees, instead of an example's features, its *synthetic* example: every monomial of the
current support present in the example. The support grows in stages: at each stage the ⌊s^α⌋
best non-parent monomials (s = average number of input features per example) become parents, and
a parent times any input feature present becomes a monomial of the support. Monomials are never
materialized: a depth-first walk from the constant builds each example's synthetic features.

State per weight slot: the smallest depth at which the monomial was seen in training
(``min_depth``, 127 = never) and flag bits (``PARENT``; ``CYCLE`` marks a monomial already in the
current example). Counters live in a small float64 array (``C_*`` below).
"""
from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from olearn.core.checks import counts, increasing_below, require
from olearn.core.fields import Field, Layout
from olearn.core.option import MAX_COUNT, choice, flag, number
from olearn.errors import OptionError
from olearn.features.interactions import FNV
from olearn.learners.weights import W_N, W_W

PARENT = np.uint8(1)
CYCLE = np.uint8(2)
NEVER = 127  # min_depth of a monomial never seen in training
MAX_DEPTH = 127

# Counters (float64 array).
COUNTERS = Layout(
    "poly_counters",
    Field("sparsity", "sum over training examples of their input feature counts", merge="mean"),
    Field("examples", "training examples counted in sparsity", merge="mean"),
    # a pass's own: --dask's next pass starts them afresh
    Field("period", "current example-counter period between stages"),
    Field("pending", "1: a stage is due before the next training example"),
    Field("counter_base", "example counter of the current pass's first line (VW's, §8.1)"))
C_SPARSITY, C_EXAMPLES, C_PERIOD, C_PENDING, C_COUNTER_BASE = range(len(COUNTERS))
COUNTERS_SIZE = len(COUNTERS)
COUNTERS.check_constants(globals(), "C_")

HEURISTICS = {"weight": 0, "ssm": 1}
BATCH_SZ = 1000  # VW's default --batch_sz

OPTIONS = (
    flag("--stage_poly", model=True,
         help="APPLE: grow polynomial features (monomials) in stages, from the best weights."),
    number("--sched_exponent", kind=float, default=1.0, low=0.0, model=True,
           help="Each stage adds floor(s^exponent) parents (s: average input features/example)."),
    number("--batch_sz", kind=int, default=BATCH_SZ, low=0, high=MAX_COUNT, model=True,
           help="Examples between stages (doubling after each); 0: a stage at each pass end."),
    flag("--batch_sz_no_doubling", model=True, help="Keep --batch_sz fixed."),
    number("--stages", kind=int, default=0, low=0, high=MAX_COUNT, show_default=False,
           help="The paper's schedule: K epochs of equal length over all passes, a stage at the "
                "end of each but the last (the paper: 6). Counts the data's lines before "
                "training and sets --batch_sz to match, without doubling."),
    choice("--poly_heuristic", choices=tuple(HEURISTICS), default="weight", model=True,
           help="Rank parent candidates by |w|·normalizer (VW's), or by the paper's SSM score."),
    flag("--stage_poly_fallback", model=True,
         help="The paper's consistency fallback: one of each stage's parents is the "
              "smallest-degree monomial that is not yet a parent."),
)


def check(config) -> None:
    """--stages and the fallback need --stage_poly; --stages sets --batch_sz from the lines of
    data files it reads before training (a continued model keeps its own schedule)."""
    for name in ("stages", "stage_poly_fallback"):
        if getattr(config, name) and not config.stage_poly:
            raise OptionError(f"--{name} needs --stage_poly")
    if not config.stages:
        return
    refused = (("batch_sz", config.batch_sz != BATCH_SZ), ("batch_sz_no_doubling",
               config.batch_sz_no_doubling), ("initial_regressor", config.initial_regressor),
               ("daemon", config.daemon), ("dask", config.dask))
    for name, given in refused:
        if given:
            raise OptionError(f"--stages sets the schedule from the data's lines: not with "
                              f"--{name}")
    if not config.data or "-" in config.data:
        raise OptionError("--stages counts the data's lines before training: it needs data "
                          "files (-d), not stdin")


def with_stages(config, lines: int):
    """``config`` with --stages K made VW's options: a stage every ⌈span / K⌉ on VW's example
    counter, without doubling, where the counter spans P·(lines + 1) − 1 values over P passes
    (VW counts each pass's end as one more line); so K − 1 stages, none after the last epoch."""
    span = config.passes * (lines + 1) - 1
    # quiet: the new config's checks would print the warnings of config's a second time
    staged = dataclasses.replace(config, stages=0, batch_sz=max(1, -(-span // config.stages)),
                                 batch_sz_no_doubling=True, quiet=True)
    staged.quiet = config.quiet
    return staged


@njit(cache=True, nogil=True)
def fits(poly, size, heuristic):
    """Whether the state arrays ``poly`` (min_depth, flags, SSM sums, counters, origins) are what
    the walk and the stages index for a table of ``size`` weights."""
    min_depth, flags, ssm, counters, origin = poly
    return (min_depth.shape[0] == size and flags.shape[0] == size
            and (heuristic != 1 or ssm.shape[0] == size) and ssm.shape[1] >= 2
            and counters.shape[0] >= COUNTERS_SIZE and origin.shape[1] >= 2)


@njit(cache=True, nogil=True, inline="always")
def _child(a, g, constant, mask):
    """The monomial index of input feature ``a`` times monomial ``g`` (VW's hashing)."""
    if a == constant:
        return g
    if g == constant:
        return a
    return (np.int64(a) ^ (FNV * np.int64(g))) & mask


@njit(cache=True, nogil=True)
def new_stack():
    """Scratch for :func:`expand`'s walk (monomial, value, next input feature per depth),
    allocated once per batch rather than per example."""
    return (np.empty(MAX_DEPTH + 1, dtype=np.int64), np.empty(MAX_DEPTH + 1, dtype=np.float32),
            np.empty(MAX_DEPTH + 1, dtype=np.int64))


@njit(cache=True, nogil=True, _nrt=False)
def expand(features, constant, mask, poly, training, synthetic, offset):
    """Write the synthetic example of input ``features`` (kernel/bundles.py ``Features``) to
    ``synthetic`` (``Synthetic``: its ``index``, ``value`` and the walk's ``stack``), by the
    state ``poly`` (min_depth, flags, SSM sums, counters, origins).

    A depth-first walk from the constant (depth 0): each input feature times the current
    monomial is kept if it is not yet in the example and was first seen at this depth; kept
    parents are walked into at depth + 1. In training, a shallower visit lowers a monomial's
    min_depth and takes away its parent flag, and (when ``origin`` has a row per slot, for
    --invert_hash) records the monomial as (parent, input feature). Returns the size.

    The synthetic arrays hold a row per slot of the table (trusted: the callers allocate them
    so), as the walk keeps each slot at most once: it changes the state as it goes, so it could
    not be restarted with larger arrays. It allocates nothing (the scalar example loop runs
    without numba's runtime). The stack comes from :func:`new_stack`.

    ``offset`` is --oaa's class: monomials are hashed as without it, and class k's copy of
    monomial c (its state and its synthetic feature) is slot ``(c + k) & mask``, as VW offsets
    a reduction's problems.
    """
    index, value, lo, hi, _ = features
    min_depth, flags, _, _, origin = poly
    out_idx, out_val, (stack_g, stack_x, stack_k) = synthetic
    record = origin.shape[0] == min_depth.shape[0]
    stack_g[0] = constant
    stack_x[0] = 1.0
    stack_k[0] = lo
    sp = 0
    n = 0
    while sp >= 0:
        k = stack_k[sp]
        if k == hi:
            sp -= 1
            continue
        stack_k[sp] = k + 1
        c = _child(np.int64(index[k]), stack_g[sp], constant, mask)
        slot = (c + offset) & mask
        if training and sp < min_depth[slot]:
            flags[slot] &= ~PARENT
            min_depth[slot] = sp
            if record:
                origin[slot, 0] = (stack_g[sp] + offset) & mask
                origin[slot, 1] = index[k]
        if flags[slot] & CYCLE or min_depth[slot] != sp:
            continue
        flags[slot] |= CYCLE
        x = np.float32(value[k] * stack_x[sp])
        out_idx[n] = slot
        out_val[n] = x
        n += 1
        if flags[slot] & PARENT and sp < MAX_DEPTH:
            sp += 1
            stack_g[sp] = c
            stack_x[sp] = x
            stack_k[sp] = lo
    for i in range(n):
        flags[out_idx[i]] &= ~CYCLE
    return n


@njit(cache=True, nogil=True)
def _sift_down(score, slot, size, i):
    while True:
        smallest = i
        for child in (2 * i + 1, 2 * i + 2):
            if child < size and score[child] < score[smallest]:
                smallest = child
        if smallest == i:
            return
        score[i], score[smallest] = score[smallest], score[i]
        slot[i], slot[smallest] = slot[smallest], slot[i]
        i = smallest


@njit(cache=True, nogil=True, inline="always")
def _score(W, ssm, j, heuristic, normalized):
    """Monomial ``j``'s rank as a parent candidate: the stage's Σr²m² / Σm² (ssm), or |w|·N
    (|w| without a normalizer), as VW."""
    if heuristic == 1:
        return ssm[j, 0] / ssm[j, 1] if ssm[j, 1] > 0 else 0.0
    return (abs(np.float32(W[j, W_W]) * W[j, W_N]) if normalized
            else abs(np.float64(W[j, W_W])))


@njit(cache=True, nogil=True)
def add_parents(W, flags, ssm, min_depth, constant, count, heuristic, normalized, fallback):
    """Make the ``count`` best non-parent monomials parents; returns how many were added.

    Candidates score above 1e-9 (:func:`_score`); a min-heap keeps the best. With ``fallback``
    (the paper's consistency fallback) one of the ``count`` is instead the non-parent monomial
    of the smallest degree seen in training, the best scored among those (the lowest index
    on ties), whatever its score: every monomial is eventually expanded.
    """
    by_score = count - 1 if fallback and count > 0 else count
    score = np.empty(max(by_score, 1), dtype=np.float64)
    slot = np.empty(max(by_score, 1), dtype=np.int64)
    size = 0
    for j in range(W.shape[0] if by_score > 0 else 0):
        if flags[j] & PARENT or j == constant:
            continue
        s = _score(W, ssm, j, heuristic, normalized)
        if s <= 1e-9:
            continue
        if size < by_score:
            score[size] = s
            slot[size] = j
            size += 1
            i = size - 1
            while i > 0 and score[(i - 1) // 2] > score[i]:
                p = (i - 1) // 2
                score[i], score[p] = score[p], score[i]
                slot[i], slot[p] = slot[p], slot[i]
                i = p
        elif s > score[0]:
            score[0] = s
            slot[0] = j
            _sift_down(score, slot, size, 0)
    for i in range(size):
        flags[slot[i]] |= PARENT
    if fallback and count > 0:
        size += _add_shallowest(W, flags, ssm, min_depth, constant, heuristic, normalized)
    if heuristic == 1:
        ssm[:] = 0.0
    return size


@njit(cache=True, nogil=True)
def _add_shallowest(W, flags, ssm, min_depth, constant, heuristic, normalized):
    """The consistency fallback's parent (:func:`add_parents`); returns 1, or 0 when every
    monomial seen is a parent."""
    best = -1
    best_depth = NEVER
    best_score = 0.0
    for j in range(W.shape[0]):
        if flags[j] & PARENT or j == constant or min_depth[j] >= NEVER:
            continue
        s = _score(W, ssm, j, heuristic, normalized)
        if min_depth[j] < best_depth or (min_depth[j] == best_depth and s > best_score):
            best, best_depth, best_score = j, min_depth[j], s
    if best < 0:
        return 0
    flags[best] |= PARENT
    return 1


@njit(cache=True, nogil=True)
def parents_due(counters, exponent, table_size):
    """How many parents the next stage adds: ⌊(average input features)^α⌋, capped."""
    average = np.float32(counters[C_SPARSITY] / counters[C_EXAMPLES]) if counters[C_EXAMPLES] else 0
    due = np.floor(np.float32(average) ** np.float32(exponent))
    if not due >= 0:  # NaN from a damaged state: no parents rather than an undefined count
        return 0
    return int(min(due, table_size))


@njit(cache=True, nogil=True, inline="always")
def stage_due(counters):
    """Whether a stage is to run before the next training example."""
    return counters[C_PENDING] != 0


@njit(cache=True, nogil=True)
def run_stage(W, flags, ssm, min_depth, counters, constant, exponent, heuristic, normalized,
              fallback):
    """Run the due stage: add its parents (this allocates: gd's scalar example loop, which
    runs without numba's runtime, stops before the example and lets its caller run it)."""
    add_parents(W, flags, ssm, min_depth, constant, parents_due(counters, exponent, W.shape[0]),
                heuristic, normalized, fallback)
    counters[C_PENDING] = 0.0


@njit(cache=True, nogil=True, _nrt=False)
def count_input(counters, n_input):
    """Count a training example's input features (the next stage's parent count)."""
    counters[C_SPARSITY] += n_input
    counters[C_EXAMPLES] += 1


@njit(cache=True, nogil=True, _nrt=False)
def after_training(counters, line, doubling):
    """VW's schedule: a stage is due after the training example on counter k = B, 2B, 4B, ...
    (B, 2B, 3B, ... without doubling); ``line`` is the example's line in the pass."""
    k = np.int64(counters[C_COUNTER_BASE]) + line
    period = np.int64(counters[C_PERIOD])
    if period > 0 and k != 0 and k % period == 0:
        counters[C_PENDING] = 1.0
        if doubling:
            counters[C_PERIOD] = 2 * period


@njit(cache=True, nogil=True, _nrt=False)
def add_ssm(ssm, index, value, lo, hi, residual):
    """Accumulate the SSM score's sums Σr²m² and Σm² for the monomials of an example."""
    r2 = residual * residual
    for k in range(lo, hi):
        m2 = np.float64(value[k]) * value[k]
        ssm[index[k], 0] += r2 * m2
        ssm[index[k], 1] += m2


def monomial_names(origin: np.ndarray, min_depth: np.ndarray, names: dict[int, str],
                   constant: int) -> dict[int, str]:
    """Names of the monomials seen in training, ``f^3*f^17*f^17``: a monomial is its parent's
    name times its input feature's (``names`` holds the input features' names)."""
    out: dict[int, str] = {}

    def name(c: int, depth: int) -> str:
        if c in out:
            return out[c]
        parent, atom = int(origin[c, 0]), int(origin[c, 1])
        text = names.get(atom, "?")
        if parent != constant and parent != c and depth < NEVER:
            text = name(parent, depth + 1) + "*" + text
        out[c] = text
        return text

    for c in np.flatnonzero(min_depth != NEVER).tolist():
        if origin[c, 1] >= 0:
            name(c, 0)
    return out


class StagePoly:
    """--stage_poly as an expander in front of the learner family: it owns the monomials'
    state (``state``: min_depth, flags, SSM sums, counters and, for --invert_hash, each
    monomial's origin; tiny arrays when unused), what a model file keeps of it (``ARRAYS``,
    ``NAMED``, ``model_arrays``, ``restore``, ``check``) and the monomials' names.
    The kernel side is :func:`expand` and the stage functions above, run by loop.learn_batch."""

    # The dtype and shape of each array a model file keeps (model.py), and the declared ones.
    ARRAYS = {"poly_index": ("<u4", (None,)), "poly_depth": ("|u1", (None,)),
              "poly_flags": ("|u1", (None,)), "poly_ssm": ("<f8", (None, 2)),
              "poly_counters": ("<f8", (None,))}
    NAMED = {"poly_counters": (COUNTERS, 0)}

    def __init__(self, config):
        self.on = bool(config.stage_poly)
        size = 1 << config.bit_precision if self.on else 1
        ssm_size = size if config.poly_heuristic == "ssm" else 1
        origin_size = size if config.invert_hash else 1
        counters = np.zeros(COUNTERS_SIZE)
        counters[C_PERIOD] = config.batch_sz
        self.batch_sz = config.batch_sz
        self.state = (np.full(size, NEVER, dtype=np.uint8), np.zeros(size, dtype=np.uint8),
                      np.zeros((ssm_size, 2)), counters,
                      np.full((origin_size, 2), -1, dtype=np.int64))

    def feature_names(self, names: dict[int, str], constant: int) -> dict[int, str]:
        """``names`` of the input features, and with --stage_poly those of the monomials."""
        if not self.on:
            return names
        min_depth, _, _, _, origin = self.state
        return {**names, **monomial_names(origin, min_depth, names, constant)}

    def end_pass(self, lines: int, last: bool) -> None:
        """After a pass of ``lines`` lines. VW's example counter counts the end of a pass as
        one more line (not after the last pass, so that ``-i`` continues the count exactly);
        with --batch_sz 0, a stage is due at the end of every pass but the last."""
        counters = self.state[3]
        counters[C_COUNTER_BASE] += lines + (0 if last else 1)
        if self.on and self.batch_sz == 0 and not last:
            counters[C_PENDING] = 1.0

    def model_arrays(self) -> dict:
        """The monomials seen in training (depth, parent flag, SSM sums) and the counters."""
        if not self.on:
            return {}
        min_depth, flags, ssm, counters, _ = self.state
        seen = np.flatnonzero((min_depth != NEVER) | (flags != 0))
        return {"poly_index": seen, "poly_depth": min_depth[seen], "poly_flags": flags[seen],
                "poly_ssm": ssm[seen] if len(ssm) == len(min_depth) else ssm[:0],
                "poly_counters": counters}

    def restore(self, arrays: dict) -> None:
        """Put a model's monomials back (checked by :meth:`check`)."""
        if not (self.on and "poly_index" in arrays):
            return
        min_depth, flags, ssm, counters, _ = self.state
        seen = arrays["poly_index"]
        min_depth[seen] = arrays["poly_depth"]
        flags[seen] = arrays["poly_flags"]
        if len(ssm) == len(min_depth) and len(arrays["poly_ssm"]) == len(seen):
            ssm[seen] = arrays["poly_ssm"]
        counters[:] = arrays["poly_counters"]

    @staticmethod
    def check(arrays: dict, config) -> None:
        """The monomials' indices, depths, flags, SSM sums and the counters of a model."""
        if not config.stage_poly:
            return
        seen, depth, flags = arrays["poly_index"], arrays["poly_depth"], arrays["poly_flags"]
        require(increasing_below(seen, 1 << config.bit_precision),
                "poly_index out of range, unsorted or repeated")
        require(len(depth) == len(seen) and len(flags) == len(seen),
                "poly arrays of different lengths")
        require(bool(np.all(depth <= NEVER)), "monomial depth out of range")
        require(not np.any(flags & ~PARENT), "unknown monomial flags")
        require(bool(np.all((depth != NEVER) | (flags != 0))),
                "a monomial neither seen nor a parent")
        ssm = arrays["poly_ssm"]
        require(len(ssm) == (len(seen) if config.poly_heuristic == "ssm" else 0),
                "poly_ssm of the wrong length")
        require(bool(np.all(np.isfinite(ssm) & (ssm >= 0))), "negative or non-finite SSM sums")
        counters = arrays["poly_counters"]
        require(bool(np.all(np.isfinite(counters) & (counters >= 0))),
                "negative or non-finite counters")
        require(counts(counters[[C_PERIOD, C_COUNTER_BASE]])
                and counters[C_PENDING] in (0.0, 1.0), "malformed counters")
