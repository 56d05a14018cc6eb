"""``--classweight c:w,...``: VW's importance multiplier per class (docs/vw-reference.md §3.5).

Each learned example's importance is multiplied by its class's weight (1 for a class not
listed), as VW's classweight reduction does before its learner learns: the update, the loss's
weight and the table's weight sums all see it. Examples that are only predicted (-t, held out,
unlabeled) keep theirs. The class of a label is VW's: its value cast to a 32-bit unsigned
integer (``-1`` is 4294967295, ``0.7`` is 0), so ``-1:5`` weighs the label -1.
"""
from __future__ import annotations

import numpy as np

from olearn.core.option import repeated

OPTIONS = (
    repeated("--classweight", metavar="CLASS:W,...",
             help="Multiply the importance of learned examples of CLASS by W (repeatable; "
                  "labels and --oaa classes, as VW)."),
)


def weights_of(config) -> dict[int, float]:
    """--classweight's classes (as 32-bit unsigned keys) and weights; OptionError when one is
    not ``class:weight`` with an integer class and a finite weight."""
    from olearn.errors import OptionError
    weights: dict[int, float] = {}
    for text in config.classweight:
        for item in text.split(","):
            klass, _, weight = item.partition(":")
            try:
                key, value = int(klass), float(weight.split(":")[0])
            except ValueError:
                raise OptionError(f"--classweight: cannot read {item!r} (class:weight)") from None
            if not np.isfinite(value):
                raise OptionError(f"--classweight: the weight of {item!r} is not finite")
            weights[key & 0xFFFFFFFF] = value
    return weights


def check(config) -> None:
    """--classweight weighs simple and --oaa labels, not lists of classes (VW refuses them)."""
    from olearn.errors import OptionError
    weights_of(config)
    for name in ("csoaa", "multilabel_oaa"):
        if config.classweight and getattr(config, name) is not None:
            raise OptionError(f"--classweight does not take --{name}'s labels")


class ClassWeights:
    """The multipliers of a run, applied to a batch's importances before it is learned."""

    def __init__(self, weights: dict[int, float]):
        self._keys = np.array(sorted(weights), dtype=np.int64)
        self._values = np.array([weights[k] for k in sorted(weights)], dtype=np.float64)

    @classmethod
    def of(cls, config) -> "ClassWeights | None":
        weights = weights_of(config)
        return cls(weights) if weights else None

    def weighted(self, numbers: np.ndarray, learned: np.ndarray) -> np.ndarray:
        """A copy of a batch's ``numbers`` (label, importance, initial) whose rows ``learned``
        have their importance times their class's weight (numpy, no loop per example)."""
        labels = numbers[:, 0]
        chosen = learned & ~np.isnan(labels)
        keys = np.trunc(np.nan_to_num(labels[chosen])).astype(np.int64) & 0xFFFFFFFF
        at = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        factor = np.where(self._keys[at] == keys, self._values[at], 1.0)
        out = numbers.copy()
        out[chosen, 1] = (out[chosen, 1] * factor).astype(numbers.dtype)
        return out
