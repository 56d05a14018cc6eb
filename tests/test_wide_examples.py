"""An example whose interactions expand to more rows than a chunk holds is learned chunk by
chunk (kernel/example_features.py): the same predictions, model and table as when it is
expanded whole, in memory that does not grow with its width."""
from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from olearn.features.interactions import (
    cursor_size,
    encode,
    expand,
    expand_part,
    expanded_size,
    expansion_done,
    start_cursor,
    terms_of,
)
from tests.conftest import REPO_ROOT, olearn_here

CHUNK = "olearn.features.interactions.CHUNK_ROWS"


@given(features=st.lists(st.tuples(st.sampled_from(b"abc"), st.integers(0, 2**18 - 1),
                                   st.floats(-4, 4, width=32)), max_size=14),
       terms=st.sampled_from([["ab"], ["aa"], ["abc", "ba"], ["aab"], ["aaa", "cb"]]),
       permutations=st.booleans(), room=st.integers(1, 9))
def test_expansion_in_parts_of_any_size_equals_the_whole(features, terms, permutations, room):
    features.sort(key=lambda f: f[0])
    namespace = np.array([f[0] for f in features], dtype=np.uint8)
    index = np.array([f[1] for f in features], dtype=np.uint32)
    value = np.array([f[2] for f in features], dtype=np.float32)
    table = encode(terms_of([], [], terms, permutations, False, print))
    ranges = np.zeros((256, 2), dtype=np.int64)
    need = expanded_size(namespace, 0, len(features), table, ranges)
    whole = (np.empty(need, dtype=np.uint32), np.empty(need, dtype=np.float32),
             np.empty((need, table.shape[1]), dtype=np.int64))
    cursor = np.empty(cursor_size(table), dtype=np.int64)
    n = expand(index, value, 0, len(features), table, ranges, 2**18 - 1, permutations, *whole,
               cursor)
    parts = []
    start_cursor(cursor, 0)
    while not expansion_done(cursor, table):
        part = (np.empty(room, dtype=np.uint32), np.empty(room, dtype=np.float32),
                np.empty((room, table.shape[1]), dtype=np.int64))
        m = expand_part(index, value, 0, len(features), table, ranges, 2**18 - 1, permutations,
                        *part, cursor)
        assert m > 0 or expansion_done(cursor, table)
        parts.append([array[:m] for array in part])
    for column, array in enumerate(whole):
        got = (np.concatenate([p[column] for p in parts]) if parts else array[:0])
        assert np.array_equal(got, array[:n])


def _data(path, labels=(-1, 1), lines=120, seed=3):
    """Lines of 1-40 features in namespace a and 3 in b, each with one of ``labels``."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(lines):
            a = " ".join(f"x{rng.randint(0, 400)}:{rng.random():.3f}"
                         for _ in range(rng.randint(1, 40)))
            b = " ".join(f"y{rng.randint(0, 30)}" for _ in range(3))
            f.write(f"{rng.choice(labels)} |a {a} |b {b}\n")


def _run(tmp_path, monkeypatch, chunk_rows, tag, args):
    """A training run then a test-only run, with chunks of ``chunk_rows`` rows: their outputs."""
    monkeypatch.setattr(CHUNK, chunk_rows)
    data = tmp_path / "train.vw"
    model, preds, readable, tested = (tmp_path / f"{tag}.{kind}"
                                      for kind in ("model", "p", "txt", "t"))
    olearn_here("-d", data, *args, "-f", model, "-p", preds, "--readable_model", readable,
                "--quiet")
    olearn_here("-d", data, "-t", "-i", model, "-p", tested, "--quiet")
    return [path.read_bytes() for path in (preds, readable, tested)]


@pytest.mark.parametrize("args", [
    ("-q", "aa", "-q", "ab"),
    ("-q", "aa", "--l1", "1e-4", "--l2", "1e-4"),
    ("-q", "ab", "--cubic", "aab", "--sgd"),
    ("-q", "aa", "--ignore_linear", "a", "--invariant"),
    ("-q", "aa", "--sparse_l2", "0.01", "--loss_function", "hinge"),
    ("-q", "aa", "--adaptive", "--loss_function", "logistic"),
    ("-q", "aa", "--normalized", "--power_t", "0.3", "--passes", "2", "-c", "-k"),
    ("-q", "ab", "--oaa", "3", "--l2", "1e-5"),
    ("-q", "aa", "--oaa", "2", "--probabilities", "--loss_function", "logistic"),
])
def test_a_run_by_chunks_equals_a_run_of_whole_examples(tmp_path, monkeypatch, args):
    _data(tmp_path / "train.vw", (1, 2, 3) if "--oaa" in args else (-1, 1))
    whole = _run(tmp_path, monkeypatch, 1 << 20, "whole", args)
    chunked = _run(tmp_path, monkeypatch, 7, "chunked", args)
    assert chunked == whole


def test_the_table_counts_every_chunk_feature(tmp_path, monkeypatch, capsys):
    _data(tmp_path / "train.vw")
    tables = []
    for rows in (1 << 20, 5):
        monkeypatch.setattr(CHUNK, rows)
        olearn_here("-d", tmp_path / "train.vw", "-q", "aa", "--ignore_linear", "a")
        tables.append(capsys.readouterr().err)
    assert "total feature number" in tables[0] and tables[1] == tables[0]


def test_a_refused_step_in_a_later_chunk_steps_back_the_earlier_chunks(tmp_path, monkeypatch,
                                                                        capsys):
    data = tmp_path / "wild.vw"
    small = " ".join(f"f{i}:1" for i in range(20))
    # the step's size is ~1e38: rows with the value 30 (from row 41 on) would overflow
    data.write_text(f"1 |a {small}\n3e38 |a {small} big:30\n-1 |a {small}\n")
    models, summaries = [], []
    for rows in (1 << 20, 7):
        monkeypatch.setattr(CHUNK, rows)
        readable = tmp_path / f"{rows}.txt"
        olearn_here("-d", data, "-q", "aa", "--sgd", "--readable_model", readable)
        models.append(readable.read_text())
        summaries.append(capsys.readouterr().err)
    assert models[1] == models[0]
    assert "updates refused (a weight would be non-finite) = 1" in summaries[1]


# the run's peak memory: its address space's (VmHWM, new at exec; ru_maxrss would start at
# the forking test process's own peak)
WIDE_RUN = """
import atexit, sys
import olearn.features.interactions as interactions
from olearn.frontends import cli
interactions.CHUNK_ROWS = int(sys.argv[1])
def peak():
    with open("/proc/self/status") as status:
        print(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
atexit.register(peak)
cli.command(sys.argv[2:])
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_a_wide_example_takes_a_chunk_of_memory_not_its_expansion(tmp_path):
    # 10k features under -q aa: 50M rows, 400 MB expanded whole; a chunk of 2^16 rows is
    # 0.5 MB. The peak memory of the processes tells them apart.
    data = tmp_path / "wide.vw"
    data.write_text("1 |a " + " ".join(f"f{i}:0.5" for i in range(10_000)) + "\n")
    peaks = []
    for rows in (1 << 16, 1 << 16, 1 << 30):  # the first compiles what numba's cache lacks
        out = subprocess.run([sys.executable, "-c", WIDE_RUN, str(rows), "-d", str(data), "-q",
                              "aa", "--quiet"], capture_output=True, text=True, cwd=REPO_ROOT,
                             check=True).stdout
        peaks.append(int(out.split()[-1]) * 1024)  # VmHWM: KiB
    assert peaks[2] - peaks[1] > 250e6
