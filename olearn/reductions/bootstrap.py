"""``--bootstrap B``: VW's online bootstrap (docs/vw-reference.md §9.6).

Each example is learned by B copies of the learner on one weight table, at --oaa's slots
(``h · W + i``, reductions/oaa.py) with their own normalizer sums; copy i sees the example with
its importance times a Poisson(1) draw (VW's table of the draw from its generator, seeded by
--random_seed; the draws are taken for every example, learned or not). The prediction is the
copies' mean (``--bs_type mean``, the default) or their majority vote of rounded predictions
(``vote``); -p writes it with the lowest and highest copy's prediction, -r each copy's raw
score.

:class:`Bootstrap` holds the configuration, per-copy state and the generator's state; the
kernels are reductions/bootstrap_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.option import choice, number
from olearn.reductions import oaa
from olearn.reductions.oaa import OneAgainstAll

OPTIONS = (
    number("--bootstrap", kind=int, default=None, low=1, high=oaa.MAX_CLASSES, model=True,
           metavar="B", help="B-way bootstrap by online importance resampling."),
    choice("--bs_type", choices=("mean", "vote"), default="mean", model=True,
           help="How --bootstrap aggregates its copies' predictions."),
)

# The prediction array's columns after output and raw score: the lowest and the highest copy's
# prediction, then each copy's raw score.
LOW_COLUMN, HIGH_COLUMN, COPY_COLUMN = 2, 3, 4

BootstrapState = namedtuple("BootstrapState", ["classes", "random"])


def check(config) -> None:
    """The options --bootstrap refuses (its copies learn a scalar label)."""
    from olearn.errors import OptionError
    if config.bootstrap is None:
        if "bs_type" in config.explicit:
            raise OptionError("--bs_type needs --bootstrap")
        return
    oaa.refuse(config, "bootstrap", (
        ("oaa", config.oaa is not None), ("csoaa", config.csoaa is not None),
        ("multilabel_oaa", config.multilabel_oaa is not None), ("stage_poly", config.stage_poly)))


class Bootstrap(OneAgainstAll):
    """--bootstrap's configuration and state: --oaa's per-copy sums and feature width, and
    VW's generator (its state, a uint64, starts at --random_seed)."""

    BUNDLE = BootstrapState
    MULTICLASS = False  # the copies' mean or vote is a scalar

    def __init__(self, config):
        super().__init__(config, config.bootstrap)
        self.scores = False
        self.random = np.array([config.random_seed], dtype=np.uint64)

    def bundle(self) -> tuple:
        return self.BUNDLE(self.classes, self.random)

    def prediction_columns(self) -> int:
        """Output, its raw score, the lowest and highest copy, then each copy's raw score."""
        return COPY_COLUMN + self.k

    def class_scores(self, preds: np.ndarray) -> np.ndarray:
        """Each copy's raw score, a column each."""
        return preds[:, COPY_COLUMN:]

    def class_pairs(self, preds: np.ndarray, raw: bool
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """-r's ``i:score`` of each copy, numbered from 1 (VW's)."""
        n = len(preds)
        return (np.broadcast_to(np.arange(1, self.k + 1), (n, self.k)), preds[:, COPY_COLUMN:],
                np.full(n, self.k), False)

    @staticmethod
    def check(arrays: dict, config) -> None:
        """A model's per-copy sums: a row per copy, finite and non-negative."""
        if config.bootstrap is not None:
            OneAgainstAll.check_classes(arrays, config.bootstrap)

    def check_labels(self, batch, indexing: float, prefix: str) -> list[str]:
        """Any label: the copies learn it as it is."""
        return []
