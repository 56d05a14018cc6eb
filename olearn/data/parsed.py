"""Shared pieces of the numba parsers: their bundles, feature and warning records."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

# What the per-line parsers write, for a block (parse.parse_block's buffers): per example its
# label, importance and initial value (``numbers``) and tag span (``tags``); per feature its
# index, value, namespace index and, with --audit, name spans (``audit``); the warnings; with
# cost-sensitive labels or multilabels (data/labels.py), example e's classes and costs at
# ``cost_offsets[e]:cost_offsets[e+1]`` of ``cost_class``/``cost_value`` (else all empty).
Parsed = namedtuple("Parsed", ["numbers", "tags", "index", "value", "namespace", "audit",
                               "warns", "cost_offsets", "cost_class", "cost_value"])

# How names become indices: the mask, the seed, whether numbers are hashed as strings
# (--hash all), and the default namespace's hash (VW text) or namespace f's (svmlight).
Hashing = namedtuple("Hashing", ["mask", "seed", "hash_all", "ns_hash"])

# Warning codes recorded by the parsers; report.py turns them into messages.
W_NOT_FLOAT = 1       # a label token that is not a number (read as 0)
W_TOO_MANY = 2        # more than 3 label tokens (example left unlabeled)
W_MALFORMED = 3       # a malformed feature or namespace (rest of the line dropped)
W_BAD_VALUE = 4       # a NaN or infinite feature value (feature dropped)
W_BAD_SCALE = 5       # a NaN or infinite namespace scale (scale 1)
W_BAD_IMPORTANCE = 6  # negative, NaN or infinite importance (example not learned)
W_SVM_TOKEN = 7       # an svmlight token that is not name:value (token skipped)
W_BAD_LABEL = 8       # a NaN or infinite label (example left unlabeled)
W_UNKNOWN_NAME = 9    # a label name --named_labels does not list (class 0)
W_BAD_COST = 10       # a cost that is not a finite number (the class predicted only)
W_NOT_INT = 11        # a class of a multilabel that is not a whole number (read as 0)
W_MULTILABEL = 12     # more than one token in a multilabel (example left unlabeled)
# Malformed CSV (VW ends its input there): these end the run (``FATAL``).
W_CSV_EMPTY = 13      # an empty line
W_CSV_CELLS = 14      # a line whose cells are not as many as the header's columns
W_CSV_UNCLOSED = 15   # a quoted cell without its closing quote
W_CSV_QUOTE = 16      # a quote inside a quoted cell that is neither doubled nor closing
FATAL = (W_CSV_EMPTY, W_CSV_CELLS, W_CSV_UNCLOSED, W_CSV_QUOTE)
# --interact (features/interact.py), after parsing
W_INTERACT_ANCHOR = 17  # a namespace's first value is not 1 (example learned as it is)
W_INTERACT_ORDER = 18   # offsets from the anchor that fall (later features left out)

AUDIT_COLS = 6  # name start/end, string value start/end, namespace name start/end


@njit(cache=True, nogil=True, inline="always")
def is_blank(c: int) -> bool:
    return c == 32 or c == 9


@njit(cache=True, nogil=True)
def add_warning(warns: np.ndarray, nw: int, line: int, code: int, start: int, end: int) -> int:
    """Record a warning (the first ``len(warns)`` are kept, all are counted)."""
    if nw < warns.shape[0]:
        warns[nw, 0] = line
        warns[nw, 1] = code
        warns[nw, 2] = start
        warns[nw, 3] = end
    return nw + 1


@njit(cache=True, nogil=True)
def check_label(ex_num, ex, k, warns, nw, line, s, e):
    """Label (k = 0) or importance (k = 1) token ``buf[s:e]`` just read into ``ex_num[ex, k]``:
    a NaN or infinite label leaves the example unlabeled; a negative importance is kept (VW adds
    it to the weight sums) and a NaN or infinite one becomes 0: neither is learned from."""
    value = ex_num[ex, k]
    if k == 0:
        if not np.isfinite(value):
            ex_num[ex, 0] = np.nan
            return add_warning(warns, nw, line, W_BAD_LABEL, s, e)
    elif not (value >= 0 and np.isfinite(value)):
        if not np.isfinite(value):
            ex_num[ex, 1] = 0.0
        return add_warning(warns, nw, line, W_BAD_IMPORTANCE, s, e)
    return nw


@njit(cache=True, nogil=True, inline="always")
def push_feature(out, nf, index, value, ns, name_s, name_e, sval_s, sval_e, ns_s, ns_e):
    """Append one feature to ``out`` (a :data:`Parsed`) as its ``nf``-th; capacity was reserved
    per line by the block loop."""
    f_idx, f_val, f_ns, f_audit = out.index, out.value, out.namespace, out.audit
    f_idx[nf] = index
    f_val[nf] = value
    f_ns[nf] = ns
    if f_audit.shape[0] > 0:
        f_audit[nf, 0] = name_s
        f_audit[nf, 1] = name_e
        f_audit[nf, 2] = sval_s
        f_audit[nf, 3] = sval_e
        f_audit[nf, 4] = ns_s
        f_audit[nf, 5] = ns_e
    return nf + 1
