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
"""
from __future__ import annotations

import os
import selectors
import signal
import socket
import sys

import numpy as np

from olearn.data import formats, sources
from olearn.engine.learner import OnlineLearner
from olearn.engine.passes import run_passes
from olearn.errors import OlearnError
from olearn.options.config import Config
from olearn.outputs.report import TABLE_HEADER, Console, warning_text

MAX_LINE = 1 << 20     # bytes; a longer line is answered with an error and skipped
READ_SIZE = 1 << 16    # bytes read from a client at a time (at most MAX_LINE, see _Client.take)
MAX_PENDING = 4 << 20  # bytes of answers a client has not read; beyond it its reads pause
MAX_CLIENTS = 512      # connections at once; more wait in the listen backlog
MAX_MESSAGE = 200      # characters of an error message (its token can be a whole line)
BACKLOG = 128
SOURCE = "<daemon>"
ERROR = "error: "
TOO_LONG = f"{ERROR}line longer than {MAX_LINE} bytes; skipped\n"


class _Client:
    """One connection: the start of a line still to come, and answers not yet sent."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.partial = bytearray()
        self.skipping = False  # inside a line longer than MAX_LINE, dropped up to its newline
        self.answers = bytearray()
        self.eof = False
        self.events = selectors.EVENT_READ

    def take(self, data: bytes) -> list[bytes | str]:
        """What ``data`` (at most READ_SIZE bytes) completes, in order: whole lines (bytes) or
        the error answer (str) of a line longer than MAX_LINE."""
        items: list[bytes | str] = []
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if self.skipping:
                if newline < 0:
                    return items
                self.skipping = False
                items.append(TOO_LONG)
            elif newline < 0:
                self.partial += data[start:]
                if len(self.partial) > MAX_LINE:
                    self.partial.clear()
                    self.skipping = True
                return items
            elif len(self.partial) + newline - start > MAX_LINE:
                self.partial.clear()
                items.append(TOO_LONG)
            else:
                # only the first line joins the partial one: the others fit in READ_SIZE
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
        self.clients: dict[socket.socket, _Client] = {}
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
        batch = self.learner.parse_block(sources.Block(text, SOURCE, self.bytes), self.format)
        batch.pass_line = self.lines
        overflow = batch.n_warnings > len(batch.warnings)  # more than the parser records
        warned = batch.n_warnings > 0
        if warned:  # the first warning of each line that has any
            bad, rows = np.unique(batch.warnings[:, 0], return_index=True)
        good = batch.subset(~np.isin(batch.lines, bad)) if warned else batch
        refused = None
        try:
            for message in self.learner.warnings(good, strict=False):
                self.console.print(message)
        except OlearnError as exc:  # a line the learner refuses (--oaa: a label not a class)
            refused = exc
        if (overflow or refused) and n_lines > 1:  # find every bad line, half by half
            half = n_lines // 2
            cut = _nth_newline(text, half) + 1
            first, first_ends = self.answer(text[:cut], half)
            rest, rest_ends = self.answer(text[cut:], n_lines - half)
            return first + rest, np.concatenate([first_ends, rest_ends + len(first)])
        self.lines += n_lines
        if refused:
            message = f"{ERROR}{refused.message[:MAX_MESSAGE]}\n".encode()
            return message, np.array([len(message)])
        preds = self.learner.new_predictions(good)
        for row in self.learner.learn(good, preds):
            self.console.print(self.learner.table_row(row, good, preds))
        out = bytes(self.learner.prediction_lines(preds, good, False))
        starts = np.zeros(len(good) + 1, dtype=np.int64)
        starts[1:] = np.flatnonzero(np.frombuffer(out, dtype=np.uint8) == 10) + 1
        sizes = np.zeros(n_lines, dtype=np.int64)
        sizes[good.lines] = np.diff(starts)
        if not warned:
            return out, np.cumsum(sizes)
        messages = [f"{ERROR}{warning_text(batch, row, fatal=True)[1][:MAX_MESSAGE]}\n".encode()
                    for row in rows.tolist()]
        sizes[bad] = [len(message) for message in messages]
        pieces, done = [], 0
        for cut, message in zip(starts[np.searchsorted(good.lines, bad)].tolist(), messages):
            pieces += [out[done:cut], message]
            done = cut
        pieces.append(out[done:])
        return b"".join(pieces), np.cumsum(sizes)

    def _answer_round(self, pending: list[tuple[_Client, list[bytes | str]]]) -> None:
        """Answer every client's lines of this round with one parse and one kernel call."""
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
        while len(self.clients) < MAX_CLIENTS:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of file descriptors, say: try again next round
                self.console.print(f"[warning] --daemon: accept failed: {exc.strerror or exc}")
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # answers are small
            self.clients[sock] = _Client(sock)
            self.selector.register(sock, selectors.EVENT_READ)
        self.selector.unregister(self.listener)  # full: new clients wait in the backlog

    def _drop(self, client: _Client) -> None:
        if self.clients.pop(client.sock, None) is None:
            return
        self.selector.unregister(client.sock)
        client.sock.close()
        if len(self.clients) == MAX_CLIENTS - 1:
            self.selector.register(self.listener, selectors.EVENT_READ)

    def _receive(self, client: _Client) -> list[bytes | str]:
        try:
            data = client.sock.recv(READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:  # reset by the client
            self._drop(client)
            return []
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
                for key, events in self.selector.select():
                    if key.fileobj is self.listener:
                        self._accept()
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
