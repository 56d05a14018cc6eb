"""Measure ``olearn --daemon`` against VW's ``--daemon`` on loopback and write the "Prediction
server" section of BENCHMARKS.md (between its markers; scripts/bench.py keeps the section).

Each learner trains a model on the same generated data (scripts/make_data.py) and serves it
with ``-t -i``; 1, 8 and 64 clients, each on its own connection, then send test lines. A
*request* is a batch of lines sent at once and its answers received in full: one line (the
latency of a prediction) or 100 lines (pipelined). The clients are driven from one selectors
loop in this process, so the harness costs the same for both servers.

    .venv/bin/python scripts/bench_daemon.py          # about 2 minutes on 2 cores
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dask import write_section  # noqa: E402
from make_data import generate  # noqa: E402

import olearn  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- daemon-bench begin -->", "<!-- daemon-bench end -->"
OLEARN = [sys.executable, "-m", "olearn"]
VW = [sys.executable, "-m", "vowpalwabbit"]
CLIENTS = (1, 8, 64)
START_TIMEOUT = 120


def start_olearn(model: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(OLEARN + ["--daemon", "--port", "0", "-t", "-i", model, "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        found = re.match(r"daemon listening on [\d.]+:(\d+)$", line.strip())
        if found:
            return proc, int(found.group(1))
    raise RuntimeError("olearn --daemon did not start")


def start_vw(model: str, children: int, port_file: str) -> tuple[subprocess.Popen, int]:
    """VW's daemon from the PyPI wheel: its ``python -m vowpalwabbit`` runs the parser only
    when the arguments name -d or --passes, hence ``--passes 1``."""
    proc = subprocess.Popen(VW + ["--daemon", "--foreground", "--port", "0", "--port_file",
                                  port_file, "--num_children", str(children), "-t", "-i", model,
                                  "--passes", "1", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if os.path.exists(port_file) and open(port_file).read().strip():
            return proc, int(open(port_file).read())
        time.sleep(0.05)
    raise RuntimeError("vw --daemon did not start")


def drive(port: int, clients: int, requests: list[bytes]) -> tuple[float, list[float]]:
    """Send ``requests`` (each a batch of whole lines) over ``clients`` connections, a client
    sending its next request once its last one's answers are in. Returns the wall time and
    each request's latency."""
    selector = selectors.DefaultSelector()
    queues = [requests[k::clients] for k in range(clients)]
    state = {}
    for k in range(clients):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        state[sock] = {"queue": queues[k], "next": 0, "want": 0, "got": 0, "sent_at": 0.0}
    latencies: list[float] = []
    start = time.perf_counter()

    def send(sock: socket.socket) -> bool:
        s = state[sock]
        if s["next"] == len(s["queue"]):
            return False
        request = s["queue"][s["next"]]
        s["next"] += 1
        s["want"], s["got"] = request.count(b"\n"), 0
        s["sent_at"] = time.perf_counter()
        sock.sendall(request)
        return True

    for sock in state:
        if send(sock):
            selector.register(sock, selectors.EVENT_READ)
    while selector.get_map():
        for key, _ in selector.select():
            sock = key.fileobj
            s = state[sock]
            s["got"] += sock.recv(1 << 16).count(b"\n")
            if s["got"] >= s["want"]:
                latencies.append(time.perf_counter() - s["sent_at"])
                if not send(sock):
                    selector.unregister(sock)
    wall = time.perf_counter() - start
    for sock in state:
        sock.close()
    selector.close()
    return wall, latencies


def answers(port: int, lines: list[bytes]) -> list[bytes]:
    """The answers to ``lines`` on one connection, 100 lines per request."""
    out = []
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for start in range(0, len(lines), 100):
            chunk = lines[start:start + 100]
            sock.sendall(b"".join(line + b"\n" for line in chunk))
            received = b""
            while received.count(b"\n") < len(chunk):
                received += sock.recv(1 << 16)
            out += received.splitlines()
    return out


def measure(port: int, lines: list[bytes], args, client_counts=CLIENTS) -> dict:
    """Medians over ``args.repeat`` runs, per client count and request size."""
    results = {}
    for clients in client_counts:
        for size, total in ((1, args.single), (100, args.pipelined)):
            requests = [b"".join(line + b"\n" for line in lines[i:i + size])
                        for i in range(0, total, size)]
            runs = [drive(port, clients, requests) for _ in range(args.repeat)]
            results[clients, size] = {
                "per_s": statistics.median(total / wall for wall, _ in runs),
                "p50": statistics.median(np.percentile(lat, 50) for _, lat in runs) * 1e3,
                "p99": statistics.median(np.percentile(lat, 99) for _, lat in runs) * 1e3}
    return results


def report(olearn_r: dict, vw_r: dict, same: int, compared: int, largest: float,
           args) -> str:
    lines = [BEGIN, "## Prediction server (`--daemon`)", "",
             f"Written by `scripts/bench_daemon.py` ({datetime.date.today()}; "
             f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}; "
             f"olearn {olearn.__version__}; VW 9.11.9 from PyPI). The machine is shared, so "
             f"times are noisy: each figure is the median of {args.repeat} runs.", "",
             f"Data: `scripts/make_data.py --examples {args.examples} --features "
             f"{args.features}` for training (each learner trains its own model with its "
             f"defaults), the same generator with another seed for the test lines. Each "
             f"server runs `--daemon --port 0 -t -i model`; VW with `--num_children` equal to "
             f"the number of clients (one forked process per connection) and `--passes 1` (the "
             f"PyPI wheel's `python -m vowpalwabbit` runs its parser only when the arguments "
             f"name `-d` or `--passes`). Clients connect over loopback, each on its own "
             f"connection, all driven by one selectors loop in the benchmark's process (which "
             f"shares the 2 cores with the server). A request is a batch of lines sent at once "
             f"and all its answers received; a client sends its next request when the last is "
             f"answered. One-line requests: {args.single} per run; 100-line requests: "
             f"{args.pipelined // 100} per run.", "",
             "| clients | lines per request | olearn predictions/s | VW predictions/s | "
             "olearn p50 / p99 ms | VW p50 / p99 ms |",
             "|---:|---:|---:|---:|---:|---:|"]
    for clients in CLIENTS:
        for size in (1, 100):
            o, v = olearn_r[clients, size], vw_r[clients, size]
            lines.append(f"| {clients} | {size} | {o['per_s']:,.0f} | {v['per_s']:,.0f} | "
                         f"{o['p50']:.2f} / {o['p99']:.2f} | {v['p50']:.2f} / {v['p99']:.2f} |")
    lines += ["", "olearn answers in rounds: whatever every ready client has sent is parsed, "
                  "predicted and formatted together, one parse and one kernel call per round, "
                  "so its throughput grows with the lines per round, from many clients or "
                  "long requests; a lone one-line request pays a round's fixed cost in "
                  "Python, which VW's C++ (one forked process per connection) does not.",
              "", f"The two servers' answers to {compared} test lines are identical text for "
                  f"{same} of them, and differ by at most {largest:.6f} (the models are "
                  f"olearn's and VW's, trained on the same data).", END]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--features", type=int, default=40)
    parser.add_argument("--single", type=int, default=2000, help="one-line requests per run")
    parser.add_argument("--pipelined", type=int, default=20_000,
                        help="lines per run sent as 100-line requests")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        train, test = os.path.join(tmp, "train.vw"), os.path.join(tmp, "test.vw")
        generate(train, args.examples, args.features, 1000, seed=1)
        generate(test, max(args.single, args.pipelined), args.features, 1000, seed=2)
        lines = open(test, "rb").read().splitlines()
        models = {"olearn": os.path.join(tmp, "m.olearn"), "vw": os.path.join(tmp, "m.vw")}
        subprocess.run(OLEARN + ["-d", train, "-f", models["olearn"], "--quiet"], check=True)
        subprocess.run(VW + ["-d", train, "-f", models["vw"], "--quiet"], check=True)
        proc, port = start_olearn(models["olearn"])
        try:
            olearn_answers = answers(port, lines[:2000])
            olearn_r = measure(port, lines, args)
        finally:
            proc.terminate()
            proc.wait()
        vw_r = {}
        for clients in CLIENTS:
            port_file = os.path.join(tmp, f"port{clients}")
            proc, port = start_vw(models["vw"], clients, port_file)
            try:
                if clients == 1:
                    vw_answers = answers(port, lines[:2000])
                vw_r.update(measure(port, lines, args, (clients,)))
            finally:
                proc.terminate()
                proc.wait()
    same = sum(a == b for a, b in zip(olearn_answers, vw_answers))
    largest = max(abs(float(a.split()[0]) - float(b.split()[0]))
                  for a, b in zip(olearn_answers, vw_answers))
    section = report(olearn_r, vw_r, same, len(olearn_answers), largest, args)
    write_section(section, Path(args.out), (BEGIN, END))
    print(section)


if __name__ == "__main__":
    main()
