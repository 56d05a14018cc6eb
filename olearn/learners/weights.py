"""The weight table: one float32 row per feature index (2^b rows), its columns declared once.

Gradient descent uses every column; the exponential-weights learners export their θ into W
(olearn/learners/experts/saew.py), and the lazy regularization (learners/regularize.py) moves W
only.
"""
import numpy as np

from olearn.core.fields import Field, Layout
from olearn.core.option import flag, number

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

OPTIONS = (
    number("--initial_weight", kind=float, default=0.0,
           help="Start every weight at this value (gradient descent)."),
    flag("--random_weights",
         help="Start from VW's pseudo-random weights in [-0.5, 0.5) (gradient descent; a "
              "non-zero --initial_weight wins)."),
    number("--random_seed", kind=int, default=0, low=0, high=2 ** 64 - 1,
           help="Seed of --random_weights."),
    flag("--sparse_weights",
         help="Accepted for VW's command lines: the weight table is dense (2^b rows) either "
              "way, with the same results."),
)

# VW's 64-bit linear congruential generator (docs/vw-reference.md §3.4).
LCG_MULTIPLIER = 0xEECE66D5DEECE66D
LCG_INCREMENT = 2147483647


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


def initialize(weights: np.ndarray, config) -> None:
    """Set the weight column of a fresh table as --initial_weight or --random_weights ask."""
    if config.initial_weight != 0:
        weights[:, W_W] = config.initial_weight
    elif config.random_weights:
        weights[:, W_W] = random_weights(config.random_seed, len(weights))
