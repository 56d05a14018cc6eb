"""Byte sources: a path, a gzip file or standard input, cut into newline-aligned blocks.

Blocks are read ahead on a background thread (zlib and file reads release the GIL), so reading
and decompressing overlap parsing and learning. Memory is bounded by the block size and the
depth of the read-ahead queue, whatever the input's length.
"""
from __future__ import annotations

import os
import queue
import stat
import sys
import threading
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterable, Iterator

from olearn.errors import OlearnError

BLOCK_SIZE = 1 << 20
MAX_MULTILINE = 64 << 20  # the longest multi-line example read (VW holds one whole, too)
READ_SIZE = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class Block:
    """Whole lines of one source (a last line may lack its newline). Blocks carry no line
    numbers: the parser, which finds every newline anyway, counts each block's lines, and the
    blocks' consumer numbers them in order (counting them here cost a sixth of a long run's
    CPU)."""

    data: bytes | bytearray
    source: str
    bytes_read: int  # raw (compressed) bytes read from all sources so far
    starts_source: bool = True  # the first block of its source: its lines count from 0


def display_name(path: str) -> str:
    return "stdin" if path == "-" else path


def check_readable(paths: Iterable[str]) -> None:
    """Fail early, before any output, when a source cannot be opened. A FIFO is only checked
    for permission: opening it and closing it again would end its writer's stream."""
    for path in paths:
        if path == "-":
            continue
        try:
            fifo = stat.S_ISFIFO(os.stat(path).st_mode)
        except OSError:
            fifo = False  # _open names the problem
        if not fifo:
            _open(path).close()
        elif not os.access(path, os.R_OK):
            raise OlearnError("permission denied", path)


def _open(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except IsADirectoryError:
        raise OlearnError("is a directory, not a data file", path) from None
    except FileNotFoundError:
        raise OlearnError("no such file", path) from None
    except PermissionError:
        raise OlearnError("permission denied", path) from None
    except OSError as exc:
        raise OlearnError(f"cannot open: {exc.strerror}", path) from None


def _chunks(stream: BinaryIO, name: str, counter: list[int]) -> Iterator[bytes]:
    """Decompressed chunks of ``stream``; gzip (possibly multi-member) is detected by magic."""
    try:
        head = stream.read(READ_SIZE)
        if not head.startswith(GZIP_MAGIC):
            while head:
                counter[0] += len(head)
                yield head
                head = stream.read(READ_SIZE)
            return
        inflater = zlib.decompressobj(wbits=31)
        fed = False  # whether the current member has received any data
        raw = head
        while raw:
            counter[0] += len(raw)
            while raw:
                fed = True
                # bounded output per call: a highly compressed input must not balloon memory
                out = inflater.decompress(raw, READ_SIZE)
                if out:
                    yield out
                if inflater.eof:
                    raw = inflater.unused_data
                    inflater = zlib.decompressobj(wbits=31)
                    fed = False
                else:
                    raw = inflater.unconsumed_tail
            raw = stream.read(READ_SIZE)
        if fed and not inflater.eof:
            raise OlearnError("truncated gzip file (unexpected end of data)", name)
    except zlib.error as exc:
        raise OlearnError(f"corrupt gzip data ({exc})", name) from None
    except OSError as exc:
        raise OlearnError(f"read error: {exc.strerror or exc}", name) from None


def blocks_of(path: str, counter: list[int], block_size: int = BLOCK_SIZE,
              byte_range: tuple[int, int] | None = None,
              multiline: bool = False) -> Iterator[Block]:
    """Newline-aligned blocks of one source, or of the lines of a plain file that start in
    ``byte_range`` (its first line is line 0 of the blocks); ``multiline``: cut only after a
    blank line (a block holds whole multi-line examples, data/multiline.py)."""
    name = display_name(path)
    stream = _open(path)
    try:
        chunks = (_chunks(stream, name, counter) if byte_range is None
                  else _range_chunks(stream, name, counter, *byte_range))
        yield from _cut_blocks(chunks, name, counter, block_size, multiline)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _range_chunks(stream: BinaryIO, name: str, counter: list[int], start: int,
                  end: int) -> Iterator[bytes]:
    """The bytes of the lines of a plain file whose first byte lies in [start, end): a split
    of a file at any offsets gives every line to exactly one part."""
    try:
        if start > 0:
            stream.seek(start - 1)
            stream.readline()  # the rest of the line that started before ``start``
        at = stream.tell()
        chunk = b""
        while at < end:
            chunk = stream.read(min(READ_SIZE, end - at))
            if not chunk:
                return
            at += len(chunk)
            counter[0] += len(chunk)
            yield chunk
        if chunk and not chunk.endswith(b"\n"):  # finish the last line, begun before ``end``
            rest = stream.readline()
            counter[0] += len(rest)
            yield rest
    except OSError as exc:
        raise OlearnError(f"read error: {exc.strerror or exc}", name) from None


def _last_cut(pending: bytearray, multiline: bool) -> int:
    """Where a block may end in ``pending`` (the offset of its last newline; -1: nowhere): after
    the last line, or (``multiline``) after the last blank line."""
    if not multiline:
        return pending.rfind(b"\n")
    blank = pending.rfind(b"\n\n")
    blank_crlf = pending.rfind(b"\n\r\n")
    return max(blank + 1 if blank >= 0 else -1, blank_crlf + 2 if blank_crlf >= 0 else -1)


def _cut_blocks(chunks: Iterable[bytes], name: str, counter: list[int],
                block_size: int, multiline: bool = False) -> Iterator[Block]:
    """Each chunk's bytes are copied once, into the block that holds them: a block is the
    buffer it was gathered in, cut after its last newline, or (``multiline``) its last blank
    line (the rest starts the next buffer)."""
    pending = bytearray()
    first = True
    for chunk in chunks:
        pending += chunk
        if len(pending) < block_size:
            continue
        cut = _last_cut(pending, multiline)
        if cut < 0:
            if len(pending) > MAX_MULTILINE:
                raise OlearnError(f"no blank line in {MAX_MULTILINE >> 20} MB: a multi-line "
                                  "example (--csoaa_ldf, --wap_ldf) ends at a blank line", name)
            continue
        data, pending = pending, pending[cut + 1:]
        del data[cut + 1:]  # at the end: no bytes move
        yield Block(data, name, counter[0], first)
        first = False
    if pending:
        yield Block(pending, name, counter[0], first)


LINE_TYPES = (str, bytes)  # numpy's str_ and bytes_ are subclasses


def _not_a_line(item: object, number: int) -> TypeError:
    return TypeError(f"data item {number} is {type(item).__name__} {item!r:.40}; example lines "
                     "are str or bytes")


def blocks_of_lines(lines: Iterable[str | bytes], name: str = "<lines>",
                    block_size: int = BLOCK_SIZE, multiline: bool = False) -> Iterator[Block]:
    """Blocks of in-memory example lines (str or bytes, with or without their newline; an item
    holding newlines is several lines). An item of another type is a TypeError: in a list or
    tuple before the first block, so that nothing is learned; in other iterables when read."""
    if isinstance(lines, (list, tuple)):
        bad = next((i for i, text in enumerate(lines) if not isinstance(text, LINE_TYPES)), None)
        if bad is not None:
            raise _not_a_line(lines[bad], bad)
    pending: list[bytes] = []
    size = total = 0
    first = True
    for number, text in enumerate(lines):
        if isinstance(text, str):
            data = text.encode("utf-8", "surrogateescape")  # undoes a surrogateescape decode
        elif isinstance(text, bytes):
            data = text
        else:
            raise _not_a_line(text, number)
        if not data.endswith(b"\n"):
            data += b"\n"
        pending.append(data)
        size += len(data)
        if size >= block_size and (not multiline or data.strip(b"\r\n") == b""):
            total += size
            yield Block(b"".join(pending), name, total, first)
            pending, size, first = [], 0, False
    if pending:
        yield Block(b"".join(pending), name, total + size, first)


def all_blocks(paths: Iterable[str], block_size: int = BLOCK_SIZE,
               multiline: bool = False) -> Iterator[Block]:
    """Blocks of every source in order (``multiline``: see :func:`blocks_of`)."""
    counter = [0]
    for path in paths:
        yield from blocks_of(path, counter, block_size, multiline=multiline)


def count_lines(paths: Iterable[str]) -> int:
    """The number of lines of every source (a last line without its newline counts)."""
    return sum(block.data.count(b"\n") + (not block.data.endswith(b"\n"))
               for block in all_blocks(paths))


class ReadAhead:
    """Runs a block iterator (or any iterator) on a background thread, ``depth`` items
    ahead."""

    _DONE = object()

    def __init__(self, blocks: Iterator[Block], depth: int = 4):
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(blocks,), daemon=True)
        self._thread.start()

    def _run(self, blocks: Iterator[Block]) -> None:
        try:
            for block in blocks:
                if self._stop.is_set():
                    return
                self._queue.put(block)
            self._queue.put(self._DONE)
        except BaseException as exc:  # handed to the consumer, which raises it
            self._queue.put(exc)

    def __iter__(self) -> Iterator[Block]:
        while True:
            item = self._queue.get()
            if item is self._DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """Stop reading ahead. Not waited for: a thread blocked reading a pipe would hold up
        an interrupted run until the writer sends more (it is a daemon). Emptying the queue
        frees a thread waiting to queue a block, which then sees the stop before the next."""
        self._stop.set()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return


def read_ahead(items: Iterator, depth: int = 4) -> Iterator:
    """``items`` made on a background thread, ``depth`` ahead of the consumer (a
    :class:`ReadAhead` closed when the consumer stops)."""
    reader = ReadAhead(items, depth)
    try:
        yield from reader
    finally:
        reader.close()


def file_size(path: str) -> int | None:
    """Size in bytes of a regular file, for the progress bar; None for stdin or pipes."""
    if path == "-":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if os.path.isfile(path) else None
