"""Several passes: the cache (-c, --cache_file, -k), holdout, early termination, learning-rate
decay and per-pass models; checked against VW where VW behaves the same."""
from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import run_olearn
from test_vw_oracle import _both, _split_summary, _table_and_summary, assert_same_layout

import olearn
from olearn.data import sources
from olearn.engine.learner import OnlineLearner
from olearn.engine.passes import Outcome, run_passes
from olearn.options.config import Config


def _regression_lines(n: int, seed: int, flip_every: int = 0) -> str:
    """y = 2a − b + z/2 on three features; with ``flip_every``, every such line has −y, so
    learning the others makes those lines (VW's holdout lines when 10) worse, pass after pass."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        a, b, z = (rng.random() for _ in range(3))
        y = 2 * a - b + 0.5 * z
        if flip_every and (i + 1) % flip_every == 0:
            y = -y
        lines.append(f"{y:.4f} 'e{i} |a x:{a:.3f} y:{b:.3f} |b z:{z:.3f}\n")
    return "".join(lines)


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "train.vw"
    path.write_text(_regression_lines(1000, seed=1))
    return path


@pytest.fixture
def worsening(tmp_path):
    path = tmp_path / "worse.vw"
    path.write_text(_regression_lines(1000, seed=2, flip_every=10))
    return path


def _predictions(path) -> np.ndarray:
    return np.array([float(line.split()[0]) for line in open(path)])


PASS_OPTIONS = {
    "passes3": ["--passes", "3"],
    "holdout_off": ["--passes", "3", "--holdout_off"],
    "period3_decay": ["--passes", "4", "--holdout_period", "3", "--decay_learning_rate", "0.5"],
    "holdout_after": ["--holdout_after", "500"],
    "sgd_passes": ["--passes", "3", "--sgd", "-l", "0.1"],
}


@pytest.mark.parametrize("options", list(PASS_OPTIONS))
def test_multipass_table_summary_and_predictions_match_vw(vw, data, tmp_path, options):
    def args(tool):
        return ["-d", data, *PASS_OPTIONS[options], "--cache_file", tmp_path / f"{tool}.cache",
                "-p", tmp_path / f"{tool}.p"]
    ol, ref = _both(args("olearn"), args("vw"))
    ours, theirs = _table_and_summary(ol[2]), _table_and_summary(ref[2])
    assert len(ours) == len(theirs), "\n".join(["olearn:", *ours, "vw:", *theirs])
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_same_layout(a, b, f"line {i + 1}")
    np.testing.assert_allclose(_predictions(tmp_path / "olearn.p"),
                               _predictions(tmp_path / "vw.p"), atol=2e-6)


def test_early_termination_matches_vw_and_keeps_the_best_model(vw, worsening, tmp_path):
    def args(tool):
        return ["-d", worsening, "--passes", "20", "--early_terminate", "2",
                "--cache_file", tmp_path / f"{tool}.cache", "-f", tmp_path / f"{tool}.model"]
    ol, ref = _both(args("olearn"), args("vw"))
    ours, theirs = (_split_summary(_table_and_summary(r[2]))[1] for r in (ol, ref))
    assert "passes used = 3" in ours
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_same_layout(a, b, f"summary line {i + 1}")

    def test_args(tool):
        return ["-t", "-i", tmp_path / f"{tool}.model", "-d", worsening,
                "-p", tmp_path / f"{tool}.t.p", "--quiet"]
    _both(test_args("olearn"), test_args("vw"))
    ours_p, theirs_p = _predictions(tmp_path / "olearn.t.p"), _predictions(tmp_path / "vw.t.p")
    np.testing.assert_allclose(ours_p, theirs_p, atol=2e-6)


def test_several_passes_need_a_cache(data):
    code, _, err = run_olearn("-d", data, "--passes", "2")
    assert code == 2 and "need a cache file for multiple passes" in err


def test_second_run_reads_the_cache_and_gives_the_same_results(data, tmp_path):
    first = run_olearn("-d", data, "-c", "-p", tmp_path / "1.p")
    assert first[0] == 0 and f"creating cache_file = {data}.cache" in first[2]
    second = run_olearn("-d", data, "-c", "-p", tmp_path / "2.p")
    assert second[0] == 0 and f"using cache_file = {data}.cache" in second[2]
    assert "Reading datafile" not in second[2]
    plain = run_olearn("-d", data, "-p", tmp_path / "3.p")
    assert (_table_and_summary(first[2]) == _table_and_summary(second[2])
            == _table_and_summary(plain[2]))
    text = (tmp_path / "1.p").read_text()
    assert text == (tmp_path / "2.p").read_text() == (tmp_path / "3.p").read_text()
    assert " e999\n" in text  # tags come back from the cache


@pytest.mark.parametrize("change", ["source", "bits", "kill"])
def test_cache_is_rebuilt_when_what_it_depends_on_changes(data, change):
    assert run_olearn("-d", data, "-c", "--quiet")[0] == 0
    extra = []
    if change == "source":
        with open(data, "a") as f:
            f.write("1 |a x:1\n")
    elif change == "bits":
        extra = ["-b", "20"]
    else:
        extra = ["-k"]
    code, _, err = run_olearn("-d", data, "-c", *extra)
    assert code == 0 and "creating cache_file" in err


def test_cache_from_stdin_needs_a_name(data, tmp_path):
    text = data.read_bytes()
    code, _, err = run_olearn("-c", input=text)
    assert code == 2 and "--cache_file" in err and "Traceback" not in err
    cache = tmp_path / "stdin.cache"
    first = run_olearn("--cache_file", cache, "--passes", "2", input=text)
    assert first[0] == 0 and "passes used = 2" in first[2]
    second = run_olearn("--cache_file", cache, "--passes", "2", input=b"")
    assert _table_and_summary(second[2]) == _table_and_summary(first[2])


def _cached_batches(data) -> tuple[str, list]:
    """Run olearn -c on ``data``; the cache's path and its batches as read back."""
    from olearn.data import cache
    assert run_olearn("-d", data, "-c", "--quiet")[0] == 0
    path = f"{data}.cache"
    return path, list(cache.read(path, (1 << 18) - 1))


def test_cache_arrays_are_the_parsed_ones_mapped_in_place_aligned_and_writable(data):
    from test_parser_properties import _parse

    from olearn.data.parse import FORMAT_VW
    _, batches = _cached_batches(data)
    parsed = _parse(data.read_bytes(), FORMAT_VW)
    assert sum(len(b) for b in batches) == len(parsed)
    assert np.array_equal(np.concatenate([b.index for b in batches]), parsed.index)
    for batch in batches:
        for array in (batch.numbers, batch.index, batch.value, batch.namespace, batch.text):
            assert array.flags.aligned and array.flags.writeable and not array.flags.owndata


def test_writing_cached_arrays_never_changes_the_cache_file(data):
    path, batches = _cached_batches(data)
    before = Path(path).read_bytes()
    for batch in batches:
        batch.value[:] = 0.0
    assert Path(path).read_bytes() == before


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_cache_is_refused_in_one_line(data, damage):
    assert run_olearn("-d", data, "-c", "--quiet")[0] == 0
    cache = f"{data}.cache"
    content = bytearray(open(cache, "rb").read())
    if damage == "truncate":
        content = content[: len(content) - 100]
    else:
        content[len(content) // 2] ^= 0x40
    open(cache, "wb").write(bytes(content))
    code, _, err = run_olearn("-d", data, "-c")
    assert code == 1 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("olearn: error: ")
    assert "cache file (rebuild it with -k)" in err


def test_failed_run_leaves_no_cache(tmp_path):
    path = tmp_path / "bad.vw"
    path.write_text("1 |a x\n" * 5 + "1 |a x:nan\n")
    code, _, _ = run_olearn("-d", path, "-c", "--strict_parse")
    assert code == 1 and not os.path.exists(f"{path}.cache")


def test_save_per_pass_writes_a_model_after_each_pass(data, tmp_path):
    model = tmp_path / "m.olearn"
    code, _, err = run_olearn("-d", data, "-c", "--passes", "3", "--holdout_off",
                              "--save_per_pass", "-f", model)
    assert code == 0, err
    assert all(os.path.exists(f"{model}.{n}") for n in (1, 2, 3))
    assert open(f"{model}.3", "rb").read() == open(model, "rb").read()
    assert open(f"{model}.1", "rb").read() != open(model, "rb").read()


def test_invert_hash_names_features_when_the_cache_exists(data, tmp_path):
    assert run_olearn("-d", data, "-c", "--quiet")[0] == 0
    names = tmp_path / "names.txt"
    code, _, err = run_olearn("-d", data, "-c", "--passes", "2", "--invert_hash", names)
    assert code == 0, err
    assert "a^x:" in names.read_text() and "b^z:" in names.read_text()


def test_audit_prints_every_pass(data):
    code, out, err = run_olearn("-d", data, "-c", "--passes", "2", "--holdout_off", "--audit",
                                "--quiet")
    assert code == 0, err
    assert out.count("a^x:") == 2 * 1000


# -- the pass driver shared by the command line, the API and --dask ---------------------------

def _drive(path, **options):
    """run_passes over ``path``'s lines, recording the passes and what it saves."""
    learner = OnlineLearner(Config(final_regressor="m", quiet=True, **options))
    text = Path(path).read_text().splitlines()
    calls = []

    def learn_pass(pass_no: int) -> int:
        calls.append(f"pass {pass_no}")
        lines = 0
        for batch in learner.batches(sources.blocks_of_lines(text)):
            learner.learn(batch, np.empty((len(batch), 2), dtype=np.float32))
            lines = batch.pass_line + batch.n_lines
        return lines

    done = run_passes(learner, learn_pass, calls.append)
    return done, calls


def test_driver_saves_the_best_pass_and_not_after_an_early_stop(worsening):
    done, calls = _drive(worsening, passes=20, early_terminate=2, save_per_pass=True)
    assert calls == ["pass 0", "m", "m.1", "pass 1", "m.2", "pass 2", "m.3"]
    assert done.passes == 3 and 0 < done.holdout_loss < np.inf


def test_driver_saves_after_the_last_pass_without_a_holdout(data):
    done, calls = _drive(data, passes=2, holdout_off=True, save_per_pass=True)
    assert calls == ["pass 0", "m.1", "pass 1", "m.2", "m"]
    assert done == Outcome(2, None)


def test_api_and_command_line_stop_early_at_the_same_pass(worsening, tmp_path):
    model = tmp_path / "m.olearn"
    code, _, err = run_olearn("-d", worsening, "-c", "--passes", "20", "--early_terminate", "2",
                              "--save_per_pass", "-f", model)
    assert code == 0, err
    assert "passes used = 3" in err and not os.path.exists(f"{model}.4")
    learner = olearn.Learner(passes=20, early_terminate=2).fit(worsening)
    lines = Path(worsening).read_text().splitlines()
    # the API keeps the last pass's state: the CLI's third per-pass model
    np.testing.assert_array_equal(learner.predict(lines),
                                  olearn.Learner.load(f"{model}.3").predict(lines))
