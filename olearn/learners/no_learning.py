"""--noop and --print: VW's pseudo-learners, which predict 0 and learn nothing (--print writes
each example to stderr as it comes: outputs/audit.py ``printed_examples``).

They take the place of gradient descent at the bottom of the stack, so the table, the losses
and the summary are those of the prediction 0 (the label counts, the best constant, as VW's).
"""
from __future__ import annotations

from collections import namedtuple

from numba import njit

from olearn.core.option import flag
from olearn.errors import OptionError
from olearn.learners.family import Kernels, LearnerFamily

OPTIONS = (
    flag("--noop", model=True, help="Learn nothing and predict 0 (VW's noop learner)."),
    flag("--print", model=True,
         help="Write each example to stderr (label, importance, tag, feature indices and "
              "values) and predict 0, learning nothing (VW's print learner)."),
)

NoLearningState = namedtuple("NoLearningState", [])


class NoLearning(LearnerFamily):
    """A learner that predicts 0 and keeps no state."""

    OPTION = "noop"
    GROUP = "Pseudo-learners"
    OPTIONS = OPTIONS
    BUNDLE = NoLearningState
    WARM_UP = {"print": True}

    @classmethod
    def chosen(cls, config) -> bool:
        return bool(config.noop or config.print)

    @classmethod
    def flag(cls, config) -> str:
        return "--print" if config.print else "--noop"

    @classmethod
    def check_options(cls, config) -> None:
        if config.noop and config.print:
            raise OptionError("choose one of --noop and --print")
        for name in ("oaa", "csoaa", "multilabel_oaa", "stage_poly"):
            if getattr(config, name) not in (None, False):
                raise OptionError(f"--{name} learns; {cls.flag(config)} learns nothing")

    def bundle(self) -> tuple:
        return self.BUNDLE()

    @staticmethod
    def describe(config) -> str:
        return "print" if config.print else "noop"


@njit(cache=True, nogil=True, _nrt=False)
def _fits(family, model):
    return True


@njit(cache=True, nogil=True, inline="always")
def _predict(family, model, features, initial, imp, s, prefetch):
    """0, whatever the example (VW's pseudo-learners leave the prediction as it is)."""
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def _update(family, model, features, scored, s, work, prefetch):
    """Nothing to learn."""


NoLearning.KERNELS = Kernels(_fits, _predict, _predict, _update)
