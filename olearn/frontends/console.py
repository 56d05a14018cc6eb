"""The ``olearn`` console command: compiled kernels when they are built (olearn/kernel/aot.py), then
the command line. Kept apart from cli.py so that importing the CLI never swaps numba out."""
from __future__ import annotations

import gc
import os
import sys

from olearn.options.command_options import COMPLETE_VAR


def _steady_heap() -> None:
    """Fixed malloc thresholds (glibc). By default glibc raises its mmap threshold whenever a
    large block is freed, after which every batch's megabyte-sized buffers come from the heap,
    whose fragmented top it keeps: peak RSS then crept up with the input's length (+3-5% at 10x
    the 200k file, 0% with these). Buffers under 4 MB come from the heap, and more than 1 MB
    free at its top goes back to the system. (A low mmap threshold would fault fresh pages in
    for every batch: 25% slower.)"""
    import ctypes  # numpy imports it anyway
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(-3, 4 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 1 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):  # not glibc
        pass


def _closed_streams_to_null() -> None:
    """A standard stream the caller closed (``<&-``, ``>&-``, ``2>&-``) reads as empty and
    swallows what is written to it, as VW runs then; Python leaves it None, which no reader
    or writer expects. The null device takes the stream's own descriptor, so that
    ``-p /dev/stdout`` names it too."""
    for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY),
                            (2, "stderr", os.O_WRONLY)):
        if getattr(sys, name) is None:
            null = os.open(os.devnull, flags)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, open(fd, "r" if flags == os.O_RDONLY else "w", closefd=False))


def completes(argv: list[str]) -> bool:
    """Whether this command completes a command line, or prints the script that does: no
    kernel runs, and a Tab must be answered at once, never after a build."""
    return COMPLETE_VAR in os.environ or any(arg.partition("=")[0] == "--completion"
                                              for arg in argv)


def main() -> None:
    _closed_streams_to_null()
    # numpy loads OpenBLAS, which starts a thread per core at import (~15 ms of a run's start-up);
    # olearn makes no BLAS call.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _steady_heap()
    # The start-up imports leave no garbage cycles, yet set off ~45 cycle collections (~8 ms).
    gc.disable()
    argv = sys.argv[1:]
    after = None
    if "--warm-cache" not in argv:
        from olearn.kernel import aot
        if not aot.install() and not completes(argv) and aot.wants_build(argv):
            # once the run is done: the build would slow the run's own compile down
            def after() -> None:
                aot.build_in_background(sys.stderr)
    from olearn.frontends import run  # noqa: F401 (imported here, before collection resumes)
    from olearn.frontends.cli import main as cli_main
    gc.enable()
    cli_main(after=after)
