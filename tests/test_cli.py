"""The command line end to end: inputs, outputs and every kind of bad input (one line, no
traceback)."""
import gzip

import numpy as np
import pytest
from conftest import model_state, olearn_cmd, run_cmd

from olearn.learners.weights import W_G
from olearn.persistence import model


def olearn(*args, input=None, cwd=None):
    return run_cmd(olearn_cmd(*args), input=input, cwd=cwd)


def _one_error_line(code, err):
    assert code != 0
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("olearn: error: ")
    return lines[0]


def _average_loss(err):
    return next(line for line in err.splitlines() if line.startswith("average loss"))


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.vw"
    path.write_bytes(b"1 'a |f x:1 y:2\n-1 |f x:-1 z\n2 |f y\n|f x\n0.5 2 |f z:3\n")
    return path


def test_missing_file_is_one_line_naming_it(tmp_path):
    line = _one_error_line(*olearn("-d", tmp_path / "nope.vw")[::2])
    assert "nope.vw" in line and "no such file" in line


def test_directory_as_data_is_one_line(tmp_path):
    code, _, err = olearn("-d", tmp_path)
    _one_error_line(code, err)


def test_truncated_gzip_is_one_line(tmp_path, small):
    data = gzip.compress(small.read_bytes() * 200)
    path = tmp_path / "cut.vw.gz"
    path.write_bytes(data[: len(data) // 2])
    line = _one_error_line(*olearn("-d", path, "--quiet")[::2])
    assert "truncated gzip" in line and "cut.vw.gz" in line


def test_corrupt_gzip_is_one_line(tmp_path):
    path = tmp_path / "bad.vw.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00garbage-garbage-garbage")
    line = _one_error_line(*olearn("-d", path, "--quiet")[::2])
    assert "gzip" in line


@pytest.mark.parametrize("bits", ["0", "31", "-3"])
def test_bits_out_of_range_is_one_line(small, bits):
    line = _one_error_line(*olearn("-d", small, "-b", bits)[::2])
    assert "bit_precision" in line


def test_unknown_option_is_one_line(small):
    code, _, err = olearn("-d", small, "--no_such_option")
    line = _one_error_line(code, err)
    assert "--no_such_option" in line
    assert code == 2


def test_bad_option_value_is_one_line(small):
    _one_error_line(*olearn("-d", small, "-l", "fast")[::2])


def test_empty_input_gives_a_normal_summary(tmp_path):
    path = tmp_path / "empty.vw"
    path.write_bytes(b"")
    code, _, err = olearn("-d", path)
    assert code == 0
    assert "number of examples = 0" in err
    assert "average loss = n.a." in err


def test_empty_stdin_gives_a_normal_summary():
    code, _, err = olearn(input=b"")
    assert code == 0 and "number of examples = 0" in err


def test_malformed_token_warns_with_file_and_line_and_is_skipped(tmp_path):
    path = tmp_path / "bad.vw"
    path.write_bytes(b"1 |a x:1\n1 |a x:2abc y\n")
    code, _, err = olearn("-d", path)
    assert code == 0
    warnings = [line for line in err.splitlines() if line.startswith("[warning]")]
    assert len(warnings) == 1 and f"{path}:2:" in warnings[0]
    assert "total feature number = 4" in err  # x=2 kept, y dropped, plus two constants


def test_strict_parse_makes_warnings_fatal(tmp_path):
    path = tmp_path / "bad.vw"
    path.write_bytes(b"1 |a x:1\nabc |a x\n")
    line = _one_error_line(*olearn("-d", path, "--strict_parse", "--quiet")[::2])
    assert f"{path}:2:" in line and "not a good float" in line


@pytest.mark.parametrize("line, problem", [
    (b"inf |a x", "label 'inf' is not a finite number; example left unlabeled"),
    (b"-inf |a x", "label '-inf' is not a finite number"),
    (b"nan |a x", "label 'nan' is not a finite number"),
    (b"1 inf |a x", "invalid importance weight (inf)"),
    (b"1 |a x:inf", "invalid feature value"),
    (b"1 |a x:1e999", "invalid feature value"),
    (b"1 |a:1e30 x:1e30", "invalid feature value"),
    (b"1 |a:inf x", "invalid namespace scale \"a:inf\" (not a finite number); replacing with 1"),
])
def test_non_finite_input_warns_and_learns_nothing_from_it(tmp_path, line, problem):
    path = tmp_path / "bad.vw"
    path.write_bytes(b"1 |a x:1\n" + line + b"\n2 |a x:2\n")
    code, _, err = olearn("-d", path, "-f", tmp_path / "m", "--readable_model", tmp_path / "r")
    warnings = [w for w in err.splitlines() if w.startswith("[warning]")]
    assert code == 0 and len(warnings) == 1 and f"{path}:2: " in warnings[0], err
    assert problem in warnings[0]
    readable = (tmp_path / "r").read_text().lower()
    assert "nan" not in readable and "inf" not in readable and "average loss = nan" not in err


def test_strict_parse_names_the_problem_without_a_recovery(tmp_path):
    path = tmp_path / "bad.vw"
    path.write_bytes(b"inf |a x\n")
    line = _one_error_line(*olearn("-d", path, "--strict_parse", "-f", tmp_path / "m",
                                   "--quiet")[::2])
    assert line.endswith(f"{path}:1: label 'inf' is not a finite number (--strict_parse)")
    assert not (tmp_path / "m").exists()


def test_model_whose_adaptive_sum_overflowed_is_saved_and_loads(tmp_path):
    path, m, preds = tmp_path / "huge.vw", tmp_path / "m", tmp_path / "p"
    path.write_bytes(b"1 |a x:1e30 y:1\n0 |a x:1e30 y:2\n1 |a y:1\n")
    code, _, err = olearn("-d", path, "-f", m, "--quiet")
    assert code == 0, err
    assert np.isinf(model.load(str(m)).arrays["rows"][:, W_G]).any()  # x's squared gradients
    code, _, err = olearn("-t", "-i", m, "-d", path, "-p", preds, "--quiet")
    assert code == 0, err
    assert np.isfinite(np.loadtxt(preds)).all()


def test_an_update_that_would_overflow_is_refused_and_the_model_saved(tmp_path):
    path = tmp_path / "huge.vw"
    path.write_bytes(b"1e38 |a x:1e38\n" * 2)
    code, _, err = olearn("-d", path, "--sgd", "-f", tmp_path / "m")
    assert code == 0 and "updates refused (a weight would be non-finite) = 2" in err
    _, state = model_state(tmp_path / "m")
    assert np.isfinite(np.array(state["rows"])).all()


def test_model_with_non_finite_weights_is_not_saved(tmp_path):
    from olearn import Learner
    from olearn.errors import OlearnError

    learner = Learner("--quiet")
    learner.fit(["1 |a x"])
    learner._learner.weights[:, 0] = np.inf
    with pytest.raises(OlearnError, match="NaN or infinite weights"):
        learner.save(tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_quiet_silences_warnings(tmp_path):
    path = tmp_path / "bad.vw"
    path.write_bytes(b"abc |a x\n")
    code, _, err = olearn("-d", path, "--quiet")
    assert code == 0 and err == ""


def test_non_utf8_names_are_hashed_as_bytes(tmp_path):
    path = tmp_path / "latin1.vw"
    path.write_bytes(b"1 |a caf\xe9 \xff\xfe:2\n")
    code, out, err = olearn("-d", path, "--audit", "--quiet")
    assert code == 0 and "Traceback" not in err
    assert out.count(":") >= 6


def test_predictions_file_has_one_line_per_example_with_tags(tmp_path, small):
    preds = tmp_path / "p.txt"
    code, _, _ = olearn("-d", small, "-p", preds, "--quiet")
    assert code == 0
    lines = preds.read_text().splitlines()
    assert len(lines) == 5
    assert lines[0] == "0 a"
    assert all(" " not in line for line in lines[1:])


def test_predictions_to_dev_stdout(small):
    code, out, _ = olearn("-d", small, "-p", "/dev/stdout", "--quiet")
    assert code == 0 and len(out.splitlines()) == 5


def test_failed_run_leaves_no_predictions_file(tmp_path):
    path = tmp_path / "cut.vw.gz"
    data = gzip.compress(b"".join(b"1 |a x:%d\n" % i for i in range(50000)))
    path.write_bytes(data[: len(data) // 2])
    preds = tmp_path / "p.txt"
    code, _, _ = olearn("-d", path, "-p", preds, "--quiet")
    assert code != 0
    assert list(tmp_path.iterdir()) == [path]


def test_no_stdin_reads_no_examples_and_writes_the_fresh_model(tmp_path):
    model, text = tmp_path / "m.olearn", tmp_path / "m.txt"
    code, _, err = olearn("--no_stdin", "-f", model, "--readable_model", text,
                          input=b"1 |a x\n")
    assert code == 0 and "number of examples = 0" in err
    assert "Reading datafile = none\nnum sources = 0" in err
    assert model.exists() and "\ncurrent_pass 0\n" in text.read_text()  # as VW


@pytest.mark.parametrize("flag", ["--onethread", "--sparse_weights"])
def test_vw_flags_that_change_no_result_are_accepted(tmp_path, small, flag):
    runs = [olearn("-d", small, "-p", tmp_path / f"{k}.p", *extra)
            for k, extra in enumerate([[], [flag]])]
    assert [code for code, _, _ in runs] == [0, 0]
    assert (tmp_path / "0.p").read_text() == (tmp_path / "1.p").read_text()


def test_positional_files_are_read_in_order(tmp_path, small):
    preds = tmp_path / "p.txt"
    code, _, err = olearn(small, small, "-p", preds)
    assert code == 0 and "number of examples = 10" in err
    assert len(preds.read_text().splitlines()) == 10


def test_stdin_dash_and_gzip_give_the_same_loss(tmp_path, small):
    gz = tmp_path / "small.vw.gz"
    gz.write_bytes(gzip.compress(small.read_bytes()))
    plain = _average_loss(olearn("-d", small)[2])
    assert _average_loss(olearn("-d", gz)[2]) == plain
    assert _average_loss(olearn("-", input=small.read_bytes())[2]) == plain
    assert _average_loss(olearn(input=gzip.compress(small.read_bytes()))[2]) == plain


def test_svmlight_twin_gives_the_same_loss(tmp_path):
    vw = tmp_path / "d.vw"
    svm = tmp_path / "d.svm"
    vw.write_bytes(b"1 |f 1:0.5 7:2\n-1 |f 3:1\n1 |f 1:1 3:-1\n")
    svm.write_bytes(b"1 1:0.5 7:2 # c\n-1 qid:4 3:1\n1 1:1 3:-1\n")
    want = _average_loss(olearn("-d", vw)[2])
    assert _average_loss(olearn("-d", svm)[2]) == want
    assert _average_loss(olearn("--format", "svmlight", input=svm.read_bytes())[2]) == want


def test_help_lists_the_core_options():
    code, out, _ = olearn("--help")
    assert code == 0
    for option in ("--data", "--bit_precision", "--learning_rate", "--power_t", "--initial_t",
                   "--sgd", "--adaptive", "--normalized", "--invariant", "--predictions",
                   "--quiet", "--audit", "--progress", "--noconstant", "--hash", "--hash_seed",
                   "--format", "--strict_parse", "--min_prediction", "--max_prediction"):
        assert option in out


def _run_on_terminal(args, columns=120):
    """Run olearn with stderr on a pseudo-terminal of the given width; return what it printed."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(olearn_cmd(*args), stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(leader)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace")


def test_progress_bar_only_on_a_terminal_with_rows_above_it(tmp_path):
    path = tmp_path / "many.vw"
    path.write_text("".join(f"{i % 3} |a x:{i % 7} y{i % 11}\n" for i in range(300000)))
    code, shown = _run_on_terminal(["-d", path])
    assert code == 0
    assert "B/s" in shown or "%|" in shown          # the tqdm bar was drawn
    assert "\r" in shown                             # and redrawn in place
    assert "finished run" in shown and "average loss" in shown
    code, quiet = _run_on_terminal(["-d", path, "--quiet"])
    assert code == 0 and quiet == ""
    _, _, err = olearn("-d", path)                   # stderr not a terminal: no bar
    assert "%|" not in err and "\r" not in err


def test_text_model_header_repeats_a_repeatable_option_as_vw(small, tmp_path):
    out = tmp_path / "r"
    code, _, err = olearn("-d", small, "-q", "fx", "-q", "ff", "--readable_model", out, "--quiet")
    assert code == 0, err
    assert "options: --quadratic fx --quadratic ff\n" in out.read_text()


@pytest.mark.parametrize("redirect, args", [
    ("<&-", ["--quiet"]),                                   # stdin closed: no examples
    (">&-", ["-d", "{data}", "-p", "/dev/stdout", "--quiet"]),
    (">&-", ["-d", "{data}", "--audit", "--quiet"]),
    ("2>&-", ["-d", "{data}", "-p", "{preds}"]),            # the table goes nowhere
])
def test_closed_standard_stream_reads_empty_or_swallows_output(tmp_path, redirect, args):
    """As VW runs: a closed stream is the null device, not an internal error."""
    import shlex
    data, preds = tmp_path / "d.vw", tmp_path / "p"
    data.write_text("".join(f"{i % 3} |a x:{i}\n" for i in range(20)))
    words = [arg.format(data=data, preds=preds) for arg in args]
    command = " ".join(map(shlex.quote, olearn_cmd(*words)))
    code, _, err = run_cmd(["bash", "-c", f"{command} {redirect}"])
    assert code == 0 and "error" not in err
    if "{preds}" in args:
        assert len(preds.read_text().splitlines()) == 20


def test_fifo_as_data_is_read_to_its_end(tmp_path):
    """The up-front check of -d must not open a FIFO (that would end its writer's stream)."""
    import os
    import threading
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    lines = "".join(f"{i % 3} |a x:{i}\n" for i in range(30))

    def write() -> None:
        with open(fifo, "w") as f:
            f.write(lines)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    code, _, err = olearn("-d", fifo, "-p", tmp_path / "p")
    writer.join(timeout=60)
    assert code == 0 and "number of examples = 30" in err


@pytest.mark.parametrize("option", ["-f", "--readable_model", "--invert_hash"])
def test_model_output_into_a_missing_folder_fails_before_learning(tmp_path, option):
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{i % 3} |a x:{i}\n" for i in range(20)))
    code, _, err = olearn("-d", data, option, tmp_path / "missing" / "m")
    line = _one_error_line(code, err)  # no table: nothing was learned first
    assert "missing" in line and "No such file or directory" in line


def test_an_example_too_wide_for_memory_is_one_line_naming_it(tmp_path):
    """A real MemoryError: the run's address space is limited to 3 GB, and one line's -q aa
    takes 6.7 GB of scratch under --ftrl, which expands an example whole (gradient descent
    would learn it by chunks)."""
    import subprocess

    resource = pytest.importorskip("resource")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    data = tmp_path / "wide.vw"
    data.write_text("1 |a x y\n1 |a " + " ".join(f"f{i}" for i in range(30_000)) + "\n")
    proc = subprocess.run(olearn_cmd("-d", data, "-q", "aa", "--ftrl", "--quiet"),
                          capture_output=True, text=True, preexec_fn=limited, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr == (f"olearn: error: {data}:2: out of memory: this example's interactions "
                           "take up to 900,030,001 features (6.7 GiB)\n")
