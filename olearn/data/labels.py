"""A VW text line's label section, in numba: VW's simple labels (label, importance, initial
value), cost-sensitive labels (``class:cost ...``, --csoaa), the classes of --named_labels, and
the tag (grammar: docs/vw-reference.md §1.2 and §9).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from olearn.core.arrays import at
from olearn.core.option import text
from olearn.data.hashing import hash_name
from olearn.data.numbers import parse_float
from olearn.data.parsed import (
    W_BAD_COST,
    W_MULTILABEL,
    W_NOT_FLOAT,
    W_NOT_INT,
    W_TOO_MANY,
    W_UNKNOWN_NAME,
    add_warning,
    check_label,
)

QUOTE = 39
COLON = 58

LABEL_SIMPLE = 0  # label [importance [initial]]; with --named_labels the label is a name
LABEL_COSTS = 1   # class[:cost] ... (--csoaa)
LABEL_CLASSES = 2  # class,class,... (--multilabel_oaa)
LABEL_LDF = 3  # class[:cost] or ``shared``, a line of a multi-line example (--csoaa_ldf)
COMMA = 44
NO_COST = np.float32(3.4028235e38)  # VW's FLT_MAX: a class listed without a cost (test only)
SHARED_COST = -NO_COST  # VW's -FLT_MAX: the ``shared`` line of a multi-line example (class 0)
SHARED = np.frombuffer(b"shared", dtype=np.uint8)

OPTIONS = (
    text("--named_labels", model=True, parsing=True, metavar="NAMES",
         help="With --oaa or --csoaa: the classes' names, comma-separated (class k is the "
              "k-th name); labels are names, and -p writes names."),
)

# How a label section reads: its kind, and the names of --named_labels (their bytes one after
# another, ``name_ends[i]`` the end of class i + 1's name; none without the option).
Labels = namedtuple("Labels", ["kind", "names", "name_ends"])


def names_of(config) -> list[str] | None:
    """--named_labels' names, in order (empty items dropped, as VW); None without it."""
    if config.named_labels is None:
        return None
    return [name for name in config.named_labels.split(",") if name]


def check(config) -> None:
    """--named_labels: distinct names, as many as --oaa's classes (VW's checks); --csoaa takes
    any number (a class without a name is written empty)."""
    from olearn.errors import OptionError
    names = names_of(config)
    if names is None:
        return
    if not names:
        raise OptionError("--named_labels needs at least one name")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise OptionError(f"--named_labels: {repeated[0]!r} is listed more than once")
    if config.oaa is not None and config.oaa != len(names):
        raise OptionError(f"there are {len(names)} named labels: use that as --oaa's argument")


def label_kind(config) -> int:
    """How the configuration's labels read: lines of multi-line examples with --csoaa_ldf or
    --wap_ldf, cost-sensitive with --csoaa, lists of classes with --multilabel_oaa, else
    simple."""
    if config.csoaa_ldf is not None or config.wap_ldf is not None:
        return LABEL_LDF
    if config.csoaa is not None:
        return LABEL_COSTS
    return LABEL_CLASSES if config.multilabel_oaa is not None else LABEL_SIMPLE


def labels_of(kind: int, names: list[str] | None) -> Labels:
    """The parser's :data:`Labels` for a label kind and --named_labels' names (or None)."""
    encoded = [name.encode() for name in names or []]
    return Labels(kind, np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8).copy(),
                  np.cumsum([len(name) for name in encoded], dtype=np.int64))


@njit(cache=True, nogil=True, _nrt=False)
def _tokens(buf, s, bar, ex, ex_tag):
    """The label tokens of ``buf[s:bar]``: everything up to a first TAB is ignored, and a last
    token that starts with a quote or touches the ``|`` is the tag (written to ``ex_tag``).
    Returns the span holding the other tokens and their count."""
    for p in range(s, bar):
        if at(buf, p) == 9:
            s = p + 1
            break
    ntok = 0
    last_s = last_e = 0
    p = s
    while p < bar:
        while p < bar and at(buf, p) == 32:
            p += 1
        if p >= bar:
            break
        q = p
        while q < bar and at(buf, q) != 32:
            q += 1
        last_s = p
        last_e = q
        ntok += 1
        p = q
    end = bar
    if ntok > 0 and (at(buf, last_s) == QUOTE or last_e == bar):
        ex_tag[ex, 0] = last_s + 1 if at(buf, last_s) == QUOTE else last_s
        ex_tag[ex, 1] = last_e
        ntok -= 1
        end = last_s
    return s, end, ntok


@njit(cache=True, nogil=True, _nrt=False)
def _next_token(buf, p, end):
    """The span of the next blank-separated token at or after ``p``."""
    while p < end and at(buf, p) == 32:
        p += 1
    q = p
    while q < end and at(buf, q) != 32:
        q += 1
    return p, q


@njit(cache=True, nogil=True, _nrt=False)
def label_class(buf, s, e, labels, warns, nw, line):
    """The class a label names, ``buf[s:e]``: with --named_labels the name's 1-based position
    (0, with a warning, for a name not listed: VW's), else VW's hash of the name with seed 0
    (an all-digit name is its number). Returns (class, nw)."""
    ends = labels.name_ends
    if ends.shape[0] == 0:
        return hash_name(buf, s, e, 0, False), nw
    start = 0
    for k in range(ends.shape[0]):
        end = ends[k]
        if end - start == e - s:
            same = True
            for j in range(e - s):
                if labels.names[start + j] != at(buf, s + j):
                    same = False
                    break
            if same:
                return k + 1, nw
        start = end
    return 0, add_warning(warns, nw, line, W_UNKNOWN_NAME, s, e)


@njit(cache=True, nogil=True, _nrt=False)
def _label_number(buf, s, e, warns, nw, line):
    value, used = parse_float(buf, s, e)
    if used == 0:
        nw = add_warning(warns, nw, line, W_NOT_FLOAT, s, e)
        value = np.float32(0)
    return np.float32(value), nw


@njit(cache=True, nogil=True, _nrt=False)
def parse_label(buf, s, bar, ex, out, labels, warns, nw, line):
    """Label section ``buf[s:bar]`` into example ``ex`` of ``out`` (data/parsed.py
    ``Parsed``), as ``labels`` says: its tag, and its label, importance and initial value, or
    (cost-sensitive) its costs."""
    s, end, ntok = _tokens(buf, s, bar, ex, out.tags)
    return read_label(buf, s, end, ntok, ex, out, labels, warns, nw, line)


@njit(cache=True, nogil=True, _nrt=False)
def count_tokens(buf, s, e):
    """The number of space-separated tokens in ``buf[s:e]``."""
    ntok = 0
    p = s
    while p < e:
        p, q = _next_token(buf, p, e)
        if q > p:
            ntok += 1
        p = q
    return ntok


@njit(cache=True, nogil=True, _nrt=False)
def read_label(buf, s, end, ntok, ex, out, labels, warns, nw, line):
    """The ``ntok`` label tokens of ``buf[s:end]`` (no tag among them) into example ``ex`` of
    ``out``, as ``labels`` says: its label, importance and initial value, or its costs."""
    if labels.kind == LABEL_LDF and ntok == 1 and _is_shared(buf, s, end):
        n = out.cost_offsets[ex]
        out.cost_class[n] = 0
        out.cost_value[n] = SHARED_COST
        out.cost_offsets[ex + 1] = n + 1
        out.numbers[ex, 0] = 0.0
        out.numbers[ex, 1] = 1.0
        out.numbers[ex, 2] = 0.0
        return nw
    if labels.kind == LABEL_COSTS or labels.kind == LABEL_LDF:
        return _parse_costs(buf, s, end, ntok, ex, out, labels, warns, nw, line)
    if labels.kind == LABEL_CLASSES:
        return _parse_classes(buf, s, end, ntok, ex, out, warns, nw, line)
    ex_num = out.numbers
    ex_num[ex, 0] = np.nan
    ex_num[ex, 1] = 1.0
    ex_num[ex, 2] = 0.0
    if ntok > 3:
        return add_warning(warns, nw, line, W_TOO_MANY, s, end)
    p = s
    for k in range(ntok):
        p, q = _next_token(buf, p, end)
        if k == 0 and labels.name_ends.shape[0] > 0:
            value, nw = label_class(buf, p, q, labels, warns, nw, line)
            ex_num[ex, 0] = value
        else:
            value, nw = _label_number(buf, p, q, warns, nw, line)
            ex_num[ex, k] = value
            if k < 2:
                nw = check_label(ex_num, ex, k, warns, nw, line, p, q)
        p = q
    return nw


@njit(cache=True, nogil=True, _nrt=False)
def _is_shared(buf, s, end):
    """Whether the one label token of ``buf[s:end]`` is ``shared`` (VW's multi-line header)."""
    p, q = _next_token(buf, s, end)
    if q - p != SHARED.shape[0]:
        return False
    for k in range(q - p):
        if at(buf, p + k) != SHARED[k]:
            return False
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _parse_costs(buf, s, end, ntok, ex, out, labels, warns, nw, line):
    """Cost-sensitive tokens ``class[:cost]`` (VW's): a class without a cost, or with an empty
    one, is listed for prediction only (cost :data:`NO_COST`); a cost that is not a finite
    number is such a class too, with a warning. The example is unlabeled (its label NaN) when
    no class has a cost; its importance is 1 (VW's)."""
    first = out.cost_offsets[ex]
    n = first
    labeled = False
    p = s
    for _ in range(ntok):
        p, q = _next_token(buf, p, end)
        colon = p
        while colon < q and at(buf, colon) != COLON:
            colon += 1
        cls, nw = label_class(buf, p, colon, labels, warns, nw, line)
        cost = NO_COST
        if colon + 1 < q:
            value, used = parse_float(buf, colon + 1, q)
            if used == q - colon - 1 and np.isfinite(value):
                cost = np.float32(value)
                labeled = True
            else:
                nw = add_warning(warns, nw, line, W_BAD_COST, p, q)
        out.cost_class[n] = cls
        out.cost_value[n] = cost
        n += 1
        p = q
    out.cost_offsets[ex + 1] = n
    out.numbers[ex, 0] = 0.0 if labeled else np.nan
    out.numbers[ex, 1] = 1.0
    out.numbers[ex, 2] = 0.0
    return nw


@njit(cache=True, nogil=True, _nrt=False)
def _parse_classes(buf, s, end, ntok, ex, out, warns, nw, line):
    """A multilabel (VW's): one token of classes separated by commas, ``0,3,4`` (written to the
    cost arrays, each with cost 0); no token: unlabeled; more than one: unlabeled, with a
    warning. A class that is not a whole number is 0, with a warning."""
    n = out.cost_offsets[ex]
    if ntok == 1:
        p, q = _next_token(buf, s, end)
        while p < q:
            comma = p
            while comma < q and at(buf, comma) != COMMA:
                comma += 1
            if comma > p:
                value = np.int64(0)
                for k in range(p, comma):
                    c = at(buf, k)
                    if c < 48 or c > 57:
                        nw = add_warning(warns, nw, line, W_NOT_INT, p, comma)
                        value = 0
                        break
                    value = (value * 10 + (c - 48)) & 0xFFFFFFFF
                out.cost_class[n] = value
                out.cost_value[n] = 0.0
                n += 1
            p = comma + 1
    elif ntok > 1:
        nw = add_warning(warns, nw, line, W_MULTILABEL, s, end)
    out.cost_offsets[ex + 1] = n
    out.numbers[ex, 0] = 0.0 if n > out.cost_offsets[ex] else np.nan
    out.numbers[ex, 1] = 1.0
    out.numbers[ex, 2] = 0.0
    return nw
