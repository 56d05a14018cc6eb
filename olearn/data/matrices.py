"""Numeric input for the Python API: a numpy array, a scipy.sparse matrix or a pandas
DataFrame straight into example batches, without text (so float64 values are not rounded
through decimal text).

Matrices: column j is feature ``j`` of namespace ``f``, hashed as the svmlight reader hashes
it, so a matrix loaded from an svmlight file (with its own indices: ``zero_based=True``)
learns what ``olearn -d file.svm`` learns. DataFrames: a numeric column is the feature named
by the column, any other column a string feature (VW's ``name:value``, hashed as the text
reader hashes it), each in namespace ``f`` or the one ``namespaces`` maps it to; a missing
value (NaN, None) is no feature. Zeros are no features (as VW drops them); every row gets the
constant unless --noconstant. Memory grows with the values present, not with the input's
shape: a matrix hashes only the columns its entries use, a DataFrame's columns give only the
rows where they hold a feature.

With ``names``, each batch also carries its features' names as the text parser's name spans
(``text``, ``audit``), so ``Learner(names=True).weights()`` names them as ``--invert_hash``:
column j is ``f^j``, a DataFrame's column ``ns^column`` (``ns^column^value`` for a string).
"""
from __future__ import annotations

import math
import reprlib
import struct
import sys
from itertools import repeat
from operator import itemgetter
from typing import Iterator

import numpy as np
from numba import njit

from olearn.data.batch import ExampleBatch
from olearn.data.hashing import (
    CONSTANT_HASH,
    CONSTANT_NAMESPACE,
    M32,
    hash_bytes,
    hash_name,
    namespace_hash,
)
from olearn.data.parsed import AUDIT_COLS
from olearn.data.svmlight import SVM_NAMESPACE
from olearn.errors import OlearnError

ROWS_PER_BATCH = 8192
FAST_FEATURES = 64  # the most features of a dict on DictExamples' fast path
CACHE_KEYS = 1 << 18  # the most names DictExamples remembers in each of its maps
FEW_WORDS = 16  # up to this many names are hashed in Python (_hashes), more in a kernel
NUMPY_INTS = frozenset({np.int8, np.int16, np.int32, np.int64, np.longlong, np.uint8, np.uint16,
                        np.uint32, np.uint64, np.ulonglong})
# A plain dict key of these types is remembered by itself: keys of them that Python holds equal
# (1 and np.int64(1), "a" and np.str_("a")) have the same text, where 1, 1.0 and True do not
STR_KEY_TYPES = frozenset({str, np.str_})  # equal to no other type's keys
FAST_KEY_TYPES = STR_KEY_TYPES | {int} | NUMPY_INTS
TWO = frozenset({2})
# values numpy converts to float64 as float() does (None: NaN, no feature)
NUMBER_TYPES = frozenset({float, int, type(None), np.float16, np.float32, np.float64}) | NUMPY_INTS
TEXT = (str, bytes)  # a dict value that makes a string feature
# pandas' kinds of columns (infer_dtype) whose values pandas holds equal only when their texts
# (:func:`_word`) are: not 1, 1.0 and True
TEXT_SAFE_KINDS = frozenset({"string", "bytes", "integer", "empty"})
SOURCE = "<matrix>"
DICT_SOURCE = "<dict>"  # learn_one's examples, in messages
F32_MAX = float(np.finfo(np.float32).max)
F_NAMESPACE = SVM_NAMESPACE[0]
F_TEXT = SVM_NAMESPACE.decode()
NO_TEXT = np.empty(0, dtype=np.uint8)
NO_INDEX, NO_VALUE, NO_SPACE = (np.empty(0, dtype=t) for t in (np.uint32, np.float32, np.uint8))
NO_NAMES = np.empty((0, AUDIT_COLS), dtype=np.int64)  # batches without names (spans)


def is_matrix(data: object) -> bool:
    """Whether ``data`` is a matrix X: a 2-d numpy array (but of strings: those are example
    lines, a 1-d array's), a scipy.sparse matrix or a DataFrame."""
    if isinstance(data, np.ndarray):
        return data.ndim == 2 and data.dtype.kind not in "US"
    return (hasattr(data, "tocsr") and hasattr(data, "nnz")) or _is_frame(data)


def is_dask(data: object) -> bool:
    """Whether ``data`` is a Dask collection (a DataFrame, Series, array or bag), known without
    importing Dask."""
    return hasattr(data, "__dask_graph__") and hasattr(data, "to_delayed")


def _is_frame(data: object) -> bool:
    return hasattr(data, "columns") and hasattr(data, "dtypes") and hasattr(data, "iloc")


def _spans(words: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``words`` joined into one text, and each word's (start, end) in it."""
    ends = np.cumsum([len(w) for w in words], dtype=np.int64)
    starts = ends - np.array([len(w) for w in words], dtype=np.int64)
    return np.frombuffer(b"".join(words), dtype=np.uint8), np.stack([starts, ends], axis=1)


def _frame_namespaces(frame, namespaces: dict | None) -> list[bytes]:
    """Each column's namespace (by position): the one ``namespaces`` maps its name to (a
    column name or a list of them; ``""`` is the default namespace, as a line's ``| x``), else
    ``f``; an OlearnError or TypeError naming what does not fit the frame (``namespaces`` is a
    dict: Learner.fit checks it)."""
    of_column: dict = {}
    for name, columns in (namespaces or {}).items():
        listed = [columns] if isinstance(columns, (str, bytes)) or not hasattr(
            columns, "__iter__") else list(columns)
        for column in listed:
            try:
                other = of_column.setdefault(column, name)
            except TypeError:
                raise TypeError(f"namespaces[{name!r}]: {column!r} is not a column name "
                                f"(unhashable)") from None
            if other != name:
                raise OlearnError(f"namespaces: column {column!r} is in two namespaces, "
                                  f"{other!r} and {name!r}", SOURCE)
    present = set(frame.columns)
    unknown = [c for c in of_column if c not in present]
    if unknown:
        raise OlearnError(f"namespaces: no column {unknown[0]!r} in the DataFrame", SOURCE)
    return [_word(of_column[c]) or b" " if c in of_column else SVM_NAMESPACE
            for c in frame.columns]


def _frame_rows(frame, namespaces: dict | None, config, names: bool) -> tuple:
    """CSR of a DataFrame: row pointers, indices, values, namespace bytes, rows, and with
    ``names`` the names' text and each feature's name spans (else None, None). Columns are
    grouped by namespace (the mapping's order, then ``f``), each in the frame's order. Memory
    grows with the values present, not with the frame's shape: each column gives the rows
    where it has a feature."""
    hash_all = config.hash == "all"
    spaces = _frame_namespaces(frame, namespaces)
    groups = list(dict.fromkeys([*(_word(name) or b" " for name in namespaces or {}),
                                 SVM_NAMESPACE]))
    order = sorted(range(len(spaces)), key=lambda j: groups.index(spaces[j]))
    n = len(frame)
    parts: list[tuple] = []  # per column: its rows with a feature, indices, values, words
    # names: the namespaces', then the columns', then the string values' words
    words = [spaces[j] for j in order] + [_word(frame.columns[j]) for j in order]
    for k, j in enumerate(order):
        column, values = frame.columns[j], frame.iloc[:, j]
        seed = namespace_hash(spaces[j], config.hash_seed, hash_all)
        feature = hash_bytes(words[len(order) + k], seed, hash_all)
        if values.dtype.kind in "biuf":
            x = values.to_numpy(dtype=np.float64, na_value=np.nan)
            rows = np.flatnonzero((x == x) & (x != 0))  # NaN, missing and 0: no feature
            x = x[rows]
            if (bad := _beyond_float32(x)) >= 0:
                _refuse_value(float(x[bad]), f"column {column!r}, row {rows[bad]}")
            parts.append((rows, np.full(len(rows), feature & config.mask, dtype=np.uint32), x,
                          None))
        else:  # a string feature name:value, hashed per distinct value
            codes, uniques = _text_codes(values)
            rows = np.flatnonzero(codes >= 0)
            hashes = _hashes(uniques, feature, hash_all) & config.mask
            value_words = None
            if names:
                value_words = len(words) + codes[rows]
                words += uniques
            parts.append((rows, hashes[codes[rows]].astype(np.uint32), np.ones(len(rows)),
                          value_words))
    counts = np.zeros(n, dtype=np.int64)
    for rows, *_ in parts:
        counts[rows] += 1
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    # each row's features in the columns' order: column k's go after the earlier columns'
    index = np.empty(indptr[-1], dtype=np.uint32)
    value = np.empty(indptr[-1])
    cols = np.empty(indptr[-1], dtype=np.int64)
    value_word = np.full(indptr[-1], -1, dtype=np.int64)  # (none: a number, or no names)
    filled = indptr[:-1].copy()
    for k, (rows, indices, values, value_words) in enumerate(parts):
        at = filled[rows]
        filled[rows] += 1
        index[at], value[at], cols[at] = indices, values, k
        if value_words is not None:
            value_word[at] = value_words
    space_bytes = np.array([spaces[j][0] for j in order], dtype=np.uint8)[cols]
    text = spans = None
    if names:
        text, word_spans = _spans(words)
        word_spans = np.concatenate([word_spans, [[-1, -1]]])  # word -1: none
        space_word = np.where(space_bytes == ord(" "), -1, cols)  # the default's: none
        spans = np.concatenate([word_spans[len(order) + cols], word_spans[value_word],
                                word_spans[space_word]], axis=1)
    return indptr, index, value, space_bytes, n, text, spans


def _text_codes(values) -> tuple[np.ndarray, list[bytes]]:
    """A column's values as codes (-1: missing) of their distinct texts (:func:`_word`):
    values pandas holds equal but whose texts differ (1, 1.0, True) are apart, and a value
    pandas cannot hash (a list) is its text too."""
    import pandas  # only here: an optional extra, and a DataFrame means it is installed
    labels = (values.cat.categories if isinstance(values.dtype, pandas.CategoricalDtype)
              else values)
    if pandas.api.types.infer_dtype(labels, skipna=True) in TEXT_SAFE_KINDS:
        codes, uniques = pandas.factorize(values)
    else:  # by their texts (a Python step per value; unhashable values, lists, too)
        present = ~values.isna().to_numpy()
        codes = np.full(len(values), -1, dtype=np.int64)
        codes[present], uniques = pandas.factorize(
            np.array([_word(v) for v in values[present]], dtype=object))
    return codes, [_word(u) for u in uniques]


def _beyond_float32(values: np.ndarray) -> int:
    """The position of the first value that is not finite in float32, or -1."""
    with np.errstate(over="ignore"):  # beyond float32: refused by the caller
        bad = ~np.isfinite(values.astype(np.float32))
    return int(np.argmax(bad)) if bad.any() else -1


def _refuse_value(value: float, where: str, source: str | None = SOURCE) -> None:
    """The OlearnError of a value that is not finite in float32, at ``where`` in ``source``."""
    what = "not a finite number" if not math.isfinite(value) else (
        "out of float32's range (±3.4e38)")
    raise OlearnError(f"{where}: {value!r} is {what}", source)


def column_indices(n_columns: int, config) -> np.ndarray:
    """Each column's feature index: feature ``j`` of namespace ``f``, masked."""
    return indices_of_columns(np.arange(n_columns, dtype=np.int64), config)


def indices_of_columns(columns: np.ndarray, config) -> np.ndarray:
    """The feature index of each column number in ``columns``: feature ``j`` of namespace
    ``f``, masked."""
    hash_all = config.hash == "all"
    seed = namespace_hash(SVM_NAMESPACE, config.hash_seed, hash_all)
    if hash_all:
        hashes = _hashes(list(map(str, columns.tolist())), seed, True)
    else:  # an all-digit name hashes to its value plus the namespace's seed
        hashes = (columns.astype(np.int64) + seed) & M32
    return (hashes & config.mask).astype(np.uint32)


def _numeric_array(X: np.ndarray) -> np.ndarray:
    """A 2-d numpy array as a plain array of numbers: np.matrix (and any subclass) as a plain
    array, a masked array's masked entries as zeros (no features), an object array's entries as
    float64; a TypeError naming what is not a number."""
    if isinstance(X, np.ma.MaskedArray):
        X = X.filled(0)
    X = np.asarray(X)
    if X.dtype.kind == "O":
        missing = np.argwhere(X == None)  # noqa: E711 (each entry's, not the array's)
        if len(missing):  # (numpy would make it NaN)
            r, c = missing[0]
            raise TypeError(f"X: row {r}, column {c} holds None, not a number (a DataFrame "
                            f"takes None as a missing value)")
        try:
            return X.astype(np.float64)
        except (TypeError, ValueError, OverflowError) as error:
            where = next((w for w, v in np.ndenumerate(X) if not _is_number(v)), None)
            at = (f"row {where[0]}, column {where[1]} holds {reprlib.repr(X[where])}"
                  if where is not None else error)
            raise TypeError(f"X: an object array must hold numbers: {at}") from None
    _check_dtype(X.dtype)
    return X


def _check_dtype(dtype: np.dtype) -> None:
    """A TypeError unless ``dtype`` holds real numbers (bool, integers, floats)."""
    if dtype.kind not in "biuf":
        hint = (": pass X.real, or abs(X)" if dtype.kind == "c" else
                ": a DataFrame makes strings string features" if dtype.kind in "USO" else "")
        raise TypeError(f"X: a matrix of numbers, not of {dtype}{hint}")


def _rows(X) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:
    """CSR of ``X`` (zeros kept: the batches skip them): row pointers, each entry's position
    among the columns, values, rows, and the columns (their numbers). A scipy CSR matrix in
    canonical form (sorted, no duplicates) is not copied."""
    if isinstance(X, np.ndarray):
        X = _numeric_array(X)
        rows, cols = np.nonzero(X)  # row-major: each row's columns in order
        values = X[rows, cols]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=X.shape[0]))])
    else:
        _check_dtype(X.dtype)
        _check_sparse(X)  # before scipy's own code reads the arrays: it trusts them
        csr = X if X.format == "csr" and X.has_canonical_format else X.tocsr(copy=True)
        if not csr.has_canonical_format:
            csr.sum_duplicates()
        indptr, cols, values = csr.indptr, csr.indices, csr.data
    indptr, cols = indptr.astype(np.int64, copy=False), cols.astype(np.int64, copy=False)
    values = values.astype(np.float64, copy=False)
    if not _finite_in_float32(values):  # (a copy in float32 only to say where)
        k = _beyond_float32(values)
        _refuse_value(float(values[k]), f"X: row {np.searchsorted(indptr, k, 'right') - 1}, "
                                        f"column {cols[k]}")
    columns, positions = _columns_present(cols, X.shape[1])
    return indptr, positions, values, X.shape[0], columns


def _columns_present(cols: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The columns of a matrix of ``d`` that its entries (columns ``cols``) need, and each
    entry's position among them: all ``d`` when they are no more than the entries, else only
    those that occur (a matrix of 2^31 columns holding a few values: a few columns), so that
    memory grows with the entries, not with the matrix's width."""
    if d <= len(cols):
        return np.arange(d, dtype=np.int64), cols
    columns, positions = np.unique(cols, return_inverse=True)
    return columns, positions.reshape(-1)


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


def _is_number(value) -> bool:
    """Whether float() takes ``value``, as numpy's cast of an object array does."""
    try:
        float(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def _vector(v, n: int, what: str) -> np.ndarray | None:
    """``y`` or ``sample_weight`` (None: none) as float64, a number per row of X within
    float32's range, or an OlearnError saying what is wrong and where."""
    if v is None:
        return None
    try:
        array = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as error:
        raise OlearnError(f"{what}: {n} numbers expected, one per row of X ({error})",
                          SOURCE) from None
    if array.ndim == 2 and array.shape[1] == 1:  # a column
        array = array[:, 0]
    if array.shape != (n,):
        given = len(array) if array.ndim == 1 else f"an array of shape {array.shape}"
        raise OlearnError(f"{what}: {n} numbers expected, one per row of X, not {given}",
                          SOURCE)
    if (row := _beyond_float32(array)) >= 0:
        _refuse_value(float(array[row]), f"{what}: row {row}")
    return array


def _column_names(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Names of a matrix's columns (their numbers ``columns``): their text and each column's
    audit spans (namespace ``f``'s byte names it, as for svmlight input), then a row of none
    (-1)."""
    text, word_spans = _spans([str(j).encode() for j in columns.tolist()])
    spans = np.full((len(columns) + 1, AUDIT_COLS), -1, dtype=np.int64)
    spans[:len(columns), :2] = word_spans
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
        indptr, cols, values, n, columns = _rows(X)
        column_index = indices_of_columns(columns, config)
        text, spans = _column_names(columns) if names else (NO_TEXT, None)
    labels = _vector(y, n, "y")
    weights = _vector(sample_weight, n, "sample_weight")
    if weights is not None and (weights < 0).any():
        row = int(np.argmax(weights < 0))
        raise OlearnError(f"sample_weight: row {row}: {float(weights[row])!r} is negative (an "
                          f"importance is >= 0)", SOURCE)
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
    """A dict key's namespace or name, or a string value, as the text line's bytes: bytes as
    they are, a string's characters in UTF-8 (a lone surrogate as its three bytes), anything
    else as its str."""
    if isinstance(part, bytes):
        return part
    return str.encode(part if isinstance(part, str) else str(part), errors="surrogatepass")


def _hashes(words: list, seeds, hash_all: bool) -> np.ndarray:
    """VW's hash of each word (str or bytes, as :func:`_word` writes it) with its seed
    (``seeds``: one per word, or one for all)."""
    seeds = np.broadcast_to(np.asarray(seeds, dtype=np.int64), (len(words),))
    if len(words) <= FEW_WORDS:  # in Python: loading the kernel costs more than these hashes
        return np.array([hash_bytes(_word(w), s, hash_all) for w, s in zip(words, seeds.tolist())],
                        dtype=np.int64)
    text, ends = _joined(words)
    hashes = np.empty(len(words), dtype=np.int64)
    if not _hash_words(text, ends, seeds, hash_all, hashes):
        raise ValueError("_hash_words: arrays that do not fit")
    return hashes


def _joined(words: list) -> tuple[np.ndarray, np.ndarray]:
    """The words' bytes (:func:`_word`) one after another, and where each ends."""
    try:
        joined = "".join(words)
    except TypeError:  # not all str
        joined = None
    if joined is not None:
        text = joined.encode("utf-8", errors="surrogatepass")
        if len(text) != len(joined):  # not all ASCII: a word's bytes are not its characters
            joined = None
    if joined is None:
        words = list(map(_word, words))
        text = b"".join(words)
    ends = np.cumsum(np.fromiter(map(len, words), dtype=np.int64, count=len(words)))
    return np.frombuffer(text, dtype=np.uint8), ends


@njit(cache=True, nogil=True)
def _hash_words(text, ends, seeds, hash_all, out):
    """Hash word k, ``text[ends[k - 1]:ends[k]]``, with ``seeds[k]`` into ``out[k]``; False,
    with nothing written, when the arrays do not fit."""
    n = ends.shape[0]
    if seeds.shape[0] < n or out.shape[0] < n or (n and ends[n - 1] > text.shape[0]):
        return False
    start = 0
    for k in range(n):
        if ends[k] < start:
            return False
        start = ends[k]
    start = 0
    for k in range(n):
        out[k] = hash_name(text, start, ends[k], seeds[k], hash_all)
        start = ends[k]
    return True


def _taken(items: list, where: list) -> list:
    """``items[k]`` for each k of ``where`` (all of them: the list itself)."""
    return items if len(where) == len(items) else [items[k] for k in where]


def _remember(cache: dict, keys: list, values: list) -> bool:
    """New entries into ``cache``, which starts again (returns True) when it would exceed
    CACHE_KEYS: memory does not grow with the names seen."""
    again = len(cache) + len(keys) > CACHE_KEYS
    if again:
        cache.clear()
    if len(keys) <= CACHE_KEYS:
        cache.update(zip(keys, values))
    return again


def _pandas_missing(value) -> bool:
    """Whether ``value`` is pandas.NA or pandas.NaT (without importing pandas: a value can be
    one only once pandas is imported)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and (value is pandas.NA or value is pandas.NaT)


def _texts(keys: list, strings: list) -> tuple[list, list, list]:
    """Dict features' namespaces (the default one's is a space), names and string values (None:
    a number), each a str as it is or anything else's bytes (:func:`_word`), so that two are
    equal only when their texts are: a key is a name or a (namespace, name) pair."""
    if any(map(isinstance, keys, repeat(tuple))):
        pairs = [key if isinstance(key, tuple) else (F_TEXT, key) for key in keys]
        if not TWO.issuperset(map(len, pairs)):
            key = next(key for key in pairs if len(key) != 2)
            raise TypeError(f"feature key {key!r}: a name or a (namespace, name) pair, not a "
                            f"tuple of {len(key)}")
        spaces = [space if type(space) is str and space else _word(space) or " "
                  for space, _ in pairs]
        keys = [name for _, name in pairs]
    else:
        spaces = [F_TEXT] * len(keys)
    return (spaces, [name if type(name) is str else _word(name) for name in keys],
            [s if s is None or type(s) is str else _word(s) for s in strings])


def _numbers(keys: list, values: list) -> tuple[np.ndarray, np.ndarray | None]:
    """The values as float64 (NaN for None and text) and which are text (None: none), or an
    OlearnError naming the first feature whose value is not a number, is infinite or is beyond
    float32."""
    strings = None
    if not NUMBER_TYPES.issuperset(map(type, values)):
        strings = np.fromiter(map(isinstance, values, repeat(TEXT)), dtype=bool,
                              count=len(values))
    if strings is not None and strings.any():
        numbers = np.full(len(values), np.nan)
        rest = np.flatnonzero(~strings).tolist()
        numbers[rest] = _floats([keys[k] for k in rest], [values[k] for k in rest])
    else:
        numbers, strings = _floats(keys, values), None
    if (k := _beyond_float32(numbers[numbers == numbers])) >= 0:  # (NaN: no feature)
        k = int(np.flatnonzero(numbers == numbers)[k])
        _refuse_value(float(numbers[k]), f"feature {keys[k]!r}", None)
    return numbers, strings


def _floats(keys: list, values: list) -> np.ndarray:
    """Values that are not text as float64: None is NaN, anything else what float() makes of
    it, or an OlearnError naming the feature."""
    if NUMBER_TYPES.issuperset(map(type, values)):  # numpy converts them all at once
        try:
            return np.array(values, dtype=np.float64)
        except OverflowError:  # an int beyond float: _float names it
            pass
    return np.fromiter(map(_float, keys, values), dtype=np.float64, count=len(keys))


def _float(key, value) -> float:
    """:func:`_floats` of one value; pandas' missing values (NA, NaT) are None's NaN."""
    if value is None or _pandas_missing(value):
        return math.nan
    try:
        return float(value)
    except OverflowError:
        raise OlearnError(f"feature {key!r}: {reprlib.repr(value)} is out of float32's "
                          f"range (±3.4e38)") from None
    except (TypeError, ValueError):
        raise OlearnError(f"feature {key!r}: {reprlib.repr(value)} is not a number, a string "
                          f"or None") from None


class DictExamples:
    """Single examples given as dicts (``learn_one``/``predict_one``, River's convention): a
    key is a feature name (namespace ``f``) or a (namespace, name) pair; a number is its value,
    a string (or bytes) makes a string feature (``name:value``); None, NaN and 0 are no
    feature. A key is its text (:func:`_word`), whatever Python holds equal: ``1``, ``1.0``
    and ``True`` are three features, as ``|f 1 1.0 True`` has. Each feature's index is hashed
    once (many at a time in a kernel) and remembered, up to CACHE_KEYS of them. With
    ``names``, each batch carries its features' names (``audit`` spans of ``text``), as
    matrices' do.

    A dict of 2 to FAST_FEATURES - 1 nonzero numbers under names seen before can take a fast
    path (:meth:`fast`: C code writes its label row, values and indices straight into arrays
    kept for its size: no Python float or array per value, no grouping as they are all in
    namespace ``f``); anything else takes the general one (:meth:`batch`), which handles the
    dict's features together in numpy, so that its cost grows with their number by a few
    Python operations each. Both give the same batch; its label row and the fast path's
    features are arrays kept here, which the next call overwrites (the learner is done with a
    batch before its next call). The fast path's batch of each size is itself kept: the same
    object, with the same arrays, each time (so that the learner can keep its kernel call's
    arguments too)."""

    def __init__(self, config, names: bool = False):
        self.config = config
        self.names = names
        self._hash_all = config.hash == "all"
        self._plain: dict = {}  # a plain key of FAST_KEY_TYPES: its index as a number (in f)
        self._numbered = False  # whether _plain holds an int key (see fast)
        self._index: dict = {}  # any other feature's texts (namespace, name, string): index
        self._seeds: dict = {}  # a namespace's text: its seed
        self._constant = None if config.noconstant else CONSTANT_HASH & config.mask
        self._constant_slot = self._constant or 0  # the fast path's constant index
        self._numbers = np.zeros((1, 3), dtype=np.float32)  # the general path's label row
        self._tags = np.full((1, 2), -1, dtype=np.int64)
        self._lines = np.zeros(1, dtype=np.int64)
        self._warnings = np.empty((0, 4), dtype=np.int64)
        self._offsets = [np.array([0, k], dtype=np.int64) for k in range(FAST_FEATURES + 1)]
        self._fast = [None, None] + [self._fast_batch(k) for k in range(2, FAST_FEATURES)]

    def _fast_batch(self, k: int) -> tuple:
        """The fast path's kept batch of ``k`` features (then the constant's), with a packer of
        its label row, values and indices, and the memory it writes. They are one buffer, so
        that one call of C code writes them all: the label row (label, importance, initial: its
        pad bytes write its 0), the values and the constant's, then the indices and the
        constant's (slots there without a constant too, outside the batch's arrays)."""
        extra = 0 if self._constant is None else 1
        memory = np.zeros(4 * (3 + k + 1 + k + 1), dtype=np.uint8)
        numbers = memory[:4 * (3 + k + 1)].view(np.float32)
        index = memory[4 * (3 + k + 1):].view(np.uint32)
        namespace = np.full(k + extra, F_NAMESPACE, dtype=np.uint8)
        namespace[k:] = CONSTANT_NAMESPACE
        batch = self._one(self._offsets[k + extra], index[:k + extra],
                          numbers[3:3 + k + extra], namespace, NO_TEXT, NO_NAMES,
                          numbers[:3].reshape(1, 3))
        return batch, struct.Struct(f"2f4x{k + 1}f{k + 1}I").pack_into, memoryview(memory)

    def _one(self, offsets, index, value, spaces, text, audit, numbers) -> ExampleBatch:
        """A batch of one example."""
        return ExampleBatch(text, DICT_SOURCE, 0, numbers, self._tags, self._lines, offsets,
                            index, value, spaces, audit, self._warnings, 0, 0, 0, 1)

    def _label_row(self, y, weight: float) -> np.ndarray:
        """The general path's label row, of label ``y`` and importance ``weight`` (which
        :meth:`fast` has checked)."""
        self._numbers[0, :2] = math.nan if y is None else float(y), weight
        return self._numbers

    def labelled(self, y, weight: float = 1.0) -> ExampleBatch:
        """A batch of one example of label ``y`` and importance ``weight`` and no features,
        for the checks of a label (a reduction's classes)."""
        return self._one(self._offsets[0], NO_INDEX, NO_VALUE, NO_SPACE, NO_TEXT, NO_NAMES,
                         self._label_row(y, weight))

    def _seed(self, space: bytes) -> int:
        """The seed of namespace ``space``'s names (remembered: a dict has few namespaces)."""
        seed = self._seeds.get(space)
        if seed is None:
            seed = self._seeds[space] = namespace_hash(space, self.config.hash_seed,
                                                       self._hash_all)
        return seed

    def _plain_indices(self, keys: list) -> np.ndarray:
        """The indices of plain keys of FAST_KEY_TYPES with numbers (namespace ``f``)."""
        found = np.fromiter(map(self._plain.get, keys, repeat(-1)), dtype=np.int64,
                            count=len(keys))
        where = np.flatnonzero(found < 0)
        if len(where):
            missing = _taken(keys, where.tolist())
            # their texts are their str (a str's characters, an int's digits)
            found[where] = _hashes(list(map(str, missing)), self._seed(SVM_NAMESPACE),
                                   self._hash_all) & self.config.mask
            again = _remember(self._plain, missing, found[where].tolist())
            self._numbered = ((self._numbered and not again)
                              or not STR_KEY_TYPES.issuperset(map(type, missing)))
        return found

    def _other_indices(self, keys: list, strings: list) -> tuple[np.ndarray, np.ndarray]:
        """The indices and namespace bytes of the other features: ``keys`` with their string
        values (None: a number), found by their texts."""
        spaces, names, strings = _texts(keys, strings)
        # a dict of more features than the map holds is hashed whole, each time
        texts = list(zip(spaces, names, strings)) if len(keys) <= CACHE_KEYS else None
        found = (np.fromiter(map(self._index.get, texts, repeat(-1)), dtype=np.int64,
                             count=len(keys))
                 if texts is not None else np.full(len(keys), -1, dtype=np.int64))
        where = np.flatnonzero(found < 0)
        if len(where):
            take = where.tolist()
            seeds = {space: self._seed(_word(space)) for space in set(spaces)}
            hashes = _hashes(_taken(names, take),
                             list(map(seeds.__getitem__, _taken(spaces, take))), self._hash_all)
            values = _taken(strings, take)
            valued = [k for k, string in enumerate(values) if string is not None]
            if valued:  # a string feature: its value hashed with its name's hash as the seed
                hashes[valued] = _hashes([values[k] for k in valued], hashes[valued],
                                         self._hash_all)
            found[where] = hashes & self.config.mask
            if texts is not None:
                _remember(self._index, _taken(texts, take), found[where].tolist())
        first_byte = {space: _word(space)[0] for space in set(spaces)}
        return found, np.fromiter(map(first_byte.__getitem__, spaces), dtype=np.uint8,
                                  count=len(spaces))

    def _named(self, keys: list, strings: list) -> tuple[np.ndarray, np.ndarray]:
        """The names' text and audit spans of features ``keys`` with their string values (None:
        a number), then the constant's (none, if it is there)."""
        words: list[bytes] = []
        audit = np.full((len(keys) + (self._constant is not None), AUDIT_COLS), -1,
                        dtype=np.int64)
        end = 0
        for k, parts in enumerate(zip(*_texts(keys, strings))):
            space, name, value = (None if part is None else _word(part) for part in parts)
            for column, word in ((0, name), (2, value), (4, None if space == b" " else space)):
                if word is not None:
                    audit[k, column:column + 2] = end, end + len(word)
                    words.append(word)
                    end += len(word)
        return np.frombuffer(b"".join(words), dtype=np.uint8), audit

    def _features(self, x: dict) -> tuple:
        """``x``'s features as arrays (index, value, namespace byte), grouped by namespace (in
        the order they first come), the constant last; with names, their text and spans."""
        keys, values = list(x), list(x.values())
        numbers, strings = _numbers(keys, values)
        present = (numbers == numbers) & (numbers != 0)  # NaN and 0: no feature
        if strings is not None:
            present |= strings
            numbers[strings] = 1.0
        plain = present & np.fromiter(map(FAST_KEY_TYPES.__contains__, map(type, keys)),
                                      dtype=bool, count=len(keys))
        if strings is not None:
            plain &= ~strings
        index = np.zeros(len(keys), dtype=np.uint32)
        space = np.full(len(keys), F_NAMESPACE, dtype=np.uint8)
        where = np.flatnonzero(plain)
        if len(where) == len(keys):  # (the usual dict: no copy of its keys)
            index[:] = self._plain_indices(keys)
        elif len(where):
            index[where] = self._plain_indices([keys[k] for k in where.tolist()])
        where = np.flatnonzero(present & ~plain).tolist()
        if where:
            index[where], space[where] = self._other_indices(
                [keys[k] for k in where],
                [None if strings is None or not strings[k] else values[k] for k in where])
        order = np.flatnonzero(present)
        spaces = space[order]
        if len(order) and (spaces != spaces[0]).any():  # grouped as the text line groups them
            _, first, which = np.unique(spaces, return_index=True, return_inverse=True)
            order = order[np.argsort(np.argsort(first)[which], kind="stable")]
        index, value, space = index[order], numbers[order].astype(np.float32), space[order]
        if self._constant is not None:
            index = np.append(index, np.uint32(self._constant))
            value = np.append(value, np.float32(1.0))
            space = np.append(space, np.uint8(CONSTANT_NAMESPACE))
        if not self.names:
            return index, value, space, NO_TEXT, NO_NAMES
        named = order.tolist()
        return (index, value, space, *self._named(
            [keys[k] for k in named],
            [values[k] if strings is not None and strings[k] else None for k in named]))

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
            ok = (y is None or -F32_MAX <= label <= F32_MAX) and 0 <= weight <= F32_MAX
        except (TypeError, ValueError, OverflowError):  # not a number, or beyond float
            ok = False
        if not ok:
            _refuse_label_or_weight(y, weight)
        k = len(x)
        # (one key: itemgetter would not give a tuple)
        if self.names or not 2 <= k < FAST_FEATURES:
            return None
        # a key equal to an int key of _plain may be a float or a bool (1.0, True): another
        # feature (a check that only dicts with int keys pay)
        if self._numbered and not FAST_KEY_TYPES.issuperset(map(type, x)):
            return None
        batch, pack, memory = self._fast[k]
        try:  # (a number beyond float32 is packed as inf)
            pack(memory, 0, label, weight, *x.values(), 1.0, *itemgetter(*x)(self._plain),
                 self._constant_slot)
        except (KeyError, TypeError, OverflowError, struct.error):
            return None
        return batch

    def batch(self, x: dict, y=None, weight: float = 1.0) -> ExampleBatch:
        """The example ``x`` (label ``y``, importance ``weight``, which :meth:`fast` has checked)
        as a batch of one, the general way."""
        index, value, space, text, audit = self._features(x)
        k = len(index)
        return self._one(self._offsets[k] if k < len(self._offsets)
                         else np.array([0, k], dtype=np.int64), index, value, space, text, audit,
                         self._label_row(y, weight))


def _refuse_label_or_weight(y, weight) -> None:
    """The OlearnError saying which of a dict example's label and weight :meth:`DictExamples.fast`
    refused: the label, unless it is a number within float32's range."""
    try:
        label_ok = y is None or abs(float(y)) <= F32_MAX
    except (TypeError, ValueError, OverflowError):
        label_ok = False
    what, number, need = (("label y", y, "a number") if not label_ok
                          else ("weight", weight, "a number >= 0"))
    raise OlearnError(f"learn_one: the {what} {reprlib.repr(number)} must be {need} within "
                      f"float32's range (±3.4e38)")
