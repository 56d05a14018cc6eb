"""Ahead-of-time kernels (olearn/aot.py): checked calls, no numba at start-up, stale modules
ignored."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from olearn import aot


def _compiled(*specs):
    calls = []
    return aot._Compiled("k", [(lambda *a: calls.append(a) or "ran", list(specs))]), calls


def test_call_with_the_compiled_types_runs():
    kernel, calls = _compiled(["array", "<f4", 2, "C"], ["int"], ["bool"],
                              ["tuple", [["array", "|u1", 1, "A"], ["float"]]])
    args = (np.zeros((2, 3), np.float32), 5, True, (np.zeros(4, np.uint8)[::2], 1.5))
    assert kernel(*args) == "ran" and len(calls) == 1


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
    code = "import sys; from olearn import aot; print(aot.install(), 'numba' in sys.modules)"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


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
    assert "olearn.learner" in imported and "numba" not in imported


def test_signatures_with_compiled_in_constants_are_not_exported():
    # calls between kernels type constant arguments as literals, which are not passed at all:
    # exporting such a signature for Python calls would misread the arguments
    from numba.core import types as nt
    assert aot._has_literal(nt.literal(True))
    assert aot._has_literal(nt.Tuple((nt.float64, nt.literal(3))))
    assert not aot._has_literal(nt.boolean)
    assert not aot._has_literal(nt.Tuple((nt.float64, nt.Array(nt.uint8, 1, "C"))))
