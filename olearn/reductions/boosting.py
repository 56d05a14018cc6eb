"""``--boosting N``: VW's online boosting (Beygelzimer, Kale, Luo 2015; docs/vw-reference.md
§9.7).

N weak learners on one weight table, at --oaa's slots (``h · W + i``, reductions/oaa.py) with
their own normalizer sums, each learn the example's label in turn with the importance the
algorithm gives it (``--alg``): online boost-by-majority (``BBM``, with the weak learners' edge
``--gamma``), AdaBoost.OL.W (``logistic``) or AdaBoost.OL (``adaptive``: a draw from VW's
generator, seeded by --random_seed, decides where the weighted sum stops). The prediction is
the weak learners' sum (BBM) or their sum weighted by each one's α (the others).

:class:`Boosting` holds the configuration and state: α and v per weak learner and the
generator's state, which model files keep (as VW's), and the count of learned examples, which
they do not (VW's restarts too); the kernels are reductions/boosting_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.checks import require
from olearn.core.fields import Field, Layout
from olearn.core.option import choice, number
from olearn.reductions import oaa
from olearn.reductions.oaa import OneAgainstAll, OneScore

# The weak learners are at most this many: BBM's weights take a binomial coefficient per
# learner, O(N) each, so O(N^2) per example.
MAX_LEARNERS = 1 << 12

OPTIONS = (
    number("--boosting", kind=int, default=None, low=1, high=MAX_LEARNERS, model=True,
           metavar="N", help="Online boosting with N weak learners."),
    choice("--alg", choices=("BBM", "logistic", "adaptive"), default="BBM", model=True,
           help="--boosting's algorithm: BBM (online boost-by-majority), logistic "
                "(AdaBoost.OL.W) or adaptive (AdaBoost.OL)."),
    number("--gamma", kind=float, default=0.1, model=True,
           help="--boosting --alg BBM: the weak learners' edge."),
)

# How the "boost_alg" parameter codes --alg (kernel/layouts.py).
ALGORITHMS = {"BBM": 0, "logistic": 1, "adaptive": 2}
BBM, LOGISTIC, ADAPTIVE = ALGORITHMS.values()

# Per weak learner (a row each): VW's α and v. Float32, as VW keeps them.
LEARNERS = Layout(
    "boost_learners",
    Field("alpha", "the weak learner's weight in the prediction (logistic, adaptive)",
          merge="mean"),
    Field("v", "adaptive: its share of where the prediction stops", merge="mean", default=1.0))
L_ALPHA, L_V = LEARNERS.indices("alpha", "v")
LEARNER_FIELDS = len(LEARNERS)

BoostingState = namedtuple("BoostingState", ["classes", "learners", "clock", "random"])


def check(config, family: str | None) -> None:
    """The options --boosting needs or refuses (its weak learners learn a scalar label with
    gradient descent; ``family``: the flag of another learner family chosen, or None)."""
    from olearn.errors import OptionError
    if config.boosting is None:
        for name in ("alg", "gamma"):
            if name in config.explicit:
                raise OptionError(f"--{name} needs --boosting")
        return
    oaa.refuse(config, "boosting", (
        ("oaa", config.oaa is not None), ("csoaa", config.csoaa is not None),
        ("multilabel_oaa", config.multilabel_oaa is not None),
        ("bootstrap", config.bootstrap is not None), ("stage_poly", config.stage_poly),
        ("link", config.link != "identity")))
    if family is not None:
        raise OptionError(f"--boosting works with gradient descent, not with {family}")


class Boosting(OneScore):
    """--boosting's configuration and state: --oaa's per-learner sums and feature width, α
    and v per weak learner, the count of learned examples (VW's t, per run) and VW's
    generator (its state, a uint64, starts at --random_seed)."""

    UNMERGEABLE = ("--boosting's weak learners (their sums, α and v, and its generator) have "
                   "no merge rule yet")

    BUNDLE = BoostingState
    MULTICLASS = False  # the weak learners' sum is a scalar
    CLASS_PAIRS = False  # -r writes a score, not class:score pairs
    # VW's model keeps its generator's state (as --random_seed): -i goes on drawing from it
    ARRAYS = {**OneAgainstAll.ARRAYS, "boost_learners": ("<f4", (None, len(LEARNERS))),
              "boost_random": ("<u8", (1,))}
    NAMED = {**OneAgainstAll.NAMED, "boost_learners": (LEARNERS, 1)}

    def __init__(self, config):
        super().__init__(config, config.boosting)
        self.scores = False
        self.alg = config.alg
        self.learners = np.tile(LEARNERS.defaults().astype(np.float32), (self.k, 1))
        self.clock = np.zeros(1, dtype=np.int64)
        self.random = np.array([config.random_seed], dtype=np.uint64)

    def bundle(self) -> tuple:
        return self.BUNDLE(self.classes, self.learners, self.clock, self.random)


    def model_arrays(self) -> dict:
        return {**super().model_arrays(), "boost_learners": self.learners,
                "boost_random": self.random}

    def restore(self, arrays: dict) -> None:
        super().restore(arrays)
        if "boost_learners" in arrays:
            self.learners[:] = arrays["boost_learners"]
            self.random[:] = arrays["boost_random"]

    @staticmethod
    def check(arrays: dict, config) -> None:
        """A model's per-learner sums, α and v: a row per weak learner, finite (α in
        [-2, 2], v non-negative, as VW's updates keep them)."""
        if config.boosting is None:
            return
        OneAgainstAll.check_classes(arrays, config.boosting)
        learners = arrays["boost_learners"]
        require(learners.shape == (config.boosting, len(LEARNERS)),
                "boost_learners: not a row per weak learner")
        require(bool(np.all(np.isfinite(learners)) and np.all(np.abs(learners[:, L_ALPHA]) <= 2)
                     and np.all(learners[:, L_V] >= 0)),
                "boost_learners: α outside [-2, 2], negative v or non-finite values")

    def readable_lines(self, names: dict[int, str] | None = None) -> list[str]:
        """VW's: ``boosts N``, then each weak learner's ``alpha`` (logistic, adaptive) and
        ``v`` (adaptive); nothing for BBM."""
        if self.alg == "BBM":
            return []
        lines = [f"boosts {self.k}", *(f"alpha {float(a):g}" for a in self.learners[:, L_ALPHA])]
        if self.alg == "adaptive":
            lines += [f"v {float(v):g}" for v in self.learners[:, L_V]]
        return lines

    def check_labels(self, batch, indexing: float, prefix: str) -> list[str]:
        """Any label: the weak learners learn it as it is."""
        return []
