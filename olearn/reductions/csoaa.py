"""``--csoaa K``: VW's cost-sensitive one-against-all reduction (docs/vw-reference.md §9.3).

A cost-sensitive label lists classes and their costs (``1:0.5 2:0 3:1``, data/labels.py). Each
class is a regression problem of its own on one weight table, at the same slots as --oaa's
(``h · W + k``, reductions/oaa.py), with its own normalizer sums. An example with costs
predicts and learns only the classes it lists: each learns its cost (importance 1; a class
listed without a cost is predicted only), and the prediction is the listed class of lowest raw
score (ties: the lower class). An example without costs predicts every class. The reported
loss is the predicted class's cost minus the lowest cost (--cs_absolute_loss: its cost).

Classes are numbered 1..K or 0..K-1 by --oaa's rule (--indexing, or the first label 0 or K); a
class outside them is read as the last class (1-based) or class 0 (0-based), with a warning,
as VW. (VW leaves such a class as it is while the indexing is undecided, and learns it at
slots beyond the K classes'; olearn reads it as 1-based: docs/vw-differences.md.)

:class:`CostSensitive` holds the configuration and per-class state (--oaa's, by inheritance);
the kernels are reductions/csoaa_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.option import flag, number
from olearn.reductions import oaa
from olearn.reductions.oaa import OneAgainstAll

OPTIONS = (
    number("--csoaa", kind=int, default=None, low=1, high=oaa.MAX_CLASSES, model=True,
           parsing=True, metavar="K",
           help="Cost-sensitive one-against-all with K classes (labels class:cost ...)."),
    flag("--cs_absolute_loss", help="With --csoaa: report the predicted class's cost as the "
                                    "loss, not its difference from the lowest cost."),
)

# The prediction array's columns after output and raw score: how many classes -r lists, the
# first class's number (0 or 1), then each listed class's number (a column per class) and its
# raw score (a column per class).
LISTED_COLUMN, FIRST_COLUMN, CLASSES_COLUMN = 2, 3, 4

CostSensitiveState = namedtuple("CostSensitiveState", ["classes"])


def check(config) -> None:
    """The options --csoaa refuses (called from Config's checks)."""
    from olearn.errors import OptionError
    if config.csoaa is None:
        if config.cs_absolute_loss:
            raise OptionError("--cs_absolute_loss needs --csoaa")
        return
    oaa.refuse(config, "csoaa", (
        ("oaa", config.oaa is not None), ("stage_poly", config.stage_poly),
        ("probabilities", config.probabilities), ("scores", config.scores),
        ("binary", config.binary), ("link", config.link != "identity")))


class CostSensitive(OneAgainstAll):
    """--csoaa's configuration and state: --oaa's (K, the feature width, each class's
    normalizer sums), with cost-sensitive labels and predictions."""

    BUNDLE = CostSensitiveState

    def __init__(self, config):
        super().__init__(config, config.csoaa)
        self.scores = False
        self.absolute_loss = bool(config.cs_absolute_loss)

    def prediction_columns(self) -> int:
        """Output, raw score, the count -r lists, the first class, then a class and a score
        column per class (-r lists at most K of an example's classes)."""
        return CLASSES_COLUMN + 2 * self.k

    def class_scores(self, preds: np.ndarray) -> np.ndarray:
        """Each class's raw score where its example's label lists it (NaN elsewhere; a class
        listed twice: its last score), a column per class 1..K, or 0..K-1 when 0-based."""
        classes, scores, counts, _ = self.class_pairs(preds, True)
        out = np.full((len(preds), self.k), np.nan, dtype=preds.dtype)
        rows, entries = np.nonzero(np.arange(self.k)[None, :] < counts[:, None])
        columns = classes[rows, entries].astype(np.int64) - preds[rows, FIRST_COLUMN].astype(int)
        out[rows, np.clip(columns, 0, self.k - 1)] = scores[rows, entries]
        return out

    def class_pairs(self, preds: np.ndarray, raw: bool
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """What -r writes of each example: the classes its label lists (at most K), their raw
        scores, how many, and no leading space (VW's)."""
        k = self.k
        return (preds[:, CLASSES_COLUMN:CLASSES_COLUMN + k],
                preds[:, CLASSES_COLUMN + k:CLASSES_COLUMN + 2 * k],
                preds[:, LISTED_COLUMN], False)

    @staticmethod
    def check(arrays: dict, config) -> None:
        """A model's per-class sums: a row per class, finite and non-negative."""
        if config.csoaa is not None:
            OneAgainstAll.check_classes(arrays, config.csoaa)

    def check_labels(self, batch, indexing: float, prefix: str) -> list[str]:
        """Warnings for classes outside the classes (read as the last class, or class 0 when
        0-based: VW's), given the ``indexing`` in force."""
        classes = batch.cost_class.astype(np.int64)
        low = 1 if indexing != 0 else 0
        high = self.k - 1 if indexing == 0 else self.k
        auto = indexing == oaa.AUTO
        outside = (classes < low) | (classes > high)
        if auto:  # label 0 or K decides the indexing
            outside &= classes != 0
        warnings = []
        if outside.any():
            first = int(np.argmax(outside))
            e = int(np.searchsorted(batch.cost_offsets, first, side="right")) - 1
            count = int(outside.sum())
            more = f" ({count - 1} more in this block)" if count > 1 else ""
            read = 0 if indexing == 0 else self.k
            warnings.append(
                f"{prefix}{batch.source}:{batch.first_line + int(batch.lines[e]) + 1}: class "
                f"{classes[first]} is not in {{{low}..{high}}}; read as class {read}{more}")
        return warnings

