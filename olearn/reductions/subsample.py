"""``--oaa K --oaa_subsample N``: VW's one-against-all learning N negative classes per example
(docs/vw-reference.md §9).

A learned example trains its label's class (+1), then the next N classes of a fixed random
order of the K classes (−1, importance times K/N), skipping the label's class, the order's
position carried from example to example; the prediction shown is the first best raw score
among the classes it learned, starting from the label. The order is VW's: the identity
shuffled once by K draws of VW's generator seeded with --random_seed. Examples not learned
(test-only, held out, unlabeled) are predicted as --oaa predicts them. As VW, the progressive
loss is not reported (its examples count as unlabeled: the average loss is n.a.). N ≥ K turns
subsampling off, as VW.

:class:`Subsampled` holds the order and position; its kernels are
reductions/subsample_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.option import number
from olearn.learners.weights import LCG_INCREMENT, LCG_MULTIPLIER, draws
from olearn.reductions import oaa
from olearn.reductions.oaa import OneAgainstAll

OPTIONS = (
    number("--oaa_subsample", kind=int, default=None, low=1, high=oaa.MAX_CLASSES,
           metavar="N", help="With --oaa: learn N negative classes per example, taken in "
                             "a random order (no progressive loss is reported)."),
)

SubsampledState = namedtuple("SubsampledState", ["classes", "order", "position", "negatives"])


def on(config) -> bool:
    """Whether --oaa_subsample subsamples (VW turns it off when N ≥ K)."""
    return (config.oaa is not None and config.oaa_subsample is not None
            and config.oaa_subsample < config.oaa)


def check(config) -> None:
    """--oaa_subsample needs --oaa; its examples have no class lists or raw scores to write."""
    from olearn.errors import OptionError
    if config.oaa_subsample is None:
        return
    if config.oaa is None:
        raise OptionError("--oaa_subsample needs --oaa")
    for name, given in (("probabilities", config.probabilities), ("scores", config.scores),
                        ("raw_predictions", config.raw_predictions is not None),
                        ("stage_poly", config.stage_poly)):
        if given:
            raise OptionError(f"--oaa_subsample does not take --{name}")


def shuffled(k: int, seed: int) -> np.ndarray:
    """VW's order: for i in 0..K-1, swap i with i + ⌊draw·(K − i)⌋ (float32)."""
    order = np.arange(k, dtype=np.uint32)
    state = np.array([seed], dtype=np.uint64)
    for i in range(k):
        state = np.uint64(LCG_MULTIPLIER) * state + np.uint64(LCG_INCREMENT)
        j = int(draws(state)[0] * np.float32(k - i)) + i
        order[i], order[j] = order[j], order[i]
    return order


class Subsampled(OneAgainstAll):
    """--oaa's per-class state, the classes' order, the position in it (reset by -i, as VW's)
    and N."""

    BUNDLE = SubsampledState

    def __init__(self, config):
        super().__init__(config)
        self.order = shuffled(self.k, config.random_seed)
        self.position = np.zeros(1, dtype=np.int64)
        self.negatives = config.oaa_subsample

    def bundle(self) -> tuple:
        return self.BUNDLE(self.classes, self.order, self.position, self.negatives)
