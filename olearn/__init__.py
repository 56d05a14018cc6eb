"""olearn: a fast Vowpal-Wabbit-style online learner on numpy and numba."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

__version__ = "0.1.0"


def _source_hash() -> str:
    digest = hashlib.sha1()
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


SOURCE_HASH = _source_hash()


def _use_kernel_cache_for_these_sources() -> None:
    """Point numba's on-disk kernel cache at a folder named by a hash of olearn's sources.

    numba invalidates a cached kernel only when the file defining it changes, not when a kernel
    it calls (defined in another file) does; one folder per source hash never serves a stale
    kernel. Left alone when NUMBA_CACHE_DIR is set.
    """
    if "NUMBA_CACHE_DIR" in os.environ:
        return
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    os.environ["NUMBA_CACHE_DIR"] = str(base / "olearn" / f"kernels-{SOURCE_HASH}")


_use_kernel_cache_for_these_sources()


def __getattr__(name: str):
    """``olearn.Learner`` without importing numba for ``import olearn`` alone."""
    if name == "Learner":
        from olearn.api import Learner
        return Learner
    raise AttributeError(f"module 'olearn' has no attribute {name!r}")
