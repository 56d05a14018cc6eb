"""``--oaa K``: VW's one-against-all multiclass reduction (docs/vw-reference.md §9).

The reduction sits between the expander and the learner family: each example becomes K binary
problems on one weight table, class k's label +1 when the example's class is k and -1 otherwise.
As in VW, every feature index (the constant included) is widened to ``h · W`` with W the
smallest power of two >= K (VW's feature width) before interactions and monomials are formed,
and class k's copy of a feature lives at slot ``(h · W + k) & mask``. Each class has its own
normalizer sums (VW's per-model state); the learning-rate clock t and the clipping range are
shared. The prediction is the first class of highest clipped score; --scores writes every
class's score and --probabilities their logistic values normalized to sum 1 (and adds the
multiclass log loss to the summary).

Labels are VW's multiclass labels: a class 1..K (or 0..K-1, see --indexing), then an optional
importance. With --indexing unset, VW's rule: the first training label 0 makes the labels
0-based, the first training label K makes them 1-based. A label outside the classes is learned
as a negative for every class and counts as an error, with a warning, as VW.

:class:`OneAgainstAll` holds the configuration and the per-class state; the kernel side is
reductions/oaa_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.checks import require
from olearn.core.fields import Field, Layout
from olearn.core.option import flag, number
from olearn.errors import OlearnError
from olearn.kernel.bundles import NoReduction

MAX_CLASSES = 1 << 16
# The prediction array's columns after output and raw score: the first class's number in -r,
# then in the class lists, then a column per class.
RAW_FIRST_COLUMN, FIRST_CLASS_COLUMN, CLASS_COLUMN = 2, 3, 4
AUTO = 2.0  # the indexing state while neither label 0 nor label K has been learned

OPTIONS = (
    number("--oaa", kind=int, default=None, low=1, high=MAX_CLASSES, model=True,
           metavar="K", help="One-against-all multiclass with K classes."),
    number("--indexing", kind=int, default=None, low=0, high=1, model=True,
           help="Classes are 0..K-1 (0) or 1..K (1) [default: the first label 0 or K "
                "learned decides, as VW]."),
    flag("--probabilities",
         help="With --oaa: predict each class's probability (-p writes class:probability "
              "pairs), and report the multiclass log loss."),
    flag("--scores", help="With --oaa: -p writes every class's score (class:score pairs)."),
)

# The learner state's field for the indexing (gd.STATE appends it).
STATE_FIELDS = (
    Field("indexing", "--oaa's labels: 0-based (0), 1-based (1) or not yet known (2)",
          merge="min", default=AUTO),)

# Per class (a row each): the normalized update's sums, VW's per-model state.
CLASSES = Layout(
    "oaa_classes",
    Field("norm", "S: sum of importance-weighted normalized norms", merge="mean"),
    Field("total", "T: sum of importance of normalized updates", merge="mean"))
CLASS_NORM, CLASS_TOTAL = CLASSES.indices("norm", "total")
assert CLASSES.merged_by("mean") == list(range(len(CLASSES)))  # OneAgainstAll.merged's rule


def class_count(config) -> int:
    """The classes (or copies, weak learners, --nn's K hidden units and its output layer, or
    the binary problems of --ect and --log_multi) of --oaa, --csoaa, --multilabel_oaa,
    --bootstrap, --boosting, --nn, --ect or --log_multi (0: one scalar problem)."""
    network = config.nn + 1 if config.nn else 0
    # --ect's (K - 1)·E + E - 1 problems (reductions/ect.py problem_count, which imports this)
    tournament = (config.ect - 1) * (config.error + 1) + config.error if config.ect else 0
    tree = config.log_multi - 1 if config.log_multi else 0
    return (config.oaa or config.csoaa or config.multilabel_oaa or config.bootstrap
            or config.boosting or network or tournament or tree)


def slot_count(config) -> int:
    """The weight slots each feature spans: :func:`class_count`, times --bootstrap's copies
    under --oaa (each class's problem learned by B copies, VW's bootstrap below its oaa)."""
    copies = config.bootstrap if config.bootstrap is not None and config.oaa is not None else 1
    return class_count(config) * copies


def feature_width(classes: int) -> int:
    """VW's feature width for K classes: the smallest power of two >= K."""
    return 1 << max(classes - 1, 0).bit_length()


def index_shift(classes: int | None) -> int:
    """How far --oaa shifts a feature's index (``h · W``, W the feature width); 0 without."""
    return feature_width(classes).bit_length() - 1 if classes else 0


def refuse(config, option: str, refused: tuple[tuple[str, bool], ...]) -> None:
    """A class reduction's checks (``option`` chosen, its count K in the config): none of the
    ``refused`` (name, given) options given, and room in the table for K's feature width."""
    from olearn.errors import OptionError
    for name, given in refused:
        if given:
            raise OptionError(f"--{option} does not take --{name}")
    need_bits(config, option, getattr(config, option))


def need_bits(config, option: str, slots: int) -> None:
    """Refuse a table too small for the feature width of ``slots`` slots per feature."""
    from olearn.errors import OptionError
    if feature_width(slots) > 1 << config.bit_precision:
        raise OptionError(f"--{option} {getattr(config, option)} needs at least "
                          f"{feature_width(slots).bit_length() - 1} bits (-b)")


def check(config) -> None:
    """The options --oaa needs or refuses (called from Config's checks)."""
    from olearn.errors import OptionError
    if config.oaa is None:
        if config.scores:
            raise OptionError("--scores needs --oaa")
        if config.probabilities and config.multilabel_oaa is None and not (
                config.csoaa_ldf or config.wap_ldf):
            raise OptionError("--probabilities needs --oaa, --multilabel_oaa or --csoaa_ldf")
        if config.indexing is not None and config.csoaa is None:
            raise OptionError("--indexing needs --oaa or --csoaa")
        return
    if config.probabilities:
        # VW's oaa applies the logistic link to each class itself and replaces --link by
        # identity under --probabilities: the probabilities are the same with it or without
        config.link = "identity"
    for name, on in (("binary", config.binary), ("link", config.link != "identity")):
        if on:
            raise OptionError(f"--{name} does not apply to --oaa's class predictions "
                              "(--probabilities gives probabilities)")
    refuse(config, "oaa", ())


OneAgainstAllState = namedtuple("OneAgainstAllState", ["classes"])


class OneAgainstAll:
    """The reduction's configuration and state: K, the feature width, each class's normalizer
    sums (``classes``, a row per class), and how predictions are written."""

    BUNDLE = OneAgainstAllState
    MULTICLASS = True  # predictions are classes (the table writes them so)
    CLASS_PAIRS = True  # -r writes class:score pairs
    RAW_LINES = True  # -r writes a line per example
    AUDITED_PER_CLASS = True  # --audit writes each class's score and features
    NOT_LEARNED = "learned as a negative for every class"  # a label outside the classes
    UNMERGEABLE = ""  # why --dask cannot merge the reduction's state ("": by merged()'s rules)
    ARRAYS = {"oaa_classes": ("<f8", (None, len(CLASSES)))}
    NAMED = {"oaa_classes": (CLASSES, 1)}

    def __init__(self, config, k: int | None = None):
        self.k = (config.oaa if k is None else k) or 0
        self.on = self.k > 0
        self.shift = index_shift(self.k)
        self.mask = config.mask
        adaptive, normalized, _ = config.update_rule
        self.classes = np.zeros((max(self.k, 1), len(CLASSES)))
        if normalized and adaptive and config.t0 > 0:  # as gd's own sums start
            self.classes[:] = config.t0
        self.probabilities = bool(config.probabilities)
        self.scores = bool(config.scores) or self.probabilities
        self.indexing = config.indexing

    def bundle(self) -> tuple:
        """The kernel's reduction bundle (kernel/bundles.py)."""
        return self.BUNDLE(self.classes) if self.on else NoReduction()

    def widen(self, index: np.ndarray) -> np.ndarray:
        """A batch's feature indices ``h`` as VW's ``h · W`` (the classes' slots follow)."""
        if not self.on:
            return index
        return (index << np.uint32(self.shift)) & np.uint32(self.mask)

    def feature_names(self, names: dict[int, str]) -> dict[int, str]:
        """``names`` of the features by index, as VW's --invert_hash names the classes'
        weights: class 0's as the feature, class k's with ``[k]`` after it."""
        if not self.on:
            return names
        width = 1 << self.shift
        return {((index << self.shift) + k) & self.mask: name + (f"[{k}]" if k else "")
                for index, name in names.items() for k in range(min(self.k, width))}

    def class_slots(self, index: np.ndarray) -> np.ndarray:
        """The weight slots of features ``index``: a row per class (one row without --oaa)."""
        if not self.on:
            return index[None, :]
        widened = self.widen(index).astype(np.int64)
        return (widened[None, :] + np.arange(self.k)[:, None]) & self.mask

    def prediction_columns(self) -> int:
        """The width of the kernel's prediction array: output, raw, the first class's number
        in -r and in the class lists (0 or 1: the indexing can change mid-batch), then one
        column per class."""
        return CLASS_COLUMN + self.k

    def class_scores(self, preds: np.ndarray) -> np.ndarray:
        """Each class's clipped score (or probability) in a prediction array, a column each."""
        return preds[:, CLASS_COLUMN:]

    def class_pairs(self, preds: np.ndarray, raw: bool
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """What -r (``raw``), --scores and --probabilities write of a prediction array: each
        example's classes, their numbers, how many, and whether a space leads (VW's -r). -r of
        0-based classes is VW's shifted order (``0:`` the last class's score, ``c:`` class
        c - 1's); the class lists are numbered by the indexing after the label, -r by the one
        before it."""
        first = preds[:, RAW_FIRST_COLUMN if raw else FIRST_CLASS_COLUMN].astype(np.int64)
        steps = np.arange(self.k)
        shift = (raw & (first == 0)).astype(np.int64)
        scores = np.take_along_axis(preds[:, CLASS_COLUMN:],
                                    (steps[None, :] - shift[:, None]) % self.k, axis=1)
        return (first[:, None] + steps[None, :], scores, np.full(len(preds), self.k), raw)

    def model_arrays(self) -> dict:
        return {"oaa_classes": self.classes} if self.on else {}

    def merged(self) -> tuple:
        """The state --dask merges beyond the learner's: arrays averaged by examples (each
        class's normalizer sums, by their declared rule), and arrays whose maximum is kept."""
        return ((self.classes.copy(),), ()) if self.on else ((), ())

    def put_merged(self, means: tuple, highs: tuple) -> None:
        """Take merged state, as :meth:`merged` gave it."""
        if self.on:
            self.classes[:] = means[0]

    def end_pass(self) -> None:
        """After a pass: nothing (a reduction that counts examples as VW does counts the end
        of the pass)."""

    def readable_lines(self, names: dict[int, str] | None = None) -> list[str]:
        """What VW's text model writes of the reduction's state after the header (``names``:
        --invert_hash's names of its entries): nothing."""
        return []

    @classmethod
    def saved(cls, config) -> set[str]:
        """The arrays a model of ``config`` holds for this reduction."""
        return set(cls.ARRAYS) if class_count(config) else set()

    def restore(self, arrays: dict) -> None:
        if self.on and "oaa_classes" in arrays:
            self.classes[:] = arrays["oaa_classes"]

    @staticmethod
    def check(arrays: dict, config) -> None:
        """A model's per-class sums: a row per class, finite and non-negative."""
        if config.oaa is not None:
            OneAgainstAll.check_classes(arrays, config.oaa)

    @staticmethod
    def check_classes(arrays: dict, k: int) -> None:
        """The per-class sums of ``k`` classes: a row per class, finite and non-negative."""
        classes = arrays["oaa_classes"]
        require(classes.shape == (k, len(CLASSES)), "oaa_classes: not a row per class")
        require(bool(np.all(np.isfinite(classes) & (classes >= 0))),
                "oaa_classes: negative or non-finite sums")

    def check_labels(self, batch, indexing: float, prefix: str) -> list[str]:
        """Refuse labels of ``batch`` that are not classes (an OlearnError naming the line);
        return warnings for labels outside the classes (learned as negatives for every class,
        as VW), given the ``indexing`` in force."""
        labels = batch.numbers[:, 0]
        labeled = ~np.isnan(labels)
        bad = labeled & ((labels < 0) | (labels != np.floor(labels)))
        with_initial = labeled & (batch.numbers[:, 2] != 0)
        for rows, what in ((bad, "is not a class (a whole number >= 0)"),
                           (with_initial, "has a third number; a multiclass label is a class "
                                          "and an importance")):
            if rows.any():
                e = int(np.argmax(rows))
                raise OlearnError(f"--oaa: label {labels[e]:g} {what}", batch.source,
                                  batch.first_line + int(batch.lines[e]) + 1)
        low, high = self.label_range(indexing)
        outside = labeled & ((labels < low) | (labels > high))
        if not outside.any():
            return []
        e = int(np.argmax(outside))
        count = int(outside.sum())
        more = f" ({count - 1} more in this block)" if count > 1 else ""
        return [f"{prefix}{batch.source}:{batch.first_line + int(batch.lines[e]) + 1}: label "
                f"{labels[e]:g} is not in {{{low}..{high}}}; {self.NOT_LEARNED}{more}"]

    def label_range(self, indexing: float) -> tuple[int, int]:
        """The lowest and highest class label under ``indexing``."""
        return (1 if indexing == 1 else 0), (self.k - 1 if indexing == 0 else self.k)


class OneScore(OneAgainstAll):
    """A reduction whose prediction rows hold its output and one raw score (its last binary
    problem's, or the network's): -r writes that score, and no class lists."""

    def prediction_columns(self) -> int:
        return 2

    def class_scores(self, preds: np.ndarray) -> np.ndarray:
        return preds[:, 1]
