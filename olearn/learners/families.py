"""The learner families, and which one a configuration trains (docs/architecture.md).

A family owns its state beyond the weight table and the learner state, what a model file keeps
of it (``ARRAYS``, ``model_arrays``, ``restore``, ``check``), its export into the weight table
(``sync``) and its description in the header. Both run in loop.learn_batch, which takes both
families' arrays (the inactive one's tiny).
"""
from __future__ import annotations

from olearn.learners.experts.family import ExponentialWeights
from olearn.learners.gd import GradientDescent

FAMILIES = (GradientDescent, ExponentialWeights)


def family_of(config) -> type:
    """The family ``config`` trains: exponential weights with --eg/--boa/--saew, else gradient
    descent."""
    return ExponentialWeights if config.experts else GradientDescent
