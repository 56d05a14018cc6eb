"""Ahead-of-time compiled kernels, so that the command line starts without numba.

Importing numba and loading its first cached kernel cost about 0.7 s per run, far more than
VW's whole start-up. ``olearn --warm-cache`` therefore also compiles the kernels that Python
calls (the entry points below) into one extension module, with numba's ``pycc``, for exactly
the argument types the warm-up runs used. The command line (and only it: the Python API keeps
numba) then installs a stand-in ``numba`` module whose ``njit`` hands out the compiled entry
points, and plain functions for everything else (those only run inside compiled code).

Compiled code does not check its arguments' types, so every call is checked here first against
the types the kernel was compiled for; a mismatch is an error, never a wrong read. The module is
tied to a hash of olearn's sources and ignored when they change; without it (no C compiler,
nothing built yet), the command line uses numba as before.

A plain install has no module yet. The first command that needs the kernels runs with numba,
which compiles the kernels that run needs only (about a minute), and once it is done starts the
module's build in the background at the lowest priority (:func:`build_in_background`:
``olearn --warm-cache``'s work in a detached process, which says so on stderr); the runs after
the build start from the module. A build that fails is recorded and not retried for these
sources; later runs use numba.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import time
import types
from typing import Any, Callable

import numpy as np

import olearn

MODULE = "olearn_kernels"
ENTRY_POINTS = (("olearn.data.parse", "parse_vw_block"),
                ("olearn.data.parse", "parse_svmlight_block"),
                ("olearn.data.parse", "parse_csv_block"), ("olearn.kernel.loop", "learn_batch"),
                ("olearn.kernel.loop", "learn_expanded_batch"),
                ("olearn.outputs.predictions", "format_predictions"),
                ("olearn.outputs.predictions", "format_pairs"),
                ("olearn.outputs.predictions", "format_names"),
                ("olearn.outputs.predictions", "format_class_sets"),
                ("olearn.outputs.predictions", "format_intervals"),
                ("olearn.outputs.predictions", "format_confidence"),
                ("olearn.learners.regularize", "flush"),
                ("olearn.learners.experts.saew", "export"),
                ("olearn.features.interactions", "expand_example"),
                ("olearn.features.interactions", "unseen_features"),
                ("olearn.features.namespaces", "select"),
                ("olearn.reductions.marginal_kernels", "new_pairs"),
                ("olearn.features.ngrams", "add_grams"),
                ("olearn.features.feature_limit", "limited"),
                ("olearn.features.interact", "interacted"),
                ("olearn.features.affixes", "add_affixes"),
                ("olearn.features.dictionary", "add_entries"),
                ("olearn.data.multiline", "merged"),
                ("olearn.learners.oja_newton", "initial_sketch"),
                ("olearn.features.interactions", "expanded_sizes"))


def _directory() -> str:
    return os.environ["NUMBA_CACHE_DIR"]


# --- building (numba imported) ------------------------------------------------------------------

def _spec(numba_type) -> list:
    """A JSON description of a numba argument type, for the call-time check."""
    from numba.core import types as nt
    if isinstance(numba_type, nt.Array):
        return ["array", np.dtype(numba_type.dtype.name).str, numba_type.ndim, numba_type.layout]
    if isinstance(numba_type, nt.BaseTuple):
        # a bundle's class is part of its type: families' bundles of the same arrays differ
        named = getattr(numba_type, "instance_class", tuple)
        return ["tuple", [_spec(t) for t in numba_type.types], named.__name__]
    if isinstance(numba_type, nt.Boolean):
        return ["bool"]
    if isinstance(numba_type, nt.Integer):
        return ["int"]
    if isinstance(numba_type, nt.Float):
        return ["float"]
    raise TypeError(f"no call-time check for argument type {numba_type}")


def _has_literal(numba_type) -> bool:
    from numba.core import types as nt
    if isinstance(numba_type, (nt.Literal, nt.Omitted)):
        return True
    return isinstance(numba_type, nt.BaseTuple) and any(map(_has_literal, numba_type.types))


def build() -> str:
    """Compile every signature the entry points have been called with so far (run the warm-up
    first) into the extension module; returns its path."""
    from numba.core.compiler import Flags
    from numba.pycc import CC
    from numba.pycc import compiler as pycc_compiler

    class GilReleasingFlags(Flags):
        """pycc has no nogil option; the parser threads need the GIL released."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True

    pycc_compiler.Flags = GilReleasingFlags
    import tempfile
    directory = _directory()
    os.makedirs(directory, exist_ok=True)
    # built aside, then moved in: a running olearn maps the module, which must never change
    # under it
    building = tempfile.mkdtemp(prefix=f"{MODULE}-", dir=directory)
    cc = CC(MODULE)
    cc.output_dir = building
    cc.target_cpu = "host"
    cc.verbose = False
    exports: dict[str, list] = {}
    for module_name, name in ENTRY_POINTS:
        kernel = getattr(importlib.import_module(module_name), name)
        variants = exports.setdefault(f"{module_name}.{name}", [])
        for signature in kernel.nopython_signatures:
            # A kernel also gets the signatures of calls from other kernels, where a constant
            # argument is typed as a literal (compiled in, not passed): never for Python.
            if any(_has_literal(t) for t in signature.args):
                continue
            specs = [_spec(t) for t in signature.args]
            if any(specs == known for _, known in variants):
                continue
            symbol = f"{name}__{len(variants)}"
            cc.export(symbol, signature)(kernel.py_func)
            variants.append([symbol, specs])
    import shutil
    try:
        cc.compile()
        for name in os.listdir(building):
            if name.startswith(f"{MODULE}.") and name.endswith(".so"):
                os.replace(os.path.join(building, name), os.path.join(directory, name))
        described = os.path.join(building, f"{MODULE}.json")
        with open(described, "w") as f:
            json.dump({"sources": olearn.SOURCE_HASH, "exports": exports}, f)
        os.replace(described, os.path.join(directory, f"{MODULE}.json"))
    finally:
        shutil.rmtree(building, ignore_errors=True)
    if olearn.KERNEL_FOLDERS is not None:
        prune_unused_kernel_folders(olearn.KERNEL_FOLDERS, directory)
    return directory


UNUSED_DAYS = 30  # a kernel folder of other sources unused this long goes at the next build


def prune_unused_kernel_folders(parent: str, keep: str, days: float = UNUSED_DAYS) -> list[str]:
    """Remove the kernel folders under ``parent`` (``kernels-<source hash>``: 40-100 MB each)
    other than ``keep`` that no olearn has used for ``days`` (each run marks its own folder by
    its modification time); returns their paths. A build runs it, once per new version of the
    sources, so that upgrades do not pile folders up. Should an old version start while its
    folder goes, it compiles its kernels again (its loaded module keeps working)."""
    import shutil
    removed = []
    cutoff = time.time() - days * 86400
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    kept = os.path.basename(os.path.normpath(keep))
    for name in names:
        path = os.path.join(parent, name)
        if not name.startswith(olearn.KERNEL_FOLDER_PREFIX) or name == kept:
            continue
        try:
            if os.stat(path).st_mtime >= cutoff:
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


# --- using (numba not imported) ------------------------------------------------------------------

def _matches(value: Any, spec: list) -> bool:
    kind = spec[0]
    if kind == "array":
        return (isinstance(value, np.ndarray) and value.dtype.str == spec[1]
                and value.ndim == spec[2] and value.flags.aligned
                and (spec[3] != "C" or value.flags.c_contiguous))
    if kind == "tuple":
        return (isinstance(value, tuple) and type(value).__name__ == spec[2]
                and len(value) == len(spec[1])
                and all(_matches(v, s) for v, s in zip(value, spec[1])))
    if kind == "bool":
        return isinstance(value, (bool, np.bool_))
    if kind == "int":
        return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    return isinstance(value, (int, float, np.integer, np.floating))


class _Compiled:
    """An entry point: the compiled variant whose argument types match the call."""

    def __init__(self, name: str, variants: list[tuple[Callable, list]]):
        self._name = name
        self._variants = variants

    def __call__(self, *args):
        for function, specs in self._variants:
            if len(args) == len(specs) and all(map(_matches, args, specs)):
                return function(*args)
        described = ", ".join(f"{type(a).__name__}"
                              + (f"[{a.dtype},{a.ndim}d]" if isinstance(a, np.ndarray) else "")
                              for a in args)
        raise TypeError(f"no compiled {self._name} for arguments ({described}); "
                        "run olearn --warm-cache")


def _stand_in_numba(exports: dict[str, list[tuple[Callable, list]]]) -> types.ModuleType:
    stand_in = types.ModuleType("numba")

    def njit(*args, **_options):
        def decorate(function):
            key = f"{function.__module__}.{function.__name__}"
            return _Compiled(key, exports[key]) if key in exports else function
        return decorate(args[0]) if args and callable(args[0]) else decorate

    stand_in.njit = njit
    stand_in.literally = lambda value: value  # a typing directive, only in compiled code
    # intrinsics (core/vmath.py) are compiled into the kernels and never called from Python
    stand_in.extending = types.ModuleType("numba.extending")
    stand_in.extending.intrinsic = lambda function: function
    # compile-time choices (kernel/dispatch.py): nothing to choose without numba
    stand_in.extending.overload = lambda *args, **options: lambda function: function
    return stand_in


def install() -> bool:
    """Use the compiled kernels for this process if they match the sources; True if so.
    Must run before any kernel module is imported."""
    if "numba" in sys.modules:
        return False
    directory = _directory()
    try:
        with open(os.path.join(directory, f"{MODULE}.json")) as f:
            described = json.load(f)
        path = os.path.join(directory, next(name for name in os.listdir(directory)
                                            if name.startswith(f"{MODULE}.")
                                            and name.endswith(".so")))
    except (OSError, ValueError, StopIteration):
        return False
    if described.get("sources") != olearn.SOURCE_HASH:
        return False
    loader = importlib.machinery.ExtensionFileLoader(MODULE, path)
    spec = importlib.util.spec_from_file_location(MODULE, path, loader=loader)
    try:
        compiled = importlib.util.module_from_spec(spec)
        loader.exec_module(compiled)
    except ImportError:
        return False
    exports = {key: [(getattr(compiled, symbol), specs) for symbol, specs in variants]
               for key, variants in described["exports"].items()}
    stand_in = _stand_in_numba(exports)
    sys.modules["numba"] = stand_in
    sys.modules["numba.extending"] = stand_in.extending
    return True


# --- the first run: build the module in the background -----------------------------------------

BUILD_MINUTES = 15  # olearn --warm-cache on a 2-core machine, numba's cache empty
FAILED = f"{MODULE}.failed"  # the reason the build failed, for these sources
NO_BUILD = "OLEARN_NO_BUILD"  # set: never build on a first run (numba only, as before)
NO_KERNELS = ("-h", "--help", "--version", "--warm-cache")  # commands that run no kernel
LOG = f"{MODULE}.log"  # the background build's messages


def wants_build(argv: list[str]) -> bool:
    """Whether this command should start the module's build: it runs kernels, the build is not
    turned off (nor bounds-checked kernels wanted: compiled code checks no bounds), and no
    build of these sources has failed before."""
    if any(arg in NO_KERNELS for arg in argv) or os.environ.get(NO_BUILD):
        return False
    if os.environ.get("NUMBA_BOUNDSCHECK", "0") not in ("", "0"):
        return False
    try:
        with open(os.path.join(_directory(), FAILED)) as f:
            return f.readline().strip() != olearn.SOURCE_HASH
    except OSError:
        return True


def build_lock(wait: bool):
    """The build's lock (an open file holding it), or None when another process holds it and
    ``wait`` is False. One process builds the module at a time."""
    import fcntl
    directory = _directory()
    os.makedirs(directory, exist_ok=True)
    lock = open(os.path.join(directory, f"{MODULE}.lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        return None
    return lock


def build_in_background(stderr, command: list[str] | None = None) -> bool:
    """Start the module's build (``command``, default ``python -m olearn.frontends.build``) in a
    detached process at the lowest priority, telling ``stderr``, unless a build is running;
    the command line starts it when a run that used numba is done. True if started."""
    import subprocess
    lock = build_lock(wait=False)
    if lock is None:
        return False
    lock.close()  # the build takes it (frontends/build.py)
    stderr.write("[olearn] first runs of this olearn: numba compiled the kernels this run "
                 "needed (about a minute, once for each kind of run); the module that starts "
                 "every later run at once now builds in the background (about "
                 f"{BUILD_MINUTES} minutes)\n")
    stderr.flush()
    with open(os.path.join(_directory(), LOG), "w") as log:
        subprocess.Popen(command or [sys.executable, "-m", "olearn.frontends.build"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                         start_new_session=True, close_fds=True)
    return True


def record_failure(reason: str) -> None:
    """Record that the build of these sources failed (``reason``): none is tried again."""
    with open(os.path.join(_directory(), FAILED), "w") as f:
        f.write(f"{olearn.SOURCE_HASH}\n{reason}\n")


def built() -> bool:
    """Whether the module of these sources is built (without loading it)."""
    try:
        with open(os.path.join(_directory(), f"{MODULE}.json")) as f:
            return json.load(f).get("sources") == olearn.SOURCE_HASH
    except (OSError, ValueError):
        return False
