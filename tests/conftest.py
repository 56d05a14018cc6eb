"""Shared test helpers: run the olearn CLI and the reference VW as subprocesses."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# Property-based tests draw the same examples in every run (no random seed, no example database).
settings.register_profile("olearn", derandomize=True, deadline=None, database=None)
settings.load_profile("olearn")

# The command line builds its ahead-of-time kernels on a first run (olearn/kernel/aot.py); the
# suite's commands never do (make check builds them first), so none waits minutes inside a test.
os.environ.setdefault("OLEARN_NO_BUILD", "1")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

Result = tuple[int, str, str]  # (returncode, stdout, stderr)


def olearn_cmd(*args: object) -> list[str]:
    """Command line for the olearn CLI, run by the interpreter that runs the tests."""
    return [sys.executable, "-m", "olearn", *map(str, args)]


def vw_cmd(*args: object) -> list[str]:
    """Command line for the reference VW (the vowpalwabbit wheel; it cannot read stdin)."""
    return [sys.executable, "-m", "vowpalwabbit", *map(str, args)]


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def run_cmd(cmd: list[str], input: bytes | str | None = None, cwd: object = None,
            timeout: float = 300) -> Result:
    """Run ``cmd``; return (returncode, stdout, stderr), decoded as UTF-8 (surrogateescape)."""
    if isinstance(input, str):
        input = input.encode()
    proc = subprocess.run(cmd, input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          cwd=cwd, timeout=timeout)
    return proc.returncode, _decode(proc.stdout), _decode(proc.stderr)


def run_concurrently(*cmds: list[str], cwd: object = None, timeout: float = 300) -> list[Result]:
    """Run several commands at the same time (no stdin); results in the order given."""
    procs = [subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=cwd) for cmd in cmds]
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            results.append((proc.returncode, _decode(out), _decode(err)))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def run_olearn(*args: object, input: bytes | str | None = None, cwd: object = None) -> Result:
    """Run ``olearn ARGS``; return (returncode, stdout, stderr)."""
    return run_cmd(olearn_cmd(*args), input=input, cwd=cwd)


def olearn_here(*args: object) -> None:
    """Run ``olearn ARGS`` in this process (olearn.frontends.cli.command), sparing the ~0.5 s
    start of a new interpreter; a failure raises its exception instead of printing one line."""
    from olearn.frontends import cli  # here: conftest is imported before any test needs olearn
    cli.command([str(arg) for arg in args])


# The parts `make test` leaves to `make check` (pyproject.toml declares the markers): a test
# module whose every test is one kind is marked here; a single slow test carries its marker.
MODULE_MARKERS = {"test_vw_oracle.py": "oracle", "test_dask.py": "dask", "test_aot.py": "slow"}


def pytest_collection_modifyitems(config, items) -> None:
    """Mark each test of MODULE_MARKERS' modules, and every test that runs VW (``vw``)."""
    for item in items:
        marker = MODULE_MARKERS.get(item.path.name)
        if marker:
            item.add_marker(marker)
        if "vw" in getattr(item, "fixturenames", ()):
            item.add_marker("oracle")


def run_vw(*args: object, cwd: object = None) -> Result:
    """Run the reference ``vw ARGS``; return (returncode, stdout, stderr)."""
    return run_cmd(vw_cmd(*args), cwd=cwd)


@pytest.fixture(scope="session")
def vw():
    """The reference VW runner; skips the test when the vowpalwabbit package is absent."""
    pytest.importorskip("vowpalwabbit")
    return run_vw


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared benchmark datasets directory (../shared/data); skips when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared datasets not found at {SHARED_DATA}")
    return SHARED_DATA


# VW's resume block in a readable model: the lines between ``:1`` and the weights.
RESUME_LINES = 18


def readable_body(text: str) -> list[str]:
    """The weight lines of a readable model: after ``:0``, or after ``:1`` and VW's resume
    block (olearn/persistence/readable.py)."""
    lines = text.splitlines()
    marker = next(i for i, line in enumerate(lines) if line in (":0", ":1"))
    return lines[marker + 1 + (RESUME_LINES if lines[marker] == ":1" else 0):]


def split_model(data: bytes) -> tuple[dict, bytes]:
    """A model file's header and payload."""
    from olearn.persistence import model
    start = len(model.MAGIC) + 4
    (length,) = struct.unpack("<I", data[len(model.MAGIC):start])
    return json.loads(data[start:start + length]), data[start + length:-32]


def model_file(header: object, payload: bytes) -> bytes:
    """A model file of ``header`` and ``payload``, with a valid checksum."""
    from olearn.persistence import model
    text = json.dumps(header).encode()
    body = model.MAGIC + struct.pack("<I", len(text)) + text + payload
    return body + model._sha256(body)


def model_state(path) -> tuple[dict, dict]:
    """A model file's options and arrays, less its progress counters: those count the runs
    that made it (a continued run's start at 0 without --preserve_performance_counters, and a
    --dask run's are its partitions')."""
    from olearn.persistence import model  # here: conftest is imported before olearn is needed
    saved = model.load(str(path))
    return saved.options, {name: array.tolist() for name, array in saved.arrays.items()
                           if name != "counters"}
