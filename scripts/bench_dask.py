"""Measure ``olearn --dask`` on 1, 2 and 4 local workers and write the "Data-parallel training"
section of BENCHMARKS.md (between its markers; scripts/bench.py keeps the section).

For each worker count: a LocalCluster of worker processes (one thread each) is started here and
the command line joins it (``--dask tcp://...``), so that the workers' transfer counters can be
read around each run. The time per pass is (wall time of P passes - wall time of 1 pass) / (P-1),
which leaves out start-up; bytes are what each worker sent to and received from other workers
and the client during the P-pass run, divided by P.

    .venv/bin/python scripts/bench_dask.py            # about 5 minutes on 2 cores
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_data import generate  # noqa: E402

import olearn  # noqa: E402  (sets the kernel cache folder the workers inherit)
from olearn.config import Config  # noqa: E402
from olearn.distributed import Snapshot, combine, _partial  # noqa: E402
from olearn.learner import OnlineLearner  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- dask-bench begin -->", "<!-- dask-bench end -->"
OLEARN = [sys.executable, "-m", "olearn"]


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _counters(dask_worker) -> tuple[int, int]:
    received = sum(entry["total"] for entry in dask_worker.transfer_incoming_log)
    return dask_worker.transfer_outgoing_bytes_total, received


def measure(workers: int, data: str, args, tmp: str) -> dict:
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=40) as cluster, \
            Client(cluster) as client:
        common = ["-d", data, "--dask", cluster.scheduler_address, "--dask_partitions",
                  str(args.partitions), "-b", str(args.bits), "--holdout_off", "--quiet"]
        timed(OLEARN + common)  # warm-up: each worker loads the kernels
        one = min(timed(OLEARN + common) for _ in range(args.repeat))
        before = client.run(_counters)
        model = os.path.join(tmp, f"model{workers}")
        many = min(timed(OLEARN + common + ["--passes", str(args.passes), "-f", model])
                   for _ in range(args.repeat))
        after = client.run(_counters)
    per_pass = (many - one) / (args.passes - 1)
    runs = args.repeat * args.passes
    sent = [(after[w][0] - before[w][0]) / runs for w in after]
    received = [(after[w][1] - before[w][1]) / runs for w in after]
    return {"workers": workers, "one": one, "many": many, "per_pass": per_pass,
            "sent": float(np.mean(sent)), "received": float(np.mean(received)),
            "model": Path(model).read_bytes()}


def single_process(data: str, args, tmp: str) -> float:
    common = ["-d", data, "-b", str(args.bits), "--holdout_off", "--quiet", "--cache_file",
              os.path.join(tmp, "cache")]
    timed(OLEARN + common + ["-k"])  # writes the cache
    one = min(timed(OLEARN + common) for _ in range(args.repeat))
    many = min(timed(OLEARN + common + ["--passes", str(args.passes)])
               for _ in range(args.repeat))
    return (many - one) / (args.passes - 1)


def combine_seconds(bits: int) -> tuple[float, int, int]:
    """Time of one combine of two partitions' states at 2^bits (adaptive), and the bytes of a
    partition's result and of a combined partial (pickled)."""
    import pickle
    config = Config(bit_precision=bits, quiet=True)
    learner = OnlineLearner(config)
    rng = np.random.default_rng(0)
    learner.weights[:, :3] = rng.random((len(learner.weights), 3))
    start_g = learner.weights[:, 1] * 0.5
    leaf = _partial(Snapshot.of(learner), start_g, learner.stats, None, [], 0)
    inner = combine(leaf, leaf)
    best = min(_time(lambda: combine(inner, inner)) for _ in range(5))
    return best, len(pickle.dumps(leaf, protocol=5)), len(pickle.dumps(inner, protocol=5))


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def report(results: list[dict], single: float, combine_at: tuple, args, examples: int,
           nnz: float, size: int) -> str:
    base = results[0]
    t_example = base["per_pass"] / examples
    combine_s, leaf_bytes, inner_bytes = combine_at
    slots = 1 << args.bits
    state = slots * 16
    same = all(r["model"] == base["model"] for r in results)
    lines = [BEGIN, "## Data-parallel training (`--dask`)", "",
             f"Written by `scripts/bench_dask.py` ({datetime.date.today()}; "
             f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}; "
             f"olearn {olearn.__version__}). The machine is shared, so times are noisy.", "",
             f"Data: `scripts/make_data.py --examples {examples} --features {args.features} "
             f"--vocabulary {args.vocabulary}` ({size / 1e6:.0f} MB plain text, "
             f"{nnz:.0f} non-zero features per example with the constant), split by "
             f"`--dask_partitions {args.partitions}`; `-b {args.bits} --holdout_off`, "
             f"squared loss, VW's default adaptive/normalized/invariant update. Each worker is "
             f"a process with one thread on a LocalCluster started by the script; the command "
             f"line joins it with `--dask tcp://...`. Per pass = (time of {args.passes} passes "
             f"- time of 1 pass) / {args.passes - 1}, best of {args.repeat}; bytes = what a "
             f"worker sent + received (Dask's transfer counters), per pass, mean over workers.",
             "",
             "| workers | 1 pass s | per pass s | speed-up | sent MB/worker/pass | "
             "received MB/worker/pass |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['workers']} | {r['one']:.2f} | {r['per_pass']:.2f} | "
                     f"{base['per_pass'] / r['per_pass']:.2f} | {r['sent'] / 1e6:.1f} | "
                     f"{r['received'] / 1e6:.1f} |")
    lines += ["",
              f"Single process, same passes from its `-c` cache: {single:.2f} s per pass. "
              f"The models of the 1, 2 and 4-worker runs are "
              f"{'byte-identical' if same else 'NOT identical'}. With 4 workers on 2 cores "
              f"the workers share the cores, so 4 cannot beat 2 here.", "",
              f"Sizes at `-b {args.bits}` ({slots:,} weights): the state broadcast each pass "
              f"is {state / 1e6:.1f} MB (w, G, N, scratch in float32); a partition's result is "
              f"{leaf_bytes / 1e6:.1f} MB (w, G, scratch, N and the pass's increase of G, "
              f"float32); a combined partial is {inner_bytes / 1e6:.1f} MB (the same in "
              f"float64, plus w weighted by examples). One combine takes "
              f"{combine_s * 1e3:.0f} ms.", ""]
    lines += scale_model(t_example, nnz, combine_s, leaf_bytes, inner_bytes, state, args.bits)
    lines.append(END)
    return "\n".join(lines) + "\n"


def scale_model(t_example: float, nnz: float, combine_s: float, leaf: int, inner: int,
                state: int, bits: int) -> list[str]:
    """Time per pass at 100 workers and 690 M examples of ~318 non-zero features (the APPLE
    paper's parallel run), from the measurements, with the arithmetic shown."""
    examples, workers, paper_nnz = 690e6, 100, 318
    levels = int(np.ceil(np.log2(workers)))
    t_318 = t_example * paper_nnz / nnz
    learn = examples / workers * t_318
    out = ["### Model: 100 workers, 690 M examples, ~318 non-zero features (APPLE's parallel run)",
           "",
           f"* Learning: the 1-worker run takes {t_example * 1e6:.2f} µs per example at "
           f"{nnz:.0f} features, i.e. {t_318 * 1e6:.2f} µs at 318 (cost ∝ features, "
           f"parsing included: workers parse text every pass). Each of 100 workers has 6.9 M "
           f"examples: 6.9e6 × {t_318 * 1e6:.2f} µs = **{learn:.0f} s** per pass.",
           f"* Combining: ⌈log2 100⌉ = {levels} levels of the tree, each a transfer of at most "
           "two partials into one worker and one combine, one after another:"]
    total = {}
    for b, bandwidth in ((bits, 1.25e9), (24, 1.25e9)):
        scale = (1 << b) / (1 << bits)
        step = inner * scale * 2 / bandwidth + combine_s * scale
        broadcast = state * scale * levels / bandwidth
        total[b] = learn + levels * step + broadcast
        out.append(f"  at `-b {b}` with 10 Gb/s (1.25 GB/s) links: {levels} × "
                   f"(2 × {inner * scale / 1e6:.0f} MB / 1.25 GB/s + {combine_s * scale:.2f} s) = "
                   f"**{levels * step:.1f} s**; the new state ({state * scale / 1e6:.0f} MB) "
                   f"reaches all workers as copies spread from worker to worker, about "
                   f"{levels} rounds: {levels} × {state * scale / 1e6:.0f} MB / 1.25 GB/s = "
                   f"**{broadcast:.1f} s**.")
    out += [f"* Time per pass: {learn:.0f} s + combine + broadcast ≈ **{total[bits]:.0f} s at "
            f"`-b {bits}`**, **{total[24]:.0f} s at `-b 24`**; 5 passes ≈ "
            f"{5 * total[bits] / 60:.0f} / {5 * total[24] / 60:.0f} min. One process would take "
            f"{examples * t_318 / 3600:.1f} h per pass.",
            f"* Bytes per worker per pass: its result up ({leaf / 1e6:.1f} MB at `-b {bits}`), "
            f"the state down ({state / 1e6:.1f} MB) and on average about one combined partial "
            f"({inner / 1e6:.1f} MB; 99 combines over 100 workers): about "
            f"{(leaf + state + inner) / 1e6:.0f} MB at `-b {bits}`, "
            f"{(leaf + state + inner) * (1 << (24 - bits)) / 1e9:.1f} GB at `-b 24`.",
            "* Not modelled: Dask's per-task overhead (~1 ms, 200 tasks per pass), stragglers "
            "(a pass waits for its slowest partition), and reading 690 M examples from shared "
            "storage; the per-worker compute and bytes above do not depend on the number of "
            "workers, only the tree's depth does.", ""]
    return out


def write_section(section: str, path: Path) -> None:
    text = path.read_text() if path.exists() else ""
    if BEGIN in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END) + 1:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=40_000)
    parser.add_argument("--features", type=int, default=317)
    parser.add_argument("--vocabulary", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--passes", type=int, default=4)
    parser.add_argument("--bits", type=int, default=18)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    args = parser.parse_args()
    data = str(ROOT / "data" / f"dask_bench_{args.examples}x{args.features}.vw")
    if not os.path.exists(data):
        generate(data, args.examples, args.features, args.vocabulary, seed=1)
    nnz = args.features + 1  # and the constant
    with tempfile.TemporaryDirectory() as tmp:
        single = single_process(data, args, tmp)
        results = [measure(workers, data, args, tmp) for workers in (1, 2, 4)]
    section = report(results, single, combine_seconds(args.bits), args, args.examples, nnz,
                     os.path.getsize(data))
    write_section(section, Path(args.out))
    print(section)


if __name__ == "__main__":
    main()
