"""``--log_multi K``: VW's logarithmic-time online multiclass tree (Choromanska and Langford,
*Logarithmic time online multiclass prediction*, NIPS 2015).

A binary tree grows as labels arrive: a leaf that has seen two labels splits, its binary
problem routing examples left (score < 0) or right. Each internal node keeps the running mean
of its problem's raw scores (Eh/n) and, per label, the mean for that label's examples (Ehk/nk):
an example learns -1 when the node's mean is above its label's, else +1, so labels with low
scores drift left and high ones right. A leaf predicts its most frequent label. Once the K - 1
problems are taken, a leaf with enough examples of labels other than its most frequent one
(beyond ``--swap_resistance`` times the root's count) takes over the problem of the leaf that
sees the fewest examples, whose sibling moves up in its parent's place. The problems learn with
the quantile loss at τ = 0.5, VW's choice for this reduction.

Problem i lives at --oaa's slots (``h · W + i``, W the smallest power of two >= K - 1) with its
own normalizer sums. The tree, its statistics and the per-label statistics are arrays (a row
per node, at most 2K - 1) that model files keep; the kernels are reductions/log_multi_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.checks import require
from olearn.core.option import flag, number
from olearn.reductions.oaa import OneAgainstAll, OneScore, feature_width

# Each node keeps a row per label: at most this many labels (nodes × labels rows)
MAX_LABELS = 1 << 10

OPTIONS = (
    number("--log_multi", kind=int, default=None, low=2, high=MAX_LABELS, model=True,
           metavar="K", help="Online multiclass tree over K classes (logarithmic time)."),
    flag("--no_progress", model=True, help="--log_multi: VW's flag, kept in the model."),
    number("--swap_resistance", kind=int, default=4, low=0, high=(1 << 32) - 1, model=True,
           help="--log_multi: higher, fewer swaps of a problem to a busier leaf."),
)

# A node's integer columns: its parent, the examples reaching it (a leaf) or the fewest reaching
# a leaf below it, whether it is internal, its problem, its children, the examples it learned,
# the count of its most frequent label and that label, and how many labels it has seen.
TREE_COLUMNS = ("parent", "min_count", "internal", "predictor", "left", "right", "n",
                "max_count", "max_label", "labels")
(T_PARENT, T_MIN_COUNT, T_INTERNAL, T_PREDICTOR, T_LEFT, T_RIGHT, T_N, T_MAX_COUNT, T_MAX_LABEL,
 T_LABELS) = range(len(TREE_COLUMNS))
# A node's margins: the sum of its problem's raw scores and their mean (float32, as VW's).
M_EH, M_NORM_EH = range(2)
# Per node and label: the sum of the raw scores of the label's examples, their mean (float32),
# their count, and the label's examples seen at the node (0: the node has not seen it).
C_EHK, C_NORM_EHK, C_NK, C_COUNT = range(4)
# The tree's counters: nodes in use, problems taken, swaps made.
K_NODES, K_PREDICTORS, K_SWAPS = range(3)

LogMultiState = namedtuple("LogMultiState", ["classes", "tree", "margins", "labels",
                                             "counters"])


def check(config) -> None:
    """The options --log_multi needs or refuses; it learns with the quantile loss at τ 0.5, as
    VW's log_multi sets it whatever --loss_function says."""
    from olearn.errors import OptionError
    if config.log_multi is None:
        for name in ("no_progress", "swap_resistance"):
            if name in config.explicit:
                raise OptionError(f"--{name} needs --log_multi")
        return
    # (another reduction: Config's check of one reduction refuses it)
    refused = (("stage_poly", config.stage_poly),
               ("named_labels", config.named_labels is not None),
               ("link", config.link != "identity"), ("binary", config.binary))
    for name, given in refused:
        if given:
            raise OptionError(f"--log_multi does not take --{name}")
    width = feature_width(config.log_multi - 1)
    if width > 1 << config.bit_precision:
        raise OptionError(f"--log_multi {config.log_multi} needs at least "
                          f"{width.bit_length() - 1} bits (-b)")
    config.loss_function = "quantile"
    config.quantile_tau = 0.5


class LogMulti(OneScore):
    """--log_multi's configuration and state: --oaa's per-problem sums and feature width over
    its K - 1 problems, and the tree (``tree``, ``margins``, ``labels``, ``counters``)."""

    UNMERGEABLE = "--log_multi's tree has no merge rule yet"

    BUNDLE = LogMultiState
    CLASS_PAIRS = False
    RAW_LINES = False  # VW's log_multi writes nothing to -r
    AUDITED_PER_CLASS = False
    NOT_LEARNED = "not learned"
    ARRAYS = {**OneAgainstAll.ARRAYS, "log_tree": ("<i8", (None, len(TREE_COLUMNS))),
              "log_margins": ("<f8", (None, 2)), "log_labels": ("<f8", (None, None, 4)),
              "log_counters": ("<i8", (3,))}

    def __init__(self, config):
        super().__init__(config, config.log_multi - 1)
        self.labels_k = config.log_multi
        self.no_progress, self.swap_resistance = config.no_progress, config.swap_resistance
        self.scores = False
        nodes = 2 * config.log_multi - 1
        self.tree = np.zeros((nodes, len(TREE_COLUMNS)), dtype=np.int64)
        self.tree[:, T_MAX_LABEL] = 1
        self.margins = np.zeros((nodes, 2))
        self.labels = np.zeros((nodes, config.log_multi, 4))
        self.counters = np.array([1, 0, 0], dtype=np.int64)

    def bundle(self) -> tuple:
        return self.BUNDLE(self.classes, self.tree, self.margins, self.labels, self.counters)


    def model_arrays(self) -> dict:
        return {**super().model_arrays(), "log_tree": self.tree, "log_margins": self.margins,
                "log_labels": self.labels, "log_counters": self.counters}

    def restore(self, arrays: dict) -> None:
        super().restore(arrays)
        if "log_tree" in arrays:
            self.tree[:] = arrays["log_tree"]
            self.margins[:] = arrays["log_margins"]
            self.labels[:] = arrays["log_labels"]
            self.counters[:] = arrays["log_counters"]

    def readable_lines(self, names: dict[int, str] | None = None) -> list[str]:
        """VW's text of the tree: the sizes, then each node (its links and margins when
        internal, its most frequent label when a leaf) followed by its labels' statistics."""
        counters, tree = self.counters, self.tree
        lines = [f"k = {self.labels_k}nodes = {counters[K_NODES]} max predictors = {self.k} "
                 f"predictors_used = {counters[K_PREDICTORS]} progress = "
                 f"{int(not self.no_progress)} swap_resist = {self.swap_resistance}"]
        for node, row in enumerate(tree[:counters[K_NODES]]):
            seen = np.flatnonzero(self.labels[node, :, C_COUNT])
            line = (f" parent = {row[T_PARENT]} preds = {len(seen)} min_count = "
                    f"{row[T_MIN_COUNT]} internal = {row[T_INTERNAL]}")
            if row[T_INTERNAL]:
                line += (f" base_predictor = {row[T_PREDICTOR]} left = {row[T_LEFT]} right = "
                         f"{row[T_RIGHT]} norm_Eh = {self.margins[node, M_NORM_EH]:g} Eh = "
                         f"{self.margins[node, M_EH]:g} n = {row[T_N]}")
            else:
                line += f" max_count = {row[T_MAX_COUNT]} max_count_label = {row[T_MAX_LABEL]}"
            lines.append(line)
            lines += [f"  Ehk = {stats[C_EHK]:g} norm_Ehk = {stats[C_NORM_EHK]:g} nk = "
                      f"{int(stats[C_NK])} label = {label + 1} label_count = "
                      f"{int(stats[C_COUNT])}"
                      for label, stats in zip(seen, self.labels[node, seen])]
        return lines

    @staticmethod
    def check(arrays: dict, config) -> None:
        """A model's tree: a row per node of K classes' 2K - 1, links and labels in range,
        finite statistics (the kernels check the links again before each batch)."""
        if config.log_multi is None:
            return
        k = config.log_multi
        OneAgainstAll.check_classes(arrays, k - 1)
        tree, counters = arrays["log_tree"], arrays["log_counters"]
        require(tree.shape == (2 * k - 1, len(TREE_COLUMNS))
                and arrays["log_margins"].shape == (2 * k - 1, 2)
                and arrays["log_labels"].shape == (2 * k - 1, k, 4),
                "log_multi: not a row per node of the tree")
        links = tree[:, [T_PARENT, T_LEFT, T_RIGHT]]
        require(bool(1 <= counters[K_NODES] <= 2 * k - 1 and 0 <= counters[K_PREDICTORS] < k
                     and np.all((links >= 0) & (links < counters[K_NODES]))
                     and np.all((tree[:, T_PREDICTOR] >= 0) & (tree[:, T_PREDICTOR] < k - 1))
                     and np.all((tree[:, T_MAX_LABEL] >= 1) & (tree[:, T_MAX_LABEL] <= k))),
                "log_multi: a node links outside the tree")
        require(bool(np.all(np.isfinite(arrays["log_margins"]))
                     and np.all(np.isfinite(arrays["log_labels"]))),
                "log_multi: non-finite statistics")

    def label_range(self, indexing: float) -> tuple[int, int]:
        """Classes 1..K: a label outside is predicted and not learned."""
        return 1, self.labels_k
