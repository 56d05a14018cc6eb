"""--dask's progress table on the client: a row per pass, from the partitions' statistics."""
from __future__ import annotations

import math

import numpy as np

from olearn.engine.learner import OnlineLearner
from olearn.kernel import layouts
from olearn.outputs.report import Console, format_row
from olearn.scale.merge import merge_stats


def end_pass(learner: OnlineLearner, console: Console, pass_no: int, stats: np.ndarray,
             row: np.ndarray | None, warnings: list[str], lines: int) -> int:
    """A pass's end on the client: its warnings (the first pass's: later ones repeat them),
    statistics and table row; returns its lines, for run_passes."""
    for message in warnings if pass_no == 0 else []:
        console.print(message)
    learner.stats = merge_stats(learner.stats, stats)
    console.progress(0, int(learner.stats[layouts.R_EXAMPLES]))
    if row is not None:
        row = _pass_row(learner.stats, stats, row, bool(learner.params[layouts.P.holdout_rows]))
        learner.history.add(row[None])
        console.print(format_row(row))
    return lines


def _pass_row(total: np.ndarray, this_pass: np.ndarray, row: np.ndarray,
              holdout_rows: bool) -> np.ndarray:
    """A pass's table row: the average loss over everything so far and "since last" over this
    pass (on held-out examples from pass 2 on, as VW), the examples and weight so far, and the
    label, prediction, features and probability of the last row the last partition printed."""
    loss, weight = ((layouts.R_HOLDOUT_LOSS, layouts.R_HOLDOUT_W) if holdout_rows
                    else (layouts.R_SUM_LOSS, layouts.R_W_LABELED))

    def average(stats: np.ndarray) -> float:
        return stats[loss] / stats[weight] if stats[weight] > 0 else math.nan

    return np.array([total[layouts.R_EXAMPLES],
                     total[layouts.R_W_LABELED] + total[layouts.R_W_UNLABELED],
                     row[2], row[3], row[4], average(total), average(this_pass),
                     float(holdout_rows), row[8], math.nan])
