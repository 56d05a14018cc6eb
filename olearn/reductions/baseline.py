"""``--baseline``: VW's baseline reduction over one scalar problem.

Each example is predicted whole; learning then takes two steps of the learner: the baseline,
the example's constant feature alone (with --global_only, a global constant of its own at a
weight row beside the constant's), learns the label from an initial score of 0, with the
learning rate times ``--lr_multiplier`` (unless the loss is logistic; a multiplier of 0 takes
the label range's largest magnitude, between 1e-4 and 1000); then the residual, the other
features (with --global_only, all of them), learns the label from the baseline's prediction as
its initial score. With --global_only the prediction itself starts from the global constant's.
With --check_enabled only examples holding namespace ``\\x89`` (VW's flag) take the baseline;
the others are one problem.

:class:`Baseline` holds the configuration; the kernels are reductions/baseline_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

from olearn.core.option import flag, number
from olearn.data.hashing import CONSTANT_HASH
from olearn.reductions.oaa import OneAgainstAll

OPTIONS = (
    flag("--baseline", model=True,
         help="Learn an additive baseline (from the constant feature) and the residual "
              "separately (regression)."),
    number("--lr_multiplier", kind=float, default=1.0,
           help="--baseline: the baseline's learning rate multiplier (0: the label range's "
                "largest magnitude)."),
    flag("--global_only", model=True,
         help="--baseline: the baseline is a global constant of its own."),
    flag("--check_enabled", model=True,
         help="--baseline: only examples with VW's flag namespace (\\x89) take the baseline."),
)

ENABLED_NAMESPACE = 0x89  # VW's namespace that flags an example for --check_enabled
GLOBAL_OFFSET = 17  # VW's global constant: 17 rows below the constant's

BaselineState = namedtuple("BaselineState", [])


def global_row(config) -> int:
    """The weight row of --global_only's constant (VW's index, in a table of 2^b rows)."""
    return (CONSTANT_HASH - GLOBAL_OFFSET) & config.mask


def rate(config) -> float:
    """The baseline's learning-rate multiplier (0: from the label range, in the kernel); 1
    with the logistic loss, which VW leaves unscaled."""
    return 1.0 if config.loss_function == "logistic" else config.lr_multiplier


def check(config, other_family: str | None) -> None:
    """--baseline's options need it; it refuses other reductions and learners
    (``other_family``: the flag of the learner family chosen, None for gradient descent)."""
    from olearn.errors import OptionError
    if not config.baseline:
        for name in ("lr_multiplier", "global_only", "check_enabled"):
            if name in config.explicit:
                raise OptionError(f"--{name} needs --baseline")
        return
    if other_family is not None:
        raise OptionError(f"--baseline works with gradient descent, not with {other_family}")
    if config.stage_poly:  # (another reduction: Config's check of one reduction refuses it)
        raise OptionError("--baseline does not take --stage_poly")


class Baseline(OneAgainstAll):
    """--baseline's configuration: one scalar problem."""

    BUNDLE = BaselineState
    MULTICLASS = False

    def __init__(self, config):
        super().__init__(config, 0)

    def bundle(self) -> tuple:
        return self.BUNDLE()
