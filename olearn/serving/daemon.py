"""--daemon: a prediction server on TCP that answers each example line as ``-t -i -p`` would.

One thread runs a ``selectors`` loop over the listening socket and every client. Each round of
the loop gathers the complete lines all readable clients sent, parses them as one block with
the learner's parser, predicts (and without -t learns) them in one kernel call, formats them
as -p does and hands each client the answers to its lines, in its order. One thread
serialises the kernel calls on the one shared model without a lock, learning sees the lines in
the order the server read them, and a round costs one parse and one kernel call however many
lines and clients it holds (threads would only contend for the model: the learner's state is
updated by every example).

A line with a parse warning (a label that is not a number, a malformed feature, ...) is
answered with ``error: <what is wrong>`` and neither predicted nor learned, as is a line the
learner refuses (with --oaa, a label that is not a class; the batch is then answered half by
half to find it); an empty line is no example and gets no answer, as in VW and in -p files.

What one client can cost the others is bounded (the --daemon_* options). Memory: a connection
buffers at most one line of --daemon_max_line bytes and one read, and a line with more than
--daemon_max_features features after interactions, counted before anything is learned, is an
error answer instead of a kernel call that exhausts memory. Time: each round reads at most one
chunk from each ready client (a client flooding lines waits its turn as every other), a kernel
call takes the lines of clients until they pass MAX_ROUND bytes, a connection idle beyond
--daemon_idle_timeout is closed, and when all --daemon_max_clients slots are taken a new
connection takes the slot of the one idle the longest. Whatever else fails while answering
(memory, say) is the failing line's error answer and the server goes on: the block is answered
again half by half to find that line, which is safe while nothing was learned (before the
kernel call, under -t, or before the call scored its first example). A kernel call that fails
after learning part of its lines answers each of them with the error instead of learning them
twice.
"""
from __future__ import annotations

import errno
import os
import selectors
import signal
import socket
import sys
import time
from collections import OrderedDict

import numpy as np

from olearn.data import formats, sources
from olearn.data.batch import ExampleBatch
from olearn.engine.learner import OnlineLearner
from olearn.engine.passes import run_passes
from olearn.errors import OlearnError
from olearn.features.interactions import expanded_sizes
from olearn.options.config import Config
from olearn.outputs.report import TABLE_HEADER, Console, warning_text

READ_SIZE = 1 << 16    # bytes read from a client at a time (at most the line limit: _Client.take)
MAX_PENDING = 4 << 20  # bytes of answers a client has not read; beyond it its reads pause
MAX_ROUND = 4 << 20    # bytes of lines in one kernel call (its parsed arrays are a few times more)
MAX_MESSAGE = 200      # characters of an error message (its token can be a whole line)
BACKLOG = 128
# accept()'s failures for want of descriptors or memory (others: one connection's own failure)
OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
SOURCE = "<daemon>"
ERROR = "error: "


def too_long(limit: int) -> str:
    """The answer to a line longer than ``limit`` bytes (--daemon_max_line)."""
    return f"{ERROR}line longer than {limit} bytes; skipped\n"


def _failure(exc: Exception) -> str:
    """What went wrong answering a line, in one line of at most MAX_MESSAGE characters."""
    if isinstance(exc, OlearnError):
        text = exc.message
    elif isinstance(exc, MemoryError):
        text = "out of memory answering this line"
    else:
        text = f"internal error: {type(exc).__name__}: {exc}"
    return " ".join(text.split())[:MAX_MESSAGE]


class _Split(Exception):
    """A block with more parse warnings than the parser records: answered half by half."""


class _Client:
    """One connection: the start of a line still to come, answers not yet sent, and when it
    last sent or read anything (``time.monotonic()``)."""

    def __init__(self, sock: socket.socket, max_line: int, now: float):
        self.sock = sock
        self.max_line = max_line
        self.partial = bytearray()
        self.skipping = False  # inside a line longer than max_line, dropped up to its newline
        self.answers = bytearray()
        self.eof = False
        self.events = selectors.EVENT_READ
        self.last = now

    def take(self, data: bytes) -> list[bytes | str]:
        """What ``data`` (at most READ_SIZE and max_line bytes) completes, in order: whole
        lines (bytes) or the error answer (str) of a line longer than max_line."""
        items: list[bytes | str] = []
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if self.skipping:
                if newline < 0:
                    return items
                self.skipping = False
                items.append(too_long(self.max_line))
            elif newline < 0:
                self.partial += data[start:]
                if len(self.partial) > self.max_line:
                    self.partial.clear()
                    self.skipping = True
                return items
            elif len(self.partial) + newline - start > self.max_line:
                self.partial.clear()
                items.append(too_long(self.max_line))
            else:
                # only the first line joins the partial one: the others fit in one read
                last = data.rindex(b"\n")
                items.append(bytes(self.partial) + data[start:last + 1])
                self.partial = bytearray(data[last + 1:])
                return items
            start = newline + 1

    def finish(self) -> list[bytes | str]:
        """At the end of the client's input: its last line, even without a newline."""
        self.eof = True
        return self.take(b"\n") if self.partial or self.skipping else []


def _nth_newline(text: bytes, n: int) -> int:
    return int(np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 10)[n - 1])


class Server:
    """The listening socket, the clients and the learner they share."""

    def __init__(self, learner: OnlineLearner, console: Console):
        config = learner.config
        self.learner = learner
        self.console = console
        self.format = formats.detect(config.format, SOURCE, b"")  # auto: VW text
        self.max_line = config.daemon_max_line
        self.read_size = min(READ_SIZE, self.max_line)
        self.max_features = config.daemon_max_features
        self.idle_timeout = config.daemon_idle_timeout
        self.max_clients = config.daemon_max_clients
        self.lines = 0  # lines answered, VW's line counter across all clients
        self.bytes = 0
        self.stopping = False
        try:
            family, _, _, _, address = socket.getaddrinfo(
                config.host, config.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
            self.listener = socket.create_server(address, family=family, backlog=BACKLOG)
        except OSError as exc:
            raise OlearnError(f"--daemon cannot listen on {config.host}:{config.port}: "
                              f"{exc.strerror or exc}") from None
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        # in the order of their last activity: the one idle the longest first
        self.clients: OrderedDict[socket.socket, _Client] = OrderedDict()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self._wakeup_read, self._wakeup_write = socket.socketpair()
        for end in (self._wakeup_read, self._wakeup_write):
            end.setblocking(False)
        self.selector.register(self._wakeup_read, selectors.EVENT_READ)

    # -- answers ---------------------------------------------------------------------------

    def warm(self) -> None:
        """Load the kernels before the first client: an empty line is no example, so nothing
        is learned or counted."""
        self.answer(b"\n", 1)
        self.lines = 0

    def answer(self, text: bytes, n_lines: int) -> tuple[bytes, np.ndarray]:
        """The answers to ``n_lines`` whole lines, and where each line's answer ends in them
        (an empty line's is empty). Good lines are predicted, and learned unless -t."""
        if n_lines == 0:
            return b"", np.zeros(0, dtype=np.int64)
        try:
            good, errors = self._checked(text, n_lines)
        except Exception as exc:  # nothing learned yet: find the failing line
            return self._halves(text, n_lines, exc)
        saved = self.learner.stats.copy(), self.learner.state.copy()
        lines = good.lines
        try:
            out = self._learned(good)
        except Exception as exc:
            # nothing learned under -t, nor before the call scored its first example (the loop
            # counts an example in the statistics before it learns it, kernel/loop.py)
            if self.learner.config.testonly or np.array_equal(self.learner.stats, saved[0],
                                                               equal_nan=True):
                self.learner.stats[:], self.learner.state[:] = saved
                return self._halves(text, n_lines, exc)
            errors.update(dict.fromkeys(lines.tolist(), self._failed(exc, len(lines))))
            lines, out = lines[:0], b""
        self.lines += n_lines
        return self._merged(out, lines, errors, n_lines)

    def _checked(self, text: bytes, n_lines: int) -> tuple[ExampleBatch, dict[int, bytes]]:
        """The block parsed and checked, before any learning: its examples to learn, and the
        error answers of the other lines, by line of the block.
        Raises where the block must be answered half by half."""
        batch = self.learner.parse_block(sources.Block(text, SOURCE, self.bytes), self.format)
        batch.pass_line = self.lines
        if batch.n_warnings > len(batch.warnings) and n_lines > 1:
            raise _Split()  # more warnings than the parser records
        good, errors = batch, {}
        if batch.n_warnings:  # the first warning of each line that has any
            bad, rows = np.unique(batch.warnings[:, 0], return_index=True)
            errors = {line: f"{ERROR}{warning_text(batch, row, fatal=True)[1][:MAX_MESSAGE]}\n"
                      .encode() for line, row in zip(bad.tolist(), rows.tolist())}
            good = batch.subset(~np.isin(batch.lines, bad))
        # a line the learner refuses (--oaa: a label not a class) raises an OlearnError
        for message in self.learner.warnings(good, strict=False):
            self.console.print(message)
        wide = self._too_wide(good)
        if wide:
            errors.update(wide)
            good = good.subset(~np.isin(good.lines, list(wide)))
        return good, errors

    def _too_wide(self, batch: ExampleBatch) -> dict[int, bytes]:
        """The error answers of the examples with more than --daemon_max_features features
        after interactions, by line of the block."""
        sizes = expanded_sizes(batch.offsets, batch.namespace,
                               self.learner.expansion_terms(batch))
        return {int(batch.lines[e]): (
            f"{ERROR}{sizes[e]} features after interactions, more than {self.max_features} "
            "(--daemon_max_features); skipped\n").encode()
            for e in np.flatnonzero(sizes > self.max_features).tolist()}

    def _learned(self, good: ExampleBatch) -> bytes:
        """Predict, and learn unless -t, the checked examples: their answer lines. In pieces
        (OnlineLearner.pieces), so that --oaa's K scores per line do not size one prediction
        array by the block's line count."""
        out = []
        for piece in self.learner.pieces(good):
            preds = self.learner.new_predictions(piece)
            for row in self.learner.learn(piece, preds):
                self.console.print(self.learner.table_row(row, piece, preds))
            out.append(bytes(self.learner.prediction_lines(preds, piece, False)))
        return b"".join(out)

    def _failed(self, exc: Exception, n_lines: int) -> bytes:
        """The error answer of ``n_lines`` lines whose answering failed with ``exc``, said on
        the console too when it is not the user's error."""
        message = f"{ERROR}{_failure(exc)}"
        if not isinstance(exc, OlearnError):
            self.console.print(f"[warning] --daemon: {n_lines} line(s) answered '{message}'")
        return f"{message}\n".encode()

    def _halves(self, text: bytes, n_lines: int, exc: Exception) -> tuple[bytes, np.ndarray]:
        """:meth:`answer` of a block whose answering failed with ``exc`` and learned nothing:
        the answers of its halves, down to the single line whose error it is."""
        if n_lines == 1:
            message = self._failed(exc, 1)
            self.lines += 1
            return message, np.array([len(message)])
        half = n_lines // 2
        cut = _nth_newline(text, half) + 1
        first, first_ends = self.answer(text[:cut], half)
        rest, rest_ends = self.answer(text[cut:], n_lines - half)
        return first + rest, np.concatenate([first_ends, rest_ends + len(first)])

    @staticmethod
    def _merged(out: bytes, lines: np.ndarray, errors: dict[int, bytes], n_lines: int
                ) -> tuple[bytes, np.ndarray]:
        """The answer lines ``out`` of the examples of ``lines`` (lines of the block), with the
        ``errors`` of other lines in their places, and where each line's answer ends."""
        starts = np.zeros(len(lines) + 1, dtype=np.int64)
        starts[1:] = np.flatnonzero(np.frombuffer(out, dtype=np.uint8) == 10) + 1
        sizes = np.zeros(n_lines, dtype=np.int64)
        sizes[lines] = np.diff(starts)
        if not errors:
            return out, np.cumsum(sizes)
        bad = np.array(sorted(errors), dtype=np.int64)
        messages = [errors[line] for line in bad.tolist()]
        sizes[bad] = [len(message) for message in messages]
        pieces, done = [], 0
        for cut, message in zip(starts[np.searchsorted(lines, bad)].tolist(), messages):
            pieces += [out[done:cut], message]
            done = cut
        pieces.append(out[done:])
        return b"".join(pieces), np.cumsum(sizes)

    def _answer_round(self, pending: list[tuple[_Client, list[bytes | str]]]) -> None:
        """Answer every client's lines of this round: one parse and one kernel call for each
        MAX_ROUND bytes of them."""
        group: list[tuple[_Client, list[bytes | str]]] = []
        size = 0
        for client, items in pending:
            group.append((client, items))
            size += sum(len(item) for item in items if isinstance(item, bytes))
            if size >= MAX_ROUND:
                self._answer_group(group)
                group, size = [], 0
        if group:
            self._answer_group(group)

    def _answer_group(self, pending: list[tuple[_Client, list[bytes | str]]]) -> None:
        """Answer these clients' lines with one parse and one kernel call."""
        texts = [item for _, items in pending for item in items if isinstance(item, bytes)]
        counts = [text.count(b"\n") for text in texts]
        answers, ends = self.answer(b"".join(texts), sum(counts))
        counts.reverse()
        line = 0
        for client, items in pending:
            for item in items:
                if isinstance(item, str):
                    client.answers += item.encode()
                    continue
                lo = int(ends[line - 1]) if line else 0
                line += counts.pop()
                client.answers += answers[lo:int(ends[line - 1])]

    # -- connections -----------------------------------------------------------------------

    def _accept(self) -> None:
        """Take waiting connections into free slots. When every slot is taken, take one a
        round in the slot of the connection idle the longest, so that idle connections never
        lock a new client out, and each connection taken has its lines read before the next
        one comes in."""
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self.console.print(f"[warning] --daemon: accept failed: {exc.strerror or exc}")
                if exc.errno in OUT_OF_RESOURCES and self.clients:  # free one for next round
                    self._drop(next(iter(self.clients.values())))
                return
            full = len(self.clients) >= self.max_clients
            if full:
                self._drop(next(iter(self.clients.values())))
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # answers are small
            self.clients[sock] = _Client(sock, self.max_line, time.monotonic())
            self.selector.register(sock, selectors.EVENT_READ)
            if full:
                return

    def _drop(self, client: _Client) -> None:
        if self.clients.pop(client.sock, None) is None:
            return
        self.selector.unregister(client.sock)
        client.sock.close()

    def _active(self, client: _Client) -> None:
        """The client sent or read something: it is the last to be idle."""
        client.last = time.monotonic()
        self.clients.move_to_end(client.sock)

    def _expire(self) -> float | None:
        """Close the connections idle for longer than --daemon_idle_timeout; the seconds until
        the next one would be (None: no connection, or no timeout)."""
        if not self.idle_timeout:
            return None
        now = time.monotonic()
        while self.clients:
            oldest = next(iter(self.clients.values()))
            wait = oldest.last + self.idle_timeout - now
            if wait > 0:
                return wait
            self._drop(oldest)
        return None

    def _receive(self, client: _Client) -> list[bytes | str]:
        try:
            data = client.sock.recv(self.read_size)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:  # reset by the client
            self._drop(client)
            return []
        self._active(client)
        self.bytes += len(data)
        return client.take(data) if data else client.finish()

    def _send(self, client: _Client) -> None:
        if not client.answers or client.sock not in self.clients:
            return
        try:
            sent = client.sock.send(client.answers)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # the client went away: its answers have no reader
            self._drop(client)
            return
        if sent:
            self._active(client)
        del client.answers[:sent]

    def _watch(self, client: _Client) -> None:
        """Read while the client has not ended and reads its answers; write while answers
        wait; once it has ended and has every answer, close it."""
        if client.sock not in self.clients:
            return
        events = ((selectors.EVENT_READ if not client.eof and len(client.answers) < MAX_PENDING
                   else 0) | (selectors.EVENT_WRITE if client.answers else 0))
        if not events:
            self._drop(client)
        elif events != client.events:
            self.selector.modify(client.sock, events)
            client.events = events

    # -- the loop --------------------------------------------------------------------------

    def _stop(self, signum: int, frame: object) -> None:
        self.stopping = True  # the loop ends after its round, leaving the model consistent

    def serve(self, pass_no: int) -> int:
        """Answer clients until SIGTERM or SIGINT; returns the lines answered (run_passes'
        one pass)."""
        previous = {signum: signal.signal(signum, self._stop)
                    for signum in (signal.SIGTERM, signal.SIGINT)}
        wakeup = signal.set_wakeup_fd(self._wakeup_write.fileno(), warn_on_full_buffer=False)
        try:
            while not self.stopping:
                pending = []
                touched = []
                waiting = False  # a new connection: accepted after this round's lines
                for key, events in self.selector.select(self._expire()):
                    if key.fileobj is self.listener:
                        waiting = True
                    elif key.fileobj is self._wakeup_read:
                        self._wakeup_read.recv(READ_SIZE)
                    else:
                        client = self.clients[key.fileobj]
                        touched.append(client)
                        if events & selectors.EVENT_WRITE:
                            self._send(client)
                        if events & selectors.EVENT_READ and client.sock in self.clients:
                            items = self._receive(client)
                            if items:
                                pending.append((client, items))
                if pending:
                    self._answer_round(pending)
                    self.console.progress(self.bytes, self.lines)
                    for client, _ in pending:
                        self._send(client)
                for client in touched:
                    self._watch(client)
                if waiting:
                    self._accept()
        finally:
            signal.set_wakeup_fd(wakeup)
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self.close()
        return self.lines

    def close(self) -> None:
        """Close every client, the listening socket and the selector (once)."""
        if self.listener.fileno() < 0:
            return
        for client in list(self.clients.values()):
            self._drop(client)
        self.selector.close()
        for sock in (self.listener, self._wakeup_read, self._wakeup_write):
            sock.close()


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(text + "\n")
    except OSError as exc:
        raise OlearnError(f"cannot write: {exc.strerror or exc}", path) from None


def run(config: Config) -> None:
    """Serve ``config``'s model (a fresh one without -i) until SIGTERM or SIGINT, then save -f
    as a run does after its last pass, and print the summary."""
    learner = OnlineLearner.start(config)
    config = learner.config
    console = Console(config.quiet, None)
    if config.num_children is not None:
        console.print("[warning] --num_children ignored: one process serves every client, "
                      "from one model")
    server = Server(learner, console)
    written = []
    try:
        for path, value in ((config.pid_file, os.getpid()), (config.port_file, server.port)):
            if path:
                _write(path, str(value))
                written.append(path)
        server.warm()
        # even with --quiet: with --port 0 the port shows nowhere else but in --port_file
        sys.stderr.write(f"daemon listening on {config.host}:{server.port}\n")
        sys.stderr.flush()
        console.print(TABLE_HEADER.rstrip("\n"))
        done = run_passes(learner, server.serve, learner.save)
    finally:
        server.close()
        console.close()
        for path in written:
            try:
                os.remove(path)
            except OSError:  # removed already: nothing to clean up
                pass
    console.print(learner.summary(done.passes, done.holdout_loss))
