"""Feature interactions (``-q``, ``--cubic``, ``--interactions``), hashed as VW hashes them.

A term is a sequence of namespace letters. For features with indices h1..hk (already masked)
the interaction's index is ``g ^ hk`` where ``g = F*h1`` and ``g = F*(g ^ hi)`` for each middle
term (F = 16777619, the FNV prime), reduced by the mask; its value is the product of the values.
A term with a repeated namespace is sorted so that the repeats are adjacent (as VW does), and
adjacent repeats (``-q aa``) give index-ordered combinations only (i <= j), unless
``--permutations``. Expanded per example in the kernel, never materialized for a batch.
"""
from __future__ import annotations

import itertools
import math
from typing import Callable

import numpy as np
from numba import njit

from olearn.core.option import flag, option_bytes, repeated
from olearn.data.batch import valid_batch, valid_offsets
from olearn.errors import OlearnError, OptionError

FNV = 16777619
WILDCARD = ":"  # in a term: every printable namespace seen so far (as VW: ' ' to '~')
PRINTABLE = range(32, 127)
# The most terms the ':' wildcards may expand to: the term table and every example's expansion
# grow with them (--cubic ::: over 95 namespaces is 147,440 terms; four ':' would be 3.6M).
MAX_WILDCARD_TERMS = 1 << 20
# the most features expanded_size counts: a product of namespace widths saturates there
SIZE_CAP = 1 << 61  # a sum of two stays within int64

OPTIONS = (
    repeated("-q", "--quadratic", metavar="AB", model=True,
             help="Interact the features of namespaces A and B (first letters). Repeatable."),
    repeated("--cubic", metavar="ABC", model=True,
             help="Interact the features of three namespaces. Repeatable."),
    repeated("--interactions", metavar="ABC...", model=True,
             help="Interactions of any length (2 or more namespaces). Repeatable."),
    flag("--permutations", model=True,
         help="Repeated namespaces give all ordered pairs, not only i <= j."),
    flag("--leave_duplicate_interactions",
         help="Keep interactions that repeat another up to order."),
)


def terms_of(quadratic: list[str], cubic: list[str], interactions: list[str],
             permutations: bool, leave_duplicates: bool, warn: Callable[[str], None]) -> list[str]:
    """The interaction terms of a run: validated, duplicates removed (with a warning, as VW),
    sorted by length then lexicographically (VW's order)."""
    terms = []
    for option, given, size in (("-q", quadratic, 2), ("--cubic", cubic, 3),
                                ("--interactions", interactions, None)):
        for term in given:
            if not isinstance(term, str):
                raise OptionError(f"{option} {term!r}: expected a string of namespace letters")
            given_as = term
            # a namespace is one byte, the first of its name: a letter per byte, as VW reads
            # its command line (UTF-8; \xHH escapes)
            term = option_bytes(term).decode("latin-1")
            if (size is not None and len(term) != size) or len(term) < 2:
                expected = f"{size} namespace letters" if size else "at least 2 namespace letters"
                raise OptionError(f"{option} {given_as!r}: expected {expected} (bytes)")
            if len(set(term)) < len(term) and WILDCARD not in term:
                term = "".join(sorted(term))  # VW groups repeated namespaces (abcb -> abbc)
            terms.append(term)
    kept, seen = [], set()
    for term in terms:
        key = term if permutations else "".join(sorted(term))
        if key in seen and not leave_duplicates:
            warn(f"[warning] duplicate interaction {term!r} removed "
                 "(--leave_duplicate_interactions keeps it)")
            continue
        seen.add(key)
        kept.append(term)
    return sorted(kept, key=lambda t: (len(t), t.encode("latin-1")))


def with_wildcards(terms: list[str], namespaces: list[int],
                   leave_duplicates: bool = False) -> list[str]:
    """The terms to expand once ``namespaces`` (bytes seen so far) are known: each wildcard
    term's combinations first, then the plain terms that are not one of them (VW's rules,
    checked with --audit):

    - one ``:`` is replaced in place by each namespace (``:a`` → ``aa ba ca``);
    - several ``:`` are replaced by combinations with repetition of that size (pairs in
      lexicographic order; longer ones by largest namespace first, each in decreasing order:
      ``aaa baa bba bbb caa cba ...``), followed by the term's letters (``a::`` → ``... bca``);
    - a combination met before in another order is dropped, and one with a repeated namespace
      is sorted (``baa`` → ``aab``).

    With ``leave_duplicates`` (--leave_duplicate_interactions) several ``:`` give every
    ordered tuple (``aa ab ba bb``) and nothing is dropped or sorted, as VW.
    """
    letters = [chr(ns) for ns in sorted(set(namespaces)) if ns in PRINTABLE]
    _check_size(terms, len(letters), leave_duplicates)
    if leave_duplicates:
        return ([combo for term in terms for combo in _wildcard_combinations(term, letters, True)]
                + [term for term in terms if WILDCARD not in term])
    out, seen = [], set()
    for term in terms:
        for combo in _wildcard_combinations(term, letters, False):
            key = "".join(sorted(combo))
            if key not in seen:
                seen.add(key)
                out.append(key if len(set(combo)) < len(combo) else combo)
    for term in terms:
        if WILDCARD not in term and "".join(sorted(term)) not in seen:
            out.append(term)
    return out


def _check_size(terms: list[str], letters: int, ordered: bool) -> None:
    """Refuse wildcards that would expand to more than MAX_WILDCARD_TERMS terms, before any is
    made."""
    count = 0
    for term in terms:
        wildcards = term.count(WILDCARD)
        if wildcards == 1:
            count += letters
        elif wildcards > 1:
            count += (letters ** wildcards if ordered
                      else math.comb(letters + wildcards - 1, wildcards))
    if count > MAX_WILDCARD_TERMS:
        raise OlearnError(f"the ':' interactions would expand to {count:,} terms over the "
                          f"{letters} namespaces seen (at most {MAX_WILDCARD_TERMS:,})")


def _wildcard_combinations(term: str, letters: list[str], ordered: bool):
    wildcards = term.count(WILDCARD)
    if wildcards == 1:
        for letter in letters:
            yield term.replace(WILDCARD, letter)
    elif wildcards > 1:
        fixed = term.replace(WILDCARD, "")
        if ordered:
            combos = itertools.product(letters, repeat=wildcards)
        elif wildcards == 2:
            combos = itertools.combinations_with_replacement(letters, 2)
        else:
            combos = _decreasing_combinations(letters, wildcards)
        for combo in combos:
            yield "".join(combo) + fixed


def _decreasing_combinations(letters: list[str], size: int):
    """Combinations with repetition, each in decreasing order, ordered by their largest
    namespace, then the next, ... (``aaa, baa, bba, bbb, caa, cba, ...``)."""
    if size == 0:
        yield ()
        return
    for i, top in enumerate(letters):
        for rest in _decreasing_combinations(letters[:i + 1], size - 1):
            yield (top,) + rest


def encode(terms: list[str]) -> np.ndarray:
    """Terms as a kernel table: row ``t`` is (length, namespace bytes..., padding)."""
    width = max((len(t) for t in terms), default=0)
    table = np.zeros((len(terms), width + 1), dtype=np.int64)
    for row, term in enumerate(terms):
        table[row, 0] = len(term)
        table[row, 1:len(term) + 1] = list(term.encode("latin-1"))
    return table


@njit(cache=True, nogil=True)
def valid_terms(terms):
    """Whether a term table is one :func:`encode` could have made of :func:`terms_of`'s terms:
    each row's length between 2 and the table's width - 1, its namespaces bytes. The expansion
    kernels index with these."""
    for t in range(terms.shape[0]):
        length = terms[t, 0]
        if length < 2 or length >= terms.shape[1]:
            return False
        for i in range(length):
            if terms[t, 1 + i] < 0 or terms[t, 1 + i] > 255:
                return False
    return True


@njit(cache=True, nogil=True, _nrt=False)
def expanded_size(namespace, lo, hi, terms, ranges):
    """Upper bound on the features of one example after expansion; fills ``ranges[ns]`` with
    the (start, end) of each namespace's contiguous run of features (absent: start = end).
    Trusts its arguments: callers check ``terms`` (:func:`valid_terms`) and ``lo``/``hi``."""
    for t in range(terms.shape[0]):
        for i in range(terms[t, 0]):
            ranges[terms[t, 1 + i], 0] = 0
            ranges[terms[t, 1 + i], 1] = 0
    for k in range(lo, hi):
        ns = namespace[k]
        if ranges[ns, 1] <= ranges[ns, 0]:
            ranges[ns, 0] = k
        ranges[ns, 1] = k + 1
    total = hi - lo
    for t in range(terms.shape[0]):
        count = 1
        for i in range(terms[t, 0]):
            ns = terms[t, 1 + i]
            width = ranges[ns, 1] - ranges[ns, 0]
            # saturated, not wrapped: a wrapped count would pass for a small one
            count = SIZE_CAP if width > 0 and count > SIZE_CAP // width else count * width
        total = min(total + count, SIZE_CAP)
    return total


@njit(cache=True, nogil=True)
def expanded_sizes(offsets, namespace, terms):
    """:func:`expanded_size` of each example of a batch (its CSR ``offsets``): what its
    expansion takes, checked before it is asked for."""
    if not (valid_terms(terms) and valid_offsets(offsets, namespace.shape[0])):
        raise ValueError("expanded_sizes: malformed offsets or interaction terms")
    ranges = np.zeros((256, 2), dtype=np.int64)
    sizes = np.empty(offsets.shape[0] - 1, dtype=np.int64)
    for e in range(sizes.shape[0]):
        sizes[e] = expanded_size(namespace, offsets[e], offsets[e + 1], terms, ranges)
    return sizes


# the rows of one chunk of an expansion too large to hold at once (8 bytes a row): an example
# whose interactions expand to more is learned chunk by chunk (kernel/example_features.py)
CHUNK_ROWS = 1 << 20


@njit(cache=True, nogil=True, _nrt=False)
def cursor_size(terms):
    """The entries of an expansion's cursor (:func:`expand_part`) for a term table."""
    return terms.shape[1] + 2


@njit(cache=True, nogil=True, _nrt=False)
def start_cursor(cursor, lo):
    """Set ``cursor`` to the start of the expansion of the batch's features from ``lo``."""
    cursor[0] = -1
    cursor[1] = lo


@njit(cache=True, nogil=True, _nrt=False)
def expand(index, value, lo, hi, terms, ranges, mask, permutations, out_idx, out_val, out_src,
           cursor):
    """Linear features, then every interaction of every term, into ``out_*``; returns the count.

    ``ranges`` comes from :func:`expanded_size`, and ``out_*`` hold at least as many rows as it
    returned (trusted, as there). With ``out_src`` non-empty, row n holds the batch positions of
    feature n's components (for --audit). ``cursor`` is scratch of :func:`cursor_size` entries
    (it allocates nothing: gd's scalar example loop runs without numba's runtime)."""
    start_cursor(cursor, lo)
    return expand_part(index, value, lo, hi, terms, ranges, mask, permutations, out_idx,
                       out_val, out_src, cursor)


@njit(cache=True, nogil=True, _nrt=False)
def expand_part(index, value, lo, hi, terms, ranges, mask, permutations, out_idx, out_val,
                out_src, cursor):
    """:func:`expand`, resumable: from where ``cursor`` stands (:func:`start_cursor`), as many
    rows as ``out_idx`` holds; returns the count written and leaves the cursor after them
    (:func:`expansion_done` tells when none are left). Trusts its arguments as :func:`expand`.

    The cursor is (the phase: -1 for the linear features, else the term; the next position of
    the innermost run, -1 before the term started; the term's other components' positions).
    The term's last namespace is the innermost loop: the hash and value of the other components
    are computed once per combination of them, and that loop (most of the work: all of it for
    ``-q``'s second namespace) is a plain run over one namespace's features, with no branch.
    """
    room = out_idx.shape[0]
    track = out_src.shape[0] > 0
    n = 0
    t = cursor[0]
    if t < 0:
        first = cursor[1]
        n = min(hi - first, room)
        for k in range(n):
            out_idx[k] = index[first + k]
            out_val[k] = value[first + k]
        if track:
            out_src[:n, :] = -1
            for k in range(n):
                out_src[k, 0] = first + k
        if first + n < hi:
            cursor[1] = first + n
            return n
        t = 0
        cursor[1] = -1
    pos = cursor[2:]
    while t < terms.shape[0]:
        length = terms[t, 0]
        last = length - 1
        # the innermost run starts at the previous component's position for an adjacent
        # repeat (index-ordered combinations), else at its namespace's first feature
        repeat_last = not permutations and terms[t, length] == terms[t, last]
        end = ranges[terms[t, length], 1]
        if cursor[1] < 0:
            empty = False
            for i in range(length):
                ns = terms[t, 1 + i]
                if ranges[ns, 1] <= ranges[ns, 0]:
                    empty = True
            if empty:
                t += 1
                continue
            for i in range(last):
                ns = terms[t, 1 + i]
                same = i > 0 and not permutations and ns == terms[t, i]
                pos[i] = pos[i - 1] if same else ranges[ns, 0]
            cursor[1] = pos[last - 1] if repeat_last else ranges[terms[t, length], 0]
        while True:
            g = FNV * np.int64(index[pos[0]])
            x = np.float32(value[pos[0]])
            for i in range(1, last):
                g = FNV * (g ^ np.int64(index[pos[i]]))
                x *= value[pos[i]]
            start = cursor[1]
            stop = min(end, start + room - n)
            for k in range(start, stop):
                out_idx[n + k - start] = (g ^ np.int64(index[k])) & mask
                out_val[n + k - start] = x * value[k]
            if track:
                for k in range(start, stop):
                    out_src[n + k - start, :] = -1
                    for i in range(last):  # (a slice copy would allocate)
                        out_src[n + k - start, i] = pos[i]
                    out_src[n + k - start, last] = k
            n += stop - start
            if stop < end:  # out of room: the next call goes on from here
                cursor[0] = t
                cursor[1] = stop
                return n
            i = last - 1
            while i >= 0:
                pos[i] += 1
                if pos[i] < ranges[terms[t, 1 + i], 1]:
                    break
                i -= 1
            if i < 0:
                break
            for j in range(i + 1, last):
                ns = terms[t, 1 + j]
                same = not permutations and ns == terms[t, j]
                pos[j] = pos[j - 1] if same else ranges[ns, 0]
            cursor[1] = pos[last - 1] if repeat_last else ranges[terms[t, length], 0]
        t += 1
        cursor[1] = -1
    cursor[0] = t
    return n


@njit(cache=True, nogil=True, _nrt=False)
def expansion_done(cursor, terms):
    """Whether :func:`expand_part` has written every row of the expansion."""
    return cursor[0] >= terms.shape[0]


@njit(cache=True, nogil=True)
def expand_example(index, value, namespace, lo, hi, terms, mask, permutations):
    """Example features ``lo:hi`` of a batch after interactions, with each one's components
    (rows of -1-padded batch positions): (indices, values, components), sized here. Checks its
    arguments (raises ValueError), so that any call stays inside its arrays."""
    if not (0 <= lo <= hi <= index.shape[0] and value.shape[0] >= hi
            and namespace.shape[0] >= hi):
        raise ValueError("expand_example: features lo:hi outside the batch's arrays")
    if not valid_terms(terms):
        raise ValueError("expand_example: malformed interaction terms")
    ranges = np.zeros((256, 2), dtype=np.int64)
    need = expanded_size(namespace, lo, hi, terms, ranges)
    idx = np.empty(need, dtype=np.uint32)
    val = np.empty(need, dtype=np.float32)
    src = np.empty((need, max(terms.shape[1], 1)), dtype=np.int64)
    n = expand(index, value, lo, hi, terms, ranges, mask, permutations, idx, val, src,
               np.empty(cursor_size(terms), dtype=np.int64))
    return idx[:n], val[:n], src[:n]


@njit(cache=True, nogil=True)
def unseen_features(offsets, index, value, namespace, terms, mask, permutations, seen):
    """Features of a batch (interactions included) whose index ``seen`` does not mark yet:
    their indices and component positions (rows of -1-padded batch positions). Marks them.
    Checks its arguments (raises ValueError), so that any call stays inside its arrays."""
    if not valid_batch(offsets, index, value, namespace, seen.shape[0] - 1):
        raise ValueError("unseen_features: malformed batch (offsets, lengths or indices)")
    if not valid_terms(terms) or mask >= seen.shape[0]:
        raise ValueError("unseen_features: malformed terms, or a mask beyond the seen table")
    ranges = np.zeros((256, 2), dtype=np.int64)
    width = max(terms.shape[1], 1)
    x_idx = np.empty(0, dtype=np.uint32)
    x_val = np.empty(0, dtype=np.float32)
    x_src = np.empty((0, width), dtype=np.int64)
    cursor = np.empty(cursor_size(terms), dtype=np.int64)
    new_idx = np.empty(64, dtype=np.uint32)
    new_src = np.empty((64, width), dtype=np.int64)
    count = 0
    for e in range(offsets.shape[0] - 1):
        need = expanded_size(namespace, offsets[e], offsets[e + 1], terms, ranges)
        if need > x_idx.shape[0]:
            x_idx = np.empty(max(need, 2 * x_idx.shape[0]), dtype=np.uint32)
            x_val = np.empty(x_idx.shape[0], dtype=np.float32)
            x_src = np.empty((x_idx.shape[0], width), dtype=np.int64)
        n = expand(index, value, offsets[e], offsets[e + 1], terms, ranges, mask, permutations,
                   x_idx, x_val, x_src, cursor)
        for i in range(n):
            j = x_idx[i]
            if seen[j]:
                continue
            seen[j] = True
            if count == new_idx.shape[0]:
                grown_idx = np.empty(2 * count, dtype=np.uint32)
                grown_src = np.empty((2 * count, width), dtype=np.int64)
                grown_idx[:count] = new_idx
                grown_src[:count] = new_src
                new_idx = grown_idx
                new_src = grown_src
            new_idx[count] = j
            new_src[count] = x_src[i]
            count += 1
    return new_idx[:count], new_src[:count]
