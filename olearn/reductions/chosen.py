"""Which reduction a configuration chooses (its class: reductions/oaa.py's interface)."""
from __future__ import annotations

from olearn.reductions.csoaa import CostSensitive
from olearn.reductions.oaa import OneAgainstAll


def reduction_of(config) -> type[OneAgainstAll]:
    """--csoaa's class, or --oaa's (which is one scalar problem without --oaa)."""
    return CostSensitive if config.csoaa is not None else OneAgainstAll
