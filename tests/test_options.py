"""Option values and output files the command line refuses: one line on stderr, exit code 2,
nothing written; and how a run ends on SIGTERM or a closed output pipe."""
import math
import signal
import subprocess
import time

import numpy as np
import pytest
from conftest import olearn_cmd, run_cmd

from olearn.errors import OlearnError, OptionError
from olearn.options.config import Config

DATA = b"1 'a |a x:1 y:2\n-1 |a x:-1 z |b w\n2 |b y\n0.5 2 |a z:3\n"


def olearn(*args, input=None):
    return run_cmd(olearn_cmd(*args), input=input)


def _usage_error(code, err):
    """The one error line of a usage error (exit code 2)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("olearn: error: "), (code, err)
    return lines[0]


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "d.vw"
    path.write_bytes(DATA)
    return path


BAD_VALUES = [
    ("learning_rate", math.nan), ("learning_rate", -1.0), ("learning_rate", 0.0),
    ("learning_rate", math.inf), ("power_t", math.nan), ("power_t", -0.5),
    ("initial_t", -1.0), ("initial_t", math.inf), ("quantile_tau", 0.0),
    ("quantile_tau", 1.0), ("quantile_tau", math.nan), ("min_prediction", math.nan),
    ("max_prediction", -math.inf), ("l1", math.nan), ("l1", -1e-9), ("l2", math.inf),
    ("sched_exponent", math.nan), ("sched_exponent", -1.0), ("radius", 0.0),
    ("radius", math.inf), ("saew_alpha", 0.0), ("saew_C", math.nan), ("saew_B", -1.0),
    ("saew_a", math.inf), ("saew_b", math.nan), ("decay_learning_rate", 0.0),
    ("decay_learning_rate", math.nan), ("bit_precision", 0), ("bit_precision", 31),
    ("bit_precision", 18.0), ("passes", 0), ("passes", 2 ** 32), ("holdout_period", 0),
    ("holdout_after", -1), ("early_terminate", 0), ("batch_sz", -1),
    ("dask_partitions", -1), ("saew_d0", 0), ("saew_grid_d0", 17), ("saew_grid_B", 0),
    ("hash_seed", 2 ** 32), ("hash_seed", -2 ** 32), ("hash_seed", True),
    ("learning_rate", "0.5"), ("progress", "nan"), ("progress", "-2"), ("progress", "inf"),
    ("quadratic", ["é€"]), ("quadratic", [""]), ("quadratic", [1]), ("cubic", 3),
]


@pytest.mark.parametrize("name, value", BAD_VALUES)
def test_bad_option_value_is_refused(name, value):
    with pytest.raises(OptionError, match="-q" if name == "quadratic" else name):
        Config(**{name: value})


def test_option_error_is_an_olearn_error():
    with pytest.raises(OlearnError):
        Config(learning_rate=math.nan)


def test_min_prediction_must_be_below_max_prediction():
    with pytest.raises(OptionError, match="--min_prediction"):
        Config(min_prediction=1.0, max_prediction=1.0)
    assert Config(min_prediction=-1.0, max_prediction=1.0).max_prediction == 1.0


def test_values_at_the_edges_are_accepted():
    config = Config(power_t=0, initial_t=0, l1=0, batch_sz=0, holdout_after=0,
                    bit_precision=30, hash_seed=2 ** 32 - 1, min_prediction=-1e30)
    assert config.power_t == 0.0 and config.bit_precision == 30


@pytest.mark.parametrize("options, message", [
    ({"loss_function": "expectile"}, "needs --expectile_q"),
    ({"loss_function": "squared", "expectile_q": 0.3}, "needs --loss_function expectile"),
    ({"loss_function": "expectile", "expectile_q": 0.6}, r"in \(0, 0.5\]"),
])
def test_expectile_q_goes_with_the_expectile_loss_as_vw(options, message):
    with pytest.raises(OptionError, match=message):
        Config(**options)
    assert Config(loss_function="expectile", expectile_q=0.5).loss_param == 0.5


def test_negative_hash_seed_wraps_as_in_vw():
    assert Config(hash_seed=-1).hash_seed == 2 ** 32 - 1


def test_numpy_scalars_are_stored_as_python_numbers():
    config = Config(learning_rate=np.float32(0.25), bit_precision=np.int64(12))
    assert type(config.learning_rate) is float and type(config.bit_precision) is int


@pytest.mark.parametrize("args", [
    ["-l", "nan"], ["-l", "-1"], ["-l", "0"], ["--power_t", "nan"], ["--l2", "inf"],
    ["--l1", "nan"], ["--initial_t", "-1"], ["--min_prediction", "2", "--max_prediction", "1"],
    ["--hash_seed", "4294967296"], ["--passes", "0"], ["--radius", "inf", "--eg"],
    ["-P", "nan"], ["--saew_calibrate", "--saew_alpha", "1e308"],
    ["--passes", "2"], ["--eg", "--boa"],
])
def test_bad_option_is_one_line_and_exit_2(data, tmp_path, args):
    preds = tmp_path / "p.txt"
    _usage_error(*olearn("-d", data, "-p", preds, *args)[::2])
    assert not preds.exists()


@pytest.mark.parametrize("term, message", [
    ("é€", "expected 2 namespace letters"), ("", "expected 2 namespace letters"),
    ("a", "expected 2 namespace letters"), ("éb", "expected 2 namespace letters (bytes)"),
    ("abc", "expected 2 namespace letters"), ("\\x61", "expected 2 namespace letters"),
])
def test_odd_quadratic_is_one_line(data, term, message):
    assert message in _usage_error(*olearn("-d", data, "-q", term)[::2])


def test_quadratic_wildcards_are_accepted(data):
    code, _, err = olearn("-d", data, "-q", "::")
    assert code == 0 and "creating quadratic features for pairs: ::" in err


@pytest.mark.parametrize("outputs", [
    ["-p", "{data}"], ["-r", "{data}"], ["-f", "{data}"], ["--readable_model", "{data}"],
    ["--invert_hash", "{data}"], ["--cache_file", "{data}"], ["-p", "{model}"],
    ["--cache_file", "{model}"], ["-p", "{out}", "-r", "{out}"],
    ["-f", "{out}", "--readable_model", "{out}"], ["-c", "-p", "{data}.cache"],
    ["-p", "{link}"],
])
def test_output_naming_an_input_or_another_output_is_refused(data, tmp_path, outputs):
    model = tmp_path / "m.olearn"
    assert olearn("-d", data, "-f", model, "--quiet")[0] == 0
    (tmp_path / "link.vw").symlink_to(data)
    before = {path: path.read_bytes() for path in tmp_path.iterdir() if path.is_file()}
    names = {"data": data, "model": model, "out": tmp_path / "out", "link": tmp_path / "link.vw"}
    args = [arg.format(**names) for arg in outputs]
    line = _usage_error(*olearn("-d", data, "-i", model, *args)[::2])
    assert "would overwrite" in line or "name the same file" in line
    assert {path: path.read_bytes() for path in tmp_path.iterdir() if path.is_file()} == before


def test_final_model_may_replace_the_initial_model(data, tmp_path):
    model = tmp_path / "m.olearn"
    assert olearn("-d", data, "-f", model, "--quiet")[0] == 0
    first = model.read_bytes()
    code, _, err = olearn("-d", data, "-i", model, "-f", model, "--quiet")
    assert code == 0, err
    assert model.read_bytes() != first


def test_devices_and_stdout_may_be_shared(data):
    code, out, err = olearn("-d", data, "-p", "/dev/stdout", "-r", "/dev/stdout",
                            "--readable_model", "/dev/null", "--invert_hash", "/dev/null",
                            "--quiet")
    assert code == 0, err
    assert len(out.splitlines()) == 8


def _error_lines(err: bytes) -> list[str]:
    return [line for line in err.decode().splitlines() if line.strip()]


def test_sigterm_removes_temporary_outputs_and_exits_143(tmp_path):
    """SIGTERM while the reading thread waits on a pipe that stays open: one line, exit 143,
    the temporary -p/-r files removed, no -p/-r/-f file."""
    proc = subprocess.Popen(olearn_cmd("-p", "p.txt", "-r", "r.txt", "-f", "m.olearn"),
                            cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        proc.stdin.write(DATA * 40000)  # 1.5 MB: a block is learned, and more is awaited
        proc.stdin.flush()
        deadline = time.monotonic() + 120  # start-up, or numba compiling the kernels
        while not list(tmp_path.glob(".olearn-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
    assert code == 143
    assert _error_lines(proc.stderr.read())[-1:] == ["olearn: error: terminated"]
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def _big(tmp_path):
    """Input whose predictions (~600 kB) are far more than a pipe holds."""
    path = tmp_path / "big.vw"
    path.write_bytes(DATA * 16000)
    return path


@pytest.mark.parametrize("output", [["-p", "/dev/stdout"], ["--audit"]])
def test_closed_output_pipe_is_one_line_exit_141_and_no_model(tmp_path, output):
    data = _big(tmp_path)
    proc = subprocess.Popen(olearn_cmd("-d", data, *output, "-f", tmp_path / "m.olearn",
                                       "--quiet"),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stdout.readline()
        proc.stdout.close()  # as `olearn ... | head -1` does
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = _error_lines(proc.stderr.read())
    assert code == 141 and len(lines) == 1 and "broken pipe" in lines[0], lines
    assert [path.name for path in tmp_path.iterdir()] == ["big.vw"]


@pytest.mark.parametrize("options, message", [
    ({"ect": 3, "confidence": True}, "--ect does not take --confidence"),
    ({"marginal": "a", "ect": 3}, "--marginal does not take --ect"),
    ({"nn": 2, "boosting": 2}, "--boosting does not take --nn"),
    ({"nn": 2, "autolink": 2}, "--autolink does not take --nn"),
    ({"lrq": ["ab2"], "baseline": True}, "--lrq does not take --baseline"),
    ({"oaa": 3, "bootstrap": 2, "oaa_subsample": 1}, "--bootstrap does not take --oaa_subsample"),
], ids=["ect-confidence", "marginal-ect", "nn-boosting", "nn-autolink", "lrq-baseline",
        "three"])
def test_two_reductions_are_refused_unless_olearn_stacks_them(options, message):
    """One reduction class runs: a second reduction option would go unread (silently)."""
    with pytest.raises(OptionError, match=message):
        Config(**options)


@pytest.mark.parametrize("options", [{"oaa": 3, "bootstrap": 2}, {"oaa": 3, "oaa_subsample": 1}])
def test_the_stacks_of_reductions_are_taken(options):
    Config(**options)
