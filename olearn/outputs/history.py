"""The progressive-validation history of a learner: the table's rows and each pass's holdout
loss, as arrays (``Learner.history``), and the learning curve drawn from them
(``olearn.plot_learning_curve``, ``--learning_curve FILE.png``; matplotlib is optional)."""
from __future__ import annotations

import io
import math
import os

import numpy as np

from olearn.errors import OlearnError

# The columns of learn_batch's table rows kept (kernel/loop.py): examples, weight sum, average
# loss, since the last row, holdout flag (label, prediction and features are left out).
KEPT = [0, 1, 5, 6, 7]


class History:
    """Every progress-table row a learner printed (or would print) and each pass's holdout
    loss. Rows are those of VW's table: ``examples``, ``weight`` (weighted example sum),
    ``average_loss``, ``since_last``, and ``holdout`` (True where a row reports the holdout
    loss, from the second pass on)."""

    def __init__(self) -> None:
        self._rows: list[np.ndarray] = []
        self.pass_holdout: list[float] = []  # each pass's holdout loss (inf: none held out)
        self.pass_examples: list[int] = []  # the examples seen by each pass's end

    def add(self, rows: np.ndarray) -> None:
        if len(rows):
            self._rows.append(rows[:, KEPT].copy())

    def end_pass(self, holdout_loss: float, examples: int) -> None:
        """Record a pass's holdout loss and the examples seen when it ended."""
        self.pass_holdout.append(holdout_loss)
        self.pass_examples.append(int(examples))

    def __repr__(self) -> str:
        """The table as VW prints it (an ``h`` after a holdout row's losses), then each
        pass's holdout loss."""
        lines = [f"{'average':>10} {'since':>10} {'example':>12} {'example':>12}",
                 f"{'loss':>10} {'last':>10} {'counter':>12} {'weight':>12}"]
        for average, since, examples, weight, held in zip(
                self.average_loss, self.since_last, self.examples, self.weight, self.holdout):
            mark = " h" if held else ""
            lines.append(f"{_number(average):>10} {_number(since):>10} {int(examples):>12} "
                         f"{_number(weight):>12}{mark}")
        for n, loss in enumerate(self.pass_holdout, 1):
            if math.isfinite(loss):
                lines.append(f"pass {n}: holdout loss {loss:.6f}")
        return "\n".join(lines)

    def to_pandas(self):
        """The table as a pandas DataFrame (columns as the properties below); needs pandas."""
        try:
            import pandas
        except ImportError:
            raise OlearnError("History.to_pandas needs pandas (pip install 'olearn[pandas]')"
                              ) from None
        return pandas.DataFrame({"examples": self.examples.astype(np.int64),
                                 "weight": self.weight, "average_loss": self.average_loss,
                                 "since_last": self.since_last, "holdout": self.holdout})

    def _column(self, j: int) -> np.ndarray:
        return np.concatenate(self._rows)[:, j] if self._rows else np.empty(0)

    # the table's columns, as arrays
    examples = property(lambda self: self._column(0), doc="examples seen at each row")
    weight = property(lambda self: self._column(1), doc="weighted example sum at each row")
    average_loss = property(lambda self: self._column(2), doc="average progressive loss")
    since_last = property(lambda self: self._column(3), doc="loss since the last row")
    holdout = property(lambda self: self._column(4).astype(bool),
                       doc="whether the row reports the holdout loss")


def _number(value: float) -> str:
    """A loss or weight as VW's table prints it (six significant digits, ``n.a.`` for none)."""
    return "n.a." if math.isnan(value) else f"{value:.6g}"


def plot_learning_curve(learner_or_history, path: str | os.PathLike) -> None:
    """Draw the progressive loss (average and since the last row) against the examples seen,
    and each pass's holdout loss, to a PNG at ``path`` (written whole or not at all). Needs
    matplotlib (``pip install olearn[plot]``)."""
    from olearn.core.atomic import AtomicOutput
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
    ends = [(n, examples, loss) for n, (examples, loss)
            in enumerate(zip(history.pass_examples, history.pass_holdout), 1)
            if math.isfinite(loss)]
    if ends:
        axes.plot([e for _, e, _ in ends], [loss for _, _, loss in ends], "D", color="black",
                  label="holdout loss at each pass's end")
        for n, examples, loss in ends:
            axes.annotate(f"pass {n}", (examples, loss), textcoords="offset points",
                          xytext=(4, 4), fontsize=8)
    finite = [loss for _, _, loss in ends]
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
