"""The example cache (``-c``, ``--cache_file``): parsed, hashed examples in a binary file.

A cache lets later passes, and later runs, skip reading and parsing the text. Its header records
what its contents depend on: each source's name, size and modification time, and the options
that change parsing and hashing. A cache whose header differs from the current run's is rebuilt
(VW rebuilds a cache made with fewer bits). It is written through a temporary file and renamed
when complete, so a cache file is never half-written.

Layout: ``MAGIC``, a little-endian uint32 header length, a JSON header (space-padded), then one
record per batch: a fixed-size record header (counts, line numbers, checksum), then the batch's
arrays. Every array starts at a multiple of 8 bytes of the file, so a record is memory-mapped and
its arrays used in place: no copy and no fresh memory to fault in, which on this kind of machine
cost more than the learning (vs reading into new buffers: 2 ms instead of 50 ms on kddcup99).
The checksum is the sum of the record's 64-bit words (4 ms there, CRC-32 25 ms): any damage
within one word, and any random damage but with probability 2^-64, changes it.
"""
from __future__ import annotations

import itertools
import json
import os
import struct
from typing import BinaryIO, Iterator

import numpy as np

from olearn.core.atomic import AtomicOutput
from olearn.data import sources
from olearn.data.batch import ExampleBatch
from olearn.data.parsed import AUDIT_COLS
from olearn.errors import OlearnError, OptionError

MAGIC = b"OLEARN-CACHE\n"
VERSION = 3
# examples, features, tag bytes, source number, costs (cost-sensitive labels), whether the
# labels are cost-sensitive, first line (in source), first line (in pass), lines, checksum of
# the arrays; 56 bytes, so the arrays that follow stay 8-byte aligned
_RECORD = struct.Struct("<IIIIIIqqqQ")


def _fields(n: int, nf: int, nt: int, nc: int, costs: int) -> list[tuple[str, np.dtype, tuple]]:
    """Name, dtype and shape of each array of a record, in file order."""
    return [("numbers", np.dtype("<f4"), (n, 3)), ("lines", np.dtype("<u4"), (n,)),
            ("offsets", np.dtype("<u4"), (n + 1,)), ("tags", np.dtype("<i4"), (n, 2)),
            ("index", np.dtype("<u4"), (nf,)), ("value", np.dtype("<f4"), (nf,)),
            ("namespace", np.dtype("u1"), (nf,)), ("text", np.dtype("u1"), (nt,)),
            ("cost_offsets", np.dtype("<u4"), (n + 1 if costs else 0,)),
            ("cost_class", np.dtype("<u4"), (nc,)), ("cost_value", np.dtype("<f4"), (nc,))]


def _record_fields(counts: tuple) -> list[tuple[str, np.dtype, tuple]]:
    """:func:`_fields` of a record header's counts (``_RECORD``)."""
    n, nf, nt, _, nc, costs = counts[:6]
    return _fields(n, nf, nt, nc, costs)


def _padded(size: int) -> int:
    return (size + 7) & ~7


def _checksum(payload: np.ndarray) -> int:
    """The sum, modulo 2^64, of the 64-bit words of a record's arrays (a multiple of 8 bytes)."""
    return int(np.add.reduce(payload.view("<u8"), dtype=np.uint64))


def fingerprint(config, paths: list[str]) -> dict:
    """What a cache for ``paths`` under ``config`` depends on."""
    described = []
    for path in paths:
        if path == "-":
            described.append(["stdin", None, None])
        else:
            st = os.stat(path)
            described.append([path, st.st_size, st.st_mtime_ns])
    return {"version": VERSION, "sources": described,
            "options": config.parsing_options()}


def default_path(paths: list[str]) -> str:
    """``-c`` names the cache after the first data file, as VW does (``train.vw.cache``)."""
    if not paths or paths[0] == "-":
        raise OptionError("-c names the cache after the data file, and the data is "
                          f"{'stdin' if paths else 'none (--no_stdin)'}: name it with "
                          "--cache_file")
    return paths[0] + ".cache"


def _corrupted(path: str, what: str) -> OlearnError:
    return OlearnError(f"corrupted cache file (rebuild it with -k): {what}", path)


def _read_header(stream: BinaryIO, path: str) -> dict:
    """The JSON header of a cache file, with :func:`fingerprint`'s structure (OlearnError when
    the file is not a cache or its header is malformed)."""
    start = stream.read(len(MAGIC) + 4)
    if len(start) < len(MAGIC) + 4 or not start.startswith(MAGIC):
        raise OlearnError("not an olearn cache file (rebuild it with -k)", path)
    (length,) = struct.unpack("<I", start[len(MAGIC):])
    end = len(start) + length
    # the writer pads the header so that records, which are mapped in place, start aligned
    if end % 8 or end > os.fstat(stream.fileno()).st_size:
        raise _corrupted(path, "header length")
    try:
        header = json.loads(stream.read(length))
    except (ValueError, RecursionError):  # RecursionError: nested too deep for the parser
        raise _corrupted(path, "unreadable header") from None
    if not (type(header) is dict and set(header) == {"version", "sources", "options"}
            and type(header["version"]) is int and type(header["sources"]) is list
            and all(type(s) is list and len(s) == 3 and type(s[0]) is str
                    and all(x is None or type(x) is int for x in s[1:])
                    for s in header["sources"])
            and type(header["options"]) is dict):  # other options: a cache to rebuild
        raise _corrupted(path, "malformed header")
    if header["version"] != VERSION:
        raise OlearnError(f"cache file of format {header['version']}, not {VERSION} "
                          "(rebuild it with -k)", path)
    return header


def matches(path: str, wanted: dict) -> bool:
    """Whether ``path`` is a complete cache made from the same sources with the same options."""
    try:
        with open(path, "rb") as stream:
            return _read_header(stream, path) == wanted
    except (OSError, OlearnError):
        return False


class Writer:
    """Writes batches to a new cache; the file appears only on :meth:`commit`."""

    def __init__(self, path: str, header: dict):
        self._out = AtomicOutput(path)
        self._sources = [name for name, _, _ in header["sources"]]
        text = json.dumps(header).encode()
        text += b" " * (_padded(len(MAGIC) + 4 + len(text)) - (len(MAGIC) + 4 + len(text)))
        self._out.write(MAGIC + struct.pack("<I", len(text)) + text)

    def add(self, batch: ExampleBatch) -> None:
        n, nf = len(batch), len(batch.index)
        tags, text = _compact_tags(batch)
        arrays = {"numbers": batch.numbers, "lines": batch.lines, "offsets": batch.offsets,
                  "tags": tags, "index": batch.index, "value": batch.value,
                  "namespace": batch.namespace, "text": text,
                  "cost_offsets": batch.cost_offsets, "cost_class": batch.cost_class,
                  "cost_value": batch.cost_value}
        costs = int(len(batch.cost_offsets) > 0)
        nc = len(batch.cost_class)
        payload = bytearray()
        for name, dtype, _ in _fields(n, nf, len(text), nc, costs):
            data = np.ascontiguousarray(arrays[name], dtype=dtype).tobytes()
            payload += data + bytes(_padded(len(data)) - len(data))
        self._out.write(_RECORD.pack(n, nf, len(text), self._sources.index(batch.source), nc,
                                     costs, batch.first_line, batch.pass_line, batch.n_lines,
                                     _checksum(np.frombuffer(payload, dtype=np.uint8))))
        self._out.write(payload)

    def commit(self) -> None:
        self._out.commit()

    def discard(self) -> None:
        self._out.discard()


def _compact_tags(batch: ExampleBatch) -> tuple[np.ndarray, np.ndarray]:
    """The batch's tags as spans of a buffer holding only the tags' bytes (numpy, no loop
    per example)."""
    tags = np.full((len(batch), 2), -1, dtype=np.int64)
    tagged = np.flatnonzero(batch.tags[:, 0] >= 0)
    starts, ends = batch.tags[tagged, 0], batch.tags[tagged, 1]
    lengths = ends - starts
    new_ends = np.cumsum(lengths)
    new_starts = new_ends - lengths
    tags[tagged, 0], tags[tagged, 1] = new_starts, new_ends
    # byte i of the buffer comes from the text at its tag's start + its offset in the tag
    total = int(new_ends[-1]) if len(tagged) else 0
    source = np.repeat(starts - new_starts, lengths) + np.arange(total)
    return tags, np.ascontiguousarray(batch.text[source], dtype=np.uint8)


def read(path: str, mask: int) -> Iterator[ExampleBatch]:
    """The batches of a cache file, in order (arrays in the dtypes the parser produces).

    A cache is untrusted input, and its checksum no proof: every count, offset, index, span,
    line number and value is checked (:func:`_record_problem`) before use. A damaged cache is
    an error, never a wild write or a wrong example.
    """
    with open(path, "rb") as stream:
        header = _read_header(stream, path)
        names = [sources.display_name("-" if name == "stdin" else name)
                 for name, _, _ in header["sources"]]
        empty_audit = np.empty((0, AUDIT_COLS), dtype=np.int64)
        no_warnings = np.empty((0, 4), dtype=np.int64)
        size = os.fstat(stream.fileno()).st_size
        lines_before = 0  # lines of the pass in the records so far
        for record in itertools.count():
            head = stream.read(_RECORD.size)
            if not head:
                return
            if len(head) < _RECORD.size:
                raise OlearnError("truncated cache file (rebuild it with -k)", path)
            counts = _RECORD.unpack(head)
            source, _, _, first_line, pass_line, n_lines, checksum = counts[3:]
            fields = _record_fields(counts)
            sizes = [_padded(dtype.itemsize * int(np.prod(shape))) for _, dtype, shape in fields]
            start, length = stream.tell(), sum(sizes)
            if start + length > size:
                raise OlearnError("truncated cache file (rebuild it with -k)", path)
            # read, not memory-mapped: a file truncated by another process while mapped
            # would end this one with SIGBUS instead of an error
            buf = np.empty(length, dtype=np.uint8)
            if stream.readinto(memoryview(buf)) != length:
                raise OlearnError("truncated cache file (rebuild it with -k)", path)
            if _checksum(buf) != checksum:
                raise _corrupted(path, f"record {record}: checksum mismatch")
            arrays, at = {}, 0
            for (name, dtype, shape), size_of in zip(fields, sizes):
                count = int(np.prod(shape))
                arrays[name] = buf[at:at + dtype.itemsize * count].view(dtype).reshape(shape)
                at += size_of
            problem = _record_problem(counts, arrays, mask, len(names), lines_before)
            if problem:
                raise _corrupted(path, f"record {record}: {problem}")
            lines_before += n_lines
            yield ExampleBatch(arrays["text"], names[source], first_line, arrays["numbers"],
                               arrays["tags"].astype(np.int64), arrays["lines"].astype(np.int64),
                               arrays["offsets"].astype(np.int64), arrays["index"],
                               arrays["value"], arrays["namespace"], empty_audit, no_warnings, 0,
                               stream.tell(), pass_line, n_lines,
                               cost_offsets=arrays["cost_offsets"].astype(np.int64),
                               cost_class=arrays["cost_class"],
                               cost_value=arrays["cost_value"])


def _record_problem(counts: tuple, arrays: dict, mask: int, n_sources: int,
                    lines_before: int) -> str | None:
    """What is wrong with a record, or None. Whole-array numpy checks, no loop per example: a
    cache is read at memory speed (these cost ~1 ms on kddcup99's 59 MB). The arrays' sizes are
    the record's counts (n, nf, nt); records follow each other in the pass (line numbers) and
    hold what the parser produces: non-decreasing offsets and lines, spans inside the text,
    indices within the mask, finite numbers (a label may be NaN: unlabeled), costs in order."""
    n, nf, nt, source, nc, costs, first_line, pass_line, n_lines, _ = counts
    if source >= n_sources:
        return "source number out of range"
    # (a record's lines are numbered in uint32)
    if pass_line != lines_before or not 0 <= first_line <= pass_line or not 0 <= n_lines < 1 << 32:
        return "line numbers out of sequence"
    offsets, lines, tags = arrays["offsets"], arrays["lines"], arrays["tags"]
    if offsets[0] != 0 or offsets[-1] != nf or np.any(offsets[1:] < offsets[:-1]):
        return "feature offsets out of order or range"
    if n and (lines[-1] >= n_lines or np.any(lines[1:] < lines[:-1])):
        return "example lines out of order or range"
    if nf and arrays["index"].max() > mask:
        return "feature index out of range"
    # an untagged example's span is (-1, -1), as one int64 -1: one pass in the usual cases
    untagged = tags.view("<i8")[:, 0] == -1
    if not untagged.all():
        starts, ends = tags[~untagged, 0], tags[~untagged, 1]
        if starts.min() < 0 or np.any(ends < starts) or ends.max() > nt:
            return "tag outside the text"
    numbers = arrays["numbers"]
    if not np.isfinite(numbers).all() and (np.isinf(numbers[:, 0]).any()
                                           or not np.isfinite(numbers[:, 1:]).all()):
        return "infinite label, or non-finite importance or initial value"  # NaN: unlabeled
    if not np.isfinite(arrays["value"]).all():
        return "non-finite feature value"
    if costs > 1:
        return "malformed cost flag"
    cost_offsets = arrays["cost_offsets"]
    if costs and (cost_offsets[0] != 0 or cost_offsets[-1] != nc
                  or np.any(cost_offsets[1:] < cost_offsets[:-1])):
        return "cost offsets out of order or range"
    if not costs and nc:
        return "costs without cost-sensitive labels"
    if not np.isfinite(arrays["cost_value"]).all():
        return "non-finite cost"
    return None
