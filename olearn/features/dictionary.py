"""``--dictionary [NS:]FILE`` and ``--dictionary_path DIR``: VW's dictionaries of features
(docs/usage.md, "Dictionaries"), added on the parse threads before --ignore/--keep.

A dictionary file has a word and VW features per line (``word f1:0.5 f2``); its default
namespace's features become the word's entry (the first line of a word wins, a line with no
such features adds nothing). For each feature of namespace NS (the default namespace without
``NS:``) whose name is a dictionary's word, the entry's features are added to the example, in
VW's dictionary namespace (index 135); a namespace with several dictionaries (or the same one
given twice) adds each one's entry, in the order given. As VW's parser orders them, the
dictionary namespace comes before the namespace of the example's first found word (when that
namespace recurs in a line, VW may put it later: olearn merges a recurring namespace first).

A file is looked for in each --dictionary_path directory, then ``.``, then each ``PATH``
directory (VW's order); ``.gz`` files are read decompressed. The files are read once, in
Python, into arrays (:class:`Dictionaries`); the lookup per feature is :func:`add_entries`,
from the names' spans (parsed for it).
"""
from __future__ import annotations

import dataclasses
import gzip
import os

import numpy as np
from numba import njit

from olearn.core.option import option_bytes, repeated
from olearn.data.batch import ExampleBatch, valid_offsets
from olearn.data.hashing import hash_bytes, hash_name
from olearn.errors import OlearnError

DICTIONARY_NAMESPACE = 135
DEFAULT_NAMESPACE = 32
# VW's hash of a dictionary file's bytes (its carriage returns skipped), for the scan line
FILE_HASH_START, FILE_HASH_MULTIPLIER = 5289374183516789128, 341789041

OPTIONS = (
    repeated("--dictionary", metavar="[NS:]FILE", model=True, parsing=True,
             help="Add, for each feature of namespace NS (default: the default namespace) "
                  "named by a word of dictionary FILE, that word's features; repeatable."),
    repeated("--dictionary_path", metavar="DIR", parsing=True,
             help="Look for --dictionary files in DIR (repeatable), before . and PATH."),
)


def file_hash(data: bytes) -> int:
    """VW's hash of a dictionary's (decompressed) bytes, carriage returns skipped."""
    h = FILE_HASH_START
    for byte in data.replace(b"\r", b""):
        h = (h * FILE_HASH_MULTIPLIER + byte) & 0xFFFFFFFFFFFFFFFF
    return h


def _find(name: str, paths: list[str]) -> str | None:
    """The first readable ``dir/name`` of the search directories (VW's find_in_path)."""
    for directory in paths:
        full = directory if directory.endswith("/") else directory + "/"
        full += name
        if os.path.isfile(full) and os.access(full, os.R_OK):
            return full
    return None


def _entries(data: bytes, parse_default) -> tuple[list[bytes], list[tuple]]:
    """A dictionary's words and their entries (index and value arrays), first line of a word
    winning; ``parse_default(lines)`` parses VW feature lines into each line's default
    namespace's features."""
    words, rests = [], []
    for line in data.split(b"\n"):
        stripped = line.lstrip(b" \t")
        end = next((i for i, c in enumerate(stripped) if c in b" \t\0"), len(stripped))
        if end == 0 or end == len(stripped) or stripped[end] == 0:
            continue  # no word, or no features after it
        words.append(stripped[:end])
        rests.append(b"|" + stripped[end:])
    parsed = parse_default(rests)
    seen: dict[bytes, int] = {}
    kept_words, kept = [], []
    for word, (index, value) in zip(words, parsed):
        if word in seen or len(index) == 0:
            continue
        seen[word] = len(kept)
        kept_words.append(word)
        kept.append((index, value))
    return kept_words, kept


@dataclasses.dataclass(frozen=True)
class Dictionaries:
    """Every dictionary's entries as arrays: entry j's word is ``words[word_start[j]:
    word_start[j + 1]]`` (hash ``word_hash[j]``), its features ``index``/``value`` rows
    ``entry_start[j]:entry_start[j + 1]``; dictionary d's entries are ``dict_start[d]:
    dict_start[d + 1]``, sorted by hash; namespace b looks in dictionaries ``lookups[
    ns_start[b]:ns_start[b + 1]]``. ``lines``: VW's messages on reading them."""

    words: np.ndarray
    word_start: np.ndarray
    word_hash: np.ndarray
    entry_start: np.ndarray
    index: np.ndarray
    value: np.ndarray
    dict_start: np.ndarray
    ns_start: np.ndarray
    lookups: np.ndarray
    lines: tuple[str, ...]

    @classmethod
    def of(cls, config, parse_default) -> "Dictionaries | None":
        """The configuration's dictionaries (None without --dictionary), read with
        ``parse_default`` (lines of VW features -> each line's default namespace's (index,
        value) arrays); OlearnError for a file not found or unreadable."""
        if not config.dictionary:
            return None
        paths = [p for p in config.dictionary_path if os.path.isdir(p)]
        paths += ["."] if os.path.isdir(".") else []
        paths += os.environ.get("PATH", "").split(":") if os.environ.get("PATH") else []
        loaded: dict[int, int] = {}  # file hash -> dictionary number (VW reads a file once)
        tables: list[tuple[list[bytes], list[tuple]]] = []
        per_namespace: list[list[int]] = [[] for _ in range(256)]
        lines: list[str] = []
        for argument in config.dictionary:
            raw = option_bytes(argument)
            ns, name = ((raw[0], argument[2:]) if len(raw) > 2 and raw[1:2] == b":"
                        else (DEFAULT_NAMESPACE, argument))
            path = _find(name, paths)
            if path is None:
                raise OlearnError(f"cannot find dictionary '{name}' in path; try adding "
                                  "--dictionary_path")
            try:
                with (gzip.open(path) if path.endswith(".gz") else open(path, "rb")) as f:
                    data = f.read()
            except (OSError, EOFError) as error:
                raise OlearnError(f"cannot read dictionary: {error}", path) from None
            h = file_hash(data)
            lines.append(f"scanned dictionary '{name}' from '{path}', hash={h:x}")
            if h not in loaded:
                loaded[h] = len(tables)
                tables.append(_entries(data, parse_default))
                count = len(tables[-1][0])
                lines.append(f"dictionary {name} contains {count} item"
                             + ("" if count == 1 else "s"))
            per_namespace[ns].append(loaded[h])
        return cls.build(tables, per_namespace, config.hash_seed, lines)

    @classmethod
    def build(cls, tables, per_namespace, seed: int, lines: list[str]) -> "Dictionaries":
        """The arrays of ``tables`` (per dictionary: words, entries) looked up by namespace as
        ``per_namespace`` says; words hashed with ``seed`` for the lookup."""
        words, hashes, entries = [], [], []
        dict_start = [0]
        for table_words, table_entries in tables:
            rows = sorted(range(len(table_words)),
                          key=lambda j: (_word_hash(table_words[j], seed), j))
            for j in rows:
                words.append(table_words[j])
                hashes.append(_word_hash(table_words[j], seed))
                entries.append(table_entries[j])
            dict_start.append(len(words))
        word_start = np.cumsum([0] + [len(w) for w in words], dtype=np.int64)
        entry_start = np.cumsum([0] + [len(i) for i, _ in entries], dtype=np.int64)
        return cls(
            np.frombuffer(b"".join(words) or b"\0", dtype=np.uint8).copy(), word_start,
            np.array(hashes, dtype=np.uint64), entry_start,
            np.concatenate([i for i, _ in entries] or [np.empty(0, np.uint32)]).astype(np.uint32),
            np.concatenate([v for _, v in entries] or [np.empty(0, np.float32)]).astype(np.float32),
            np.array(dict_start, dtype=np.int64),
            np.cumsum([0] + [len(d) for d in per_namespace], dtype=np.int64),
            np.array([d for ds in per_namespace for d in ds], dtype=np.int64), tuple(lines))

    def apply(self, batch: ExampleBatch, has_constant: bool, seed: int) -> ExampleBatch:
        """``batch`` with each example's dictionary features (parsed with name spans)."""
        offsets, index, value, namespace, audit = add_entries(
            (batch.offsets, batch.index, batch.value, batch.namespace, batch.audit),
            batch.text, self.tables(), seed, has_constant)
        return dataclasses.replace(batch, offsets=offsets, index=index, value=value,
                                   namespace=namespace, audit=audit)

    def tables(self) -> tuple:
        """The kernel's view of the arrays (:func:`add_entries`)."""
        return (self.words, self.word_start, self.word_hash, self.entry_start, self.index,
                self.value, self.dict_start, self.ns_start, self.lookups)


def _word_hash(word: bytes, seed: int) -> int:
    """A word's lookup hash: :func:`add_entries`'s of a name (its bytes, all hashed)."""
    return hash_bytes(word, seed, True)


@njit(cache=True, nogil=True)
def _tables_fit(tables) -> bool:
    """Whether the dictionary arrays fit each other (so no lookup reads outside them)."""
    words, word_start, word_hash, entry_start, index, value, dict_start, ns_start, lookups = tables
    n = word_hash.shape[0]
    if not (word_start.shape[0] == n + 1 and entry_start.shape[0] == n + 1
            and valid_offsets(word_start, words.shape[0])
            and valid_offsets(entry_start, min(index.shape[0], value.shape[0]))
            and valid_offsets(dict_start, n) and ns_start.shape[0] == 257
            and valid_offsets(ns_start, lookups.shape[0])):
        return False
    for j in range(lookups.shape[0]):
        if not 0 <= lookups[j] < dict_start.shape[0] - 1:
            return False
    for d in range(dict_start.shape[0] - 1):
        for j in range(dict_start[d] + 1, dict_start[d + 1]):
            if word_hash[j - 1] > word_hash[j]:
                return False
    return True


@njit(cache=True, nogil=True)
def _entry(tables, d, text, s, t, h):
    """Dictionary ``d``'s entry for the name ``text[s:t]`` of hash ``h``, or -1."""
    words, word_start, word_hash = tables[0], tables[1], tables[2]
    lo, hi = tables[6][d], tables[6][d + 1]
    while lo < hi:  # the first entry of hash >= h
        mid = (lo + hi) // 2
        if word_hash[mid] < h:
            lo = mid + 1
        else:
            hi = mid
    end = tables[6][d + 1]
    while lo < end and word_hash[lo] == h:
        a, b = word_start[lo], word_start[lo + 1]
        if b - a == t - s:
            same = True
            for i in range(t - s):
                if words[a + i] != text[s + i]:
                    same = False
                    break
            if same:
                return lo
        lo += 1
    return -1


@njit(cache=True, nogil=True)
def _found(k, batch, text, tables, seed, out, o):
    """Feature ``k``'s entries (one per dictionary of its namespace) written to ``out`` from
    row ``o`` (``out`` None-like when counting: a zero-row ``out``); returns the rows."""
    namespace, audit = batch[3], batch[4]
    entry_start, index, value, ns_start, lookups = tables[3], tables[4], tables[5], tables[7], \
        tables[8]
    b = namespace[k]
    s, t = audit[k, 0], audit[k, 1]
    if ns_start[b] == ns_start[b + 1] or s < 0 or t <= s:  # (no name: the constant's)
        return o
    h = hash_name(text, s, t, seed, True)
    new_index, new_value, new_namespace, new_audit = out
    for j in range(ns_start[b], ns_start[b + 1]):
        entry = _entry(tables, lookups[j], text, s, t, h)
        if entry < 0:
            continue
        for i in range(entry_start[entry], entry_start[entry + 1]):
            if new_index.shape[0] > 0:
                new_index[o] = index[i]
                new_value[o] = value[i]
                new_namespace[o] = DICTIONARY_NAMESPACE
                new_audit[o, :] = -1
            o += 1
    return o


@njit(cache=True, nogil=True)
def add_entries(batch, text, tables, seed, has_constant):
    """New CSR arrays (and name spans) of ``batch`` (offsets, index, value, namespace, name
    spans) with each example's dictionary features before the namespace of its first found
    word (its constant stays last); ValueError for arrays that do not fit each other."""
    offsets, index, value, namespace, audit = batch
    nf = index.shape[0]
    if not (valid_offsets(offsets, min(nf, value.shape[0], namespace.shape[0]))
            and audit.shape[0] >= nf and audit.shape[1] >= 6 and _tables_fit(tables)):
        raise ValueError("add_entries: arrays that do not fit each other")
    for k in range(nf):
        if audit[k, 0] >= 0 and not audit[k, 0] <= audit[k, 1] <= text.shape[0]:
            raise ValueError("add_entries: a name outside the text")
    counting = (np.empty(0, np.uint32), np.empty(0, np.float32), np.empty(0, np.uint8),
                np.empty((0, audit.shape[1]), np.int64))
    extra = 0
    for k in range(nf):
        extra = _found(k, batch, text, tables, seed, counting, extra)
    size = nf + extra
    n = offsets.shape[0] - 1
    out = (np.empty(size, dtype=np.uint32), np.empty(size, dtype=np.float32),
           np.empty(size, dtype=np.uint8), np.empty((size, audit.shape[1]), dtype=np.int64))
    new_index, new_value, new_namespace, new_audit = out
    new_offsets = np.zeros(n + 1, dtype=np.int64)
    o = 0
    for e in range(n):
        lo, hi = offsets[e], offsets[e + 1]
        own = hi - 1 if has_constant and hi > lo else hi
        first = own  # the run (of one namespace) holding the first found word
        k = lo
        while k < own and first == own:
            if _found(k, batch, text, tables, seed, counting, 0) > 0:
                first = k
                while first > lo and namespace[first - 1] == namespace[k]:
                    first -= 1
            k += 1
        for k in range(lo, hi):
            if k == first:
                for j in range(first, own):
                    o = _found(j, batch, text, tables, seed, out, o)
            new_index[o] = index[k]
            new_value[o] = value[k]
            new_namespace[o] = namespace[k]
            new_audit[o] = audit[k]
            o += 1
        new_offsets[e + 1] = o
    return new_offsets, new_index, new_value, new_namespace, new_audit
