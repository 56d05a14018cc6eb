"""``--bootstrap B``: VW's online bootstrap (docs/vw-reference.md §9.6).

Each example is learned by B copies of the learner on one weight table, at --oaa's slots
(``h · W + i``, reductions/oaa.py) with their own normalizer sums; copy i sees the example with
its importance times a Poisson(1) draw (VW's table of the draw from its generator, seeded by
--random_seed; the draws are taken for every example, learned or not). The prediction is the
copies' mean (``--bs_type mean``, the default) or their majority vote of rounded predictions
(``vote``); -p writes it with the lowest and highest copy's prediction, -r each copy's raw
score. Under --oaa K (VW's oaa over bs), each class's ±1 problem has B copies
(:class:`BootstrapClasses`) and the prediction is --oaa's class.

:class:`Bootstrap` and :class:`BootstrapClasses` hold the configuration, per-copy state and
the generator's state; the kernels are reductions/bootstrap_kernels.py.
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
BootstrapClassesState = namedtuple("BootstrapClassesState", ["classes", "random", "copies"])


def check(config) -> None:
    """The options --bootstrap refuses (its copies learn a scalar label)."""
    from olearn.errors import OptionError
    if config.bootstrap is None:
        if "bs_type" in config.explicit:
            raise OptionError("--bs_type needs --bootstrap")
        return
    oaa.refuse(config, "bootstrap", (
        ("stage_poly", config.stage_poly),
        ("oaa_subsample", config.oaa is not None and config.oaa_subsample is not None)))
    if config.oaa is not None:
        # VW writes a -r line of each class's copies between --oaa's, and audits each copy
        for name, given in (("raw_predictions", config.raw_predictions is not None),
                            ("audit", config.audit)):
            if given:
                raise OptionError(f"--bootstrap with --oaa does not take --{name}")
        oaa.need_bits(config, "bootstrap", oaa.slot_count(config))


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


class BootstrapClasses(OneAgainstAll):
    """``--bootstrap B --oaa K``: VW's stack of oaa over bs. Each class's problem has B
    copies, class k's copy i at slot ``k · B + i`` (the feature width is K·B's), each with its
    own normalizer sums (a row of ``classes`` per copy); a class's score is its copies' mean
    (or vote) of clipped predictions, each copy drawing its Poisson multiplier as it predicts
    and again as it learns (VW's bs under its oaa); the prediction is --oaa's first best
    class."""

    BUNDLE = BootstrapClassesState

    def __init__(self, config):
        super().__init__(config, config.oaa)
        self.copies = config.bootstrap
        self.shift = oaa.index_shift(self.k * self.copies)
        self.classes = np.repeat(self.classes, self.copies, axis=0)
        self.random = np.array([config.random_seed], dtype=np.uint64)

    def bundle(self) -> tuple:
        return self.BUNDLE(self.classes, self.random, self.copies)

    def prediction_columns(self) -> int:
        """--oaa's columns, then the copies' predictions of the last class (scratch)."""
        return oaa.CLASS_COLUMN + self.k + self.copies

    def class_scores(self, preds: np.ndarray) -> np.ndarray:
        """Each class's score, the aggregate of its copies."""
        return preds[:, oaa.CLASS_COLUMN:oaa.CLASS_COLUMN + self.k]

    def feature_names(self, names: dict[int, str]) -> dict[int, str]:
        """VW's --invert_hash names: every copy's slot of every class, ``[k · B + i]``."""
        slots = self.k * self.copies
        return {((index << self.shift) + k) & self.mask: name + (f"[{k}]" if k else "")
                for index, name in names.items() for k in range(slots)}

    def class_slots(self, index: np.ndarray) -> np.ndarray:
        """Each class's first copy's slots of features ``index``, a row per class."""
        widened = self.widen(index).astype(np.int64)
        return (widened[None, :] + self.copies * np.arange(self.k)[:, None]) & self.mask

    @staticmethod
    def check(arrays: dict, config) -> None:
        """A model's per-copy sums: a row per copy of each class."""
        OneAgainstAll.check_classes(arrays, oaa.slot_count(config))
