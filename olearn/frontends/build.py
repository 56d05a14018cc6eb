"""The ahead-of-time module's build in the background (olearn/kernel/aot.py
``build_in_background``): a first run starts it detached, and it runs at the lowest priority.
It builds under the build lock and gives up at once when another process holds it or the
module is built; a failure is recorded (aot.FAILED) so that no later run starts it again."""
from __future__ import annotations

import os


def main() -> None:
    """Compile every kernel and build the module (``olearn --warm-cache``'s work)."""
    os.nice(19)  # the user's own runs come first
    from olearn.kernel import aot
    lock = aot.build_lock(wait=False)
    if lock is None:
        return
    with lock:
        if aot.built():
            return
        from olearn.frontends.run import compile_kernels
        try:
            compile_kernels()
            aot.build()
        except Exception as exc:  # no C compiler, say: the command line keeps using numba
            aot.record_failure(f"{type(exc).__name__}: {exc}")
            raise


if __name__ == "__main__":
    main()
