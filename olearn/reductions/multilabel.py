"""``--multilabel_oaa K``: VW's one-against-all multilabel reduction (docs/vw-reference.md §9.4).

A multilabel lists an example's classes, 0-based and ascending (``0,3,4 |a x``). Each class k is
a binary problem on one weight table at --oaa's slots (``h · W + k``, reductions/oaa.py), with
its own normalizer sums: it learns +1 when the label lists k and −1 otherwise, in class order,
each class's label joining the label range before its prediction (VW's). The prediction is the
set of classes whose output (after --link) is above 0, or 0.5 with a logistic link;
--probabilities makes the link logistic and writes every class's output (and, as VW, predicts
the empty set). The reported loss is the number of classes in one of the label and the
prediction but not the other.

:class:`Multilabel` holds the configuration and per-class state (--oaa's, by inheritance);
the kernels are reductions/multilabel_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.option import number
from olearn.reductions import oaa
from olearn.reductions.oaa import OneAgainstAll

OPTIONS = (
    number("--multilabel_oaa", kind=int, default=None, low=1, high=oaa.MAX_CLASSES, model=True,
           parsing=True, metavar="K",
           help="One-against-all multilabel with K classes (labels 0,3,4: classes 0..K-1)."),
)

# The prediction array's columns: how many classes are predicted, the threshold an output must
# exceed, then each class's output.
THRESHOLD_COLUMN, OUTPUT_COLUMN = 1, 2

MultilabelState = namedtuple("MultilabelState", ["classes"])


def check(config) -> None:
    """The options --multilabel_oaa refuses; --probabilities makes its link logistic (VW's)."""
    if config.multilabel_oaa is None:
        return
    oaa.refuse(config, "multilabel_oaa", (
        ("oaa", config.oaa is not None), ("csoaa", config.csoaa is not None),
        ("stage_poly", config.stage_poly), ("scores", config.scores), ("binary", config.binary),
        ("named_labels", config.named_labels)))
    if config.probabilities:
        config.link = "logistic"


class Multilabel(OneAgainstAll):
    """--multilabel_oaa's configuration and state: --oaa's (K, the feature width, each class's
    normalizer sums), with multilabels and sets of classes as predictions."""

    BUNDLE = MultilabelState

    def __init__(self, config):
        super().__init__(config, config.multilabel_oaa)
        self.probabilities = bool(config.probabilities)
        self.scores = self.probabilities

    def prediction_columns(self) -> int:
        """The count of predicted classes, the threshold, then each class's output."""
        return OUTPUT_COLUMN + self.k

    def class_scores(self, preds: np.ndarray) -> np.ndarray:
        """Each class's output (after --link), a column each."""
        return preds[:, OUTPUT_COLUMN:]

    def predicted(self, preds: np.ndarray) -> np.ndarray:
        """Which classes each example predicts (a row of flags per example)."""
        return preds[:, OUTPUT_COLUMN:] > preds[:, THRESHOLD_COLUMN, None]

    def class_pairs(self, preds: np.ndarray, raw: bool
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """What --probabilities' -p (and -r) write: every class and its output."""
        n = len(preds)
        return (np.broadcast_to(np.arange(self.k), (n, self.k)), preds[:, OUTPUT_COLUMN:],
                np.full(n, self.k), False)

    @staticmethod
    def check(arrays: dict, config) -> None:
        """A model's per-class sums: a row per class, finite and non-negative."""
        if config.multilabel_oaa is not None:
            OneAgainstAll.check_classes(arrays, config.multilabel_oaa)

    def check_labels(self, batch, indexing: float, prefix: str) -> list[str]:
        """Warnings for classes outside 0..K-1 and for lists not in ascending order (VW matches
        a label's classes in order, so such a list is learned only up to where it breaks)."""
        classes = batch.cost_class.astype(np.int64)
        starts = batch.cost_offsets[:-1]
        follows = np.ones(len(classes), dtype=bool)
        follows[starts[starts < len(classes)]] = False
        unordered = np.zeros(len(classes), dtype=bool)
        unordered[1:] = follows[1:] & (classes[1:] <= classes[:-1])
        warnings = []
        for bad, what in ((classes >= self.k, f"is not in {{0..{self.k - 1}}}"),
                          (unordered, "breaks the ascending order of its label")):
            if bad.any():
                first = int(np.argmax(bad))
                e = int(np.searchsorted(batch.cost_offsets, first, side="right")) - 1
                count = int(bad.sum())
                more = f" ({count - 1} more in this block)" if count > 1 else ""
                warnings.append(
                    f"{prefix}{batch.source}:{batch.first_line + int(batch.lines[e]) + 1}: class "
                    f"{classes[first]} {what}; no class learns it as a positive{more}")
        return warnings
