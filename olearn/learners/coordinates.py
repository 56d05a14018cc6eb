"""Learner families whose state is a table of declared float32 columns per coordinate (VW's
strided weights: --ftrl, --pistol, --coin), beside the weight table whose ``w`` column is the
weight that test-only prediction reads (VW's slot 0).

A subclass declares ``COLUMNS`` (a core/fields.py Layout: names, merge rules) and its
``BUNDLE`` (a namedtuple whose first field is ``slots``, the table); this class gives it the
table, its model-file arrays (only the coordinates that moved), their checks and restore, and
its --readable_model rows (VW's resume form: ``index:w`` then the columns).
"""
from __future__ import annotations

import numpy as np

from olearn.core.checks import require
from olearn.learners.family import LearnerFamily
from olearn.learners.weights import W_W


class CoordinateFamily(LearnerFamily):
    """A family with a float32 table ``slots`` of ``COLUMNS`` per coordinate."""

    COLUMNS = None  # each subclass's Layout
    MERGED_ROWS = 1  # merged(): the table's columns first

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        index, slots = cls._table_arrays()
        cls.ARRAYS = {index: ("<u4", (None,)), slots: ("<f4", (None, len(cls.COLUMNS)))}
        cls.NAMED = {slots: (cls.COLUMNS, 1)}
        merged = cls.COLUMNS.merged_by("mean") + cls.COLUMNS.merged_by("max")
        assert sorted(merged) == list(range(len(cls.COLUMNS))), "a column --dask cannot merge"

    def __init__(self, config):
        super().__init__(config)
        self.slots = np.zeros((1 << config.bit_precision, len(self.COLUMNS)), dtype=np.float32)

    @classmethod
    def _table_arrays(cls) -> tuple[str, str]:
        """The names of the table's model arrays: its coordinates and their rows."""
        return f"{cls.OPTION}_index", f"{cls.OPTION}_slots"

    def model_arrays(self) -> dict:
        moved = np.flatnonzero(np.any(self.slots != 0, axis=1))
        index, slots = self._table_arrays()
        return {index: moved, slots: self.slots[moved]}

    def restore(self, arrays: dict, path: str) -> None:
        index, slots = self._table_arrays()
        self.slots[:] = 0
        self.slots[arrays[index]] = arrays[slots]

    @classmethod
    def check(cls, arrays: dict, config) -> None:
        """Indices inside the table, each once; a row of values each, none NaN (a sum may
        have overflowed float32 to infinity: the kernels read it as VW's do)."""
        index, slots = (arrays[name] for name in cls._table_arrays())
        require(len(np.unique(index)) == len(index)
                and (len(index) == 0 or int(index.max()) < 1 << config.bit_precision),
                f"{cls.OPTION}_index out of range or repeated")
        require(slots.shape == (len(index), len(cls.COLUMNS)) and not bool(np.isnan(slots).any()),
                f"{cls.OPTION}_slots: not a row of numbers per index")

    def merged(self) -> tuple:
        """The columns by their declared merge rule: averaged, then maximal."""
        return ((self.slots[:, self.COLUMNS.merged_by("mean")],),
                (self.slots[:, self.COLUMNS.merged_by("max")],))

    def put_merged(self, means: tuple, highs: tuple) -> None:
        self.slots[:, self.COLUMNS.merged_by("mean")] = means[0]
        self.slots[:, self.COLUMNS.merged_by("max")] = highs[0]

    def readable_rows(self, weights: np.ndarray, predict_only: bool) -> tuple:
        if predict_only:
            return super().readable_rows(weights, predict_only)
        rows = np.concatenate([weights[:, W_W, None], self.slots], axis=1)
        moved = np.flatnonzero(np.any(rows != 0, axis=1))
        return moved, rows[moved]
