"""olearn: a fast Vowpal-Wabbit-style online learner on numpy and numba."""
from __future__ import annotations

import os
import zlib

from olearn.errors import OlearnError, OptionError, ParseWarning  # noqa: F401 (the API's)

__version__ = "0.1.0"


# What numba's compiled kernels depend on: the modules that define kernels and every module
# they import (tests/test_shape.py checks that list against the import graph).
KERNEL_SOURCES = ("core", "data", "features", "kernel", "learners", "reductions",
                  os.path.join("outputs", "predictions.py"), "errors.py")


def _source_hashes() -> tuple[str, str]:
    """64 bits (CRC-32 and Adler-32) of the path and contents of every .py file, and of those
    of KERNEL_SOURCES only. zlib rather than hashlib and os.walk rather than pathlib: those
    imports cost ~20 ms of every start-up."""
    package = os.path.dirname(os.path.abspath(__file__))
    crc = adler = kernel_crc = kernel_adler = 1
    for folder, subfolders, files in os.walk(package):
        subfolders.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, package)
                with open(path, "rb") as f:
                    data = relative.encode() + b"\0" + f.read()
                crc, adler = zlib.crc32(data, crc), zlib.adler32(data, adler)
                if relative in KERNEL_SOURCES or relative.split(os.sep)[0] in KERNEL_SOURCES:
                    kernel_crc = zlib.crc32(data, kernel_crc)
                    kernel_adler = zlib.adler32(data, kernel_adler)
    return f"{crc:08x}{adler:08x}", f"{kernel_crc:08x}{kernel_adler:08x}"


# SOURCE_HASH ties the ahead-of-time module to every source (its exports are the signatures the
# front ends call with); KERNEL_HASH names numba's cache folder, so that an edit outside the
# kernels' sources (a front end, the options, a test) compiles nothing again.
SOURCE_HASH, KERNEL_HASH = _source_hashes()


KERNEL_FOLDER_PREFIX = "kernels-"


def _use_kernel_cache_for_these_sources() -> str | None:
    """Point numba's on-disk kernel cache at a folder named by a hash of the kernels' sources, and
    mark it used now (its modification time: aot.prune_unused_kernel_folders reads it); returns
    the folder holding such folders, or None when NUMBA_CACHE_DIR is set (then left alone).

    numba invalidates a cached kernel only when the file defining it changes, not when a kernel
    it calls (defined in another file) does; one folder per source hash never serves a stale
    kernel.
    """
    if "NUMBA_CACHE_DIR" in os.environ:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    parent = os.path.join(base, "olearn")
    folder = os.path.join(parent, KERNEL_FOLDER_PREFIX + KERNEL_HASH)
    os.environ["NUMBA_CACHE_DIR"] = folder
    try:
        os.utime(folder)
    except OSError:  # not made yet (numba makes it), or not ours to touch
        pass
    return parent


KERNEL_FOLDERS = _use_kernel_cache_for_these_sources()


def __getattr__(name: str):
    """``olearn.Learner`` without importing numba for ``import olearn`` alone."""
    if name == "Learner":
        from olearn.frontends.api import Learner
        return Learner
    if name == "plot_learning_curve":
        from olearn.outputs.history import plot_learning_curve
        return plot_learning_curve
    raise AttributeError(f"module 'olearn' has no attribute {name!r}")
