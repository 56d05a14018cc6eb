"""The learner families, and which one a configuration trains (docs/architecture.md).

A family (learners/family.py) is one module and one line here. The table's order is the order
in which they are asked whether the configuration chooses them: gradient descent, the default,
comes last.
"""
from __future__ import annotations

from olearn.errors import OptionError
from olearn.learners.bfgs import Bfgs
from olearn.learners.coin import Coin
from olearn.learners.experts.family import ExponentialWeights
from olearn.learners.family import LearnerFamily
from olearn.learners.freegrad import Freegrad
from olearn.learners.ftrl import Ftrl
from olearn.learners.gd import GradientDescent
from olearn.learners.mf import MatrixFactorization
from olearn.learners.no_learning import NoLearning
from olearn.learners.oja_newton import OjaNewton
from olearn.learners.pistol import Pistol
from olearn.learners.svrg import Svrg

FAMILIES: tuple[type[LearnerFamily], ...] = (Ftrl, Pistol, Coin, Freegrad, Svrg,
                                             ExponentialWeights, MatrixFactorization, NoLearning,
                                             Bfgs, OjaNewton, GradientDescent)


def option_groups() -> list[tuple[str, tuple]]:
    """--help's groups of the families' options: gradient descent's first, then the others
    in the table's order, the families that share a group's name in one group."""
    groups: dict[str, list] = {}
    for family in (FAMILIES[-1], *FAMILIES[:-1]):
        groups.setdefault(family.GROUP, []).extend(family.OPTIONS)
    return [(name, tuple(options)) for name, options in groups.items()]


def family_of(config) -> type[LearnerFamily]:
    """The family ``config`` trains."""
    return next(family for family in FAMILIES if family.chosen(config))


def check(config) -> None:
    """At most one family chosen by its flag, and the options it refuses refused."""
    flagged = [family.flag(config) for family in FAMILIES[:-1] if family.chosen(config)]
    if len(flagged) > 1:
        raise OptionError(f"choose one learner family, not {' and '.join(flagged)}")
    OjaNewton.check_own(config)
    family = family_of(config)
    family.check_options(config)
    if family is not GradientDescent:
        for name, on in (("sparse_l2", config.sparse_l2 > 0),
                         ("feature_mask", config.feature_mask is not None),
                         ("autolink", config.autolink is not None),
                         ("lrq", bool(config.lrq)), ("lrqfa", config.lrqfa is not None),
                         ("l1_state", config.l1_state != 0.0),
                         ("l2_state", config.l2_state != 1.0)):
            if on:
                raise OptionError(f"--{name} works with gradient descent, not with "
                                  f"{family.flag(config)}")
