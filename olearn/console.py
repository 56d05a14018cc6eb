"""The ``olearn`` console command: compiled kernels when they are built (olearn/aot.py), then the
command line. Kept apart from cli.py so that importing the CLI never swaps numba out."""
from __future__ import annotations

import gc
import os
import sys


def main() -> None:
    # numpy loads OpenBLAS, which starts a thread per core at import (~15 ms of a run's start-up);
    # olearn makes no BLAS call.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # The start-up imports leave no garbage cycles, yet set off ~45 cycle collections (~8 ms).
    gc.disable()
    if "--warm-cache" not in sys.argv[1:]:
        from olearn import aot
        aot.install()
    from olearn import run  # noqa: F401 (imported here, before collection resumes)
    from olearn.cli import main as cli_main
    gc.enable()
    cli_main()
