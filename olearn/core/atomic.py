"""Output files that appear only when complete: a temporary file, then a rename."""
from __future__ import annotations

import os
import sys
from typing import BinaryIO

from olearn.errors import OlearnError, OutputClosed

STDOUT = ("stdout", "/dev/stdout", "-")  # output names that mean standard output


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class AtomicOutput:
    """A binary output file that appears only when complete (temporary file, then rename).

    ``/dev/stdout``, ``stdout`` and other non-regular targets are written directly.
    """

    def __init__(self, path: str):
        self.path = path
        self._tmp: str | None = None
        try:
            if path in STDOUT:
                self._file: BinaryIO = sys.stdout.buffer
            elif os.path.exists(path) and not os.path.isfile(path):
                self._file = open(path, "wb")
            else:
                import tempfile  # here: a run that writes nothing saves its ~9 ms import
                directory = os.path.dirname(os.path.abspath(path))
                fd, self._tmp = tempfile.mkstemp(prefix=".olearn-", dir=directory)
                self._file = os.fdopen(fd, "wb")
        except OSError as exc:
            raise OlearnError(f"cannot write: {exc.strerror or exc}", path) from None

    def write(self, data) -> None:
        """Write all of ``data`` (bytes or an array): stdout may be a raw stream (python -u,
        PYTHONUNBUFFERED), which can take part of it, as when its reader goes away."""
        try:
            rest = memoryview(data).cast("B")
            while rest:
                rest = rest[self._file.write(rest):]
        except OSError as exc:
            raise _write_error(exc, self.path) from None

    def flush(self) -> None:
        """Hand what was written to the system: a reader that went away (a broken pipe) shows
        here, before the run saves anything that says it finished."""
        try:
            self._file.flush()
        except OSError as exc:
            raise _write_error(exc, self.path) from None

    def commit(self) -> None:
        """Flush and, for a regular file, move it into place."""
        self.flush()
        try:
            if self._tmp is not None:
                self._file.close()
                os.chmod(self._tmp, 0o666 & ~_umask())
                os.replace(self._tmp, self.path)
                self._tmp = None
        except OSError as exc:
            raise OlearnError(f"cannot write: {exc.strerror or exc}", self.path) from None

    def discard(self) -> None:
        """Drop a partial output (after a failure)."""
        if self._tmp is not None:
            self._file.close()
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None


def check_writable(path: str) -> None:
    """Fail early, before a run, when the file ``path`` cannot be created (a missing folder,
    no permission); a device, FIFO or stdout target is left to the run (opening one can
    block or write)."""
    if path in STDOUT or (os.path.exists(path) and not os.path.isfile(path)):
        return
    AtomicOutput(path).discard()


def write_whole(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all."""
    out = AtomicOutput(path)
    try:
        out.write(data)
        out.commit()
    except BaseException:
        out.discard()
        raise


def _write_error(exc: OSError, path: str) -> OlearnError:
    if isinstance(exc, BrokenPipeError):
        return OutputClosed("broken pipe (the output was closed before the run finished)", path)
    return OlearnError(f"cannot write: {exc.strerror or exc}", path)
