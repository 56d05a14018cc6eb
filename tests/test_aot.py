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
    assert "concurrent.futures" not in imported  # engine/pool.py: ~4 ms of start-up


def test_signatures_with_compiled_in_constants_are_not_exported():
    # calls between kernels type constant arguments as literals, which are not passed at all:
    # exporting such a signature for Python calls would misread the arguments
    from numba.core import types as nt
    assert aot._has_literal(nt.literal(True))
    assert aot._has_literal(nt.Tuple((nt.float64, nt.literal(3))))
    assert not aot._has_literal(nt.boolean)
    assert not aot._has_literal(nt.Tuple((nt.float64, nt.Array(nt.uint8, 1, "C"))))


# -- the first run starts the module's build -----------------------------------------------------

def _start_build_in_subprocess(cache_dir, command: list[str]) -> subprocess.CompletedProcess:
    """aot.build_in_background(stderr, command) in a fresh interpreter; prints whether the
    build was started."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    code = ("import sys; from olearn.kernel import aot; "
            f"print(aot.build_in_background(sys.stderr, {command!r}))")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)


def _wait_for(path, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_first_run_starts_the_build_in_the_background_and_says_so(tmp_path):
    marker = tmp_path / "built"
    result = _start_build_in_subprocess(
        tmp_path, [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ok')"])
    assert result.stdout.strip() == "True", result.stderr
    assert "builds in the background" in result.stderr
    # the run did not wait for it: the build goes on after the run's process is gone
    assert _wait_for(marker)


def test_no_build_starts_while_one_runs(tmp_path):
    with aot_lock(tmp_path):
        marker = tmp_path / "built"
        result = _start_build_in_subprocess(
            tmp_path, [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ok')"])
    assert result.stdout.strip() == "False" and result.stderr == ""
    time.sleep(0.5)
    assert not marker.exists()


def aot_lock(directory):
    """The build's lock, held (as a running build holds it)."""
    import contextlib
    import fcntl

    @contextlib.contextmanager
    def held():
        with open(directory / f"{aot.MODULE}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
    return held()


def test_the_background_build_gives_up_while_another_builds(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    with aot_lock(tmp_path):
        result = subprocess.run([sys.executable, "-m", "olearn.frontends.build"], env=env,
                                capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and not (tmp_path / aot.FAILED).exists(), result.stderr


def test_a_failed_build_is_recorded_and_not_retried(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(aot.NO_BUILD, raising=False)
    monkeypatch.delenv("NUMBA_BOUNDSCHECK", raising=False)
    assert aot.wants_build(["-d", "x.vw"])
    aot.record_failure("ModuleNotFoundError: numba.pycc")
    assert not aot.wants_build(["-d", "x.vw"])
    (tmp_path / aot.FAILED).write_text("0" * 16 + "\n(other sources)\n")
    assert aot.wants_build(["-d", "x.vw"])


def test_a_build_of_these_sources_is_known_without_loading_it(tmp_path, monkeypatch):
    import olearn
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert not aot.built()
    (tmp_path / f"{aot.MODULE}.json").write_text(json.dumps({"sources": "0" * 16}))
    assert not aot.built()
    (tmp_path / f"{aot.MODULE}.json").write_text(json.dumps({"sources": olearn.SOURCE_HASH}))
    assert aot.built()


@pytest.mark.parametrize("argv, env, wanted", [
    (["-d", "x.vw"], {}, True), (["--help"], {}, False), (["--version"], {}, False),
    (["-d", "x.vw"], {aot.NO_BUILD: "1"}, False),
    (["-d", "x.vw"], {"NUMBA_BOUNDSCHECK": "1"}, False)])
def test_which_commands_start_a_build(tmp_path, monkeypatch, argv, env, wanted):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(aot.NO_BUILD, raising=False)
    monkeypatch.delenv("NUMBA_BOUNDSCHECK", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert aot.wants_build(argv) is wanted


def test_the_warm_up_compiles_both_example_loops_for_the_module():
    # a run compiles the loop it needs only; the module exports what the warm-up compiled, and
    # a later run may need the other loop
    import numba

    from olearn.engine.learner import OnlineLearner
    from olearn.kernel import loop
    from olearn.options.config import Config
    learner = OnlineLearner(Config(quiet=True, bit_precision=10))
    learner.compile_loops(both=True)
    family = numba.typeof(learner.family.bundle())
    for kernel in (loop.learn_batch, loop.learn_expanded_batch):
        assert any(sig.args[1] == family for sig in kernel.nopython_signatures)


@pytest.mark.parametrize("options, line", [({}, b"1 |a x\n"), ({"csoaa": 3}, b"1:0.5 2:1 |a x\n"),
                                           ({"oaa": 3, "quadratic": ["aa"]}, b"2 |a x y\n")])
def test_an_empty_batch_has_the_types_the_parser_gives(options, line):
    # the kernels compiled ahead of a run (frontends/run.py compile_ahead) on an empty batch are
    # the ones the run's parsed batches call
    import numba

    from olearn.data import sources
    from olearn.data.batch import ExampleBatch
    from olearn.data.parse import FORMAT_VW
    from olearn.engine.learner import OnlineLearner
    from olearn.options.config import Config
    learner = OnlineLearner(Config(quiet=True, bit_precision=10, **options))

    def types(batch):
        return [numba.typeof(argument) for argument in learner._arguments(
            batch, learner.new_predictions(batch), learner._no_rows, learner.params,
            learner.state, learner.stats)]
    parsed = learner.parse_block(sources.Block(line, "t", 0), FORMAT_VW)
    assert len(parsed) == 1 and types(ExampleBatch.empty()) == types(parsed)


@pytest.mark.slow  # a first run's compile, about 40 s
def test_a_first_run_compiles_the_parser_in_a_child_and_the_loop_itself(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x:1 y:2\n-1 |a x:2 |b z\n")
    code = ("import os; from olearn.frontends.run import compile_ahead; "
            "from olearn.engine.learner import OnlineLearner; from olearn.kernel import loop; "
            "from olearn.data import parse; from olearn.options.config import Config; "
            f"config = Config(data=[{str(data)!r}], quiet=True); "
            "compile_ahead(OnlineLearner(config), config, config.data); "
            "print(len(loop.learn_batch.nopython_signatures), "
            "len(parse.parse_vw_block.nopython_signatures))")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.stdout.split() == ["1", "0"], result.stderr[-2000:]
    assert glob.glob(str(tmp_path / "cache" / "*" / "parse.parse_vw_block-*.nbi"))


@pytest.mark.parametrize("argv, status, started", [(["--no_stdin", "--quiet"], 0, True),
                                                   (["--no_such_option"], 2, False)])
def test_the_build_starts_once_a_run_has_succeeded(tmp_path, argv, status, started):
    # console.main hands aot.build_in_background to the command line as ``after``: the build
    # would slow the run's own compile down, and a run that failed asks for no build
    marker = tmp_path / "started"
    code = ("import sys; from olearn.frontends.cli import main; "
            f"main(sys.argv[1:], after=lambda: open({str(marker)!r}, 'w').close())")
    result = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == status, result.stderr[-2000:]
    assert marker.exists() is started
