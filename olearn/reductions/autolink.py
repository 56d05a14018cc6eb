"""``--autolink D``: VW's autolink reduction (docs/vw-reference.md §9.8).

Each example is first predicted as it is; its clipped prediction p0 then becomes D features of
values p0, p0², ..., p0^D (float32 products, as VW's; none once a power is 0) at fixed weight
rows, and the example with them is predicted and learned. The rows are those of VW's weights:
VW puts power i at index 524267083 + (i << stride shift), its gradient descent's stride being
4 (2^2) weights, and its weight lands in that index's row.

:class:`Autolink` holds the rows; the kernels are reductions/autolink_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.option import number
from olearn.reductions.oaa import OneAgainstAll

OPTIONS = (
    number("--autolink", kind=int, default=None, low=0, high=1 << 16, model=True,
           metavar="D", help="Learn a link function: D features p, p², ..., p^D of the "
                             "example's prediction p, added before it is predicted again."),
)

AUTOCONSTANT = 524267083  # VW's index of the first power
STRIDE_SHIFT = 2  # VW's gradient descent keeps 4 weights per feature

AutolinkState = namedtuple("AutolinkState", ["rows"])


def check(config) -> None:
    """The options --autolink refuses besides the other reductions (its features are the
    scalar prediction's powers)."""
    from olearn.errors import OptionError
    if config.autolink is None:
        return
    if config.stage_poly:
        raise OptionError("--autolink does not take --stage_poly")


def rows_of(degree: int, mask: int) -> np.ndarray:
    """The weight rows of the D powers, as VW's indices fall in its strided table."""
    index = AUTOCONSTANT + (np.arange(degree, dtype=np.int64) << STRIDE_SHIFT)
    return (index >> STRIDE_SHIFT) & mask


class Autolink(OneAgainstAll):
    """--autolink's configuration: no classes, the powers' weight rows."""

    BUNDLE = AutolinkState
    MULTICLASS = False

    def __init__(self, config):
        super().__init__(config, 0)
        self.rows = rows_of(config.autolink, config.mask)

    def bundle(self) -> tuple:
        return self.BUNDLE(self.rows)
