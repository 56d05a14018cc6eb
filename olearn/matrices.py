"""Numeric input for the Python API: a numpy array or a scipy.sparse matrix straight into
example batches, without text (so float64 values are not rounded through decimal text).

Column j is feature ``j`` of namespace ``f``, hashed as the svmlight reader hashes it, so a
matrix loaded from an svmlight file (with its own indices: ``zero_based=True``) learns what
``olearn -d file.svm`` learns. Zeros are no features (as VW drops them); every row gets the
constant unless --noconstant.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from olearn.batch import ExampleBatch
from olearn.errors import OlearnError
from olearn.hashing import CONSTANT_HASH, CONSTANT_NAMESPACE, M32, hash_bytes, namespace_hash
from olearn.io.layout import AUDIT_COLS
from olearn.io.svmlight import SVM_NAMESPACE

ROWS_PER_BATCH = 8192
SOURCE = "<matrix>"


def is_matrix(data: object) -> bool:
    """Whether ``data`` is a 2-d numeric numpy array or a scipy.sparse matrix."""
    if isinstance(data, np.ndarray):
        return data.ndim == 2 and data.dtype.kind in "biuf"
    return hasattr(data, "tocsr") and hasattr(data, "nnz")


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
    """CSR of ``X`` without its zeros: row pointers, columns, values, rows, columns."""
    if isinstance(X, np.ndarray):
        rows, cols = np.nonzero(X)  # row-major: each row's columns in order
        values = X[rows, cols].astype(np.float64)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=X.shape[0]))])
    else:
        csr = X.tocsr(copy=True)
        csr.sum_duplicates()
        csr.eliminate_zeros()
        indptr, cols, values = csr.indptr, csr.indices, csr.data.astype(np.float64)
    if not np.isfinite(values.astype(np.float32)).all():
        raise OlearnError("X holds NaN or infinite values (or beyond float32)", SOURCE)
    return indptr.astype(np.int64), cols.astype(np.int64), values, X.shape[0], X.shape[1]


def _vector(v, n: int, what: str) -> np.ndarray:
    array = np.asarray(v, dtype=np.float64).reshape(-1) if v is not None else None
    if array is not None and (len(array) != n or not np.isfinite(array).all()):
        raise OlearnError(f"{what}: {n} finite numbers expected, one per row of X", SOURCE)
    return array


def batches(X, y, sample_weight, config) -> Iterator[ExampleBatch]:
    """The rows of ``X`` as batches of examples: labels ``y`` (None: unlabeled), importances
    ``sample_weight`` (None: 1; must be >= 0)."""
    indptr, cols, values, n, d = _rows(X)
    labels = _vector(y, n, "y")
    weights = _vector(sample_weight, n, "sample_weight")
    if weights is not None and (weights < 0).any():
        raise OlearnError("sample_weight: importances must be >= 0", SOURCE)
    index_of = column_indices(d, config)
    constant = 0 if config.noconstant else 1
    for start in range(0, n, ROWS_PER_BATCH):
        end = min(start + ROWS_PER_BATCH, n)
        m = end - start
        lo, hi = indptr[start], indptr[end]
        offsets = np.concatenate([[0], np.cumsum(np.diff(indptr[start:end + 1]) + constant)])
        features = np.ones(offsets[-1], dtype=bool)
        features[offsets[1:] - 1] = constant == 0  # each row's last slot: its constant
        index = np.full(offsets[-1], CONSTANT_HASH & config.mask, dtype=np.uint32)
        value = np.ones(offsets[-1], dtype=np.float32)
        namespace = np.full(offsets[-1], CONSTANT_NAMESPACE, dtype=np.uint8)
        index[features] = index_of[cols[lo:hi]]
        value[features] = values[lo:hi]
        namespace[features] = SVM_NAMESPACE[0]
        numbers = np.zeros((m, 3), dtype=np.float32)
        numbers[:, 0] = labels[start:end] if labels is not None else np.nan
        numbers[:, 1] = weights[start:end] if weights is not None else 1.0
        yield ExampleBatch(np.empty(0, dtype=np.uint8), SOURCE, start, numbers,
                           np.full((m, 2), -1, dtype=np.int64), np.arange(m, dtype=np.int64),
                           offsets.astype(np.int64), index, value, namespace,
                           np.empty((0, AUDIT_COLS), dtype=np.int64),
                           np.empty((0, 4), dtype=np.int64), 0, 0, start, m)
