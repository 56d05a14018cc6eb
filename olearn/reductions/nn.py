"""``--nn K``: VW's sigmoidal feed-forward network of K hidden units (docs/vw-reference.md §9.9).

The network lives in one weight table at --oaa's slots (reductions/oaa.py) with feature width
K + 1: hidden unit i's copy of feature h is slot ``(h · W + i) & mask`` (W the power of two
>= K + 1), the output layer's is ``h · W + K``. The output layer reads K synthetic features,
``fasttanh`` of each hidden unit's score (VW's approximation), at slots ``NN + i + K`` (NN:
VW's constant 533357803), and, without --inpass, a bias at ``NN + 2K``; with --inpass it
reads them beside the example's own features (at offset K). Each of the K + 1 offsets has
its own normalizer sums (VW's per-model state, --oaa's per-class rows).

Per example, as VW's nn.cc: each hidden unit's bias (slot ``C + i``, C VW's unwidened constant
index over the stride) predicting 0 learns a draw of the generator (--random_seed) less 0.5;
the hidden units predict (squared loss, clipped to [-3, 3]); with --dropout each unit is
dropped by a draw of a second generator (same seed); each output weight predicting 0 learns a
draw less 0.5 over sqrt(K); the output layer predicts and learns the label with the run's
loss; then each kept hidden unit steps toward its score less half the output weight times
the loss's derivative times tanh's derivative. With --dropout the dropped and kept units are
then swapped and the output layer and hidden units learn once more (VW's "converse"); the
first round's prediction and loss are reported.

:class:`NeuralNetwork` holds the configuration and state; the kernels are
reductions/nn_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.option import flag, number
from olearn.data.hashing import CONSTANT_HASH
from olearn.kernel.layouts import PARAMS_SIZE
from olearn.reductions import oaa
from olearn.reductions.oaa import OneAgainstAll, OneScore

OPTIONS = (
    number("--nn", kind=int, default=None, low=1, high=oaa.MAX_CLASSES - 1, model=True,
           metavar="K", help="Sigmoidal feed-forward network with K hidden units."),
    flag("--inpass", model=True,
         help="With --nn: the output layer also reads the example's own features."),
    flag("--multitask", model=True,
         help="With --nn: share the hidden layer across the tasks of a reduction above "
              "(none here: accepted for VW's command lines)."),
    flag("--dropout", model=True, help="With --nn: train with dropout of hidden units."),
    flag("--meanfield", help="With --nn: no dropout (mean field)."),
)

NN_CONSTANT = 533357803  # VW's slot of the output layer's first feature

# What the kernels keep per hidden unit, a row each: its clipped score, whether it is dropped
HIDDEN_SCORE, HIDDEN_DROPPED = 0, 1

NeuralState = namedtuple("NeuralState", ["classes", "random", "out_index", "out_value",
                                         "one_index", "one_value", "hidden", "params"])


def check(config) -> None:
    """The options --nn needs or refuses; --meanfield turns --dropout off (VW's)."""
    from olearn.errors import OptionError
    from olearn.learners.families import family_of
    if config.nn is None:
        for name in ("inpass", "multitask", "dropout", "meanfield"):
            if getattr(config, name):
                raise OptionError(f"--{name} needs --nn")
        return
    if config.meanfield:
        config.dropout = False
    oaa.refuse(config, "nn", (
        ("stage_poly", config.stage_poly), ("named_labels", config.named_labels is not None),
        ("l1", config.l1 > 0), ("l2", config.l2 > 0),
        ("raw_predictions", bool(config.raw_predictions))))
    if family_of(config).__name__ != "GradientDescent":
        raise OptionError("--nn needs gradient descent (not another learner family)")


def stride_shift(config) -> int:
    """VW's weight stride (log 2) under gd's rule: 4 floats with an adaptive or normalized
    state, else 1; it places the hidden units' biases."""
    adaptive, normalized, _ = config.update_rule
    return 2 if adaptive or normalized else 0


class NeuralNetwork(OneScore):
    """--nn's configuration and state: --oaa's per-offset sums and feature width for K + 1
    offsets, the generators' states (the shared one, then dropout's), the output layer's
    features and the hidden units' scores (scratch the kernels refill per example), and the
    parameters the hidden layer learns with (the run's, with squared loss)."""

    BUNDLE = NeuralState
    MULTICLASS = False  # the prediction is a scalar
    # --audit writes the prediction and the features with hidden unit 0's weights (VW writes
    # each inner prediction's: docs/vw-differences.md)
    AUDITED_PER_CLASS = False

    def __init__(self, config):
        super().__init__(config, config.nn + 1)
        self.units = config.nn
        self.scores = False
        self.random = np.array([config.random_seed, config.random_seed], dtype=np.uint64)
        self.out_index = np.zeros(self.k, dtype=np.uint32)
        self.out_value = np.zeros(self.k, dtype=np.float32)
        # [0]: hidden unit 0's bias slot; [1]: the slot a first step learns (the kernels')
        self.one_index = np.zeros(2, dtype=np.uint32)
        self.one_value = np.ones(2, dtype=np.float32)
        self.hidden = np.zeros((2, self.units))
        self.params = np.zeros(PARAMS_SIZE)
        # the hidden units' biases: VW's constant index as is (not widened), over the stride
        self.one_index[0] = (CONSTANT_HASH >> stride_shift(config)) & config.mask
        for i in range(self.k):
            self.out_index[i] = (NN_CONSTANT + i + self.units) & config.mask

    def bundle(self) -> tuple:
        return self.BUNDLE(self.classes, self.random, self.out_index, self.out_value,
                           self.one_index, self.one_value, self.hidden, self.params)


    @staticmethod
    def check(arrays: dict, config) -> None:
        """A model's per-offset sums: a row per offset, finite and non-negative."""
        if config.nn is not None:
            OneAgainstAll.check_classes(arrays, config.nn + 1)

    def check_labels(self, batch, indexing: float, prefix: str) -> list[str]:
        """Any label: the network learns it as it is."""
        return []
