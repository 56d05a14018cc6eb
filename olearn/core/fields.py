"""Declared layouts of the flat arrays the kernels share (docs/architecture.md, "State").

A kernel reads a field of a state array at a compile-time constant index (a module global,
which numba freezes into the machine code, so nothing is slower than a literal); everything
else reads it by name. Each array's fields are declared once, as a :class:`Layout`: their
names, whether a model file keeps them, how two copies of the array merge (data-parallel
partitions, olearn/scale/merge.py) and their value in a fresh learner. Model files store the
names with the values, so a field added later loads with its default, and a field renamed or
reordered is never read as another.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

# How two partitions' copies of a field combine: "mean" weighted by the examples each learned
# from, "max" and "min" (label ranges, normalizers, the union of 0/1 flags), "sum" (counts
# and loss sums), "labels" (the first two distinct labels seen, VW's best-constant
# bookkeeping), "gradient" (weights averaged by each partition's increase of the adaptive sum
# G; see scale/merge.py) and "local" (meaningful to one process only: not merged).
MERGES = ("mean", "max", "min", "sum", "labels", "gradient", "local")


@dataclass(frozen=True)
class Field:
    """One named entry of a state array."""

    name: str
    doc: str = ""
    merge: str = "local"
    saved: bool = True   # whether model files keep it
    default: float = 0.0

    def __post_init__(self) -> None:
        assert self.merge in MERGES, self.merge


class Layout:
    """The fields of one array, in the order the kernels index them."""

    def __init__(self, name: str, *fields: Field):
        self.name = name
        self.fields = fields
        self._index = {field.name: i for i, field in enumerate(fields)}
        assert len(self._index) == len(fields), f"{name}: a field is declared twice"

    def __len__(self) -> int:
        return len(self.fields)

    def index(self, name: str) -> int:
        return self._index[name]

    def indices(self, *names: str) -> tuple[int, ...]:
        """Constants for the kernels, in the order asked."""
        return tuple(self._index[name] for name in names)

    def check_constants(self, namespace: dict, prefix: str) -> None:
        """Assert that the kernels' constants (``prefix`` + the field's name in capitals, where
        one exists) are the fields' indices: positional constants cannot drift from the
        declaration."""
        for i, field in enumerate(self.fields):
            constant = namespace.get(prefix + field.name.upper())
            assert constant in (None, i), f"{prefix}{field.name.upper()} is not field {i}"

    @property
    def names(self) -> list[str]:
        return [field.name for field in self.fields]

    def merged_by(self, merge: str) -> list[int]:
        """The indices of the fields that merge by ``merge``."""
        return [i for i, field in enumerate(self.fields) if field.merge == merge]

    @property
    def saved(self) -> list[int]:
        return [i for i, field in enumerate(self.fields) if field.saved]

    def defaults(self) -> np.ndarray:
        return np.array([field.default for field in self.fields])

    def from_names(self, names: list[str], values: np.ndarray, fill: np.ndarray,
                   axis: int = -1) -> np.ndarray:
        """Values stored under ``names`` (along ``axis``) put in this layout's order; a field
        the names lack takes its value in ``fill`` (one value per field of this layout).
        Raises KeyError naming the fields this layout does not know (a newer olearn's)."""
        unknown = [name for name in names if name not in self._index]
        if unknown:
            raise KeyError(", ".join(unknown))
        values = np.moveaxis(values, axis, -1)
        out = np.array(np.broadcast_to(fill, values.shape[:-1] + (len(self),)),
                       dtype=values.dtype)
        out[..., [self._index[name] for name in names]] = values
        return np.moveaxis(out, -1, axis)


KINDS = (float, int, bool)


@dataclass(frozen=True)
class Param:
    """One option the kernels read: its name, its value for a run's configuration, and the
    kind the kernels' settings convert it to (``float``, ``int`` or ``bool``)."""

    name: str
    of: Callable[[Any], float]
    kind: type = float
    doc: str = ""

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind


class Parameters(Layout):
    """The run's parameters as the kernels read them, declared once each (:class:`Param`):
    a float64 array whose fields are never saved. ``index`` gives each field's index by name
    (``params[P.eta]``, a constant numba folds); :meth:`of` fills the array from a
    configuration; ``settings`` is the namedtuple type of the converted values, one field per
    parameter, which the example loops read by name (kernel/loop.py ``settings``)."""

    def __init__(self, name: str, *params: Param):
        super().__init__(name, *(Field(p.name, p.doc, saved=False) for p in params))
        self.params = params
        self.index = namedtuple("ParamIndex", self.names)(*range(len(params)))
        self.settings = namedtuple("Settings", self.names)

    def of(self, config) -> np.ndarray:
        """The parameters of a run of ``config``."""
        return np.array([float(p.of(config)) for p in self.params])

    def settings_source(self, function: str) -> str:
        """The source of a function ``function(params)`` returning the ``Settings`` of a
        parameter array (each value converted to its kind), for the kernels to compile."""
        convert = {float: "params[{}]", int: "np.int64(params[{}])", bool: "params[{}] != 0"}
        values = ", ".join(convert[p.kind].format(i) for i, p in enumerate(self.params))
        return f"def {function}(params):\n    return Settings({values})\n"
