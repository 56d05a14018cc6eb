"""Numeric input for the Python API: a numpy array, a scipy.sparse matrix or a pandas
DataFrame straight into example batches, without text (so float64 values are not rounded
through decimal text).

Matrices: column j is feature ``j`` of namespace ``f``, hashed as the svmlight reader hashes
it, so a matrix loaded from an svmlight file (with its own indices: ``zero_based=True``)
learns what ``olearn -d file.svm`` learns. DataFrames: a numeric column is the feature named
by the column, any other column a string feature (VW's ``name:value``, hashed as the text
reader hashes it), each in namespace ``f`` or the one ``namespaces`` maps it to; a missing
value (NaN, None) is no feature. Zeros are no features (as VW drops them); every row gets the
constant unless --noconstant.

With ``names``, each batch also carries its features' names as the text parser's name spans
(``text``, ``audit``), so ``Learner(names=True).weights()`` names them as ``--invert_hash``:
column j is ``f^j``, a DataFrame's column ``ns^column`` (``ns^column^value`` for a string).
"""
from __future__ import annotations

import math
import struct
from operator import itemgetter
from typing import Iterator

import numpy as np
from numba import njit

from olearn.data.batch import ExampleBatch
from olearn.data.hashing import CONSTANT_HASH, CONSTANT_NAMESPACE, M32, hash_bytes, namespace_hash
from olearn.data.parsed import AUDIT_COLS
from olearn.data.svmlight import SVM_NAMESPACE
from olearn.errors import OlearnError

ROWS_PER_BATCH = 8192
FAST_FEATURES = 64  # the most features of a dict on DictExamples' fast path
SOURCE = "<matrix>"
F32_MAX = float(np.finfo(np.float32).max)
F_NAMESPACE = SVM_NAMESPACE[0]
NO_TEXT = np.empty(0, dtype=np.uint8)
NO_NAMES = np.empty((0, AUDIT_COLS), dtype=np.int64)  # batches without names (spans)


def is_matrix(data: object) -> bool:
    """Whether ``data`` is a 2-d numeric numpy array, a scipy.sparse matrix or a DataFrame."""
    if isinstance(data, np.ndarray):
        return data.ndim == 2 and data.dtype.kind in "biuf"
    return (hasattr(data, "tocsr") and hasattr(data, "nnz")) or _is_frame(data)


def _is_frame(data: object) -> bool:
    return hasattr(data, "columns") and hasattr(data, "dtypes") and hasattr(data, "iloc")


def _spans(words: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``words`` joined into one text, and each word's (start, end) in it."""
    ends = np.cumsum([len(w) for w in words], dtype=np.int64)
    starts = ends - np.array([len(w) for w in words], dtype=np.int64)
    return np.frombuffer(b"".join(words), dtype=np.uint8), np.stack([starts, ends], axis=1)


def _frame_rows(frame, namespaces: dict | None, config, names: bool) -> tuple:
    """CSR of a DataFrame: row pointers, indices, values, namespace bytes, rows, and with
    ``names`` the names' text and each feature's name spans (else None, None). Columns are
    grouped by namespace (the mapping's order, then ``f``), each in the frame's order."""
    hash_all = config.hash == "all"
    mapped = {column: name for name, columns in (namespaces or {}).items() for column in columns}
    unknown = [c for c in mapped if c not in frame.columns]
    if unknown:
        raise OlearnError(f"namespaces: no column {unknown[0]!r} in the DataFrame", SOURCE)
    groups = [*(namespaces or {}), SVM_NAMESPACE.decode()]
    order = sorted(frame.columns, key=lambda c: groups.index(mapped.get(c, groups[-1])))
    n = len(frame)
    idx = np.zeros((n, len(order)), dtype=np.uint32)
    val = np.zeros((n, len(order)), dtype=np.float64)
    present = np.zeros((n, len(order)), dtype=bool)
    ns = np.zeros(len(order), dtype=np.uint8)
    # names: the namespaces', then the columns', then the string values' words
    words = [str(mapped.get(c, groups[-1])).encode() for c in order]
    words += [str(c).encode() for c in order]
    value_word = np.full((n, len(order)), -1, dtype=np.int64) if names else None
    for k, column in enumerate(order):
        name = words[k]
        ns[k] = name[0]
        seed = namespace_hash(name, config.hash_seed, hash_all)
        feature = hash_bytes(str(column).encode(), seed, hash_all)
        values = frame[column]
        if values.dtype.kind in "biuf":
            x = values.to_numpy(dtype=np.float64, na_value=np.nan)
            present[:, k] = ~np.isnan(x) & (x != 0)
            if not np.isfinite(x[present[:, k]].astype(np.float32)).all():
                raise OlearnError(f"column {column!r} holds infinite values", SOURCE)
            idx[:, k], val[:, k] = feature & config.mask, np.where(present[:, k], x, 0)
        else:  # a string feature name:value, hashed per distinct value
            missing = values.isna().to_numpy()
            codes, uniques = _factorize(values)
            hashes = np.array([hash_bytes(str(u).encode(), feature, hash_all) for u in uniques],
                              dtype=np.uint64)
            present[:, k] = ~missing
            idx[:, k] = np.where(missing, 0, hashes[np.maximum(codes, 0)] & config.mask)
            val[:, k] = 1.0
            if names:
                value_word[:, k] = np.where(missing, -1, len(words) + codes)
                words += [str(u).encode() for u in uniques]
    rows, cols = np.nonzero(present)
    indptr = np.concatenate([[0], np.cumsum(present.sum(axis=1))]).astype(np.int64)
    text = spans = None
    if names:
        text, word_spans = _spans(words)
        word_spans = np.concatenate([word_spans, [[-1, -1]]])  # word -1: no string value
        spans = np.concatenate([word_spans[len(order) + cols], word_spans[value_word[rows, cols]],
                                word_spans[cols]], axis=1)
    return indptr, idx[rows, cols], val[rows, cols], ns[cols], n, text, spans


def _factorize(values):
    import pandas  # only here: an optional extra, and a DataFrame means it is installed
    return pandas.factorize(values)


def column_indices(n_columns: int, config) -> np.ndarray:
    """Each column's feature index: feature ``j`` of namespace ``f``, masked."""
    hash_all = config.hash == "all"
    seed = namespace_hash(SVM_NAMESPACE, config.hash_seed, hash_all)
    if hash_all:
        hashes = np.array([hash_bytes(str(j).encode(), seed, True) for j in range(n_columns)],
                          dtype=np.uint64)
    else:  # an all-digit name hashes to its value plus the namespace's seed
        hashes = (np.arange(n_columns, dtype=np.uint64) + np.uint64(seed)) & np.uint64(M32)
    return (hashes & np.uint64(config.mask)).astype(np.uint32)


def _rows(X) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """CSR of ``X`` (zeros kept: the batches skip them): row pointers, columns, values, rows,
    columns. A scipy CSR matrix in canonical form (sorted, no duplicates) is not copied."""
    if isinstance(X, np.ndarray):
        rows, cols = np.nonzero(X)  # row-major: each row's columns in order
        values = X[rows, cols]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=X.shape[0]))])
    else:
        _check_sparse(X)  # before scipy's own code reads the arrays: it trusts them
        csr = X if X.format == "csr" and X.has_canonical_format else X.tocsr(copy=True)
        if not csr.has_canonical_format:
            csr.sum_duplicates()
        indptr, cols, values = csr.indptr, csr.indices, csr.data
    values = values.astype(np.float64, copy=False)
    if not _finite_in_float32(values):
        raise OlearnError("X holds NaN or infinite values (or beyond float32)", SOURCE)
    return (indptr.astype(np.int64, copy=False), cols.astype(np.int64, copy=False), values,
            X.shape[0], X.shape[1])


def _check_sparse(X) -> None:
    """A CSR, CSC or COO matrix's index arrays consistent with its shape, or an OlearnError."""
    n, d = X.shape
    if X.format in ("csr", "csc"):
        rows, cols = (n, d) if X.format == "csr" else (d, n)
        ok = len(X.data) >= len(X.indices) and _consistent_csr(
            np.asarray(X.indptr, dtype=np.int64), np.asarray(X.indices, dtype=np.int64),
            rows, cols)
    elif X.format == "coo":
        row, col = np.asarray(X.row), np.asarray(X.col)
        ok = (len(row) == len(col) == len(X.data)
              and bool(((0 <= row) & (row < n) & (0 <= col) & (col < d)).all()))
    else:
        return
    if not ok:
        raise OlearnError("X: a sparse matrix whose index arrays are inconsistent", SOURCE)


@njit(cache=True, nogil=True)
def _consistent_csr(indptr, cols, n_rows, n_cols):
    """Whether CSR row pointers and columns describe an ``n_rows`` × ``n_cols`` matrix."""
    if indptr.shape[0] != n_rows + 1 or indptr[0] != 0:
        return False
    for r in range(n_rows):
        if indptr[r + 1] < indptr[r]:
            return False
    if indptr[n_rows] > cols.shape[0]:
        return False
    for k in range(indptr[n_rows]):
        if not 0 <= cols[k] < n_cols:
            return False
    return True


@njit(cache=True, nogil=True)
def _finite_in_float32(values):
    for k in range(values.shape[0]):
        if not np.isfinite(np.float32(values[k])):
            return False
    return True


@njit(cache=True, nogil=True)
def _csr_batch(indptr, cols, values, column_index, start, end, constant, offsets, index, value,
               namespace, column):
    """Rows ``start:end`` of a CSR as a batch's CSR: each nonzero as its column's feature
    index, in namespace ``f``, then the constant (index ``constant``; < 0: none); ``column``
    (when not empty) gets each feature's column, -1 for the constant. Returns the feature
    count, or -1 when the arrays do not fit (row pointers, columns, or the output's room for
    every entry plus a constant per row): nothing is written past an array."""
    if not (0 <= start <= end < indptr.shape[0] and offsets.shape[0] > end - start):
        return -1
    room = min(index.shape[0], value.shape[0], namespace.shape[0])
    if column.shape[0] > 0:
        room = min(room, column.shape[0])
    extra = 1 if constant >= 0 else 0
    n = 0
    offsets[0] = 0
    for r in range(start, end):
        lo, hi = indptr[r], indptr[r + 1]
        if not (0 <= lo <= hi <= min(cols.shape[0], values.shape[0])
                and n + hi - lo + extra <= room):
            return -1
        for k in range(lo, hi):
            c = cols[k]
            if not 0 <= c < column_index.shape[0]:
                return -1
            if values[k] != 0:
                index[n] = column_index[c]
                value[n] = values[k]
                namespace[n] = F_NAMESPACE
                if column.shape[0] > 0:
                    column[n] = c
                n += 1
        if constant >= 0:
            index[n] = constant
            value[n] = 1.0
            namespace[n] = CONSTANT_NAMESPACE
            if column.shape[0] > 0:
                column[n] = -1
            n += 1
        offsets[r - start + 1] = n
    return n


def _vector(v, n: int, what: str) -> np.ndarray:
    array = np.asarray(v, dtype=np.float64).reshape(-1) if v is not None else None
    if array is not None and (len(array) != n or not np.isfinite(array).all()):
        raise OlearnError(f"{what}: {n} finite numbers expected, one per row of X", SOURCE)
    return array


def _column_names(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Names of a matrix's columns: their text (``0 1 ... d-1``) and each column's audit spans
    (namespace ``f``'s byte names it, as for svmlight input), then a row of none (-1)."""
    text, word_spans = _spans([str(j).encode() for j in range(d)])
    spans = np.full((d + 1, AUDIT_COLS), -1, dtype=np.int64)
    spans[:d, :2] = word_spans
    return text, spans


def batches(X, y, sample_weight, config, namespaces: dict | None = None,
            names: bool = False) -> Iterator[ExampleBatch]:
    """The rows of ``X`` as batches of examples: labels ``y`` (None: unlabeled), importances
    ``sample_weight`` (None: 1; must be >= 0); a DataFrame's columns in ``namespaces``; with
    ``names``, the features' names (``audit`` spans of ``text``)."""
    frame = _is_frame(X)
    if frame:
        indptr, index_of_feature, values, namespace_of_feature, n, text, spans = _frame_rows(
            X, namespaces, config, names)
    else:
        indptr, cols, values, n, d = _rows(X)
        column_index = column_indices(d, config)
        text, spans = _column_names(d) if names else (NO_TEXT, None)
    labels = _vector(y, n, "y")
    weights = _vector(sample_weight, n, "sample_weight")
    if weights is not None and (weights < 0).any():
        raise OlearnError("sample_weight: importances must be >= 0", SOURCE)
    constant = -1 if config.noconstant else CONSTANT_HASH & config.mask
    for start in range(0, n, ROWS_PER_BATCH):
        end = min(start + ROWS_PER_BATCH, n)
        m = end - start
        lo, hi = indptr[start], indptr[end]
        if frame:
            offsets, index, value, namespace, audit = _frame_batch(
                indptr[start:end + 1] - lo, index_of_feature[lo:hi], values[lo:hi],
                namespace_of_feature[lo:hi], spans[lo:hi] if spans is not None else None,
                constant)
        else:
            room = hi - lo + (m if constant >= 0 else 0)
            offsets = np.empty(m + 1, dtype=np.int64)
            index = np.empty(room, dtype=np.uint32)
            value = np.empty(room, dtype=np.float32)
            namespace = np.empty(room, dtype=np.uint8)
            column = np.empty(room if spans is not None else 0, dtype=np.int64)
            k = _csr_batch(indptr, cols, values, column_index, start, end, constant, offsets,
                           index, value, namespace, column)
            if k < 0:
                raise ValueError("_csr_batch: arrays that do not fit")
            index, value, namespace = index[:k], value[:k], namespace[:k]
            audit = spans[column[:k]] if spans is not None else NO_NAMES
        numbers = np.zeros((m, 3), dtype=np.float32)
        numbers[:, 0] = labels[start:end] if labels is not None else np.nan
        numbers[:, 1] = weights[start:end] if weights is not None else 1.0
        yield ExampleBatch(text, SOURCE, start, numbers,
                           np.full((m, 2), -1, dtype=np.int64), np.arange(m, dtype=np.int64),
                           offsets, index, value, namespace, audit,
                           np.empty((0, 4), dtype=np.int64), 0, 0, start, m)


def _frame_batch(indptr, index_of_feature, values, namespace_of_feature, spans, constant):
    """A batch's CSR (offsets, index, value, namespace, audit) from a DataFrame's rows (their
    row pointers from 0 and features), a constant after each row's features (< 0: none)."""
    extra = 1 if constant >= 0 else 0
    offsets = indptr + extra * np.arange(len(indptr), dtype=np.int64)
    features = np.ones(offsets[-1], dtype=bool)
    if extra:
        features[offsets[1:] - 1] = False  # each row's last slot: its constant
    index = np.full(offsets[-1], max(constant, 0), dtype=np.uint32)
    value = np.ones(offsets[-1], dtype=np.float32)
    namespace = np.full(offsets[-1], CONSTANT_NAMESPACE, dtype=np.uint8)
    index[features] = index_of_feature
    value[features] = values
    namespace[features] = namespace_of_feature
    audit = NO_NAMES
    if spans is not None:  # the constant's row: no spans
        audit = np.full((offsets[-1], AUDIT_COLS), -1, dtype=np.int64)
        audit[features] = spans
    return offsets, index, value, namespace, audit


def _word(part) -> bytes:
    """A dict key's namespace or name as the text line's bytes."""
    return part if isinstance(part, bytes) else str(part).encode()


class DictExamples:
    """Single examples given as dicts (``learn_one``/``predict_one``, River's convention): a
    key is a feature name (namespace ``f``) or a (namespace, name) pair; a number is its value,
    a string makes a string feature (``name:value``); None, NaN and 0 are no feature. Each
    key's (and string value's) index is hashed once and remembered. With ``names``, each batch
    carries its features' names (``audit`` spans of ``text``), as matrices' do.

    A dict of 2 to FAST_FEATURES - 1 nonzero numbers under names seen before can take a fast
    path (:meth:`fast`: C code writes its label row, values and indices straight into arrays
    kept for its size: no Python float or array per value, no grouping as they are all in
    namespace ``f``); anything else takes the general one (:meth:`batch`). Both give the same
    batch; its label row and the fast path's features are arrays kept here, which the next call
    overwrites (the learner is done with a batch before its next call). The fast path's batch
    of each size is itself kept: the same object, with the same arrays, each time (so that the
    learner can keep its kernel call's arguments too)."""

    def __init__(self, config, names: bool = False):
        self.config = config
        self.names = names
        self._hash_all = config.hash == "all"
        self._index: dict = {}
        self._plain: dict = {}  # a plain key's index as a numeric feature of namespace f
        self._constant = None if config.noconstant else CONSTANT_HASH & config.mask
        self._numbers = np.zeros((1, 3), dtype=np.float32)  # the general path's label row
        self._tags = np.full((1, 2), -1, dtype=np.int64)
        self._lines = np.zeros(1, dtype=np.int64)
        self._warnings = np.empty((0, 4), dtype=np.int64)
        self._offsets = [np.array([0, k], dtype=np.int64) for k in range(FAST_FEATURES + 1)]
        self._fast = [None, None] + [self._fast_batch(k) for k in range(2, FAST_FEATURES)]

    def _fast_batch(self, k: int) -> tuple:
        """The fast path's kept batch of ``k`` features (then the constant's), with a packer of
        its label row and values, the memory it writes, a packer of its indices and their
        memory. The label row (label, importance, initial) and the values are one float32 array
        (the initial's pad bytes write its 0): one call of C code writes them all."""
        extra = 0 if self._constant is None else 1
        numbers = np.zeros(3 + k + extra, dtype=np.float32)
        index = np.zeros(k + extra, dtype=np.uint32)
        if extra:
            numbers[-1], index[-1] = 1.0, self._constant
        namespace = np.full(k + extra, SVM_NAMESPACE[0], dtype=np.uint8)
        namespace[k:] = CONSTANT_NAMESPACE
        batch = self._one(self._offsets[k + extra], index, numbers[3:], namespace, NO_TEXT,
                          NO_NAMES, numbers[:3].reshape(1, 3))
        return (batch, struct.Struct(f"2f4x{k}f").pack_into, memoryview(numbers),
                struct.Struct(f"{k}I").pack_into, memoryview(index))

    def _one(self, offsets, index, value, spaces, text, audit, numbers) -> ExampleBatch:
        """A batch of one example."""
        return ExampleBatch(text, SOURCE, 0, numbers, self._tags, self._lines, offsets, index,
                            value, spaces, audit, self._warnings, 0, 0, 0, 1)

    @staticmethod
    def _words(key) -> tuple[bytes, bytes]:
        """A key's namespace and feature name (the default namespace's is a space): a name or
        a (namespace, name) pair, each bytes as they are (the text line's bytes) or any other
        value as its str, UTF-8."""
        if not isinstance(key, tuple):
            return SVM_NAMESPACE, _word(key)
        if len(key) != 2:
            raise TypeError(f"feature key {key!r}: a name or a (namespace, name) pair, not a "
                            f"tuple of {len(key)}")
        return _word(key[0]) or b" ", _word(key[1])

    def _feature(self, key, value) -> tuple[int, int]:
        """(index, namespace byte) of a key, with a string value for string features."""
        found = self._index.get((key, value))
        if found is None:
            space, name = self._words(key)
            seed = namespace_hash(space, self.config.hash_seed, self._hash_all)
            h = hash_bytes(name, seed, self._hash_all)
            if value is not None:
                h = hash_bytes(str(value).encode(), h, self._hash_all)
            found = self._index[key, value] = (h & self.config.mask, space[0])
            if value is None and not isinstance(key, tuple):
                self._plain[key] = found[0]
        return found

    def _named(self, features: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
        """The names' text and spans of ``features`` (index, value, space, key, string value);
        the constant's (key None) are none."""
        words: list[bytes] = []
        audit = np.full((len(features), AUDIT_COLS), -1, dtype=np.int64)
        end = 0
        for k, (*_, key, string) in enumerate(features):
            if key is None:
                continue
            space, name = self._words(key)
            value = None if string is None else str(string).encode()
            for column, word in ((0, name), (2, value), (4, None if space == b" " else space)):
                if word is not None:
                    audit[k, column:column + 2] = end, end + len(word)
                    words.append(word)
                    end += len(word)
        return np.frombuffer(b"".join(words), dtype=np.uint8), audit

    def _general(self, x: dict) -> tuple[list[tuple], np.ndarray, np.ndarray]:
        """``x``'s features (index, value, space, key, string value), grouped by namespace, the
        constant last; with names, their text and spans."""
        grouped: dict[int, list[tuple]] = {}
        for key, value in x.items():
            if isinstance(value, str):
                index, space = self._feature(key, value)
                grouped.setdefault(space, []).append((index, 1.0, space, key, value))
            elif value is not None:
                try:
                    number = float(value)
                except (TypeError, ValueError, OverflowError):  # not a number, or beyond float
                    number = math.inf  # refused below
                if number != number or number == 0:  # NaN and 0: no feature
                    continue
                with np.errstate(over="ignore"):  # beyond float32: the error below says so
                    finite = bool(np.isfinite(np.float32(number)))
                if not finite:
                    raise OlearnError(f"feature {key!r}: {value!r} is not a finite number",
                                      SOURCE)
                index, space = self._feature(key, None)
                grouped.setdefault(space, []).append((index, number, space, key, None))
        features = [f for pairs in grouped.values() for f in pairs]
        if self._constant is not None:
            features.append((self._constant, 1.0, CONSTANT_NAMESPACE, None, None))
        text, audit = self._named(features) if self.names else (NO_TEXT, NO_NAMES)
        return features, text, audit

    def fast(self, x: dict, y=None, weight: float = 1.0) -> ExampleBatch | None:
        """The example ``x`` (label ``y``, importance ``weight``) as the kept batch of its size,
        if it can take the fast path: 2 to FAST_FEATURES - 1 plain keys seen before with
        numbers, and no names wanted; else None (after checking ``y`` and ``weight``, which
        :meth:`batch` then takes as they are). Its values are not checked: a value that is
        0, NaN or beyond float32 (packed as inf) is there as it is, where :meth:`batch` drops
        or refuses it. The kernel's kept call checks them (olearn/kernel/kept.py: a loop there costs
        nanoseconds, Python's a fifth of a call); when one fails, the caller takes
        :meth:`batch`. A dict refused here may have written part of a kept batch: only a call
        that takes the fast path with this size returns that batch, and it writes the batch
        whole first."""
        try:
            label = math.nan if y is None else float(y)
            # both are float32 in the batch: beyond its range they would be inf (a NaN fails)
            ok = (y is None or abs(label) <= F32_MAX) and 0 <= weight <= F32_MAX
        except (TypeError, ValueError, OverflowError):  # not a number, or beyond float
            ok = False
        if not ok:
            raise OlearnError("y and the weight must be finite numbers within float32's range, "
                              "the weight >= 0", SOURCE)
        k = len(x)
        # (one key: itemgetter would not give a tuple)
        if self.names or not 2 <= k < FAST_FEATURES:
            return None
        batch, pack_values, row, pack_indices, index = self._fast[k]
        try:
            pack_indices(index, 0, *itemgetter(*x)(self._plain))
            pack_values(row, 0, label, weight, *x.values())  # a number beyond float32: inf
        except (KeyError, TypeError, OverflowError, struct.error):
            return None
        return batch

    def batch(self, x: dict, y=None, weight: float = 1.0) -> ExampleBatch:
        """The example ``x`` (label ``y``, importance ``weight``, which :meth:`fast` has checked)
        as a batch of one, the general way."""
        self._numbers[0, :2] = math.nan if y is None else float(y), weight
        features, text, audit = self._general(x)
        k = len(features)
        return self._one(self._offsets[k] if k < len(self._offsets)
                         else np.array([0, k], dtype=np.int64),
                         np.array([f[0] for f in features], dtype=np.uint32),
                         np.array([f[1] for f in features], dtype=np.float32),
                         np.array([f[2] for f in features], dtype=np.uint8), text, audit,
                         self._numbers)
