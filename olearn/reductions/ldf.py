"""``--csoaa_ldf`` and ``--wap_ldf``: VW's cost-sensitive reductions with label-dependent
features (docs/vw-reference.md §9.5).

An example is several lines up to a blank line (data/multiline.py): an optional ``shared``
line, whose features every action gets too, then one line per action, ``class:cost | its
features``. All actions share one weight table and one scalar problem (no per-class slots):

- every action is predicted first (its raw score), and the prediction is the class of the
  action of lowest score (the first of equal ones); with --probabilities (``mc``), each
  action's probability is 1/(1 + e^score), normalized over the example, and the prediction the
  class of the most probable; with --csoaa_rank, the actions sorted by score;
- the reported loss is the cost of the first action whose label names the predicted class;
- then, when every action has a cost, each action is learned in order: ``m`` (multiline)
  regresses on its cost, ``mc`` (multiline-classifier) learns -1 with importance
  ``max - min`` for the cheapest actions and +1 with importance ``cost - min`` for the others;
  --wap_ldf learns, for each pair of actions of different weighted-all-pairs values, the
  first's features less the second's, label -1 when the first is cheaper, importance their
  values' difference.

As VW, a multi-line example does not advance the learner's clock t. :class:`LabelDependent`
holds the mode; the kernels are reductions/ldf_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.option import flag, text
from olearn.data.batch import ExampleBatch
from olearn.data.multiline import POSITION
from olearn.errors import OptionError
from olearn.outputs.predictions import format_pairs, format_predictions
from olearn.reductions.oaa import OneAgainstAll

MODES = ("m", "multiline", "mc", "multiline-classifier")
CLASSIFIER = ("mc", "multiline-classifier")

OPTIONS = (
    text("--csoaa_ldf", model=True, parsing=True, choices=MODES, metavar="MODE",
         help="Cost-sensitive one-against-all with label-dependent features: multi-line "
              "examples (a line per action, an optional 'shared' line first, a blank line "
              "after), m(ultiline) regresses on costs, mc (multiline-classifier) classifies."),
    text("--wap_ldf", model=True, parsing=True, choices=MODES, metavar="MODE",
         help="Weighted all-pairs with label-dependent features (multi-line examples as "
              "--csoaa_ldf's)."),
    text("--ldf_override", model=True, choices=MODES, metavar="MODE",
         help="With --csoaa_ldf or --wap_ldf: use this mode instead of theirs."),
    flag("--csoaa_rank", model=True,
         help="With --csoaa_ldf: predict the actions sorted by score (-p: class:score,...); "
              "without it, nothing (as VW)."),
)

# The bundle: whether it learns all pairs (--wap_ldf), classifies (mc), ranks, and writes
# probabilities (each 0 or 1).
LdfState = namedtuple("LdfState", ["wap", "classifier", "rank", "probabilities"])


def chosen(config) -> bool:
    return config.csoaa_ldf is not None or config.wap_ldf is not None


def check(config) -> None:
    """The options the multi-line reductions need or refuse (called from Config's checks)."""
    if not chosen(config):
        # --csoaa_rank alone changes nothing, as VW (which runs --csoaa --csoaa_rank as --csoaa)
        if config.ldf_override:
            raise OptionError("--ldf_override needs --csoaa_ldf or --wap_ldf")
        return
    if config.csoaa_ldf is not None and config.wap_ldf is not None:
        raise OptionError("--csoaa_ldf and --wap_ldf are two reductions: choose one")
    option = "csoaa_ldf" if config.csoaa_ldf is not None else "wap_ldf"
    refused = (("oaa", config.oaa is not None), ("csoaa", config.csoaa is not None),
               ("multilabel_oaa", config.multilabel_oaa is not None),
               ("bootstrap", config.bootstrap is not None), ("stage_poly", config.stage_poly),
               ("scores", config.scores), ("binary", config.binary),
               ("named_labels", config.named_labels is not None),
               ("ignore_linear", bool(config.ignore_linear)), ("ngram", bool(config.ngram)),
               ("classweight", bool(config.classweight)), ("daemon", config.daemon),
               ("dask", config.dask is not None))
    for name, given in refused:
        if given:
            raise OptionError(f"--{option} does not take --{name}")
    if config.csoaa_rank and config.wap_ldf is not None:
        raise OptionError("--csoaa_rank needs --csoaa_ldf")


class LabelDependent(OneAgainstAll):
    """--csoaa_ldf's and --wap_ldf's configuration: the mode, one scalar problem (no classes'
    slots, no per-class state)."""

    BUNDLE = LdfState
    ARRAYS: dict = {}
    NAMED: dict = {}

    def __init__(self, config):
        super().__init__(config, 0)
        mode = config.ldf_override or config.csoaa_ldf or config.wap_ldf
        self.wap = config.wap_ldf is not None
        self.classifier = mode in CLASSIFIER
        self.rank = bool(config.csoaa_rank)
        self.probabilities = bool(config.probabilities) and not self.rank
        self.scores = False

    def bundle(self) -> tuple:
        return LdfState(int(self.wap), int(self.classifier), int(self.rank),
                        int(self.probabilities))

    def prediction_columns(self) -> int:
        """Per line: what -p writes (its class when predicted, else 0; its probability; or,
        ranking, its score), then its raw score."""
        return 2

    @staticmethod
    def check(arrays: dict, config) -> None:
        """No state of its own."""

    def check_labels(self, batch, indexing: float, prefix: str) -> list[str]:
        """Any class is an action's name: nothing to check."""
        return []

    def prediction_lines(self, preds: np.ndarray, batch: ExampleBatch, raw: bool) -> np.ndarray:
        """-p: a line per action (its class when it is the predicted one, else 0; or its
        probability), a blank line after each example; with --csoaa_rank, a line per example,
        ``class:score`` by increasing score (equal scores in line order), comma-separated, then
        a blank line. -r: a line per action, ``class:score`` of each class its label lists."""
        counts = np.diff(batch.cost_offsets)
        if raw:
            return _pair_lines(batch.cost_class, np.repeat(preds[:, 1], counts), counts,
                               batch.tags, batch.text, False)
        starts = np.flatnonzero(batch.numbers[:, POSITION] == 0)
        if not self.rank:
            lines = format_predictions(preds[:, 0], batch.tags, batch.text)
            return _blank_lines_after(lines, np.append(starts[1:], len(batch)) - 1)
        sizes = np.diff(np.append(starts, len(batch)))
        order = np.lexsort((preds[:, 1], np.repeat(np.arange(len(starts)), sizes)))
        first_class = np.zeros(len(batch), dtype=batch.cost_class.dtype)
        listed = counts > 0
        first_class[listed] = batch.cost_class[batch.cost_offsets[:-1][listed]]
        lines = _pair_lines(first_class[order], preds[order, 1], sizes, batch.tags[starts],
                            batch.text, True)
        return _blank_lines_after(lines, np.arange(len(starts)))


def _pair_lines(classes: np.ndarray, scores: np.ndarray, counts: np.ndarray, tags: np.ndarray,
                text: np.ndarray, comma: bool) -> np.ndarray:
    """Lines of ``c:x`` pairs, line i the next ``counts[i]`` of the flat ``classes`` and
    ``scores``, separated by spaces (``comma``: commas), then line i's tag. Written a pair per
    row by format_pairs and joined, so that memory grows with the pairs, not with the lines
    times the longest line's pairs (one line of many costs must not size every line)."""
    rows = np.maximum(counts, 1)  # a line without pairs is one empty row
    ends = np.cumsum(rows)
    line_of = np.repeat(np.arange(len(counts)), rows)
    has = np.repeat(counts > 0, rows)
    pair_of = np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - rows, rows)
    pair_of += np.repeat(np.cumsum(counts) - counts, rows)
    last = np.zeros(len(line_of), dtype=np.bool_)
    last[ends - 1] = True
    row_tags = np.where(last[:, None], tags[line_of], -1)
    pick = np.where(has, pair_of, 0)
    row_classes = np.where(has, classes[pick] if len(classes) else 0, 0).astype(np.int64)
    row_scores = np.where(has, scores[pick] if len(scores) else 0, 0).astype(np.float32)
    out = format_pairs(row_classes[:, None], row_scores[:, None], has.astype(np.int64), False,
                       row_tags, text, False)
    newlines = np.flatnonzero(out == 10)
    out[newlines[~last]] = 44 if comma else 32
    return out


def _blank_lines_after(lines: np.ndarray, which: np.ndarray) -> np.ndarray:
    """``lines`` (bytes, each ending in a newline) with a blank line after lines ``which``."""
    ends = np.flatnonzero(lines == 10)[which]
    return np.insert(lines, ends + 1, np.uint8(10))
