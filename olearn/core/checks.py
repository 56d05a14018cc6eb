"""What a model file's contents must satisfy: the helpers olearn/persistence/model.py and the
learner families' own model checks share. A model file is untrusted input (see model.py)."""
from __future__ import annotations

import numpy as np

# Counts and counters the kernels convert to int64 must stay below this.
INT64_LIMIT = 1 << 63
# Relative tolerance of a stored weight or weight sum against its recomputation (the kernels
# sum in another order and use their own exp, within an ulp).
REL_TOL = 1e-6


class Invalid(Exception):
    """What is wrong in a model file's contents; model.load reports it as a corrupted model."""


def require(condition: bool, what: str) -> None:
    if not condition:
        raise Invalid(what)


def increasing_below(a: np.ndarray, size: int) -> bool:
    """Whether ``a`` is strictly increasing (so without duplicates) and below ``size``."""
    return len(a) == 0 or (int(a[-1]) < size and bool(np.all(a[1:] > a[:-1])))


def counts(a: np.ndarray) -> bool:
    """Whether ``a`` holds non-negative whole numbers that convert to int64."""
    return bool(np.all((a >= 0) & (a < INT64_LIMIT) & (a == np.floor(a))))
