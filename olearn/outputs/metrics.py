"""--metric auc: the area under the ROC curve of a binary task's scores (the APPLE paper reports
test AUC for classification; VW has no such summary line).

The scores are the raw predictions (before clipping and link: clipping to the label range would
tie every score beyond it). Positives are the examples labeled > 0 (VW's -1/1 and 0/1 labels
alike); each pair of a positive and a negative counts with the product of their importance
weights. The meter keeps every scored example's label, score and weight in per-batch numpy
arrays and sorts them once at the end, so no Python runs per example.
"""
from __future__ import annotations

import math

import numpy as np

from olearn.data.batch import ExampleBatch
from olearn.kernel import layouts, loop


def auc(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray | None = None) -> float:
    """The weighted Mann–Whitney statistic: the probability that a positive (label > 0) scores
    above a negative, ties counting one half (the average rank of tied scores); each pair
    weighs the product of its weights. NaN unless both classes have weight."""
    scores = np.asarray(scores, dtype=np.float64)
    weights = np.ones(len(scores)) if weights is None else np.asarray(weights, dtype=np.float64)
    if len(scores) == 0:
        return math.nan
    order = np.argsort(scores, kind="stable")
    positive = np.asarray(labels)[order] > 0
    w = weights[order]
    # one group per distinct score, in increasing order
    starts = np.concatenate(([0], np.flatnonzero(np.diff(scores[order])) + 1))
    pos = np.add.reduceat(np.where(positive, w, 0.0), starts)
    neg = np.add.reduceat(np.where(positive, 0.0, w), starts)
    below = np.cumsum(neg) - neg  # negative weight scored strictly below each group
    total_pos, total_neg = pos.sum(), neg.sum()
    if not (total_pos > 0 and total_neg > 0):
        return math.nan
    return float(np.dot(pos, below + 0.5 * neg) / (total_pos * total_neg))


class AucMeter:
    """The AUC of the progressive predictions (every labeled example not held out, over all
    passes, as the average loss; under -t the test predictions) and of the held-out examples
    of the pass with the best holdout loss (the model -f keeps)."""

    def __init__(self, params: np.ndarray):
        self._period = np.int64(params[layouts.P.holdout_period])
        self._after = np.int64(params[layouts.P.holdout_after])
        self._seen: list[tuple[np.ndarray, ...]] = []
        self._held: list[tuple[np.ndarray, ...]] = []
        self.holdout = math.nan  # the best pass's holdout AUC

    def add(self, batch: ExampleBatch, preds: np.ndarray) -> None:
        """Keep the labeled examples' labels, raw scores (``preds[:, 1]``) and weights."""
        labels, weights = batch.numbers[:, 0], batch.numbers[:, 1]
        labeled = ~np.isnan(labels)
        held = (loop.held_out(self._period, self._after, batch.pass_line + batch.lines + 1)
                if self._period > 0 else np.zeros(len(labels), dtype=np.bool_))
        for keep, into in ((labeled & ~held, self._seen), (labeled & held, self._held)):
            if keep.any():
                into.append((labels[keep].astype(np.float64), preds[keep, 1].astype(np.float64),
                             weights[keep].astype(np.float64)))

    def end_pass(self, best: bool) -> None:
        """After a pass: its held-out AUC is kept if its holdout loss is the ``best`` so far."""
        if best:
            self.holdout = _auc_of(self._held)
        self._held = []

    def value(self, holdout: bool) -> float:
        """The best pass's holdout AUC (``holdout``), or the progressive one."""
        return self.holdout if holdout else _auc_of(self._seen)


def _auc_of(parts: list[tuple[np.ndarray, ...]]) -> float:
    if not parts:
        return math.nan
    labels, scores, weights = (np.concatenate(column) for column in zip(*parts))
    return auc(labels, scores, weights)
