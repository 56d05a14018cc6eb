"""CSV input (--csv): the options, and a file's header turned into the per-line parser's bundle.

A CSV file's first line (or --csv_header) names its columns: ``_label``, ``_tag``, or a
feature ``[namespace|]name``. The mapping of column to namespace, hash and scale is computed
here once per source, in Python, and reaches the numba parser (data/csv_text.py) as arrays of a
:data:`Csv` bundle; VW's rules are in docs/vw-reference.md (CSV input).
"""
from __future__ import annotations

import bisect
from collections import namedtuple

import numpy as np

from olearn.core.option import Option, flag, text
from olearn.data.hashing import hash_bytes, namespace_hash


class CsvError(ValueError):
    """Malformed CSV header or option text (the caller names the file or option)."""


def separator(value: str) -> str:
    """--csv_separator's character: one, or ``\\t`` for a tab; not ``"``, ``|`` or ``:``
    (VW's)."""
    if value == "\\t":
        value = "\t"
    if len(value.encode()) != 1:
        raise CsvError(f"takes one character, not {value!r}")
    if value in "\"|:":
        raise CsvError(f"cannot be {value!r} (reserved)")
    return value


def _scales_text(value: str) -> str:
    namespace_scales(value)
    return value


OPTIONS = (
    flag("--csv", parsing=True, help="Read the data as CSV: a header line names the columns "
         "(_label, _tag, or [namespace|]feature)."),
    Option(("--csv_separator",), str, ",", "CSV: the field separator, one character (\\t for "
           "a tab; not \" | or :).", parsing=True, metavar="CHAR", show_default=True,
           convert=separator),
    flag("--csv_no_file_header", parsing=True,
         help="CSV: the files have no header line (then --csv_header names the columns)."),
    text("--csv_header", parsing=True, metavar="NAMES",
         help="CSV: the columns' names, comma-separated, instead of each file's header line."),
    text("--csv_ns_value", parsing=True, metavar="NS:SCALE,...", convert=_scales_text,
         help="CSV: scale the numbers of a namespace by a factor (e.g. a:0.5,b:2,:8; an "
              "empty name: the default namespace)."),
)

COL_FEATURE = 0
COL_LABEL = 1   # the first _label column
COL_TAG = 2     # the first _tag column
COL_NONE = 3    # a later _label or _tag column: read by no one (VW's)

QUOTE = ord('"')
TRIMMED = b"\r\n\xef\xbb\xbf\f\v"  # bytes VW trims from both ends of a line before splitting

# A source's columns as the per-line parser reads them: the separator; whether the block's
# first line is the file's header (skipped); per column its kind, namespace index, namespace
# hash, feature-name hash (seeded by the namespace's), namespace group (VW's anonymous
# features count per group), scale, and the spans of its feature and namespace names in
# ``text`` past the block's bytes (namespace -1, -1 for the default one); the feature columns
# in VW's order; ``text``: the block's bytes then the header's names, where quoted cells are
# unescaped in place; ``cells``: the line's cells (scratch, data/csv_text.py).
Csv = namedtuple("Csv", ["sep", "skip", "kind", "order", "ns", "ns_hash", "name_hash", "group",
                         "scale", "spans", "text", "cells"])


def split_cells(line: bytes, sep: int, quotes: bool = True) -> list[bytes]:
    """A line's cells by VW's rules: the bytes of :data:`TRIMMED` trimmed from its ends; with
    ``quotes``, a cell opening with ``"`` runs to a ``"`` before a separator or the end, with
    ``""`` inside for a quote (unescaped here; the outer quotes stay)."""
    line = line.strip(TRIMMED)
    cells: list[bytes] = []
    p = 0
    while True:
        if quotes and p < len(line) and line[p] == QUOTE:
            q = p + 1
            while True:
                if q >= len(line):
                    raise CsvError("an unclosed quote")
                if line[q] == QUOTE:
                    if q + 1 < len(line) and line[q + 1] == QUOTE:
                        q += 2
                        continue
                    if q + 1 == len(line) or line[q + 1] == sep:
                        q += 1
                        break
                    raise CsvError(f"an unescaped quote at byte {q + 1}")
                q += 1
            cells.append(b'"' + line[p + 1:q - 1].replace(b'""', b'"') + b'"')
        else:
            q = line.find(bytes([sep]), p)
            q = len(line) if q < 0 else q
            cells.append(line[p:q])
        if q >= len(line):
            return cells
        p = q + 1


def unquoted(cell: bytes) -> bytes:
    """A cell without its outer quotes, when it has a pair (VW's)."""
    return cell[1:-1] if len(cell) > 1 and cell[0] == QUOTE and cell[-1] == QUOTE else cell


def namespace_scales(value: str | None) -> dict[bytes, float]:
    """--csv_ns_value: ``ns:scale`` pairs, comma-separated (an empty ns: the default one)."""
    scales: dict[bytes, float] = {}
    if not value:
        return scales
    for k, pair in enumerate(split_cells(value.encode(), ord(","))):
        parts = split_cells(pair, ord(":"))
        try:
            if len(parts) != 2 or not parts[1]:
                raise ValueError
            scale = float(parts[1])
        except ValueError:
            raise CsvError(f"has a malformed pair {k + 1}: {pair.decode()!r}") from None
        if scale != scale:
            raise CsvError(f"has a NaN scale in pair {k + 1}")
        scales[parts[0]] = scale
    return scales


def check(config) -> None:
    """--csv_no_file_header needs --csv_header (VW's check; the values were checked by their
    options)."""
    from olearn.errors import OptionError
    if config.csv_no_file_header and not config.csv_header:
        raise OptionError("--csv_no_file_header needs --csv_header (the columns' names)")


# libstdc++'s std::hash<std::string> (_Hash_bytes, 64-bit) and unordered_map bucket policy:
# VW keeps a CSV header's namespaces in an unordered_map and adds them to an example in its
# iteration order, which these decide.
_M64 = (1 << 64) - 1
_MUL = (0xC6A4A793 << 32) + 0x5BD1E995
_FAST_BUCKETS = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)
_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79,
           83, 89, 97, 103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227,
           241, 257, 277, 293, 313, 337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661,
           709, 761, 823, 887, 953, 1031, 1109, 1187, 1277, 1361, 1451, 1543, 1657, 1777,
           1901, 2053, 2203, 2357, 2521, 2693, 2879, 3079, 3299, 3527, 3769, 4027, 4349, 4703,
           5087, 5503, 5953, 6427, 6949, 7517, 8123, 8783, 9497, 10273, 11113, 12011, 12983,
           14033, 15173, 16411, 17749, 19183, 20753, 22447, 24281, 26267, 28411, 30727, 33223,
           35933, 38873, 42043, 45481, 49201, 53201, 57557, 62233, 67307, 72817, 78779, 85229)


def _std_hash(name: bytes) -> int:
    def mix(v: int) -> int:
        return v ^ (v >> 47)

    n = len(name)
    h = (0xC70F6907 ^ (n * _MUL)) & _M64
    aligned = n & ~7
    for p in range(0, aligned, 8):
        h ^= (mix((int.from_bytes(name[p:p + 8], "little") * _MUL) & _M64) * _MUL) & _M64
        h = (h * _MUL) & _M64
    if n & 7:
        h = ((h ^ int.from_bytes(name[aligned:], "little")) * _MUL) & _M64
    return mix((mix(h) * _MUL) & _M64)


def _buckets_for(n: int) -> int:
    if n < len(_FAST_BUCKETS):
        return _FAST_BUCKETS[n]
    k = bisect.bisect_left(_PRIMES, n)
    if k == len(_PRIMES):
        raise CsvError("too many namespaces in the CSV header")
    return _PRIMES[k]


def namespace_order(names: list[bytes]) -> list[bytes]:
    """The iteration order of a libstdc++ ``unordered_map`` whose keys were inserted as
    ``names`` (first occurrences): a key goes first in its bucket's run of the node list, or
    first in the list if its bucket was empty; a rehash (past one key per bucket, to at
    least twice the buckets) re-inserts the list in order."""
    order: list[bytes] = []
    buckets, resize_at = 1, 0

    def insert(into: list[bytes], key: bytes) -> None:
        b = _std_hash(key) % buckets
        into.insert(next((i for i, o in enumerate(into) if _std_hash(o) % buckets == b), 0),
                    key)

    for key in dict.fromkeys(names):
        if len(order) + 1 > resize_at:
            wanted = max(len(order) + 1, 0 if resize_at else 11)
            if wanted >= buckets:
                buckets = _buckets_for(max(wanted + 1, 2 * buckets))
                old, order = order, []
                for o in old:
                    insert(order, o)
            resize_at = buckets
        insert(order, key)
    return order


class CsvHeader:
    """A source's columns (from its header line or --csv_header), ready to make each of its
    blocks' :data:`Csv` bundle."""

    def __init__(self, names: list[bytes], config, file_header: bool):
        self.sep = ord(config.csv_separator)
        self.file_header = file_header
        scales = namespace_scales(config.csv_ns_value)
        seed, hash_all = config.hash_seed, config.hash == "all"
        n = len(names)
        self.kind = np.full(n, COL_FEATURE, dtype=np.int8)
        self.ns = np.full(n, 32, dtype=np.uint8)
        self.ns_hash = np.zeros(n, dtype=np.int64)
        self.name_hash = np.zeros(n, dtype=np.int64)
        self.group = np.zeros(n, dtype=np.int64)
        self.scale = np.ones(n, dtype=np.float32)
        self.spans = np.full((n, 4), -1, dtype=np.int64)
        self.has_label = False
        text = bytearray()
        namespaces: dict[bytes, list[int]] = {}
        for k, cell in enumerate(names):
            name = unquoted(cell)
            if name in (b"_label", b"_tag"):
                kind = COL_LABEL if name == b"_label" else COL_TAG
                self.kind[k] = COL_NONE if (self.kind == kind).any() else kind
                self.has_label |= kind == COL_LABEL
                continue
            parts = name.split(b"|")
            if len(parts) > 2:
                raise CsvError(f"column {k + 1} ({name.decode(errors='replace')!r}) has more "
                               "than one '|'")
            ns, feature = (b"", parts[0]) if len(parts) == 1 else parts
            namespaces.setdefault(ns, []).append(k)
            ns_seed = namespace_hash(ns or b" ", seed, hash_all)
            self.ns[k] = ns[0] if ns else 32
            self.ns_hash[k] = ns_seed
            self.name_hash[k] = hash_bytes(feature, ns_seed, hash_all)
            self.scale[k] = scales.get(ns, 1.0)
            if ns:
                self.spans[k, 2:] = len(text), len(text) + len(ns)
                text += ns
            self.spans[k, :2] = len(text), len(text) + len(feature)
            text += feature
        order = namespace_order(list(namespaces))
        for g, ns in enumerate(order):
            self.group[namespaces[ns]] = g
        self.order = np.array([k for ns in order for k in namespaces[ns]], dtype=np.int64)
        self.names = np.frombuffer(bytes(text), dtype=np.uint8)

    def block(self, data: np.ndarray, first: bool) -> Csv:
        """The bundle for a block of this source's bytes (``first``: its first block, which
        starts with the header line when the file has one)."""
        text = np.concatenate((data, self.names))
        return Csv(self.sep, bool(first and self.file_header), self.kind, self.order, self.ns,
                   self.ns_hash, self.name_hash, self.group, self.scale, self.spans, text,
                   np.empty((len(self.kind), 4), dtype=np.int64))


def no_csv() -> Csv:
    """The bundle of a source that is not CSV (parse_block's one argument type for all)."""
    empty = np.empty(0, dtype=np.int64)
    return Csv(44, False, np.empty(0, dtype=np.int8), empty, np.empty(0, dtype=np.uint8),
               empty, empty, empty, np.empty(0, dtype=np.float32),
               np.empty((0, 4), dtype=np.int64), np.empty(0, dtype=np.uint8),
               np.empty((0, 4), dtype=np.int64))


def first_line(data: bytes) -> bytes:
    """A block's first line, without its line end and a UTF-8 byte-order mark."""
    line = bytes(data[:data.find(b"\n")] if b"\n" in data else data)
    return line.removeprefix(b"\xef\xbb\xbf").removesuffix(b"\r")


def header_of(config, data: bytes) -> CsvHeader:
    """The columns of a source whose first block is ``data``: --csv_header's, else its first
    line's. A first line that is the file's header must split into as many cells (VW's)."""
    sep = ord(config.csv_separator)
    file_header = not config.csv_no_file_header
    line = first_line(data)
    if file_header and not line:
        raise CsvError("line 1 is empty: the header line was expected")
    cells = split_cells(line, sep) if file_header else []
    if config.csv_header:
        names = split_cells(config.csv_header.encode(), ord(","), quotes=False)
        if file_header and len(cells) != len(names):
            raise CsvError(f"line 1 has {len(cells)} cells, but --csv_header names "
                           f"{len(names)}")
    else:
        names = cells
    return CsvHeader(names, config, file_header)
