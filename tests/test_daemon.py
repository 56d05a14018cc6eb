"""--daemon end to end: a server subprocess on a free loopback port, answering as -t -i -p."""
from __future__ import annotations

import contextlib
import random
import re
import signal
import socket
import struct
import subprocess
import threading
import time

import numpy as np
import pytest
from conftest import olearn_cmd, run_cmd

import olearn
from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.options.command_line import config_of
from olearn.options.config import REGISTRY
from olearn.outputs.report import Console
from olearn.serving import daemon
from olearn.serving.daemon import too_long

START_TIMEOUT = 300  # seconds: a first bounds-checked run compiles the kernels
TIMEOUT = 60         # seconds for any one client's answers


def _lines(n: int, seed: int) -> list[bytes]:
    """Example lines with labels or none, tags or none, two namespaces and string features."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        label = rng.choice(["", f"{rng.uniform(-2, 2):.3f} "])
        tag = rng.choice(["", f"'t{i}", f"x{i}"])
        features = " ".join(f"f{rng.randrange(30)}:{rng.uniform(-1, 1):.2f}" for _ in range(4))
        lines.append(f"{label}{tag}|a {features} |b w{rng.randrange(5)}".encode())
    return lines


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("daemon")
    data = folder / "train.vw"
    data.write_bytes(b"\n".join(_lines(400, seed=1)) + b"\n")
    path = str(folder / "model.olearn")
    code, _, err = run_cmd(olearn_cmd("-d", data, "-q", "ab", "-f", path, "--quiet"))
    assert code == 0, err
    return path


def _predictions(model: str, lines: list[bytes], folder, *more: str) -> bytes:
    """What ``olearn -t -i model -p`` (or, with ``more``, another run) writes for ``lines``."""
    data, out = folder / "lines.vw", folder / "lines.p"
    data.write_bytes(b"".join(line + b"\n" for line in lines))
    args = ("-i", model, "-t") if not more else more
    code, _, err = run_cmd(olearn_cmd("-d", data, "-p", out, "--quiet", *args))
    assert code == 0, err
    return out.read_bytes()


class Server:
    """``olearn --daemon --port 0 ARGS`` as a subprocess, its port read from stderr."""

    def __init__(self, *args: object, preexec_fn=None):
        self.proc = subprocess.Popen(olearn_cmd("--daemon", "--port", 0, *args),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     preexec_fn=preexec_fn)
        timer = threading.Timer(START_TIMEOUT, self.proc.kill)
        timer.start()
        try:
            for line in self.proc.stderr:
                found = re.match(rb"daemon listening on 127\.0\.0\.1:(\d+)$", line.strip())
                if found:
                    self.port = int(found.group(1))
                    return
        finally:
            timer.cancel()
        raise AssertionError(f"the server did not start: exit code {self.proc.wait()}")

    def stop(self, signum: int = signal.SIGTERM) -> tuple[int, str]:
        """Send ``signum``; the exit code and the rest of stderr."""
        self.proc.send_signal(signum)
        try:
            err = self.proc.stderr.read()
            return self.proc.wait(timeout=TIMEOUT), err.decode()
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def ask(port: int, data: bytes, chunk: int = 0) -> list[bytes]:
    """The answer lines to ``data``, sent at once or ``chunk`` bytes at a time, then end of
    input; read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for start in range(0, len(data), chunk or len(data) or 1):
            sock.sendall(data[start:start + (chunk or len(data))])
            if chunk:
                time.sleep(0.002)  # separate packets
        sock.shutdown(socket.SHUT_WR)
        received = bytearray()
        while True:
            part = sock.recv(1 << 16)
            if not part:
                return bytes(received).splitlines(keepends=True)
            received += part


@pytest.fixture(scope="module")
def server(model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("server")
    running = Server("-t", "-i", model, "--port_file", folder / "port")
    running.port_file = folder / "port"
    yield running
    running.stop()


def test_answers_equal_the_p_file_of_the_same_lines(server, model, tmp_path):
    lines = _lines(300, seed=2)
    assert b"".join(ask(server.port, b"\n".join(lines) + b"\n")) == _predictions(
        model, lines, tmp_path)


def test_an_answer_ends_with_the_tag_of_its_line(server):
    answers = ask(server.port, b"1 mytag|a f1 |b w2\n'other |a f2\n|a f3\n")
    assert [a.split(b" ")[1:] for a in answers] == [[b"mytag\n"], [b"other\n"], []]


def test_lines_split_across_packets_are_answered_as_if_sent_whole(server):
    data = b"\n".join(_lines(40, seed=3)) + b"\n"
    assert ask(server.port, data, chunk=7) == ask(server.port, data)


def test_an_empty_line_gets_no_answer(server):
    assert len(ask(server.port, b"|a f1\n\n\r\n|a f2\n")) == 2


def test_an_unterminated_last_line_is_answered_at_end_of_input(server, model, tmp_path):
    assert ask(server.port, b"'t |a f1 f2") == [_predictions(model, [b"'t |a f1 f2"], tmp_path)]


def test_a_malformed_line_is_answered_with_an_error_and_later_lines_still_are(server, model,
                                                                            tmp_path):
    answers = ask(server.port, b"abc |a f1\n|a f1\n1 2 3 4 |a f1\n|a f1 |\x01:inf\n|a f1\n")
    good = _predictions(model, [b"|a f1"], tmp_path)
    assert answers[0] == b"error: 'abc' is not a good float\n"
    assert answers[2].startswith(b"error: 4 is too many tokens")
    assert answers[3].startswith(b"error: invalid namespace scale")
    assert answers[1] == answers[4] == good


def test_a_line_longer_than_the_limit_is_answered_with_an_error_and_skipped(server, model,
                                                                          tmp_path):
    limit = REGISTRY["daemon_max_line"].default
    answers = ask(server.port, b"|a " + b"x" * limit + b"\n|a f1\n")
    assert answers == [too_long(limit).encode(), _predictions(model, [b"|a f1"], tmp_path)]


def test_binary_garbage_gets_one_answer_per_nonempty_line(server):
    rng = random.Random(4)
    garbage = bytes(rng.choice(b"\n|:' \x00\xff\xfeab1.-") for _ in range(20000))
    lines = [line.removesuffix(b"\r") for line in garbage.split(b"\n")[:-1]]
    expected = sum(1 for line in lines if line.removeprefix(b"\xef\xbb\xbf"))
    assert len(ask(server.port, garbage.rsplit(b"\n", 1)[0] + b"\n")) == expected
    assert len(ask(server.port, b"|a f1\n")) == 1


def test_a_client_that_resets_mid_line_leaves_the_server_answering(server):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.sendall(b"|a f1\n|a f2 f3:0.")
    sock.close()  # linger 0: a reset
    assert len(ask(server.port, b"|a f1\n")) == 1


def test_the_port_file_holds_the_port_listened_on(server):
    assert server.port_file.read_text() == f"{server.port}\n"


def test_64_concurrent_clients_each_get_their_answers_in_order(server, model, tmp_path):
    pool = _lines(200, seed=5)
    expected = _predictions(model, pool, tmp_path).splitlines(keepends=True)
    results: dict[int, bool] = {}

    def client(k: int) -> None:
        rng = random.Random(100 + k)
        picks = [rng.randrange(len(pool)) if rng.random() < 0.8 else -1 for _ in range(50)]
        data = b"".join((pool[i] if i >= 0 else b"oops |a f1") + b"\n" for i in picks)
        answers = ask(server.port, data, chunk=rng.choice([0, 97, 1000]))
        results[k] = len(answers) == len(picks) and all(
            answer == expected[i] if i >= 0 else answer.startswith(b"error: ")
            for i, answer in zip(picks, answers))

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(64)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + TIMEOUT
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert results == {k: True for k in range(64)}


def test_learning_mode_answers_as_one_offline_run_of_the_same_lines(tmp_path):
    lines = _lines(120, seed=6)
    server = Server("--quiet", "-q", "ab")
    try:
        served = ask(server.port, b"\n".join(lines[:60]) + b"\n") + ask(
            server.port, b"\n".join(lines[60:]) + b"\n")
    finally:
        server.stop()
    assert b"".join(served) == _predictions("", lines, tmp_path, "-q", "ab")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_saves_the_learned_model_and_removes_the_pid_file(tmp_path, signum):
    lines = _lines(100, seed=7)
    model, pid_file = tmp_path / "learned.olearn", tmp_path / "pid"
    server = Server("--quiet", "-f", model, "--pid_file", pid_file)
    ask(server.port, b"\n".join(lines) + b"\n")
    assert pid_file.read_text() == f"{server.proc.pid}\n"
    code, err = server.stop(signum)
    assert (code, err) == (0, "")
    assert not pid_file.exists()
    offline = tmp_path / "offline.olearn"
    _predictions("", lines, tmp_path, "-f", offline)
    probe = _lines(20, seed=8)
    assert _predictions(str(model), probe, tmp_path) == _predictions(str(offline), probe,
                                                                     tmp_path)


def test_an_oaa_label_that_is_not_a_class_is_an_error_line_and_not_learned(tmp_path):
    lines = [b"1 |a x", b"2 'two |a y", b"3 |a x y", b"1 |a z"]
    server = Server("--quiet", "--oaa", 3)
    try:
        answers = ask(server.port, b"\n".join(lines[:2] + [b"1.5 |a x"] + lines[2:]) + b"\n")
    finally:
        server.stop()
    assert answers[2].startswith(b"error: --oaa: label 1.5 is not a class")
    assert b"".join(answers[:2] + answers[3:]) == _predictions("", lines, tmp_path, "--oaa", 3)


def test_a_port_in_use_is_one_error_line(server):
    code, _, err = run_cmd(olearn_cmd("--daemon", "--port", server.port))
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(f"olearn: error: --daemon cannot listen on 127.0.0.1:{server.port}")


@pytest.mark.parametrize("args, message", [
    (["--daemon", "-d", "train.vw"], "--daemon does not take -d/--data"),
    (["--daemon", "--passes", "2", "-c"], "--daemon does not take --passes > 1"),
    (["--daemon", "--dask", "local:1"], "--daemon does not take --dask"),
    (["--daemon", "-p", "out.txt"], "--daemon does not take -p/--predictions"),
    (["--port", "5000"], "--port needs --daemon"),
    (["--foreground"], "--foreground needs --daemon"),
    (["--daemon_idle_timeout", "5"], "--daemon_idle_timeout needs --daemon"),
    (["--daemon", "--daemon_max_line", "0"], "--daemon_max_line"),
])
def test_combinations_that_make_no_sense_are_one_error_line(args, message):
    code, _, err = run_cmd(olearn_cmd(*args))
    assert code == 2 and err.startswith(f"olearn: error: {message}") and err.count("\n") == 1


def test_vws_num_children_and_foreground_are_accepted(model):
    running = Server("-t", "-i", model, "--num_children", 4, "--foreground")
    try:
        assert len(ask(running.port, b"|a x\n|a y\n")) == 2
    finally:
        code, _ = running.stop()
    assert code == 0


def test_the_python_api_refuses_daemon():
    with pytest.raises(OptionError, match="daemon is for the command line"):
        olearn.Learner(daemon=True)


# -- what one client may cost the others (the --daemon_* limits) ----------------------------

def _wide_line(n: int) -> bytes:
    """A labeled line of ``n`` features in namespace a: ``n``² more under ``-q aa``."""
    return b"1 |a " + b" ".join(b"f%d" % i for i in range(n))


def test_the_reported_wide_line_is_an_error_answer_and_the_server_goes_on(tmp_path):
    # issue 33: 700 KB, 100k features under -q aa ended the server (MemoryError) for everyone
    lines = _lines(20, seed=9)
    server = Server("--quiet", "-q", "aa")
    try:
        answers = ask(server.port, b"\n".join(lines[:10] + [_wide_line(100_000)] + lines[10:])
                      + b"\n")
        later = ask(server.port, b"|a f1\n")
    finally:
        code, _ = server.stop()
    assert code == 0
    assert answers[10] == (b"error: 10000100001 features after interactions, more than "
                           b"16777216 (--daemon_max_features); skipped\n")
    # the wide line is not learned: the others are answered as a run of them alone
    assert b"".join(answers[:10] + answers[11:] + later) == _predictions(
        "", lines + [b"|a f1"], tmp_path, "-q", "aa")


def test_the_feature_limit_counts_interactions_of_namespaces_a_wildcard_adds(tmp_path):
    server = Server("--quiet", "-q", "::", "--daemon_max_features", 1000)
    try:
        answers = ask(server.port, b"|a x y |b z\n|c " + b" ".join(b"w%d" % i for i in range(40))
                      + b"\n|a x\n")
    finally:
        server.stop()
    assert answers[1].startswith(b"error: 1641 features after interactions, more than 1000 ")
    assert b"".join(answers[::2]) == _predictions("", [b"|a x y |b z", b"|a x"], tmp_path,
                                                  "-q", "::")


@pytest.mark.parametrize("more", [[], ["-t"]])
def test_a_line_that_runs_out_of_memory_costs_only_that_line(tmp_path, more):
    """A real MemoryError: the server's address space is limited, the feature limit raised,
    and the learner (--ftrl) one that expands an example whole."""
    resource = pytest.importorskip("resource")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))

    lines = _lines(6, seed=10)
    server = Server("--quiet", "-q", "aa", "--ftrl", "--daemon_max_features", 1 << 40, *more,
                    preexec_fn=limited)
    try:
        # 80 GB of expansion; the lines before it are answered in earlier rounds (it spans
        # several reads), the lines after it in the same kernel call
        answers = ask(server.port, b"\n".join(lines[:3] + [_wide_line(100_000)] + lines[3:])
                      + b"\n")
        later = ask(server.port, b"\n".join(lines) + b"\n")
    finally:
        code, _ = server.stop()
    assert code == 0
    # the learner names the example (its interactions' size); the daemon answers that
    assert re.fullmatch(rb"error: <daemon>:\d+: out of memory: this example's interactions take "
                        rb"up to [\d,]+ features \([\d.,]+ GiB\)\n", answers[3])
    assert b"".join(answers[:3] + answers[4:] + later) == _predictions(
        "", lines + lines, tmp_path, "-q", "aa", "--ftrl", *more)


def test_a_line_limit_given_holds_for_lines_split_across_reads(model, tmp_path):
    small = Server("-t", "-i", model, "--daemon_max_line", 1000)
    good = (b"'t |a " + b" ".join(b"f%d" % (i % 30) for i in range(240))).ljust(1000, b"x")
    data = b"|a " + b"x" * 5000 + b"\n" + good + b"\n|a " + b"y" * 998 + b"\n|a f1\n"
    try:
        answers = [ask(small.port, data), ask(small.port, data, chunk=97)]
    finally:
        small.stop()
    expected = [too_long(1000).encode(), *_predictions(model, [good], tmp_path).splitlines(True),
                too_long(1000).encode(), _predictions(model, [b"|a f1"], tmp_path)]
    assert answers == [expected, expected]


def _in_process(*words: str) -> daemon.Server:
    """A server in this process, its kernels loaded, whose answer() a test calls directly."""
    learner = OnlineLearner.start(config_of(["--daemon", "--port", "0", "--quiet", *words]))
    server = daemon.Server(learner, Console(True, None))
    server.warm()
    return server


def _answers(server: daemon.Server, lines: list[bytes]) -> list[bytes]:
    out, _ = server.answer(b"".join(line + b"\n" for line in lines), len(lines))
    return out.splitlines(keepends=True)


@pytest.mark.parametrize("testonly, after_learning", [
    (False, False),  # fails before the call scores anything: only the line fails
    (True, True),    # -t: nothing is learned, the statistics are restored
    (False, True),   # fails after learning the call's lines: each gets the error, once
])
def test_a_failing_kernel_call_is_answered_with_errors_and_learns_no_line_twice(
        monkeypatch, model, testonly, after_learning):
    lines = _lines(30, seed=11)
    marked = b"13 |a f1 |b w1"  # the call that holds it fails
    words = ("-t", "-i", model) if testonly else ("-q", "ab")
    server, reference = _in_process(*words), _in_process(*words)
    learn = server.learner.learn

    def failing(batch, preds):
        holds = (batch.numbers[:, 0] == 13).any()
        if holds and not after_learning:
            raise RuntimeError("boom")
        rows = learn(batch, preds)
        if holds:
            raise RuntimeError("boom")
        return rows

    monkeypatch.setattr(server.learner, "learn", failing)
    try:
        answers = _answers(server, lines[:10] + [marked] + lines[10:])
        error = b"error: internal error: RuntimeError: boom\n"
        if testonly or not after_learning:  # found half by half: the others are answered
            assert answers == (_answers(reference, lines[:10]) + [error]
                               + _answers(reference, lines[10:]))
        else:  # the lines were learned: answered with the error, not learned again
            assert answers == [error] * 31
            _answers(reference, lines[:10] + [marked] + lines[10:])
        probe = _lines(10, seed=12)
        assert _answers(server, probe) == _answers(reference, probe)
        assert np.array_equal(server.learner.stats, reference.learner.stats, equal_nan=True)
    finally:
        server.close()
        reference.close()


def test_a_connection_idle_past_the_timeout_is_closed_and_an_active_one_is_not(model):
    server = Server("-t", "-i", model, "--daemon_idle_timeout", 1)
    try:
        start = time.monotonic()
        with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as idle, \
                socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as half:
            half.sendall(b"|a f1")  # half a line, then nothing
            active = bytearray()
            with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as busy:
                for _ in range(25):  # a line every 0.1 s for longer than the timeout
                    busy.sendall(b"|a f1\n")
                    time.sleep(0.1)
                    active += busy.recv(1 << 16)
                assert idle.recv(1) == half.recv(1) == b""
                waited = time.monotonic() - start
                busy.sendall(b"|a f2\n")
                busy.shutdown(socket.SHUT_WR)
                active += b"".join(iter(lambda: busy.recv(1 << 16), b""))
    finally:
        server.stop()
    assert waited >= 1 and active.count(b"\n") == 26


@pytest.mark.parametrize("slots, idle", [  # None: the default, 512 (issue 33's case)
    (8, 20), pytest.param(None, 600, marks=pytest.mark.slow)])
def test_with_every_slot_taken_by_idle_connections_a_new_client_is_served(model, tmp_path,
                                                                         slots, idle):
    limit = ("--daemon_max_clients", slots) if slots else ()
    server = Server("-t", "-i", model, "--daemon_idle_timeout", 0, *limit)
    waiting = []
    try:
        for _ in range(idle):
            waiting.append(socket.create_connection(("127.0.0.1", server.port),
                                                    timeout=TIMEOUT))
        assert ask(server.port, b"|a f1\n") == [_predictions(model, [b"|a f1"], tmp_path)]
        assert waiting[0].recv(1) == b""  # the one idle the longest gave up its slot
    finally:
        for sock in waiting:
            sock.close()
        server.stop()


def test_out_of_file_descriptors_the_longest_idle_connection_gives_up_its_slot(model,
                                                                                tmp_path):
    resource = pytest.importorskip("resource")

    def limited() -> None:  # far fewer descriptors than the 512 slots
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    server = Server("-t", "-i", model, "--quiet", "--daemon_idle_timeout", 0,
                    preexec_fn=limited)
    waiting = []
    try:
        for _ in range(100):
            waiting.append(socket.create_connection(("127.0.0.1", server.port),
                                                    timeout=TIMEOUT))
        assert ask(server.port, b"|a f1\n") == [_predictions(model, [b"|a f1"], tmp_path)]
        assert waiting[0].recv(1) == b""
    finally:
        for sock in waiting:
            sock.close()
        server.stop()


def test_a_round_beyond_max_round_bytes_is_answered_in_several_calls(monkeypatch, model):
    server = _in_process("-t", "-i", model)
    texts = [b"".join(line + b"\n" for line in _lines(n, seed=20 + n)) for n in (5, 40, 1, 30)]
    clients = [daemon._Client(None, server.max_line, 0.0) for _ in texts]
    alone = [server.answer(text, text.count(b"\n"))[0] for text in texts]
    monkeypatch.setattr(daemon, "MAX_ROUND", 1000)
    calls = []
    answer = server.answer
    monkeypatch.setattr(server, "answer", lambda *args: calls.append(args) or answer(*args))
    try:
        server._answer_round([(client, [text, "error: as it was\n"])
                              for client, text in zip(clients, texts)])
    finally:
        server.close()
    assert [n for _, n in calls] == [45, 31]  # 5 + 40 lines pass 1000 bytes: a call
    assert [bytes(client.answers) for client in clients] == [
        answers + b"error: as it was\n" for answers in alone]


def test_a_client_flooding_lines_does_not_starve_another(model, tmp_path):
    server = Server("-t", "-i", model)
    flood = b"\n".join(_lines(2000, seed=13)) + b"\n"
    stop = threading.Event()
    answered = threading.Event()
    flooder = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)

    def send() -> None:
        with contextlib.suppress(OSError):  # shut down at the end of the test
            while not stop.is_set():
                flooder.sendall(flood)

    def drain() -> None:
        with contextlib.suppress(OSError):
            while flooder.recv(1 << 16):
                answered.set()

    threads = [threading.Thread(target=task, daemon=True) for task in (send, drain)]
    try:
        for thread in threads:
            thread.start()
        assert answered.wait(TIMEOUT)  # the flood is being answered
        # answered while the flood goes on (an unfair server would answer it after: never)
        assert ask(server.port, b"|a f1\n") == [_predictions(model, [b"|a f1"], tmp_path)]
        assert threads[0].is_alive()
    finally:
        stop.set()
        flooder.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        flooder.shutdown(socket.SHUT_RDWR)
        flooder.close()  # a reset: the server drops what it has not read yet
        server.stop()


def test_many_classes_are_answered_in_pieces_of_bounded_prediction_arrays(monkeypatch):
    rng = random.Random(5)
    lines = [f"{rng.randrange(1, 41)} |a f{rng.randrange(30)} |b w{rng.randrange(5)}".encode()
             for _ in range(200)]
    server, reference = _in_process("--oaa", 40), _in_process("--oaa", 40)
    sizes = []
    learn = server.learner.learn

    def recorded(batch, preds):
        sizes.append(preds.size)
        return learn(batch, preds)

    monkeypatch.setattr("olearn.engine.learner.PREDICTIONS_PER_CALL", 420)
    monkeypatch.setattr(server.learner, "learn", recorded)
    try:
        answers = _answers(server, lines)
        per_call = 420 // server.learner.prediction_columns()
        assert len(sizes) == -(-200 // per_call) and max(sizes) <= 420
        monkeypatch.setattr("olearn.engine.learner.PREDICTIONS_PER_CALL", 1 << 18)
        assert answers == _answers(reference, lines)
    finally:
        server.close()
        reference.close()
