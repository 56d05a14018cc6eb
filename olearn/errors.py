"""User-facing failures (OlearnError and its kinds) and the Python API's parse warning."""
from __future__ import annotations


class OlearnError(Exception):
    """A failure the user caused or can fix: printed as one line, exit code non-zero.

    ``file`` and ``line`` (1-based) locate the problem in an input when known.
    """

    def __init__(self, message: str, file: str | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = f"{self.file}:{self.line}: " if self.line is not None else f"{self.file}: "
        return where + self.message


class OptionError(OlearnError):
    """A bad option value or combination of options: a usage error (exit code 2)."""


class OutputClosed(OlearnError):
    """An output's reader went away (a broken pipe) before the run finished (exit code 141,
    as a shell reports a command killed by SIGPIPE)."""


class ParseWarning(UserWarning):
    """A parse warning of the Python API: the command line's text (file or ``<lines>``, line,
    what is wrong and what olearn does about it), one per warning."""
