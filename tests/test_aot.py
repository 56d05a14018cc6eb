"""Ahead-of-time kernels (olearn/kernel/aot.py): checked calls, no numba at start-up, stale modules
ignored."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from olearn.kernel import aot
from olearn.learners.experts.family import ExponentialWeightsState
from olearn.learners.gd import GradientDescentState


def _compiled(*specs):
    calls = []
    return aot._Compiled("k", [(lambda *a: calls.append(a) or "ran", list(specs))]), calls


def test_call_with_the_compiled_types_runs():
    kernel, calls = _compiled(["array", "<f4", 2, "C"], ["int"], ["bool"],
                              ["tuple", [["array", "|u1", 1, "A"], ["float"]], "tuple"])
    args = (np.zeros((2, 3), np.float32), 5, True, (np.zeros(4, np.uint8)[::2], 1.5))
    assert kernel(*args) == "ran" and len(calls) == 1


def test_a_bundle_of_another_class_is_refused():
    """Two families' bundles may hold the same arrays: the class decides (kernel/dispatch.py)."""
    kernel, calls = _compiled(["tuple", [["array", "<f8", 2, "C"]], "GradientDescentState"])
    with pytest.raises(TypeError, match="no compiled k"):
        kernel(ExponentialWeightsState(np.zeros((2, 2))))
    assert kernel(GradientDescentState(np.zeros((2, 2)))) == "ran" and len(calls) == 1


@pytest.mark.parametrize("bad", [
    (np.zeros((2, 3), np.float64), 5, True),          # dtype
    (np.zeros(6, np.float32), 5, True),               # ndim
    (np.zeros((3, 2), np.float32).T, 5, True),        # not C-contiguous
    (np.zeros((2, 3), np.float32), 5.0, True),        # int expected
    (np.zeros((2, 3), np.float32), 5, 1),             # bool expected
    (np.zeros((2, 3), np.float32), 5),                # count
], ids=["dtype", "ndim", "layout", "int", "bool", "count"])
def test_call_with_other_types_is_refused_before_reaching_compiled_code(bad):
    kernel, calls = _compiled(["array", "<f4", 2, "C"], ["int"], ["bool"])
    with pytest.raises(TypeError, match="no compiled k"):
        kernel(*bad)
    assert not calls


def _install_in_subprocess(cache_dir) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    code = "import sys; from olearn.kernel import aot; print(aot.install(), 'numba' in sys.modules)"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


def _kernel_folder(parent, name: str, days_unused: float):
    folder = parent / name
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "kernel.nbc").write_bytes(b"x")
    seen = time.time() - days_unused * 86400
    os.utime(folder, (seen, seen))
    return folder


def test_a_build_removes_only_other_kernel_folders_unused_for_a_month(tmp_path):
    old = _kernel_folder(tmp_path, "kernels-00000000000000aa", 40)
    recent = _kernel_folder(tmp_path, "kernels-00000000000000bb", 2)
    ours = _kernel_folder(tmp_path, "kernels-00000000000000cc", 90)
    other = _kernel_folder(tmp_path, "something-else", 90)
    removed = aot.prune_unused_kernel_folders(str(tmp_path), str(ours) + os.sep)
    assert removed == [str(old)]
    assert not old.exists() and recent.exists() and ours.exists() and other.exists()


def test_each_run_marks_its_kernel_folder_used(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    code = "import os, olearn; print(os.environ['NUMBA_CACHE_DIR'])"
    folder = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True).stdout.strip()
    assert os.path.dirname(folder) == str(tmp_path / "olearn")
    os.makedirs(folder)
    os.utime(folder, (0, 0))
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    assert os.stat(folder).st_mtime > time.time() - 3600


def test_kernels_built_for_other_sources_are_ignored(tmp_path):
    (tmp_path / f"{aot.MODULE}.json").write_text(json.dumps({"sources": "0" * 16,
                                                             "exports": {}}))
    (tmp_path / f"{aot.MODULE}.cpython-x.so").write_bytes(b"not a module")
    assert _install_in_subprocess(tmp_path) == "False False"


def test_no_kernels_means_numba_as_before(tmp_path):
    assert _install_in_subprocess(tmp_path) == "False False"


@pytest.mark.skipif(not glob.glob(os.path.join(aot._directory(), f"{aot.MODULE}.*.so")),
                    reason="ahead-of-time kernels not built (olearn --warm-cache builds them)")
def test_command_line_runs_without_importing_numba(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x:1 y:2\n-1 |a x:2 |b z\n" * 50)
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "olearn", "-d", str(data),
                             "--quiet", "-p", str(tmp_path / "p")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "p").read_text().count("\n") == 100
    imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()]
    assert "olearn.engine.learner" in imported and "numba" not in imported


def test_signatures_with_compiled_in_constants_are_not_exported():
    # calls between kernels type constant arguments as literals, which are not passed at all:
    # exporting such a signature for Python calls would misread the arguments
    from numba.core import types as nt
    assert aot._has_literal(nt.literal(True))
    assert aot._has_literal(nt.Tuple((nt.float64, nt.literal(3))))
    assert not aot._has_literal(nt.boolean)
    assert not aot._has_literal(nt.Tuple((nt.float64, nt.Array(nt.uint8, 1, "C"))))


# -- the first run builds the module ------------------------------------------------------------

BUILT = [p for p in glob.glob(os.path.join(aot._directory(), f"{aot.MODULE}.*"))
         if p.endswith((".so", ".json"))]
NEEDS_MODULE = pytest.mark.skipif(not any(p.endswith(".so") for p in BUILT),
                                  reason="ahead-of-time kernels not built (olearn --warm-cache)")


def _build_first_in_subprocess(cache_dir, command: list[str]) -> subprocess.CompletedProcess:
    """aot.build_first(stderr, command) in a fresh interpreter (install needs numba unimported);
    prints whether the module was installed and whether the real numba was imported (the
    module's stand-in has no file)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    code = ("import sys; from olearn.kernel import aot; "
            f"print(aot.build_first(sys.stderr, {command!r}), "
            "hasattr(sys.modules.get('numba'), '__file__'))")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)


def _copy_module_command(destination) -> list[str]:
    """A stand-in for the build: copies the module built for these sources."""
    return [sys.executable, "-c", f"import shutil; [shutil.copy(p, {str(destination)!r}) "
                                  f"for p in {BUILT!r}]"]


@NEEDS_MODULE
def test_first_run_names_the_compilation_and_starts_from_the_built_module(tmp_path):
    result = _build_first_in_subprocess(tmp_path, _copy_module_command(tmp_path))
    assert result.stdout.split() == ["True", "False"], result.stderr
    assert "compiling its kernels, once" in result.stderr
    assert "kernels compiled in" in result.stderr


def test_a_build_without_pycc_warns_is_recorded_and_not_retried(tmp_path, monkeypatch):
    without_pycc = [sys.executable, "-c", "import sys; sys.modules['numba.pycc'] = None; "
                                          "from olearn.kernel import aot; aot.build()"]
    result = _build_first_in_subprocess(tmp_path, without_pycc)
    assert result.stdout.split() == ["False", "False"]
    assert "[warning] the start-up kernels were not built (" in result.stderr
    assert "numba.pycc" in result.stderr
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(aot.NO_BUILD, raising=False)
    monkeypatch.delenv("NUMBA_BOUNDSCHECK", raising=False)
    assert not aot.wants_build(["-d", "x.vw"])
    (tmp_path / aot.FAILED).write_text("0" * 16 + "\n(other sources)\n")
    assert aot.wants_build(["-d", "x.vw"])


@NEEDS_MODULE
def test_a_second_process_waits_for_the_build_and_uses_it(tmp_path):
    import fcntl
    with open(tmp_path / f"{aot.MODULE}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
        code = "import sys; from olearn.kernel import aot; print(aot.build_first(sys.stderr))"
        waiting = subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        said = waiting.stderr.readline()  # it found the lock taken
        subprocess.run(_copy_module_command(tmp_path), check=True)  # the other process's build
    out, _ = waiting.communicate(timeout=60)
    assert "waiting for another olearn" in said and out.strip() == "True"


@pytest.mark.parametrize("argv, env, wanted", [
    (["-d", "x.vw"], {}, True), (["--help"], {}, False), (["--version"], {}, False),
    (["-d", "x.vw"], {aot.NO_BUILD: "1"}, False),
    (["-d", "x.vw"], {"NUMBA_BOUNDSCHECK": "1"}, False)])
def test_which_commands_build_first(tmp_path, monkeypatch, argv, env, wanted):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(aot.NO_BUILD, raising=False)
    monkeypatch.delenv("NUMBA_BOUNDSCHECK", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert aot.wants_build(argv) is wanted
