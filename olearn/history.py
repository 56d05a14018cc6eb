"""The progressive-validation history of a learner: the table's rows and each pass's holdout
loss, as arrays (``Learner.history``), and the learning curve drawn from them
(``olearn.plot_learning_curve``, ``--learning_curve FILE.png``; matplotlib is optional)."""
from __future__ import annotations

import io
import math
import os

import numpy as np

from olearn.errors import OlearnError

# The columns of gd.learn_batch's table rows kept: examples, weight sum, average loss, since
# the last row, holdout flag (label, prediction and features are left out).
KEPT = [0, 1, 5, 6, 7]


class History:
    """Every progress-table row a learner printed (or would print) and each pass's holdout
    loss. Rows are those of VW's table: ``examples``, ``weight`` (weighted example sum),
    ``average_loss``, ``since_last``, and ``holdout`` (True where a row reports the holdout
    loss, from the second pass on)."""

    def __init__(self) -> None:
        self._rows: list[np.ndarray] = []
        self.pass_holdout: list[float] = []  # each pass's holdout loss (inf: none held out)

    def add(self, rows: np.ndarray) -> None:
        if len(rows):
            self._rows.append(rows[:, KEPT].copy())

    def end_pass(self, holdout_loss: float) -> None:
        self.pass_holdout.append(holdout_loss)

    def _column(self, j: int) -> np.ndarray:
        return np.concatenate(self._rows)[:, j] if self._rows else np.empty(0)

    # the table's columns, as arrays
    examples = property(lambda self: self._column(0), doc="examples seen at each row")
    weight = property(lambda self: self._column(1), doc="weighted example sum at each row")
    average_loss = property(lambda self: self._column(2), doc="average progressive loss")
    since_last = property(lambda self: self._column(3), doc="loss since the last row")
    holdout = property(lambda self: self._column(4).astype(bool),
                       doc="whether the row reports the holdout loss")


def plot_learning_curve(learner_or_history, path: str | os.PathLike) -> None:
    """Draw the progressive loss (average and since the last row) against the examples seen,
    and each pass's holdout loss, to a PNG at ``path`` (written whole or not at all). Needs
    matplotlib (``pip install olearn[plot]``)."""
    from olearn.io.atomic import AtomicOutput
    history = getattr(learner_or_history, "history", learner_or_history)
    figure = _figure(history)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    out = AtomicOutput(os.fspath(path))
    try:
        out.write(buffer.getvalue())
        out.commit()
    except BaseException:
        out.discard()
        raise


def require_matplotlib() -> None:
    """An OlearnError unless matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise OlearnError("--learning_curve needs matplotlib (pip install 'olearn[plot]')"
                          ) from None


def _figure(history: History):
    require_matplotlib()
    import matplotlib
    matplotlib.use("Agg")  # files only: no display needed
    from matplotlib.figure import Figure
    figure = Figure(figsize=(7, 4.2))
    axes = figure.subplots()
    learning = ~history.holdout
    x = history.examples
    axes.plot(x[learning], history.average_loss[learning], "o-", label="average loss")
    axes.plot(x[learning], history.since_last[learning], ".:", label="since last row")
    if history.holdout.any():
        axes.plot(x[history.holdout], history.average_loss[history.holdout], "s-",
                  label="holdout loss (from pass 2)")
    finite = [loss for loss in history.pass_holdout if math.isfinite(loss)]
    if finite:
        axes.set_title("holdout loss per pass: " + ", ".join(f"{loss:.4g}" for loss in finite),
                       fontsize=9)
    if len(x) and x.min() > 0:
        axes.set_xscale("log")
    axes.set_xlabel("examples")
    axes.set_ylabel("loss")
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    return figure
