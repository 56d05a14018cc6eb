"""VW's console output: header, progressive-validation table, summary, warnings, progress bar."""
from __future__ import annotations

import dataclasses
import math
import sys
from typing import TextIO

import numpy as np

from olearn.core.fields import Field, Layout
from olearn.data import parsed
from olearn.data.batch import ExampleBatch
from olearn.kernel import layouts
from olearn.learners import losses
from olearn.outputs.metrics import AucMeter

TABLE_HEADER = (
    "average  since         example        example        current        current  current\n"
    "loss     last          counter         weight          label        predict features\n")

# Each parse warning: what is wrong, and what olearn does about it (left out when
# --strict_parse makes the warning fatal).
_WARNING_TEXT = {
    parsed.W_NOT_FLOAT: ("'{token}' is not a good float", "replacing with 0"),
    parsed.W_TOO_MANY: ("{count} is too many tokens for a simple label: '{token}'",
                        "example left unlabeled"),
    parsed.W_MALFORMED: ("malformed example! '|', space, or EOL expected after: \"{token}\"",
                         "rest of line skipped"),
    parsed.W_BAD_VALUE: ("invalid feature value \"{token}\" (not a finite number)",
                         "feature skipped"),
    parsed.W_BAD_SCALE: ("invalid namespace scale \"{token}\" (not a finite number)",
                         "replacing with 1"),
    parsed.W_BAD_IMPORTANCE: ("example has an invalid importance weight ({token})",
                              "example not learned"),
    parsed.W_SVM_TOKEN: ("'{token}' is not an svmlight feature (name:value)", "token skipped"),
    parsed.W_BAD_LABEL: ("label '{token}' is not a finite number", "example left unlabeled"),
    parsed.W_UNKNOWN_NAME: ("missing named label '{token}'", "class 0"),
    parsed.W_BAD_COST: ("the cost of '{token}' is not a finite number", "class predicted only"),
    parsed.W_NOT_INT: ("'{token}' is not a good int", "replacing with 0"),
    parsed.W_MULTILABEL: ("example with an odd label, what is '{token}'?",
                          "example left unlabeled"),
    parsed.W_CSV_EMPTY: ("malformed CSV: an empty line", ""),
    parsed.W_CSV_CELLS: ("malformed CSV: the line's cells are not as many as the header's "
                         "columns", ""),
    parsed.W_CSV_UNCLOSED: ("malformed CSV: a quote is not closed: {token}", ""),
    parsed.W_CSV_QUOTE: ("malformed CSV: a quote inside a quoted cell must be doubled: "
                         "{token}", ""),
    parsed.W_INTERACT_ANCHOR: ("--interact: a namespace misses its anchor feature of value 1",
                               "example learned without the products"),
    parsed.W_INTERACT_ORDER: ("--interact: features out of order", "later features skipped"),
}


# The progress counters a model file keeps, for --preserve_performance_counters (VW's): the
# statistics' running sums, those at the last table row, and the passes done.
COUNTED = (layouts.R_SUM_LOSS, layouts.R_W_LABELED, layouts.R_W_UNLABELED, layouts.R_W_LABEL_SUM,
           layouts.R_EXAMPLES, layouts.R_FEATURES, layouts.R_DUMP_AT, layouts.R_LAST_LOSS,
           layouts.R_LAST_W_LABELED)
COUNTERS = Layout("counters", *(dataclasses.replace(layouts.STATS.fields[r], saved=True)
                                 for r in COUNTED),
                  Field("passes", "passes done", merge="max"))
PASSES = len(COUNTED)


def counters_of(stats: np.ndarray, passes: int) -> np.ndarray:
    """The COUNTERS of the statistics ``stats`` after ``passes`` passes."""
    return np.append(stats[list(COUNTED)], passes)


def preserve(stats: np.ndarray, counters: np.ndarray) -> int:
    """Continue the statistics ``stats`` from a model's ``counters``; the passes done."""
    stats[list(COUNTED)] = counters[:PASSES]
    return int(counters[PASSES])


def _cut(text: str, width: int, left: bool) -> str:
    text = text[:width]
    return text.ljust(width) if left else text.rjust(width)


def _fixed(x: float, decimals: int, missing: str = "n.a.") -> str:
    return missing if math.isnan(x) else f"{x:.{decimals}f}"


def format_row(row: np.ndarray, multiclass: bool = False, costs: bool = False,
               names: list[str] | None = None, texts: tuple[str, str] | None = None) -> str:
    """One table row, in VW's exact column layout; a holdout row ends in ``h``. --oaa's
    (``multiclass``) labels and predictions are classes, with the prediction's probability
    (``1(33%)``) under --probabilities; --csoaa's (``costs``) labels are ``known`` or
    ``unknown``. With --named_labels' ``names``, classes are written by name (a class without
    one: ``unknown`` as --oaa's label or prediction, nothing as --csoaa's prediction).
    ``texts``: the label and prediction as written (--multilabel_oaa's lists)."""
    n, wsum, label, pred, nfeat, avg, since, holdout, probability = row[:9]
    missing = " unknown" if holdout else "n.a."
    if multiclass:
        def named(c: float, none: str) -> str:
            if names is None:
                return str(int(c))
            return names[int(c) - 1] if 1 <= c <= len(names) else none

        if costs:
            label_text = "unknown" if math.isnan(label) else "known"
        else:
            label_text = "unknown" if math.isnan(label) else named(label, "unknown")
        pred_text = named(pred, "" if costs else "unknown") + (
            "" if math.isnan(probability) else f"({100 * probability:.0f}%)")
    else:
        label_text = "unknown" if math.isnan(label) else f"{label:.4f}"
        pred_text = f"{pred:.4f}"
    if texts is not None:
        label_text, pred_text = texts
    return (f"{_cut(_fixed(avg, 6, missing), 8, True)} {_cut(_fixed(since, 6, missing), 8, True)} "
            f"{_cut(str(int(n)), 12, False)} {_cut(f'{wsum:.1f}', 14, False)} "
            f"{_cut(label_text, 14, False)} {_cut(pred_text, 14, False)} "
            f"{_cut(str(int(nfeat)), 8, False)}" + (" h" if holdout else ""))


def warning_text(batch: ExampleBatch, row: int, fatal: bool = False) -> tuple[int, str]:
    """The 1-based line and the message of a batch's ``row``-th parse warning; a ``fatal`` one
    (--strict_parse) does not say how the run would have carried on."""
    line, code, start, end = batch.warnings[row]
    token = bytes(batch.text[start:end]).decode("utf-8", "replace")
    problem, consequence = _WARNING_TEXT[int(code)]
    text = problem if fatal else f"{problem}; {consequence}"
    return batch.first_line + int(line) + 1, text.format(token=token, count=len(token.split()))


def warning_lines(batch: ExampleBatch, prefix: str = "[warning] ") -> list[str]:
    """Messages for the parse warnings of a batch, each naming the file and line."""
    out = []
    for row in range(len(batch.warnings)):
        line, text = warning_text(batch, row)
        out.append(f"{prefix}{batch.source}:{line}: {text}")
    dropped = batch.n_warnings - len(batch.warnings)
    if dropped > 0:
        out.append(f"{prefix}{batch.source}: {dropped} more warnings in this block not shown")
    return out


def summary(stats: np.ndarray, loss: losses.Loss = losses.LOSSES[losses.SQUARED],
            param: float = 0.0, passes: int = 1, holdout_loss: float | None = None,
            labels_counted: bool = True, log_loss: bool = False,
            auc: AucMeter | None = None) -> str:
    """The 'finished run' block. ``holdout_loss`` is the best pass's holdout loss (inf: no
    example was held out), or None when nothing is held out. Without ``labels_counted``
    (--oaa and the other class reductions, --dont_output_best_constant: VW's count_label
    reduction is off) the label sum is 0 and there is no best constant; with ``log_loss``
    (--probabilities) the multiclass log loss follows the average loss: over the held-out
    examples when there are any (VW divides their sum by the learned examples' weight
    instead). ``auc`` (--metric auc) adds the AUC line, of the same
    examples as the average loss."""
    wl = stats[layouts.R_W_LABELED]
    wsum = wl + stats[layouts.R_W_UNLABELED]
    examples = int(stats[layouts.R_EXAMPLES])
    lines = ["", "finished run"]
    if passes > 1:
        lines += [f"number of examples per pass = {examples // passes}",
                  f"passes used = {passes}"]
    else:
        lines.append(f"number of examples = {examples}")
    if holdout_loss is None:
        average = f"{stats[layouts.R_SUM_LOSS] / wl:.6f}" if wl > 0 else "n.a."
    elif math.isinf(holdout_loss):
        average = "undefined (no holdout)"
    else:
        average = f"{holdout_loss:.6f} h"
    lines += [f"weighted example sum = {wsum:.6f}",
              f"weighted label sum = "
              f"{stats[layouts.R_W_LABEL_SUM] if labels_counted else 0.0:.6f}",
              f"average loss = {average}"]
    if log_loss:
        if holdout_loss is None:
            lines.append(f"average multiclass log loss = "
                         f"{_fixed(stats[layouts.R_MC_LOG_LOSS] / wl if wl > 0 else math.nan, 6)}")
        else:
            held = stats[layouts.R_HOLDOUT_W]
            lines.append("average multiclass log loss = " + _fixed(
                stats[layouts.R_HOLDOUT_MC_LOG_LOSS] / held if held > 0 else math.nan, 6) + " h")
    if auc is not None:
        value = auc.value(holdout=holdout_loss is not None)
        text = ("n.a. (more than two labels)" if stats[layouts.R_MANY_LABELS]
                else _fixed(value, 6) + (" h" if holdout_loss is not None else ""))
        lines.append(f"auc = {text}")
    best = best_constant(stats, loss, param) if labels_counted else None
    if best is not None:
        constant, constant_loss = best
        lines.append(f"best constant = {constant:.6f}")
        if constant_loss is not None:
            lines.append(f"best constant's loss = {constant_loss:.6f}")
    lines.append(f"total feature number = {int(stats[layouts.R_FEATURES])}")
    if stats[layouts.R_REFUSED]:
        lines.append(f"updates refused (a weight would be non-finite) = "
                     f"{int(stats[layouts.R_REFUSED])}")
    return "\n".join(lines) + "\n"


def best_constant(stats: np.ndarray, loss: losses.Loss, param: float
                  ) -> tuple[float, float | None] | None:
    """VW's best constant and, with at most two distinct labels, its loss.

    Like VW, the label counts are recovered from the weighted label sum, taking the second
    label as 0 when only one was seen.
    """
    label1 = stats[layouts.R_LABEL1]
    if math.isnan(label1):
        return None
    label2 = 0.0 if math.isnan(stats[layouts.R_LABEL2]) else stats[layouts.R_LABEL2]
    if label1 == label2:
        return None
    wl = stats[layouts.R_W_LABELED]
    count1 = (stats[layouts.R_W_LABEL_SUM] - label2 * wl) / (label1 - label2)
    count2 = wl - count1
    if count1 + count2 <= 0:
        return None
    if stats[layouts.R_MANY_LABELS]:
        return (stats[layouts.R_W_LABEL_SUM] / wl, None) if loss.mean_is_best else None
    if loss.two_label_constant is None:
        return None
    constant = loss.two_label_constant(param, label1, count1, label2, count2)
    total = sum(losses.constant_loss(loss.code, param, constant, label) * count
                for label, count in ((label1, count1), (label2, count2)) if count > 0)
    return constant, total / (count1 + count2)


class Console:
    """Writes the header, rows and summary to stderr, above a tqdm bar when stderr is a TTY."""

    def __init__(self, quiet: bool, total_bytes: int | None, stream: TextIO | None = None):
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self._bar = None
        if not quiet and self.stream.isatty():
            from tqdm import tqdm
            self._bar = tqdm(total=total_bytes, unit="B", unit_scale=True, unit_divisor=1024,
                             file=self.stream, leave=False, dynamic_ncols=True)

    def print(self, text: str) -> None:
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.write(text.rstrip("\n"), file=self.stream)
        else:
            self.stream.write(text if text.endswith("\n") else text + "\n")

    def progress(self, bytes_read: int, examples: int) -> None:
        if self._bar is not None:
            self._bar.update(bytes_read - self._bar.n)
            rate = examples / max(self._bar.format_dict["elapsed"], 1e-9)
            self._bar.set_postfix_str(f"{examples} ex, {rate:,.0f} ex/s", refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
