"""``--confidence``: VW's confidence reduction over one scalar problem.

Each example's prediction p comes with a confidence |p| / s, s the learner's sensitivity
(learners/gd.py ``sensitivity``: how far a unit update would move this prediction, with the
sums the update would add counted but not stored). The sensitivity is taken before the example
is learned, with its label, or with ``--confidence_after_training`` after it; an unlabeled
example takes the label opposite to its prediction's sign (-1 for p > 0, else 1). -p writes
``p confidence`` (VW's). Gradient descent only: the sensitivity is its update's.

:class:`Confidence` holds the configuration; the kernels are reductions/confidence_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

from olearn.core.option import flag
from olearn.reductions.oaa import OneAgainstAll

OPTIONS = (
    flag("--confidence", model=True,
         help="Write each prediction's confidence after it (-p): |p| over the learner's "
              "sensitivity to an update of the example."),
    flag("--confidence_after_training",
         help="--confidence's sensitivity after the example is learned (before, by default)."),
)

CONFIDENCE_COLUMN = 2  # the prediction array's column after output and raw score

ConfidenceState = namedtuple("ConfidenceState", [])


def check(config) -> None:
    """The options --confidence refuses: other reductions, other learners, test-only runs
    (the sensitivity is the learning update's). --confidence_after_training alone changes
    nothing, as in VW."""
    from olearn.errors import OptionError
    from olearn.learners.families import FAMILIES, family_of
    if not config.confidence:
        return
    if family_of(config) is not FAMILIES[-1]:
        raise OptionError(f"--confidence works with gradient descent, not with "
                          f"{family_of(config).flag(config)}")
    # (another reduction: Config's check of one reduction refuses it)
    for name, on in (("stage_poly", config.stage_poly), ("testonly", config.testonly)):
        if on:
            raise OptionError(f"--confidence does not take --{name}")


class Confidence(OneAgainstAll):
    """--confidence's configuration: one scalar problem, a third prediction column."""

    BUNDLE = ConfidenceState
    MULTICLASS = False

    def __init__(self, config):
        super().__init__(config, 0)

    def bundle(self) -> tuple:
        return self.BUNDLE()

    def prediction_columns(self) -> int:
        """Output, raw score, confidence."""
        return CONFIDENCE_COLUMN + 1
