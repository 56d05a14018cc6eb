"""The weight table: one float32 row per feature index (2^b rows), its columns declared once.

Gradient descent uses every column; the exponential-weights learners export their θ into W
(olearn/learners/experts/saew.py), and the lazy regularization (learners/regularize.py) moves W
only.
"""
import numpy as np
from numba import njit

from olearn.core.fields import Field, Layout
from olearn.core.option import flag, number
from olearn.data.hashing import CONSTANT_HASH

COLUMNS = Layout(
    "weights",
    Field("w", "the weight", merge="gradient"),
    Field("G", "sum of squared gradients (--adaptive; starts at initial_t)", merge="gradient"),
    Field("N", "largest |x| seen (--normalized)", merge="max"),
    # VW's: a feature repeated in an example uses the last rate computed for it; written
    # before it is read in every update, so it does not travel between partitions
    Field("rate", "scratch: the current update's rate", merge="local", saved=False),
)
W_W, W_G, W_N, W_RATE = COLUMNS.indices("w", "G", "N", "rate")
WIDTH = len(COLUMNS)
COLUMNS.check_constants(globals(), "W_")


def storable(rows: np.ndarray) -> bool:
    """Whether weight rows (every column or the saved ones: w, G, N come first) may be saved
    and loaded: every weight finite, every adaptive sum and normalizer at least 0. A sum may
    be +inf: a feature's squared gradients can overflow float32 (large feature values), after
    which its rate is 0 and its weight no longer moves; VW saves such models too."""
    return bool(np.isfinite(rows[:, W_W]).all() and np.all(rows[:, [W_G, W_N]] >= 0))

def default_row(config) -> np.ndarray:
    """The row of a coordinate never updated (G starts at initial_t in adaptive mode, as
    VW's)."""
    row = COLUMNS.defaults().astype(np.float32)
    if config.update_rule[0] and config.t0 > 0:
        row[W_G] = config.t0
    return row


OPTIONS = (
    number("--initial_weight", kind=float, default=0.0,
           help="Start every weight at this value (gradient descent)."),
    flag("--random_weights",
         help="Start from VW's pseudo-random weights in [-0.5, 0.5) (gradient descent; a "
              "non-zero --initial_weight wins)."),
    number("--random_seed", kind=int, default=0, low=0, high=2 ** 64 - 1,
           help="Seed of --random_weights."),
    number("-C", "--constant", kind=float, default=0.0,
           help="Start the constant feature's weight at this value (VW's slot of the "
                "constant, unwidened)."),
    flag("--normal_weights",
         help="Start from VW's standard normal weights (Box-Muller draws seeded by each "
              "weight's index; gradient descent)."),
    flag("--truncated_normal_weights",
         help="--normal_weights with every weight beyond twice their standard deviation "
              "folded back by its remainder (VW's)."),
    flag("--sparse_weights",
         help="Accepted for VW's command lines: the weight table is dense (2^b rows) either "
              "way, with the same results."),
)

# VW's 64-bit linear congruential generator (docs/vw-reference.md §3.4).
LCG_MULTIPLIER = 0xEECE66D5DEECE66D
LCG_INCREMENT = 2147483647
_MULTIPLIER, _INCREMENT = np.uint64(LCG_MULTIPLIER), np.uint64(LCG_INCREMENT)  # (the kernels')


@njit(cache=True, nogil=True, _nrt=False)
def merand48(random, i):
    """VW's merand48 on generator state ``random[i]`` (a uint64 array): the next number in
    [0, 1) (:func:`uniform`), the state stepped."""
    random[i] = _MULTIPLIER * random[i] + _INCREMENT
    return uniform(random[i])


@njit(cache=True, nogil=True, _nrt=False)
def uniform(state):
    """The number in [0, 1) of a generator state: the float32 of exponent 0 and mantissa bits
    25..47 of the state, less 1 (exactly those bits / 2^23)."""
    return np.float32(np.float64((state >> np.uint64(25)) & np.uint64(0x7FFFFF)) / 8388608.0)


@njit(cache=True, nogil=True, _nrt=False)
def next_draw(state):
    """VW's merand48 on a copy of ``state`` (its cheesyrand): the next number in [0, 1)."""
    return uniform(_MULTIPLIER * np.uint64(state) + _INCREMENT)


def random_weights(seed: int, n: int) -> np.ndarray:
    """VW's --random_weights: weight i is draw i + 1 of the generator seeded with ``seed``,
    the float32 in [1, 2) whose mantissa is bits 25..47 of the state, minus 1.5.

    The draws are computed by doubling instead of one at a time: the generator's step is the
    affine map f(s) = a·s + c (mod 2^64), and draws k+1..2k are f^k of draws 1..k.
    """
    a = np.array([LCG_MULTIPLIER], dtype=np.uint64)
    c = np.array([LCG_INCREMENT], dtype=np.uint64)
    states = a * np.array([seed], dtype=np.uint64) + c  # f(seed), arrays: wrap silently
    while len(states) < n:  # (a, c) is f^len(states)
        states = np.concatenate([states, a * states + c])
        a, c = a * a, a * c + c
    bits = (((states[:n] >> np.uint64(25)) & np.uint64(0x7FFFFF)) | np.uint64(0x3F800000))
    return bits.astype(np.uint32).view(np.float32) - np.float32(1.5)


def draws(states: np.ndarray) -> np.ndarray:
    """VW's draw of each generator state: the float32 in [0, 1) of bits 25..47."""
    bits = ((states >> np.uint64(25)) & np.uint64(0x7FFFFF)) | np.uint64(0x3F800000)
    return bits.astype(np.uint32).view(np.float32) - np.float32(1)


def normal_weights(n: int, stride: int) -> np.ndarray:
    """VW's --normal_weights: weight i is the polar Box-Muller draw (float32) of the generator
    seeded with ``i · stride`` (VW's index of the weight: ``stride`` floats per weight),
    rejecting pairs outside the unit disc; all weights' draws advance together (numpy)."""
    a, c = np.uint64(LCG_MULTIPLIER), np.uint64(LCG_INCREMENT)
    states = np.arange(n, dtype=np.uint64) * np.uint64(stride)
    out = np.empty(n, dtype=np.float32)
    pending = np.arange(n)
    one, two = np.float32(1), np.float32(2)
    while pending.size:
        first = a * states[pending] + c
        second = a * first + c
        x1 = two * draws(first) - one
        x2 = two * draws(second) - one
        radius = x1 * x1 + x2 * x2
        inside = (radius < one) & (radius != 0)
        r = radius[inside]
        out[pending[inside]] = x1[inside] * np.sqrt((np.float32(-2) * np.log(r)) / r)
        states[pending] = second
        pending = pending[~inside]
    return out


def truncated(weights: np.ndarray) -> np.ndarray:
    """VW's --truncated_normal_weights: a weight beyond twice the weights' (population)
    standard deviation becomes its IEEE remainder by that bound."""
    bound = 2 * float(np.std(weights.astype(np.float64)))
    out = weights.astype(np.float64)
    beyond = np.abs(out) > bound
    out[beyond] -= np.round(out[beyond] / bound) * bound  # round half to even: IEEE's rule
    return out.astype(np.float32)


def vw_stride(config) -> int:
    """Floats per weight in VW's table (its index of weight slot i is i · stride): 4 with an
    adaptive or normalized rule, 1 for plain SGD."""
    adaptive, normalized, _ = config.update_rule
    return 4 if adaptive or normalized else 1


def initialize(weights: np.ndarray, config) -> None:
    """Set the weight column of a fresh table as --initial_weight, --random_weights or
    --normal_weights/--truncated_normal_weights ask (VW's order of precedence)."""
    if config.initial_weight != 0:
        weights[:, W_W] = config.initial_weight
    elif config.random_weights:
        weights[:, W_W] = random_weights(config.random_seed, len(weights))
    elif config.normal_weights or config.truncated_normal_weights:
        drawn = normal_weights(len(weights), vw_stride(config))
        weights[:, W_W] = truncated(drawn) if not config.normal_weights else drawn
    if config.constant != 0:
        weights[CONSTANT_HASH & config.mask, W_W] = config.constant
