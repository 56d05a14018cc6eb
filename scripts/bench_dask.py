"""Measure ``olearn --dask`` on 1, 2 and 4 local workers and write the "Data-parallel training"
section of BENCHMARKS.md (between its markers; scripts/bench.py keeps the section).

For each worker count: a LocalCluster of worker processes (one thread each) is started here and
the command line joins it (``--dask tcp://...``), so that the workers' transfer counters can be
read around each run (also for the test-error table's runs). The time per pass is
measured from the moments the per-pass table rows appear; bytes are what each worker sent to
and received from other workers and the client during a run with -c, divided by the passes.

    .venv/bin/python scripts/bench_dask.py            # about 20 minutes on 2 cores
    .venv/bin/python scripts/bench_dask.py --accuracy_only   # the test-error table alone, ~25 min
    .venv/bin/python scripts/bench_dask.py --sync_only       # the --dask_sync tables alone, ~5 min
"""
from __future__ import annotations

import argparse
import datetime
import gzip
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
from olearn.engine.learner import OnlineLearner  # noqa: E402
from olearn.kernel import layouts  # noqa: E402
from olearn.options.config import Config  # noqa: E402
from olearn.scale.merge import Snapshot, combine, partial_of  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- dask-bench begin -->", "<!-- dask-bench end -->"
OLEARN = [sys.executable, "-m", "olearn"]


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def pass_times(cmd: list[str]) -> tuple[float, float]:
    """Run ``cmd`` (not --quiet); returns the first pass's time (start-up included) and the
    mean time of the later passes, from the moments the table's per-pass rows appear."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stamps = [time.perf_counter() - start for line in proc.stderr if line[:1].isdigit()]
    if proc.wait() != 0 or len(stamps) < 2:
        raise RuntimeError(f"{' '.join(cmd)} failed")
    return stamps[0], (stamps[-1] - stamps[0]) / (len(stamps) - 1)


def _counters(dask_worker) -> tuple[int, int]:
    received = sum(entry["total"] for entry in dask_worker.transfer_incoming_log)
    return dask_worker.transfer_outgoing_bytes_total, received


def measure(workers: int, data: str, args, tmp: str) -> dict:
    """Per-pass times without and with -c, and bytes per worker per pass (with -c)."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=40) as cluster, \
            Client(cluster) as client:
        common = OLEARN + ["-d", data, "--dask", cluster.scheduler_address, "--dask_partitions",
                           str(args.partitions), "-b", str(args.bits), "--holdout_off",
                           "--passes", str(args.passes)]
        timed(common + ["--quiet"])  # warm-up: each worker loads the kernels
        text = min((pass_times(common) for _ in range(args.repeat)), key=lambda t: t[1])
        model = os.path.join(tmp, f"model{workers}")
        before = client.run(_counters)
        cached = min((pass_times(common + ["-c", "-f", model]) for _ in range(args.repeat)),
                     key=lambda t: t[1])
        after = client.run(_counters)
    runs = args.repeat * args.passes
    sent = [(after[w][0] - before[w][0]) / runs for w in after]
    received = [(after[w][1] - before[w][1]) / runs for w in after]
    return {"workers": workers, "first": text[0], "text": text[1], "cached": cached[1],
            "sent": float(np.mean(sent)), "received": float(np.mean(received)),
            "model": Path(model).read_bytes()}


def single_process(data: str, args, tmp: str) -> tuple[float, float]:
    """Single-process seconds for a pass parsing the text and for a pass reading the cache
    (start-up left out: the difference between runs of 1 and P passes)."""
    common = OLEARN + ["-d", data, "-b", str(args.bits), "--holdout_off", "--quiet"]
    cached = common + ["--cache_file", os.path.join(tmp, "cache")]
    timed(cached)  # writes the cache
    one = min(timed(cached) for _ in range(args.repeat))
    many = min(timed(cached + ["--passes", str(args.passes)]) for _ in range(args.repeat))
    per_pass = (many - one) / (args.passes - 1)
    text = min(timed(common) for _ in range(args.repeat))
    return text - (one - per_pass), per_pass


def combine_seconds(bits: int) -> tuple[float, int, int]:
    """Time of one combine of two partitions' states at 2^bits (adaptive), and the bytes of a
    partition's result and of a combined partial (pickled)."""
    import pickle
    config = Config(bit_precision=bits, quiet=True)
    learner = OnlineLearner(config)
    rng = np.random.default_rng(0)
    learner.weights[:, :3] = rng.random((len(learner.weights), 3))
    start_g = learner.weights[:, 1] * 0.5
    leaf = partial_of(Snapshot.of(learner), start_g, learner.stats, None, [], 0)
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
             f"`--dask_partitions {args.partitions}`; `-b {args.bits} --holdout_off --passes "
             f"{args.passes}`, squared loss, VW's default adaptive/normalized/invariant update. "
             f"Each worker is a process with one thread on a LocalCluster started by the "
             f"script; the command line joins it with `--dask tcp://...`. A pass's time is "
             f"measured from the moments its table row appears (passes 2 to {args.passes}, "
             f"best of {args.repeat} runs); pass 1 includes start-up (and, with `-c`, writing "
             f"the caches). Bytes are what a worker sent and received per pass (Dask's "
             f"transfer counters, with `-c`), mean over workers.", "",
             "| workers | pass 1 s | per pass s, text | per pass s, `-c` | "
             "sent MB/worker/pass | received MB/worker/pass |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['workers']} | {r['first']:.2f} | {r['text']:.2f} | "
                     f"{r['cached']:.2f} | {r['sent'] / 1e6:.1f} | {r['received'] / 1e6:.1f} |")
    lines += ["",
              f"Single process (one `olearn` without `--dask`): {single[0]:.2f} s per pass "
              f"parsing the text, {single[1]:.2f} s per pass from its cache (start-up left out: "
              f"the difference between 1 and {args.passes} passes). The "
              f"models of the 1, 2 and 4-worker runs are "
              f"{'byte-identical' if same else 'NOT identical'}. One olearn process already "
              f"keeps both cores busy while it parses (two parser threads beside the learner), "
              f"so on this 2-core machine more workers cannot make a pass faster: the table "
              f"measures the overhead of the protocol, and the bytes, which do not depend on "
              f"the machine.", "",
              f"Sizes at `-b {args.bits}` ({slots:,} weights): the state broadcast each pass "
              f"is {state / 1e6:.1f} MB (w, G, N, scratch in float32); a partition's result is "
              f"{leaf_bytes / 1e6:.1f} MB (w, G, N and the pass's increase of G, "
              f"float32); a combined partial is {inner_bytes / 1e6:.1f} MB (the same in "
              f"float64, plus w weighted by examples). One combine takes "
              f"{combine_s * 1e3:.0f} ms.", ""]
    overhead = max(0.0, base["cached"] - single[1])
    lines += scale_model(single[0] / examples, single[1] / examples, overhead,
                         nnz, combine_s, leaf_bytes, inner_bytes, state, args.bits)
    lines.append(END)
    return "\n".join(lines) + "\n"


def scale_model(t_text: float, t_cached: float, overhead: float, nnz: float, combine_s: float,
                leaf: int, inner: int, state: int, bits: int) -> list[str]:
    """Time per pass at 100 workers and 690 M examples of ~318 non-zero features (the APPLE
    paper's parallel run), with the arithmetic shown: seconds per example parsing the text or
    reading a cache, the protocol's measured fixed cost per pass, and the transfers of the
    combining tree at 10 Gb/s."""
    examples, workers, paper_nnz = 690e6, 100, 318
    share = examples / workers
    levels = int(np.ceil(np.log2(workers)))
    text, cached = (t * paper_nnz / nnz for t in (t_text, t_cached))
    out = ["### Model: 100 workers, 690 M examples, ~318 non-zero features (APPLE's parallel run)",
           "",
           f"* Learning, at the single process's speed on this machine (a worker with 2 "
           f"cores): {t_text * 1e6:.1f} µs per example parsing the text, "
           f"{t_cached * 1e6:.1f} µs per example from a cache, at {nnz:.0f} features; "
           f"scaled to 318 (cost ∝ features): {text * 1e6:.1f} and {cached * 1e6:.1f} µs. "
           f"Each of 100 workers has {share / 1e6:.1f} M examples: pass 1 "
           f"{share / 1e6:.1f}e6 × {text * 1e6:.1f} µs = **{share * text:.0f} s**, later "
           f"passes (`-c`) {share / 1e6:.1f}e6 × {cached * 1e6:.1f} µs = "
           f"**{share * cached:.0f} s**.",
           f"* The protocol's fixed cost per pass (a fresh learner per task, the partition's "
           f"state extracted, the scheduler's round trips), measured as the 1-worker `-c` pass "
           f"minus the single process's cached pass: **{overhead:.2f} s**.",
           f"* Combining: ⌈log2 100⌉ = {levels} levels of the tree, each moving at most two "
           f"partials into one worker and combining them, one level after another; then the "
           f"new state spreads from worker to worker, about {levels} rounds. With 10 Gb/s "
           f"(1.25 GB/s) links:"]
    total = {}
    for b in (bits, 24):
        scale = (1 << b) / (1 << bits)
        step = inner * scale * 2 / 1.25e9 + combine_s * scale
        broadcast = state * scale * levels / 1.25e9
        total[b] = levels * step + broadcast + overhead
        out.append(f"  * `-b {b}`: {levels} × (2 × {inner * scale / 1e6:.0f} MB / 1.25 GB/s + "
                   f"{combine_s * scale:.2f} s) = {levels * step:.1f} s, plus {levels} × "
                   f"{state * scale / 1e6:.0f} MB / 1.25 GB/s = {broadcast:.1f} s; with the "
                   f"fixed cost **{total[b]:.1f} s** per pass.")
    five = {b: share * text + 4 * share * cached + 5 * total[b] for b in total}
    out += [f"* Per pass: **{share * text + total[bits]:.0f} s** (pass 1) and "
            f"**{share * cached + total[bits]:.0f} s** (later passes) at `-b {bits}`; "
            f"{share * text + total[24]:.0f} s and {share * cached + total[24]:.0f} s at "
            f"`-b 24`. Five passes: {five[bits] / 60:.0f} min at `-b {bits}`, "
            f"{five[24] / 60:.0f} min at `-b 24`; one process would need "
            f"{(examples * text + 4 * examples * cached) / 3600:.0f} h.",
            f"* Bytes per worker per pass: its result up ({leaf / 1e6:.1f} MB at `-b {bits}`), "
            f"the state down ({state / 1e6:.1f} MB) and on average about one combined partial "
            f"({inner / 1e6:.1f} MB; 99 combines over 100 workers): about "
            f"{(leaf + state + inner) / 1e6:.0f} MB at `-b {bits}`, "
            f"{(leaf + state + inner) * (1 << (24 - bits)) / 1e9:.1f} GB at `-b 24`; the "
            f"table's 2- and 4-worker rows measure the same quantities.",
            "* Not modelled: Dask's per-task overhead (about 1 ms, 200 tasks per pass), "
            "stragglers (a pass waits for its slowest partition), and reading 690 M examples "
            "from shared storage. The per-worker compute and bytes do not grow with the number "
            "of workers; only the tree's depth does.", ""]
    return out


# Shared datasets for the test-error comparison: (name, binary?)
ACCURACY = (("a9a", True), ("w8a", True), ("reuters", True), ("sst2", True), ("magic04", True),
            ("ijcnn1", True), ("cpusmall", False), ("cadata", False))
PASSES = 5


def _error(model: str, test: str, labels: np.ndarray, binary: bool, tmp: str) -> float:
    """The test error of ``model``: 0/1 error (binary) or RMSE, predicted by `olearn -t -i`."""
    preds = os.path.join(tmp, "preds")
    subprocess.run(OLEARN + ["-t", "-i", model, "-d", test, "-p", preds, "--quiet"], check=True)
    predicted = np.loadtxt(preds)
    if binary:
        return float(np.mean(np.where(predicted > 0, 1, -1) != labels))
    return float(np.sqrt(np.mean((predicted - labels) ** 2)))


def within(error: float, single: float, binary: bool) -> bool:
    """The issue's bar: at most the single process's error plus max(5%, 0.005) (RMSE: 5%)."""
    return error <= single + (max(0.05 * single, 0.005) if binary else 0.05 * single)


def accuracy(tmp: str, syncs: list[int]) -> list[dict]:
    """Test error (binary: logistic loss, 0/1 error; regression: squared loss, RMSE) after
    PASSES passes with -c: single process, and `--dask_partitions 4` on a 2-worker LocalCluster
    without and with `--dask_sync N` for each N of ``syncs``, on the shared datasets that are
    present. For the dask runs also the bytes sent per pass (without sync: Dask's transfer
    counters of the workers; with it: the merges' bytes olearn reports) and the first pass
    whose model (--save_per_pass) is within the bar of the single process's final error."""
    from distributed import Client, LocalCluster
    shared = ROOT.parent / "shared" / "data"
    rows = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=40) as cluster, \
            Client(cluster) as client:
        dask = ["--dask", cluster.scheduler_address, "--dask_partitions", "4"]
        for name, binary in ACCURACY:
            if not (shared / name / "train.vw.gz").exists():
                continue
            train = os.path.join(tmp, f"{name}.vw")
            Path(train).write_bytes(gzip.decompress((shared / name / "train.vw.gz").read_bytes()))
            test = str(shared / name / "test.vw.gz")
            labels = np.array([float(line.split()[0]) for line in gzip.open(test, "rt")])
            row = {"name": name, "binary": binary}
            runs = [("single", []), ("dask", dask)] + [
                (f"sync{n}", dask + ["--dask_sync", str(n)]) for n in syncs]
            for run, extra in runs:
                model = os.path.join(tmp, f"{name}-{run}.model")
                before = client.run(_counters)
                done = subprocess.run(
                    OLEARN + ["-d", train, "--passes", str(PASSES), "-c", "-f", model,
                              "--save_per_pass", *extra]
                    + (["--loss_function", "logistic"] if binary else []),
                    check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                after = client.run(_counters)
                passes = int(done.stderr.split("passes used = ")[1].split()[0])
                row[run] = _error(model, test, labels, binary, tmp)
                merges = merge_traffic(done.stderr)
                row[f"{run}_sent"] = (merges[0] * merges[2] if merges else sum(
                    after[w][0] - before[w][0] for w in after)) / passes
                if run != "single":
                    row[f"{run}_passes"] = next(
                        (k for k in range(1, passes + 1)
                         if within(_error(f"{model}.{k}", test, labels, binary, tmp),
                                   row["single"], binary)), None)
            rows.append(row)
    return rows


def merge_traffic(stderr: str) -> tuple[int, float, float] | None:
    """The merges, rows changed per merge and bytes per merge that a --dask_sync run reports
    (None: no such line)."""
    for line in stderr.splitlines():
        if line.startswith("dask_sync:") and "merges" in line:
            words = line.replace(",", "").split()
            return (int(words[1]), float(words[3]),
                    float(words[words.index("merge:") + 1]) * 1e3)
    return None


def accuracy_lines(rows: list[dict], syncs: list[int]) -> list[str]:
    names = ", ".join(f"`--dask_sync {n}`" for n in syncs)
    out = ["### Test error: single process vs `--dask local:2`, 4 partitions, without and with "
           f"{names}", "",
           "Shared datasets (`../shared/data`), train split decompressed to one plain file and "
           f"split by `--dask_partitions 4`; {PASSES} passes (holdout on, as VW), `-c`, default "
           "options (`--loss_function logistic` for the binary ones), on a 2-worker "
           "LocalCluster the command line joins; the model (`-f`: the best pass by holdout "
           "loss) then predicts the test split in a plain `olearn -t -i`. \"Within\" is the "
           "issue's bar: the dask error is at most the single one plus max(5% of it, 0.005) "
           "(for RMSE: plus 5%). \"Passes to bar\": the first pass whose model "
           "(`--save_per_pass`) is within the bar of the single process's final error (-: "
           "none). MB/pass: without sync, the bytes all workers sent per pass (Dask's transfer "
           "counters); with it, the bytes a worker sent and received in the merges per pass, "
           "as olearn reports them (with 2 workers, what both sent; Dask's counters do not see "
           "the actors' messages).", "",
           "| dataset | metric | single process | `--dask` | within | passes to bar | MB/pass "
           + "".join(f"| `--dask_sync {n}` | within | passes to bar | MB/pass " for n in syncs)
           + "|", "|---|---|---:|" + "---:|---|---:|---:|" * (1 + len(syncs))]
    for r in rows:
        cells = [r["name"], "0/1 error" if r["binary"] else "RMSE", f"{r['single']:.4f}"]
        for run in ["dask"] + [f"sync{n}" for n in syncs]:
            cells += [f"{r[run]:.4f}", "yes" if within(r[run], r["single"], r["binary"]) else "no",
                      str(r[f"{run}_passes"] or "-"), f"{r[f'{run}_sent'] / 1e6:.1f}"]
        out.append("| " + " | ".join(cells) + " |")
    return out + [""]


# --dask_sync on the benchmark's 200k-example file (scripts/make_data.py's defaults)
SYNC_EXAMPLES, SYNC_PERIODS = 200_000, (0, 100, 500, 2000, 10000)


def _run(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    return time.perf_counter() - start, done.stderr


def _loss(stderr: str) -> float:
    return float(stderr.split("average loss = ")[1].split()[0])


def sync_lines(args, tmp: str) -> list[str]:
    """One pass over the 200k-example file in 4 partitions: per --dask_sync period, the time
    (joining a running 2-worker cluster; and, for 0 and 500, the whole command with --dask
    local:2, as issue 34 measured), the progressive loss and the merges' rows and bytes; then
    the scaling over 1, 2 and 4 workers at --dask_sync 500, and the 100-worker model."""
    from distributed import LocalCluster
    data = str(ROOT / "data" / f"dask_sync_{SYNC_EXAMPLES}.vw")
    if not os.path.exists(data):
        generate(data, SYNC_EXAMPLES, 40, 1000, seed=1)
    seconds, stderr = min(_run(OLEARN + ["-d", data]) for _ in range(args.repeat))
    single = _loss(stderr)
    runs: dict = {n: [] for n in SYNC_PERIODS}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=40) as cluster:
        common = OLEARN + ["-d", data, "--dask", cluster.scheduler_address,
                           "--dask_partitions", "4"]
        _run(common)  # warm-up: each worker loads the kernels
        for _ in range(args.repeat + 1):
            for n in SYNC_PERIODS:
                runs[n].append(_run(common + (["--dask_sync", str(n)] if n else [])))
    whole = {n: [_run(OLEARN + ["-d", data, "--dask", "local:2", "--dask_partitions", "4"]
                      + (["--dask_sync", str(n)] if n else []))[0]
                 for _ in range(args.repeat + 1)] for n in (0, 500)}
    base = float(np.median([t for t, _ in runs[0]]))
    lines = ["### Merging within a pass (`--dask_sync`)", "",
             f"Data: `scripts/make_data.py` defaults ({SYNC_EXAMPLES:,} examples, 40 features "
             "of 1000, squared loss), one pass, `--dask_partitions 4`, a 2-worker LocalCluster "
             "the command line joins (times: median of "
             f"{args.repeat + 1} runs, the periods alternated). One process's progressive "
             f"loss: {single:.4f}.", "",
             "| `--dask_sync` | s | × without sync | progressive loss | merges | rows changed "
             "per merge | KB per merge (a worker's, both ways) |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for n in SYNC_PERIODS:
        seconds = float(np.median([t for t, _ in runs[n]]))
        traffic = merge_traffic(runs[n][-1][1])
        lines.append(f"| {n or 'none'} | {seconds:.2f} | {seconds / base:.2f} | "
                     f"{_loss(runs[n][-1][1]):.4f} | "
                     + (f"{traffic[0]} | {traffic[1]:.0f} | {traffic[2] / 1e3:.1f} |" if traffic
                        else "- | - | - |"))
    ratio = np.median(whole[500]) / np.median(whole[0])
    lines += ["", f"The whole command with `--dask local:2` (starting its cluster, as issue 34 "
              f"measured): {np.median(whole[0]):.2f} s without sync, "
              f"{np.median(whole[500]):.2f} s with `--dask_sync 500`: **{ratio:.2f}×**.", ""]
    return lines + sync_scaling(data, args, tmp, seconds / SYNC_EXAMPLES)


def sync_scaling(data: str, args, tmp: str, single: float) -> list[str]:
    """Examples per second and bytes per merge at --dask_sync 500 on 1, 2 and 4 workers (one
    thread each), and the model of a pass over 1 TB on 100 workers from the measured bytes,
    merge time and ``single`` (one process's seconds per example)."""
    from distributed import LocalCluster
    out = ["| workers | examples/s | KB per merge (a worker's, both ways) | model identical to 1 "
           "worker's |",
           "|---:|---:|---:|---|"]
    first = None
    for workers in (1, 2, 4):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=":0", silence_logs=40) as cluster:
            model = os.path.join(tmp, f"sync{workers}.model")
            cmd = OLEARN + ["-d", data, "--dask", cluster.scheduler_address,
                            "--dask_partitions", "4", "--dask_sync", "500", "-f", model]
            _run(cmd)
            seconds, stderr = min(_run(cmd) for _ in range(args.repeat))
        first = first or Path(model).read_bytes()
        traffic = merge_traffic(stderr)
        out.append(f"| {workers} | {SYNC_EXAMPLES / seconds:,.0f} | {traffic[2] / 1e3:.1f} | "
                   f"{'yes' if Path(model).read_bytes() == first else 'NO'} |")
    per_partition = traffic[2] / 2 / 3  # 4 workers: each sends its rows to 3, receives 3
    merge_s = merge_seconds(data, per_partition)
    workers = 100
    examples = 1e12 / (os.path.getsize(data) / SYNC_EXAMPLES)  # 1 TB of this data's lines
    share = examples / workers
    merges = share / 500
    link = 2 * (workers - 1) * per_partition / 1.25e9
    everyone = link + workers * merge_s  # every worker merges every partition, as now
    levels = int(np.ceil(np.log2(workers)))
    tree = levels * (2 * per_partition / 1.25e9 + merge_s)  # pairs merged round by round
    out += ["", f"Model: a pass over 1 TB of this data ({examples / 1e9:.1f} G examples of "
            f"{os.path.getsize(data) / SYNC_EXAMPLES:.0f} bytes) on {workers} workers, "
            f"`--dask_sync 500`: {share / 1e6:.0f} M examples per worker, learned in "
            f"{share * single:,.0f} s at one process's speed here ({single * 1e6:.1f} µs per "
            f"example, parsing included), and {merges:,.0f} merges. At each merge every worker "
            f"sends its changed rows ({per_partition / 1e3:.0f} KB on this data) to the "
            f"{workers - 1} others and receives theirs (2 × {workers - 1} × "
            f"{per_partition / 1e3:.0f} KB / 1.25 GB/s = {link * 1e3:.1f} ms), and merges all "
            f"{workers} partitions itself ({merge_s * 1e3:.2f} ms per partition measured here): "
            f"{everyone * 1e3:.0f} ms per merge, **{merges * everyone:,.0f} s** per pass, "
            f"against {share * single:,.0f} s of learning. So at {workers} workers each "
            "worker's merge of every partition is the limit (the scheduler has no part in a "
            "merge: no task, no round trip): the period must grow (`--dask_sync 5000`: "
            f"{merges * everyone / 10:,.0f} s), or the exchange become a butterfly over the "
            f"workers, {levels} rounds of pairs each merging two partials: about "
            f"{tree * 1e3:.1f} ms per merge, {merges * tree:,.0f} s per pass (not built).", ""]
    return out


def merge_seconds(data: str, changed: float) -> float:
    """A worker's merge time per partition: 4 partitions' segments of about ``changed``
    bytes' rows merged in this process."""
    from olearn.scale import sync
    rows = max(1, int(changed / 24))
    config = Config(quiet=True, dask_sync=500)
    learner = OnlineLearner(config)
    rng = np.random.default_rng(0)
    state = Snapshot.of(learner)
    segments = []
    for _ in range(4):
        index = np.sort(rng.choice(len(learner.weights), rows, replace=False))
        moved = sync.restrict(state, index, 0)
        moved.weights[:, :3] += rng.random((rows, 3), dtype=np.float32)
        stats = learner.new_stats()
        stats[layouts.R_W_LABELED] = 1.0
        segments.append(sync.Segment(sync.Rows(index, moved), stats, None, [], 0, True))
    merger = sync.Merger(state, config, 0)
    return min(_time(lambda: merger.merge(segments, False)) for _ in range(5)) / 4


def write_section(section: str, path: Path, markers: tuple[str, str] = (BEGIN, END)) -> None:
    """Replace the section between ``markers`` in ``path``, or append it."""
    begin, end = markers
    text = path.read_text() if path.exists() else ""
    if begin in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end) + 1:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=40_000)
    parser.add_argument("--features", type=int, default=317)
    parser.add_argument("--vocabulary", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--passes", type=int, default=4,
                        help="passes per timed run, at least 2 (a pass's time is a difference)")
    parser.add_argument("--bits", type=int, default=18)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--sync", default="200,2000",
                        help="--dask_sync periods of the test-error table's last columns")
    parser.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    parser.add_argument("--accuracy_only", action="store_true",
                        help="rerun only the test-error table, in the section already written")
    parser.add_argument("--sync_only", action="store_true",
                        help="rerun only the --dask_sync tables, in the section already written")
    args = parser.parse_args()
    syncs = [int(n) for n in args.sync.split(",")]
    if args.accuracy_only or args.sync_only:
        with tempfile.TemporaryDirectory() as tmp:
            if args.accuracy_only:
                lines = accuracy_lines(accuracy(tmp, syncs), syncs)
                head, tail = "### Test error", END
            else:
                lines, head, tail = sync_lines(args, tmp), "### Merging within", "### Test error"
        table = "\n".join(lines) + "\n"
        path = Path(args.out)
        text = path.read_text()
        start = text.index(BEGIN)
        at = text.index(head if head in text[start:] else "### Test error", start)
        path.write_text(text[:at] + table + text[text.index(tail, at):])
        print(table)
        return
    if args.passes < 2:
        parser.error("--passes must be at least 2")
    data = str(ROOT / "data" / f"dask_bench_{args.examples}x{args.features}.vw")
    if not os.path.exists(data):
        generate(data, args.examples, args.features, args.vocabulary, seed=1)
    nnz = args.features + 1  # and the constant
    with tempfile.TemporaryDirectory() as tmp:
        single = single_process(data, args, tmp)
        results = [measure(workers, data, args, tmp) for workers in (1, 2, 4)]
        merging = sync_lines(args, tmp)
        errors = accuracy(tmp, syncs)
    section = report(results, single, combine_seconds(args.bits), args, args.examples, nnz,
                     os.path.getsize(data))
    section = section.replace(END, "\n".join(merging + accuracy_lines(errors, syncs)) + "\n"
                              + END)
    write_section(section, Path(args.out))
    print(section)


if __name__ == "__main__":
    main()
