"""Benchmark olearn against Vowpal Wabbit and write BENCHMARKS.md.

Runs olearn and, when the ``vowpalwabbit`` package is installed, VW (``python -m vowpalwabbit``)
on the same files, alternating between the two: median wall times and their ratio, the peak RSS
of each process and the average loss each reports. Inputs: a generated 200k-example file
(``scripts/make_data.py``), that file fed several times over (peak memory must not grow), a
10-line file (start-up time with a warm cache) and every ``train.vw.gz`` under ``../shared/data``.

Four more measurements, each with its own target (skip them with --skip-l1, --skip-workloads,
--skip-quadratic, --skip-cache): olearn on the 200k file with ``--l1 1e-6`` vs without
regularization (VW with ``--l1 1e-6`` for reference); olearn vs VW on each of ``WORKLOADS``
(issue 36's table: linear, ``-q ff``, ``-q ab``, ``--cubic fff -b 22``, ``--ngram f2``,
``--oaa 10``, ``--passes 5 --holdout_off`` from a cache already built, ``--stage_poly``; with
each run's CPU time and peak RSS) and on generated files of other namespace shapes (``SHAPES``:
2×40, 10×10 and 1×200 features per example, with ``-q``, ``--cubic`` and ``--interactions``);
and olearn on a copy of ``../shared/data/kddcup99/train.vw.gz`` read as text vs from its ``-c``
cache, with the 10-line file's start-up time for context (also skipped by --skip-shared).

Long inputs (--skip-long): olearn vs VW on the 200k file written --copies times over into one
file (``data/bench200k_x10.vw``; target ≤ 0.6× VW's wall time, its peak RSS shown beside the
1× file's). The parsers (--skip-parsers): ``parse_block`` alone on one thread, in-process, over
the 200k file and its svmlight twin (``data/bench200k.svm``), as MB/s per thread.

The exponential-weights learners (--skip-experts): BOA's, SAEW's and EG's learning kernels alone,
in-process on parsed batches of dense examples (the SAEW paper's d = 500, every feature active
from the first example), as corner updates per second (2d per example; target ≥ 50 million);
and BOA's and SAEW's on text (the shared sst2, when ../shared is present) against the default
learner's.

The Python API (--skip-python): ``Learner.fit(X, y)``, one pass over a CSR matrix in-process
(the default learner, and plain ``--sgd`` as scikit-learn's rule), against scikit-learn's
``SGDClassifier``/``SGDRegressor`` for one epoch, and olearn's and
River's ``learn_one`` loops over the same rows as dicts (each tool skipped when not installed), on
a9a (classification) and cpusmall (regression) from ``../shared/data``; targets (issue 36): ``fit``
≤ 1× scikit-learn's time, ``learn_one`` ≤ 0.6× River's, on both.

The report keeps what follows its last section as it is: the APPLE and SAEW experiments'
results with their caveats (from ``experiments/*/summary.md``, written by
``scripts/apple_experiment.py`` and ``scripts/saew_experiment.py``, which take 10-30 minutes
each), then the Dask and prediction-server sections of their own scripts.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parent.parent
LOSS = re.compile(r"^average loss = (\S+)", re.MULTILINE)
WALL_TARGET = 0.7  # olearn / VW on the 200k file (issue 17)
RSS_TARGET_MB = 250.0
SMALL_TARGET_S = 1.0
L1_TARGET = 1.15  # olearn --l1 / olearn without regularization, on the 200k file
L1_STRENGTH = "1e-6"
QUAD_TARGET = 1.0  # olearn / VW with interactions: -q ff on the 200k file, and each shape
# Interactions on generated files of other shapes: (namespaces, features in each, examples,
# options); the examples are chosen so that each run expands ~100-200 million features.
SHAPES = ((2, 40, 100_000, ("-q", "ab")),
          (10, 10, 20_000, ("-q", "::")),
          (10, 10, 20_000, ("--cubic", "abc")),
          (10, 10, 20_000, ("--interactions", "abcd")),
          (1, 200, 8_000, ("-q", "aa")))
SHAPE_VOCABULARY = 2000  # feature names per namespace (> 200: distinct features in 1×200)
POLY_TARGET = 0.7  # olearn / VW with --stage_poly, on the 200k file (issue 17)
WORKLOAD_TARGET = 0.5  # olearn / VW on each of WORKLOADS, the worst row deciding (issue 36)
FIT_TARGET = 1.0  # olearn fit(X, y) / scikit-learn's SGD, one epoch, on each task (issue 36)
LEARN_ONE_TARGET = 0.6  # olearn learn_one / River's, on each task (issue 36)
LONG_TARGET = 0.6  # olearn / VW on the 200k file written --copies times over (issue 17)
PARSER_AIM_MB_S = 500.0  # parse_block's throughput on one thread (issue 17's aim, not a target)
CACHE_TARGET = 2.0  # olearn text input / cache input, on the shared CACHE_DATASET
CACHE_DATASET = "kddcup99"
BOA_TARGET = 50e6  # BOA corner updates per second
EXPERTS_SHAPE = (20000, 500)  # examples, dense features (the SAEW paper's d)
EXPERT_LEARNERS = (("BOA", "boa"), ("SAEW (BOA)", "saew"), ("EG", "eg"))  # name, option
# the exponential-weights learners on text, against the default learner (issue 35)
TEXT_DATASET = "sst2"
TEXT_LEARNERS = (("default learner", {}), ("BOA", {"boa": True, "radius": 1.0}),
                 ("SAEW (BOA)", {"saew": True, "radius": 1.0}))
L1_PAIR = (f"olearn --l1 {L1_STRENGTH}", "olearn")  # the L1 ratio's numerator and denominator
NAMESPACE = re.compile(r"\|([^\s|:])")  # a named namespace's first letter
DASH = "—"


@dataclass(frozen=True)
class Workload:
    """A row of the workloads table (issue 36): olearn and VW with ``options`` ("{ns}" is the
    200k file's first namespace) on the 200k file, on its first ``head`` lines, or on a
    200k-example file scripts/make_data.py writes with the options ``generate``; with
    ``cached``, each tool reads its own cache file (``--cache_file``, which needs no ``-c``),
    which the untimed run writes."""

    options: str
    generate: tuple[str, ...] = ()
    head: int = 0
    cached: bool = False

    def label(self, ns: str) -> str:
        """The row's options (``--cache_file`` for its cache), ``linear`` for none."""
        return self.options.format(ns=ns) + (" --cache_file" if self.cached else "") or "linear"


# Issue 36's table. The cubic expansion reads the first 20,000 lines: on the whole file each
# run takes about a minute.
WORKLOADS = (Workload(""),
             Workload("-q {ns}{ns}"),
             Workload("-q ab", generate=("--namespaces", "2", "--features", "20")),
             Workload("--cubic {ns}{ns}{ns} -b 22", head=20_000),
             Workload("--ngram {ns}2"),
             Workload("--oaa 10", generate=("--classes", "10")),
             Workload("--passes 5 --holdout_off", cached=True),
             Workload("--stage_poly"))
QUADRATIC_ROW, POLY_ROW = WORKLOADS[1], WORKLOADS[-1]  # the rows with issue 17's own targets


@dataclass(frozen=True)
class Run:
    """One finished process: wall time, CPU time (user + system), peak RSS and its stderr."""

    seconds: float
    cpu_seconds: float
    rss_mb: float
    stderr: str


@dataclass(frozen=True)
class Tool:
    """A learner's command prefix; both tools take the same arguments."""

    name: str
    prefix: tuple[str, ...]

    def command(self, *args: str) -> list[str]:
        return [*self.prefix, *args]


@dataclass(frozen=True)
class Timing:
    """Alternated timed runs of one input per tool (or per named command), the average loss each
    reported and the stderr of its untimed run."""

    runs: dict[str, list[Run]]
    losses: dict[str, str | None]
    warmup_stderr: dict[str, str]

    def median_s(self, tool: str) -> float:
        return statistics.median(r.seconds for r in self.runs[tool])

    def median_cpu(self, tool: str) -> float:
        return statistics.median(r.cpu_seconds for r in self.runs[tool])

    def min_s(self, tool: str) -> float:
        return min(r.seconds for r in self.runs[tool])

    def median_rss(self, tool: str) -> float:
        return statistics.median(r.rss_mb for r in self.runs[tool])

    def ratio(self, num: str = "olearn", den: str = "VW") -> float | None:
        """``num`` / ``den`` median wall time (olearn / VW by default); None if either is absent."""
        if num not in self.runs or den not in self.runs:
            return None
        return self.median_s(num) / self.median_s(den)

    def cpu_ratio(self, num: str = "olearn", den: str = "VW") -> float | None:
        """``num`` / ``den`` median CPU time (olearn / VW by default); None if either is absent."""
        if num not in self.runs or den not in self.runs:
            return None
        return self.median_cpu(num) / self.median_cpu(den)

    def loss_difference(self, ours: str = "olearn", theirs: str = "VW") -> float | None:
        """|ours - theirs| / |theirs| of the average losses; None if either is absent or
        unparsable."""
        try:
            a, b = float(self.losses[ours]), float(self.losses[theirs])  # type: ignore
        except (KeyError, TypeError, ValueError):
            return None
        return abs(a - b) / max(abs(b), 1e-12)


@dataclass(frozen=True)
class MemoryCheck:
    """Peak RSS of olearn on one copy and on several copies of a file, in one input mode."""

    mode: str
    commands: tuple[str, str]
    single: list[Run]
    repeated: list[Run]

    def medians(self) -> tuple[float, float]:
        return (statistics.median(r.rss_mb for r in self.single),
                statistics.median(r.rss_mb for r in self.repeated))


@dataclass(frozen=True)
class Comparison:
    """Alternated timed runs of named commands (shown as timed, with --quiet), or why none ran."""

    commands: dict[str, str]
    timing: Timing | None = None
    note: str = ""  # why timing is None, or what was checked about the input
    files_mb: dict[str, float] = field(default_factory=dict)  # input files and their sizes


@dataclass(frozen=True)
class Throughput:
    """Learning-kernel time of each exponential-weights learner on the same parsed batches."""

    seconds: dict[str, list[float]]
    corners_per_example: int
    examples: int
    note: str = ""
    text: dict[str, list[float]] = field(default_factory=dict)  # TEXT_LEARNERS on TEXT_DATASET
    text_note: str = ""

    def rate(self, name: str) -> float:
        """Corner updates per second (median time)."""
        return self.corners_per_example * self.examples / statistics.median(self.seconds[name])


@dataclass(frozen=True)
class PythonTimes:
    """Seconds of each Python tool's one pass over each task's rows, alternated."""

    seconds: dict[tuple[str, str], list[float]]  # (task, tool) -> runs
    examples: dict[str, int]
    note: str = ""


@dataclass(frozen=True)
class Results:
    """Everything one benchmark run measured."""

    environment: list[str]
    tools: list[Tool]
    commands: list[str]
    data_path: str
    data_lines: int
    big: Timing
    memory: list[MemoryCheck]
    small: Timing
    small_command: str
    shared: dict[str, Timing]
    shared_note: str
    l1: Comparison
    workloads: dict[Workload, Comparison]  # every row of WORKLOADS, or none (skipped)
    workload_ns: str  # the namespace the rows' "{ns}" stood for
    workloads_note: str  # why no row ran
    shapes: list[Comparison]
    cache: Comparison
    experts: Throughput
    python: PythonTimes
    long: Comparison
    parsers: dict[str, list[tuple[float, float]]]  # file -> (CPU s, wall s) per round
    parsers_note: str
    seconds: float
    sources_changed: bool
    load_at_end: str


# --- running processes -------------------------------------------------------------------------

def run_once(cmd: list[str], stdin_files: list[str] | None = None) -> Run:
    """Run ``cmd``, its stdin piped from ``cat stdin_files`` if given; peak RSS of ``cmd`` alone."""
    feeder = None
    if stdin_files:
        feeder = subprocess.Popen(["cat", *stdin_files], stdout=subprocess.PIPE)
    stdin: int | IO[bytes] | None = feeder.stdout if feeder else subprocess.DEVNULL
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err)
        if feeder and feeder.stdout:
            feeder.stdout.close()  # only the learner holds the pipe's read end now
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if feeder is not None:
            feeder.wait()
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} exited with {proc.returncode}:\n{stderr}")
    cpu = usage.ru_utime + usage.ru_stime
    return Run(seconds, cpu, usage.ru_maxrss * 1024 / 1e6, stderr)  # ru_maxrss: KiB on Linux


def alternate(commands: dict[str, list[str]], runs: int) -> dict[str, list[Run]]:
    """``runs`` runs of each command, round robin; the order flips every round."""
    results: dict[str, list[Run]] = {name: [] for name in commands}
    for i in range(runs):
        for name in list(commands)[:: 1 if i % 2 == 0 else -1]:
            results[name].append(run_once(commands[name]))
    return results


def time_commands(commands: dict[str, list[str]], runs: int) -> Timing:
    """One untimed run per command without --quiet (warms caches, gives the loss), then ``runs``
    alternated timed runs of each with --quiet."""
    stderr = {name: run_once(cmd).stderr for name, cmd in commands.items()}
    losses = {}
    for name, text in stderr.items():
        match = LOSS.search(text)
        losses[name] = match.group(1) if match else None
    timed = alternate({name: [*cmd, "--quiet"] for name, cmd in commands.items()}, runs)
    return Timing(timed, losses, stderr)


def time_tools(tools: list[Tool], args: list[str], runs: int) -> Timing:
    """time_commands with the same arguments for each tool."""
    return time_commands({t.name: t.command(*args) for t in tools}, runs)


def as_timed(commands: dict[str, list[str]]) -> dict[str, str]:
    """Each command as timed (with --quiet), for the report."""
    return {name: shlex.join([*cmd, "--quiet"]) for name, cmd in commands.items()}


def memory_check(olearn: Tool, path: str, copies: int, runs: int, pipe: bool) -> MemoryCheck:
    """Peak RSS of olearn on 1 and ``copies`` copies of ``path`` (piped or as path arguments)."""
    shown, variants = [], []
    for n in (1, copies):
        if pipe:
            cmd, files = olearn.command("--quiet"), [path] * n
            shown.append(f"{shlex.join(['cat', *files])} | {shlex.join(cmd)}")
        else:
            cmd, files = olearn.command("--quiet", *[path] * n), None
            shown.append(shlex.join(cmd))
        variants.append((cmd, files))
    single: list[Run] = []
    repeated: list[Run] = []
    for _ in range(runs):  # interleaved, so slow drift in the machine's load hits both alike
        single.append(run_once(*variants[0]))
        repeated.append(run_once(*variants[1]))
    return MemoryCheck("stdin pipe" if pipe else "path arguments", (shown[0], shown[1]),
                       single, repeated)


# --- environment -------------------------------------------------------------------------------

def python_path() -> str:
    """This interpreter, relative to the repo when it lives inside it (e.g. .venv/bin/python)."""
    inside = sys.executable.startswith(str(REPO) + os.sep)
    return os.path.relpath(sys.executable, REPO) if inside else sys.executable


def find_tools(no_vw: bool) -> list[Tool]:
    """olearn next to this interpreter (else on PATH) and, if importable here, VW."""
    olearn = Path(python_path()).parent / "olearn"
    tools = [Tool("olearn", (str(olearn) if olearn.exists() else "olearn",))]
    if not no_vw and importlib.util.find_spec("vowpalwabbit") is not None:
        tools.append(Tool("VW", (python_path(), "-m", "vowpalwabbit")))
    return tools


def source_stamp() -> tuple[tuple[str, float], ...]:
    """Name and mtime of every olearn source file: a change mid-run means numba recompiles."""
    return tuple(sorted((str(f), f.stat().st_mtime) for f in Path("olearn").rglob("*.py")))


def command_output(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def cpu_model() -> str:
    try:
        match = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(),
                          re.MULTILINE)
    except OSError:
        match = None
    return match.group(1).strip() if match else platform.processor() or "unknown"


def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def environment() -> list[str]:
    """Bullet lines: date, machine, load, versions and the olearn source revision."""
    commit = command_output(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    dirty = command_output(["git", "status", "--porcelain", "--", "olearn"])
    packages = ", ".join(f"{p} {version(p)}" for p in ("olearn", "numba", "numpy", "vowpalwabbit"))
    return [
        f"Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"Machine: nproc {len(os.sched_getaffinity(0))}, {cpu_model()}, "
        f"{platform.platform()}; load average at start {load_average()}",
        f"Versions: Python {platform.python_version()}, {packages}",
        f"olearn source: git {commit}"
        + (", with uncommitted changes under olearn/" if dirty else ""),
    ]


# --- inputs ------------------------------------------------------------------------------------

def make_data(path: str, *options: str) -> str:
    """Generate a benchmark file with scripts/make_data.py (it skips an existing file)."""
    cmd = [python_path(), "scripts/make_data.py", *options, "--out", path]
    subprocess.run(cmd, check=True)
    return shlex.join(cmd)


def count_lines(path: str) -> int:
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def write_head(src: str, dst: str, lines: int) -> None:
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        fout.writelines(fin.readline() for _ in range(lines))


def shared_datasets(shared: Path) -> list[str]:
    return sorted(p.name for p in shared.iterdir() if (p / "train.vw.gz").is_file())


def namespaces(path: str, lines: int = 100) -> list[str]:
    """First letters of the named namespaces in the first ``lines`` lines of a VW text file, in
    order of appearance (the default namespace, ``| ...``, has none)."""
    found: dict[str, None] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for _, line in zip(range(lines), f):
            found.update(dict.fromkeys(NAMESPACE.findall(line)))
    return list(found)


# --- the benchmark -----------------------------------------------------------------------------

def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def run_shared(args: argparse.Namespace, tools: list[Tool]) -> tuple[dict[str, Timing], str]:
    """Timings per shared dataset, and why the section is empty when it is."""
    shared = Path(args.shared)
    if args.skip_shared:
        return {}, "Skipped (--skip-shared)."
    if not shared.is_dir():
        return {}, f"Skipped: {args.shared} not found."
    results = {}
    for name in shared_datasets(shared):
        log(f"shared: {name}")
        path = str(shared / name / "train.vw.gz")
        results[name] = time_tools(tools, ["-d", path], args.shared_runs)
    return results, ""


def run_l1(args: argparse.Namespace, tools: list[Tool]) -> Comparison:
    """olearn with and without --l1 on the 200k file (VW with --l1 for reference), alternated."""
    if args.skip_l1:
        return Comparison({}, note="Skipped (--skip-l1).")
    olearn, data = tools[0], ["-d", args.data]
    commands = {L1_PAIR[0]: olearn.command(*data, "--l1", L1_STRENGTH),
                L1_PAIR[1]: olearn.command(*data)}
    if len(tools) > 1:
        commands[f"VW --l1 {L1_STRENGTH}"] = tools[1].command(*data, "--l1", L1_STRENGTH)
    log(f"L1: {args.runs} alternated runs per command")
    return Comparison(as_timed(commands), time_commands(commands, args.runs))


def run_workloads(args: argparse.Namespace,
                  tools: list[Tool]) -> tuple[dict[Workload, Comparison], str, str]:
    """olearn vs VW on each of WORKLOADS (each Comparison's note the command that wrote its
    input, if one did; its files_mb the input), the namespace of the 200k file that the options
    name, and why no row ran."""
    if args.skip_workloads:
        return {}, "", "Skipped (--skip-workloads)."
    found = namespaces(args.data)
    if not found:
        return {}, "", f"Skipped: no named namespace in the first lines of `{args.data}`."
    ns = found[0]
    runs = max(3, args.runs // 2)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for w in WORKLOADS:
            path, note = args.data, ""
            if w.generate:
                path = os.path.join(os.path.dirname(args.data) or ".",
                                    "workload" + "".join(w.generate).replace("-", "_") + ".vw")
                note = make_data(path, *w.generate)
            elif w.head:
                path = os.path.join(tmp, f"head{w.head}.vw")
                write_head(args.data, path, w.head)
                note = f"head -n {w.head} {shlex.quote(args.data)} > {shlex.quote(path)}"
            commands = {t.name: t.command("-d", path, *shlex.split(w.options.format(ns=ns)),
                                          *(("--cache_file", os.path.join(tmp, f"{t.name}.cache"))
                                            if w.cached else ()))
                        for t in tools}
            log(f"workload {w.label(ns)}: {runs} alternated runs per tool")
            rows[w] = Comparison(as_timed(commands), time_commands(commands, runs), note,
                                 files_mb={path: os.path.getsize(path) / 1e6})
    return rows, ns, ""


def run_shapes(args: argparse.Namespace, tools: list[Tool]) -> list[Comparison]:
    """olearn vs VW with interactions on a generated file of each of SHAPES (written next to
    the 200k file), each Comparison's note the command that generated its file."""
    if args.skip_quadratic:
        return []
    out = []
    for count, features, examples, options in SHAPES:
        path = os.path.join(os.path.dirname(args.data) or ".",
                            f"shape{count}x{features}_{examples}.vw")
        made = make_data(path, "--namespaces", str(count), "--features", str(features),
                         "--examples", str(examples), "--vocabulary", str(SHAPE_VOCABULARY))
        runs = max(3, args.runs // 2)
        commands = {t.name: t.command("-d", path, *options) for t in tools}
        log(f"{count}x{features} {shlex.join(options)}: {runs} alternated runs per tool")
        out.append(Comparison(as_timed(commands), time_commands(commands, runs), made))
    return out


def long_file(path: str, copies: int) -> str:
    """``path`` written ``copies`` times over into one file next to it (kept while its size
    matches), so that VW, which reads one ``-d`` file, reads the same bytes as olearn."""
    root, ext = os.path.splitext(path)
    out = f"{root}_x{copies}{ext}"
    if not os.path.exists(out) or os.path.getsize(out) != copies * os.path.getsize(path):
        with open(out + ".tmp", "wb") as f:
            for _ in range(copies):
                with open(path, "rb") as src:
                    shutil.copyfileobj(src, f, 1 << 24)
        os.replace(out + ".tmp", out)
    return out


def run_long(args: argparse.Namespace, tools: list[Tool]) -> Comparison:
    """olearn vs VW on the 200k file written --copies times over (fewer runs: each takes
    seconds); the peak RSS of these runs shows whether memory stays flat."""
    if args.skip_long:
        return Comparison({}, note="Skipped (--skip-long).")
    path = long_file(args.data, args.copies)
    runs = max(3, args.runs // 2)
    commands = {t.name: t.command("-d", path) for t in tools}
    log(f"{args.copies}x file: {runs} alternated runs per tool")
    return Comparison(as_timed(commands), time_commands(commands, runs),
                      f"`{path}`: `{args.data}` written {args.copies} times over.",
                      files_mb={path: os.path.getsize(path) / 1e6})


def svmlight_twin(path: str) -> str:
    """The generated VW file (``label |f name:value ...``) as svmlight, next to it."""
    out = os.path.splitext(path)[0] + ".svm"
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(path):
        with open(path, "rb") as src, open(out + ".tmp", "wb") as f:
            f.writelines(line.replace(b" |f ", b" ", 1) for line in src)
        os.replace(out + ".tmp", out)
    return out


def run_parsers(args: argparse.Namespace) -> tuple[dict[str, list[tuple[float, float]]], str]:
    """``parse_block`` alone, in-process on this thread, over 1 MB blocks of the 200k file and
    of its svmlight twin (as olearn's reader cuts them): CPU and wall seconds per round."""
    if args.skip_parsers:
        return {}, "Skipped (--skip-parsers)."
    from olearn.data import sources
    from olearn.data.formats import detect
    from olearn.engine.learner import OnlineLearner
    from olearn.options.config import Config
    learner = OnlineLearner(Config(quiet=True))
    runs = max(3, args.runs // 2)
    out: dict[str, list[tuple[float, float]]] = {}
    for path in (args.data, svmlight_twin(args.data)):
        blocks = list(sources.all_blocks([path]))
        fmt = detect("auto", path, blocks[0].data)
        learner.parse_block(blocks[0], fmt)  # loads the kernel
        log(f"parser: {path}, {runs} rounds")
        for _ in range(runs):
            cpu, wall = time.thread_time(), time.perf_counter()
            for block in blocks:
                learner.parse_block(block, fmt)
            out.setdefault(path, []).append((time.thread_time() - cpu,
                                             time.perf_counter() - wall))
        del blocks
    return out, ""


def run_cache(args: argparse.Namespace, olearn: Tool) -> Comparison:
    """olearn on a copy of the shared CACHE_DATASET file, as text vs from its -c cache.

    The copy lives in a temporary directory, so the cache (``<copy>.cache``) is written there;
    one untimed -c run creates it, so every timed -c run reads it (``time_commands``' untimed
    run without --quiet shows whether olearn says ``using cache_file``)."""
    source = Path(args.shared) / CACHE_DATASET / "train.vw.gz"
    if args.skip_cache:
        return Comparison({}, note="Skipped (--skip-cache).")
    if args.skip_shared:
        return Comparison({}, note=f"Skipped (--skip-shared): it reads `{source}`.")
    if not source.is_file():
        return Comparison({}, note=f"Skipped: `{source}` not found.")
    runs = 3 * args.runs  # runs of ~0.2-0.5 s, dominated by start-up: noisy, and cheap to repeat
    log(f"cache: {CACHE_DATASET}, {runs} alternated runs per input")
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, source.name)
        shutil.copyfile(source, copy)
        commands = {"text": olearn.command("-d", copy), "cache": olearn.command("-d", copy, "-c")}
        run_once([*commands["cache"], "--quiet"])  # creates the cache; untimed
        cache = Path(copy + ".cache")
        if not cache.is_file():
            raise RuntimeError(f"{shlex.join(commands['cache'])} wrote no {cache}")
        timing = time_commands(commands, runs)
        sizes = {str(source): source.stat().st_size / 1e6, cache.name: cache.stat().st_size / 1e6}
    return Comparison(as_timed(commands), timing, files_mb=sizes)


def run_experts(args: argparse.Namespace) -> Throughput:
    """BOA, SAEW and EG on dense examples, timed in-process around the learning kernel only
    (parsing happens before), alternated; every run starts from a fresh learner."""
    examples, d = EXPERTS_SHAPE
    if args.skip_experts:
        return Throughput({}, 2 * d, examples, "Skipped (--skip-experts).")
    import numpy as np

    from olearn.data import sources
    from olearn.engine.learner import OnlineLearner
    from olearn.options.config import Config
    rng = np.random.default_rng(0)
    theta = np.zeros(d)
    theta[:5] = [0.4, -0.3, 0.15, -0.1, 0.05]
    x = rng.normal(size=(examples, d)).astype(np.float32)
    y = x @ theta + 0.1 * rng.normal(size=examples)
    lines = [f"{label:.5f} |x " + " ".join(f"{j}:{v:.4f}" for j, v in enumerate(row))
             for label, row in zip(y, x)]
    runs = max(3, args.runs // 2)
    log(f"experts: {examples} x {d} dense examples, {runs} alternated runs per learner")

    def learn_all(option: str, count: int) -> float:
        learner = OnlineLearner(Config(noconstant=True, quiet=True, **{option: True}))
        batches = list(learner.batches(sources.blocks_of_lines(lines[:count])))
        start = time.perf_counter()
        for batch in batches:
            learner.learn(batch, np.empty((len(batch), 2), dtype=np.float32))
        return time.perf_counter() - start

    seconds: dict[str, list[float]] = {name: [] for name, _ in EXPERT_LEARNERS}
    for _, option in EXPERT_LEARNERS:
        learn_all(option, 10)  # loads the compiled kernels
    for _ in range(runs):
        for name, option in EXPERT_LEARNERS:
            seconds[name].append(learn_all(option, examples))
    text, text_note = _text_experts(Path(args.shared) / TEXT_DATASET / "train.vw.gz", runs)
    return Throughput(seconds, 2 * d, examples, text=text, text_note=text_note)


def _text_experts(path: Path, runs: int) -> tuple[dict[str, list[float]], str]:
    """TEXT_LEARNERS' learning time on a shared text dataset (logistic loss), alternated."""
    if not path.is_file():
        return {}, f"Skipped: {path} not found."
    import gzip

    import numpy as np

    from olearn.data import sources
    from olearn.engine.learner import OnlineLearner
    from olearn.options.config import Config
    with gzip.open(path, "rt") as f:
        lines = f.readlines()

    def learn_all(options: dict) -> float:
        learner = OnlineLearner(Config(loss_function="logistic", quiet=True, **options))
        batches = list(learner.batches(sources.blocks_of_lines(lines)))
        start = time.perf_counter()
        for batch in batches:
            learner.learn(batch, np.empty((len(batch), 2), dtype=np.float32))
        return time.perf_counter() - start

    seconds: dict[str, list[float]] = {name: [] for name, _ in TEXT_LEARNERS}
    for _ in range(runs):
        for name, options in TEXT_LEARNERS:
            seconds[name].append(learn_all(options))
    return seconds, f"{len(lines):,} examples"


PYTHON_TASKS = (("a9a", "classification"), ("cpusmall", "regression"))


def _python_tools(kind: str) -> dict:
    """One pass of each available tool over (X, y, rows as dicts), as callables."""
    import warnings

    import olearn
    loss = "logistic" if kind == "classification" else "squared"

    def learn_one(X, y, rows):
        model = olearn.Learner(loss_function=loss)
        for x, target in zip(rows, y):
            model.learn_one(x, target)
    tools = {"olearn fit(X, y)": lambda X, y, rows: olearn.Learner(loss_function=loss).fit(X, y),
             # plain SGD: the update rule of scikit-learn's SGD, a like-for-like row
             "olearn fit(X, y) --sgd": lambda X, y, rows: olearn.Learner(
                 loss_function=loss, sgd=True).fit(X, y),
             "olearn learn_one": learn_one}
    try:
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import SGDClassifier, SGDRegressor

        def sgd(X, y, rows):
            model = (SGDClassifier(loss="log_loss") if kind == "classification"
                     else SGDRegressor())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.set_params(max_iter=1, tol=None).fit(X, y)
        tools["scikit-learn SGD, 1 epoch"] = sgd
    except ImportError:
        pass
    try:
        from river import linear_model

        def river(X, y, rows):
            model = (linear_model.LogisticRegression() if kind == "classification"
                     else linear_model.LinearRegression())
            for x, target in zip(rows, y):
                model.learn_one(x, target > 0 if kind == "classification" else target)
        tools["River learn_one"] = river
    except ImportError:
        pass
    return tools


def run_python(args: argparse.Namespace) -> PythonTimes:
    """The Python section: alternated one-pass timings of each tool on each task."""
    if args.skip_python:
        return PythonTimes({}, {}, "Skipped (--skip-python).")
    import numpy as np
    try:
        from sklearn.datasets import load_svmlight_file
    except ImportError:
        return PythonTimes({}, {}, "Skipped: scikit-learn (to load the svmlight files) is not "
                                   "installed.")
    seconds: dict[tuple[str, str], list[float]] = {}
    examples = {}
    runs = max(3, args.runs // 2)
    for task, kind in PYTHON_TASKS:
        path = Path(args.shared) / task / "train.svm.gz"
        if not path.exists():
            continue
        X, y = load_svmlight_file(str(path), zero_based=True)
        X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)  # for SGD
        if kind == "classification":
            y = np.where(y > 0, 1.0, -1.0)
        rows = [dict(zip(X.indices[X.indptr[i]:X.indptr[i + 1]].tolist(),
                         X.data[X.indptr[i]:X.indptr[i + 1]].tolist())) for i in range(len(y))]
        examples[task] = len(y)
        tools = _python_tools(kind)
        log(f"python: {task}, {runs} alternated runs of {', '.join(tools)}")
        for call in tools.values():
            call(X[:100], y[:100], rows[:100])  # compiles or loads the kernels
        for _ in range(runs):
            for name, call in tools.items():
                start = time.perf_counter()
                call(X, y, rows)
                seconds.setdefault((task, name), []).append(time.perf_counter() - start)
    return PythonTimes(seconds, examples, "" if seconds else "Skipped: no shared datasets.")


def python_targets(t: PythonTimes) -> list[str]:
    """The Python API's targets: olearn's time / the other tool's, on every task."""
    lines = []
    for ours, theirs, target, what in (
            ("olearn fit(X, y)", "scikit-learn SGD, 1 epoch", FIT_TARGET,
             "`fit(X, y)` with the default learner ≤ {:g}× scikit-learn's SGD (one epoch)"),
            ("olearn learn_one", "River learn_one", LEARN_ONE_TARGET,
             "`learn_one` ≤ {:g}× River's")):
        ratios = {task: statistics.median(t.seconds[task, ours])
                  / statistics.median(t.seconds[task, theirs])
                  for task in t.examples if (task, theirs) in t.seconds}
        head = "- " + what.format(target)
        lines.append(f"{head}: not measured. {t.note}" if not ratios else
                     f"{head} on every task: " + ", ".join(f"{task} {ratio:.2f}" for task, ratio
                                                           in ratios.items())
                     + f", {verdict(max(ratios.values()) <= target)}.")
    return lines


def python_section(r: Results) -> list[str]:
    title = "## Python API: `fit(X, y)` against scikit-learn and River\n"
    t = r.python
    if not t.seconds:
        return [title, t.note + "\n"]
    rows = []
    for (task, name), runs in t.seconds.items():
        median = statistics.median(runs)
        ours = statistics.median(t.seconds[task, "olearn fit(X, y)"])
        rows.append([task, name, f"{median:.3f}", f"{t.examples[task] / median:,.0f}",
                     f"{ours / median:.2f}"])
    per_call = []
    like = []
    for task in t.examples:
        plain, sgd = (t.seconds.get((task, name)) for name in (
            "olearn fit(X, y) --sgd", "scikit-learn SGD, 1 epoch"))
        if plain and sgd:
            like.append(f"{task}: {statistics.median(plain) / statistics.median(sgd):.2f}")
        ours, theirs = t.seconds.get((task, "olearn learn_one")), t.seconds.get(
            (task, "River learn_one"))
        if ours and theirs:
            us = [statistics.median(runs) / t.examples[task] * 1e6 for runs in (ours, theirs)]
            per_call.append(f"{task}: olearn {us[0]:.1f} µs, River {us[1]:.1f} µs per call "
                            f"(ratio {us[0] / us[1]:.2f})")
    return [title,
            "One pass over the training rows, in-process, the data already loaded (a CSR "
            "matrix from `load_svmlight_file`; for the `learn_one` loops the same rows as "
            "dicts, built before timing); olearn with its default learner (logistic loss for "
            "a9a, labels ±1), scikit-learn's SGD with `max_iter=1`, River's "
            "`LogisticRegression`/`LinearRegression`. Ratio: olearn `fit`'s median time / the "
            "tool's (below 1: `fit` is faster).\n",
            table(["task", "tool", "median s", "examples / s", "olearn fit / tool"], rows) + "\n",
            *(["Plain SGD against plain SGD (olearn `fit` with `--sgd` / scikit-learn's "
               "SGD, time ratio): " + "; ".join(like) + ".\n"] if like else []),
            *(["`learn_one` against `learn_one`: " + "; ".join(per_call) + ".\n"]
              if per_call else [])]


def benchmark(args: argparse.Namespace) -> Results:
    """Run every measurement, in the order: 200k file, memory, 10-line file, L1, quadratic,
    stage_poly, cache, shared data, then the in-process ones (experts, Python API)."""
    started, stamp = time.perf_counter(), source_stamp()
    env = environment()
    tools = find_tools(args.no_vw)
    olearn = tools[0]
    log("tools: " + ", ".join(shlex.join(t.prefix) for t in tools))
    commands = [shlex.join([python_path(), "scripts/bench.py", *sys.argv[1:]]),
                make_data(args.data)]
    commands += [shlex.join(t.command("-d", args.data, "--quiet")) for t in tools]

    log(f"200k file: {args.runs} alternated runs per tool")
    big = time_tools(tools, ["-d", args.data], args.runs)
    log(f"memory: 1x and {args.copies}x, {args.rss_runs} runs each, path arguments and pipe")
    memory = [memory_check(olearn, args.data, args.copies, args.rss_runs, pipe)
              for pipe in (False, True)]
    log("10-line file")
    with tempfile.TemporaryDirectory() as tmp:
        small_path = os.path.join(tmp, "small.vw")
        write_head(args.data, small_path, 10)
        small = time_tools(tools, ["-d", small_path], args.runs)
    l1 = run_l1(args, tools)
    workloads, workload_ns, workloads_note = run_workloads(args, tools)
    shapes = run_shapes(args, tools)
    cache = run_cache(args, olearn)
    shared, shared_note = run_shared(args, tools)
    long = run_long(args, tools)
    # In-process sections last: a child's ru_maxrss counts this process's resident memory at
    # the fork, so once this process holds their data every later child would report it.
    experts = run_experts(args)
    python = run_python(args)
    parsers, parsers_note = run_parsers(args)
    return Results(env, tools, commands, args.data, count_lines(args.data), big, memory, small,
                   shlex.join(olearn.command("-d", small_path, "--quiet")), shared, shared_note,
                   l1, workloads, workload_ns, workloads_note, shapes, cache, experts, python, long,
                   parsers, parsers_note, time.perf_counter() - started,
                   source_stamp() != stamp, load_average())


# --- the report --------------------------------------------------------------------------------

def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |",
             "|---|" + "---:|" * (len(headers) - 1)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def verdict(ok: bool) -> str:
    return "**met**" if ok else "**NOT met**"


def fmt(value: float | None, spec: str) -> str:
    return DASH if value is None else format(value, spec)


def header_section(r: Results) -> list[str]:
    vw_note = ("VW is the `vowpalwabbit` Python package run as `python -m vowpalwabbit ARGS`, so "
               "its times include Python start-up and import (see the 10-line file)."
               if len(r.tools) > 1 else
               "**vowpalwabbit is not installed (or --no-vw was given): only olearn was run.**")
    lines = ["# Benchmarks\n",
             "Written by `scripts/bench.py`; every figure below comes from that run. Wall time is "
             "measured around each process; peak RSS is that process's own `ru_maxrss` from "
             "`os.wait4` (MB = 10^6 bytes). The machine is shared, so times are noisy.\n",
             "\n".join(f"- {line}" for line in r.environment) + "\n",
             vw_note + "\n"]
    if r.sources_changed:
        lines.append("**Warning: olearn's source files changed while the benchmark ran, so some "
                     "runs may include numba recompilation; rerun for clean figures.**\n")
    return lines + ["Commands (every input is timed with `--quiet`; before the timed runs, one "
                    "untimed run per tool without `--quiet` warms the page and numba caches and "
                    "gives the average loss):\n",
                    "\n".join(f"    {c}" for c in r.commands) + "\n"]


def targets_section(r: Results, copies: int, tolerance: float) -> list[str]:
    """Plain met / not met lines for each target, from the measured figures."""
    lines = ["## Targets\n"]
    ratio = r.big.ratio()
    if ratio is None:
        lines.append("- Wall time vs VW: not measured (no VW).")
    else:
        lines.append(f"- Wall time ≤ {WALL_TARGET:g}× VW's on the 200k file: ratio {ratio:.2f}, "
                     f"{verdict(ratio <= WALL_TARGET)}. (CPU-time ratio, for reference: "
                     f"{fmt(r.big.cpu_ratio(), '.2f')}.)")
    peaks = [run.rss_mb for run in r.big.runs["olearn"]]
    peaks += [run.rss_mb for c in r.memory for run in c.single + c.repeated]
    lines.append(f"- Peak RSS ≤ {RSS_TARGET_MB:g} MB (largest olearn peak of every run on the "
                 f"200k file, 1× and {copies}×): {max(peaks):.1f} MB, "
                 f"{verdict(max(peaks) <= RSS_TARGET_MB)}.")
    for c in r.memory:
        one, many = c.medians()
        lines.append(f"- Peak RSS unchanged with {copies}× the input ({c.mode}, counted as "
                     f"unchanged within +{tolerance:.0%}): {one:.1f} → {many:.1f} MB "
                     f"({many / one - 1:+.1%}), {verdict(many <= one * (1 + tolerance))}.")
    secs = r.small.median_s("olearn")
    lines.append(f"- 10-line file in ≤ {SMALL_TARGET_S:g} s with a warm cache: median "
                 f"{secs:.3f} s, {verdict(secs <= SMALL_TARGET_S)}.")
    return lines + [l1_target(r.l1), workloads_target(r),
                    workload_target(r, QUADRATIC_ROW, "a quadratic interaction", QUAD_TARGET),
                    shapes_target(r.shapes),
                    workload_target(r, POLY_ROW, "`--stage_poly`", POLY_TARGET),
                    versus_target(r.long, "", LONG_TARGET, f"the {copies}× file"),
                    parsers_line(r), cache_target(r.cache), experts_target(r.experts),
                    *python_targets(r.python), ""]


def parser_rate(r: Results, path: str) -> tuple[float, float]:
    """MB/s of one parse thread on ``path``: median CPU time, median wall time."""
    mb = os.path.getsize(path) / 1e6
    return (mb / statistics.median(cpu for cpu, _ in r.parsers[path]),
            mb / statistics.median(wall for _, wall in r.parsers[path]))


def parsers_line(r: Results) -> str:
    head = f"- Parser throughput per thread (aim ~{PARSER_AIM_MB_S:g} MB/s, by CPU time)"
    if not r.parsers:
        return f"{head}: not measured. {r.parsers_note}"
    rates = ", ".join(f"{name} {parser_rate(r, path)[0]:.0f} MB/s"
                      for name, path in zip(("VW text", "svmlight"), r.parsers))
    return f"{head}: {rates}."


def parsers_section(r: Results) -> list[str]:
    title = "## Parser throughput per thread\n"
    if not r.parsers:
        return [title, r.parsers_note + "\n"]
    rows = []
    for name, path in zip(("VW text", "svmlight"), r.parsers):
        cpu, wall = parser_rate(r, path)
        rows.append([name, f"`{path}`", f"{os.path.getsize(path) / 1e6:.1f}", f"{cpu:.0f}",
                     f"{wall:.0f}"])
    runs = len(next(iter(r.parsers.values())))
    return [title,
            "`OnlineLearner.parse_block` alone (bytes to hashed features, what each of olearn's "
            "two parse threads runs), in-process on one thread over the file's 1 MB blocks, "
            f"{runs} rounds; MB/s from the median CPU time of the thread (`time.thread_time`: "
            "the figure per thread, less sensitive to other processes) and from the median "
            "wall time. The svmlight file is the VW file with ` |f ` removed.\n",
            table(["format", "file", "MB", "MB/s (CPU)", "MB/s (wall)"], rows) + "\n"]


def experts_target(t: Throughput) -> str:
    head = f"- BOA ≥ {BOA_TARGET / 1e6:g} million corner updates per second"
    if not t.seconds:
        return f"{head}: not measured. {t.note}"
    rate = t.rate("BOA")
    return f"{head}: {rate / 1e6:.1f} million, {verdict(rate >= BOA_TARGET)}."


def experts_section(r: Results) -> list[str]:
    title = "## Exponential weights (`--boa`, `--saew`, `--eg`)\n"
    t = r.experts
    if not t.seconds:
        return [title, t.note + "\n"]
    rows = [[name, f"--{option}", f"{statistics.median(t.seconds[name]):.3f}",
             f"{min(t.seconds[name]):.3f}", f"{t.rate(name) / 1e6:.1f}"]
            for name, option in EXPERT_LEARNERS]
    d = t.corners_per_example // 2
    return [title,
            f"{t.examples:,} dense examples of d = {d} features (every one active from the "
            "first example, `--noconstant`), parsed first; the time is the learning kernel "
            f"alone, in-process, {len(t.seconds['BOA'])} alternated runs per learner. A corner "
            f"update is one of the 2d = {2 * d} experts' steps per example (BOA's rates are "
            "frozen between a feature's appearances, O(nonzeros) per example, but with every "
            "feature in every example each step is a full, Θ(d) one; SAEW adds its session "
            "bookkeeping; EG± is O(nonzeros), here all d, so its figure is examples × 2d / "
            "time for comparison).\n",
            table(["learner", "options", "median s", "min s", "million corner updates / s"],
                  rows) + "\n", *text_experts_lines(t)]


def text_experts_lines(t: Throughput) -> list[str]:
    """The TEXT_DATASET table: each learner's learning time and its ratio to the default's."""
    head = f"On text ({TEXT_DATASET}, logistic loss, `--radius 1`): "
    if not t.text:
        return [head + t.text_note + "\n"]
    base = statistics.median(t.text["default learner"])
    rows = [[name, f"{statistics.median(t.text[name]):.3f}", f"{min(t.text[name]):.3f}",
             f"{statistics.median(t.text[name]) / base:.1f}"] for name, _ in TEXT_LEARNERS]
    return [head + f"{t.text_note}, parsed first, the learning kernel alone, "
            f"{len(t.text['BOA'])} alternated runs.\n",
            table(["learner", "median s", "min s", "× the default learner"], rows) + "\n"]


def l1_target(c: Comparison) -> str:
    head = (f"- Wall time with `--l1 {L1_STRENGTH}` ≤ {L1_TARGET:g}× without regularization "
            "on the 200k file")
    if c.timing is None:
        return f"{head}: not measured. {c.note}"
    ratio = c.timing.ratio(*L1_PAIR)
    assert ratio is not None
    return (f"{head}: ratio {ratio:.2f}, {verdict(ratio <= L1_TARGET)}. (CPU-time ratio, for "
            f"reference: {fmt(c.timing.cpu_ratio(*L1_PAIR), '.2f')}.)")


def versus_target(c: Comparison, what: str, target: float, where: str = "the 200k file") -> str:
    head = f"- Wall time{' with ' + what if what else ''} ≤ {target:g}× VW's on {where}"
    if c.timing is None:
        return f"{head}: not measured. {c.note}"
    ratio = c.timing.ratio()
    if ratio is None:
        return f"{head}: not measured (no VW)."
    options = timed_options(c)
    return (f"{head}{f' (`{options}`)' if options else ''}: ratio {ratio:.2f}, "
            f"{verdict(ratio <= target)}. (CPU-time ratio, for reference: "
            f"{fmt(c.timing.cpu_ratio(), '.2f')}.)")


def workload_target(r: Results, w: Workload, what: str, target: float) -> str:
    """versus_target of one workload's row."""
    return versus_target(r.workloads.get(w, Comparison({}, note=r.workloads_note)), what, target)


def worst_target(head: str, ratios: list[tuple[float | None, str]], target: float,
                 note: str = "") -> str:
    """A target over several rows, each (ratio, name): the worst ratio and its row, or why
    none was measured (``note`` when no row ran)."""
    if not ratios:
        return f"{head}: not measured. {note}".rstrip()
    if any(ratio is None for ratio, _ in ratios):
        return f"{head}: not measured (no VW)."
    worst, name = max(ratios)  # type: ignore[type-var]
    within = sum(ratio <= target for ratio, _ in ratios)  # type: ignore[operator]
    return (f"{head}: worst ratio {worst:.2f} ({name}), {verdict(worst <= target)}; {within} of "
            f"{len(ratios)} rows within it.")


def workloads_target(r: Results) -> str:
    return worst_target(f"- Wall time ≤ {WORKLOAD_TARGET:g}× VW's on every workload (the worst "
                        "row decides)",
                        [(c.timing.ratio(), workload_name(r, w)) for w, c in r.workloads.items()
                         if c.timing is not None], WORKLOAD_TARGET, r.workloads_note)


def workload_name(r: Results, w: Workload) -> str:
    """A row as `-q ff`: its label with the namespace the rows ran on."""
    label = w.label(r.workload_ns)
    if label == "linear":
        return label
    return f"`{label}`" + (", cache already built" if w.cached else "")


def shapes_target(shapes: list[Comparison]) -> str:
    return worst_target(f"- Wall time with interactions ≤ {QUAD_TARGET:g}× VW's on the files of "
                        "other namespace shapes (every case below)",
                        [(c.timing.ratio(), shape_name(c)) for c in shapes
                         if c.timing is not None], QUAD_TARGET)


def shape_name(c: Comparison) -> str:
    """A shape case as `-q ab` on 2×40 (features per example: namespaces × each)."""
    words = shlex.split(c.note)
    shape = f"{words[words.index('--namespaces') + 1]}×{words[words.index('--features') + 1]}"
    return f"`{timed_options(c)}` on {shape}"


def cache_target(c: Comparison) -> str:
    head = (f"- Cache speed-up ≥ {CACHE_TARGET:g}× on {CACHE_DATASET} (olearn's median wall "
            "time reading the text / reading its `-c` cache)")
    if c.timing is None:
        return f"{head}: not measured. {c.note}"
    ratio = c.timing.ratio("text", "cache")
    assert ratio is not None
    reads = cache_line(c.timing) is not None
    warning = ("" if reads else " The `-c` runs did not say `using cache_file`, so they may not "
               "have read the cache.")
    return f"{head}: ratio {ratio:.2f}, {verdict(reads and ratio >= CACHE_TARGET)}.{warning}"


def timed_options(c: Comparison) -> str:
    """The options after ``-d FILE`` in a comparison's commands, e.g. ``-q ff``."""
    words = shlex.split(next(iter(c.commands.values())))
    return shlex.join(w for w in words[words.index("-d") + 2:] if w != "--quiet")


def cache_line(t: Timing) -> str | None:
    """olearn's ``using cache_file ...`` line from the untimed -c run, if it printed one."""
    return next((line.strip() for line in t.warmup_stderr["cache"].splitlines()
                 if "using cache_file" in line), None)


def big_file_section(r: Results) -> list[str]:
    rows = []
    for t in r.tools:
        rss = [run.rss_mb for run in r.big.runs[t.name]]
        rows.append([t.name, f"{r.big.median_s(t.name):.3f}", f"{r.big.min_s(t.name):.3f}",
                     f"{max(run.seconds for run in r.big.runs[t.name]):.3f}",
                     f"{r.big.median_cpu(t.name):.3f}", f"{statistics.median(rss):.1f}",
                     f"{max(rss):.1f}",
                     r.big.losses[t.name] or "not found"])
    runs = len(r.big.runs["olearn"])
    size_mb = os.path.getsize(r.data_path) / 1e6
    return ["## 200k-example file\n",
            f"`{r.data_path}`: {r.data_lines:,} lines, {size_mb:.1f} MB; "
            f"{runs} timed runs per tool, alternated.\n",
            table(["tool", "median s", "min s", "max s", "median CPU s", "median peak RSS MB",
                   "max peak RSS MB", "average loss"], rows) + "\n",
            f"Wall-time ratio olearn/VW (medians): **{fmt(r.big.ratio(), '.2f')}**. CPU-time "
            f"ratio (user + system, medians): {fmt(r.big.cpu_ratio(), '.2f')}. Both tools read "
            "on a second thread (VW parses while it learns), so when other processes hold a "
            "core, wall times and their ratio shift; the CPU-time ratio is less sensitive to "
            "that. Relative difference of the average losses: "
            f"{fmt(r.big.loss_difference(), '.1e')}.\n"]


def memory_section(r: Results, copies: int) -> list[str]:
    rows, commands = [], []
    for c in r.memory:
        one, many = c.medians()
        rows.append([c.mode, f"{one:.1f}", f"{many:.1f}", f"{many - one:+.1f}",
                     f"{statistics.median(run.seconds for run in c.repeated):.2f}"])
        commands += [f"    {cmd}" for cmd in c.commands]
    return [f"## Peak memory with {copies}× the input\n",
            f"Peak RSS of the olearn process alone (not `cat`), median of "
            f"{len(r.memory[0].single)} runs per line.\n",
            "\n".join(commands) + "\n",
            table(["input mode", "1× MB", f"{copies}× MB", "change MB", f"{copies}× median s"],
                  rows) + "\n"]


def small_section(r: Results) -> list[str]:
    rows = [[t.name, f"{r.small.median_s(t.name):.3f}", f"{r.small.min_s(t.name):.3f}"]
            for t in r.tools]
    return ["## 10-line file (warm cache)\n",
            f"    {r.small_command}\n",
            "The first 10 lines of the 200k file, written to a temporary directory.\n",
            table(["tool", "median s", "min s"], rows) + "\n"]


def comparison_table(t: Timing) -> str:
    rows = [[name, f"{t.median_s(name):.3f}", f"{t.min_s(name):.3f}",
             f"{max(run.seconds for run in t.runs[name]):.3f}", f"{t.median_cpu(name):.3f}",
             t.losses[name] or "not found"] for name in t.runs]
    return table(["command", "median s", "min s", "max s", "median CPU s", "average loss"], rows)


def comparison_lines(c: Comparison) -> list[str]:
    """The commands as timed, then the table of their runs."""
    assert c.timing is not None
    return ["\n".join(f"    {cmd}" for cmd in c.commands.values()) + "\n",
            comparison_table(c.timing) + "\n"]


def l1_section(r: Results) -> list[str]:
    title = f"## L1 regularization (`--l1 {L1_STRENGTH}`)\n"
    t = r.l1.timing
    if t is None:
        return [title, r.l1.note + "\n"]
    vw = f"VW --l1 {L1_STRENGTH}"
    notes = [f"Wall-time ratio with / without `--l1 {L1_STRENGTH}` (medians): "
             f"**{fmt(t.ratio(*L1_PAIR), '.2f')}**. CPU-time ratio: "
             f"{fmt(t.cpu_ratio(*L1_PAIR), '.2f')}."]
    if vw in t.runs:
        notes.append(f"VW's run is for reference only: olearn applies L1 as lazy proximal (FOBOS) "
                     "steps (`olearn --help`), so its average loss need not equal VW's; relative "
                     f"difference {fmt(t.loss_difference(L1_PAIR[0], vw), '.1e')}.")
    return [title,
            f"`{r.data_path}`; {len(t.runs[L1_PAIR[0]])} timed runs per command, alternated.\n",
            *comparison_lines(r.l1), " ".join(notes) + "\n"]


def versus_section(c: Comparison, title: str) -> list[str]:
    if c.timing is None:
        return [title, c.note + "\n"]
    runs = len(c.timing.runs["olearn"])
    return [title,
            f"{c.note} {runs} timed runs per tool, alternated (fewer than on the plain file: "
            "each run takes several seconds).\n".lstrip(),
            *comparison_lines(c),
            f"Wall-time ratio olearn/VW (medians): **{fmt(c.timing.ratio(), '.2f')}**. CPU-time "
            f"ratio: {fmt(c.timing.cpu_ratio(), '.2f')}. Relative difference of the average "
            f"losses: {fmt(c.timing.loss_difference(), '.1e')}.\n"]


def workloads_section(r: Results) -> list[str]:
    """Issue 36's table: each workload's medians, ratios and peak memory."""
    title = "## Workloads against VW\n"
    if not r.workloads:
        return [title, r.workloads_note + "\n"]
    rows, commands = [], []
    for w, c in r.workloads.items():
        t = c.timing
        assert t is not None
        vw = "VW" in t.runs
        (path, size_mb), = c.files_mb.items()
        rows.append([workload_name(r, w), f"{os.path.basename(path)} ({size_mb:.0f} MB)",
                     f"{t.median_s('olearn'):.3f}",
                     fmt(t.median_s("VW") if vw else None, ".3f"),
                     f"**{fmt(t.ratio(), '.2f')}**", fmt(t.cpu_ratio(), ".2f"),
                     f"{t.median_rss('olearn'):.0f}", fmt(t.median_rss("VW") if vw else None,
                                                          ".0f"),
                     t.losses["olearn"] or "not found",
                     (t.losses.get("VW") or "not found") if vw else DASH])
        commands += [f"    {cmd}" for cmd in [c.note, *c.commands.values()] if cmd]
    runs = len(next(iter(r.workloads.values())).timing.runs["olearn"])  # type: ignore
    return [title,
            f"olearn against VW on the 200k file, or a file generated like it, with each "
            f"workload's options; {runs} timed runs per tool, alternated, after an untimed "
            f"run that gives the losses (and writes the `--cache_file` row's caches, one per "
            f"tool). Target: every row ≤ {WORKLOAD_TARGET:g}. The commands (the input's, if it "
            f"is written for the row, then the timed runs):\n",
            "\n".join(commands) + "\n",
            table(["workload", "input", "olearn median s", "VW median s", "wall-time ratio",
                   "CPU-time ratio", "olearn peak RSS MB", "VW peak RSS MB", "olearn loss",
                   "VW loss"], rows) + "\n"]


def shapes_section(r: Results) -> list[str]:
    """The interaction shapes' table, after the -q ff comparison."""
    if not r.shapes:
        return []
    rows, commands = [], []
    for c in r.shapes:
        t = c.timing
        assert t is not None
        rows.append([shape_name(c), f"{t.median_s('olearn'):.3f}",
                     fmt(t.median_s("VW") if "VW" in t.runs else None, ".3f"),
                     f"**{fmt(t.ratio(), '.2f')}**", fmt(t.cpu_ratio(), ".2f"),
                     fmt(t.loss_difference(), ".1e")])
        commands += [f"    {c.note}"] + [f"    {cmd}" for cmd in c.commands.values()]
    runs = len(r.shapes[0].timing.runs["olearn"])  # type: ignore[union-attr]
    return ["### Other namespace shapes\n",
            "Generated files with K namespaces of F features per example (K×F), each with the "
            f"interactions named; {runs} timed runs per tool, alternated. Commands (each "
            "file's generator, then the timed runs):\n",
            "\n".join(commands) + "\n",
            table(["interactions on K×F", "olearn median s", "VW median s",
                   "wall-time ratio", "CPU-time ratio", "loss difference"], rows) + "\n"]


def cache_section(r: Results) -> list[str]:
    c, title = r.cache, f"## Cache (`-c`) speed-up on {CACHE_DATASET}\n"
    if c.timing is None:
        return [title, c.note + "\n"]
    (source, source_mb), (cache, cache_mb) = c.files_mb.items()
    line = cache_line(c.timing)
    said = (f"its untimed run without `--quiet` said `{line}`" if line else
            "**but its untimed run without `--quiet` did not say `using cache_file`**")
    text, cached = c.timing.median_s("text"), c.timing.median_s("cache")
    startup = r.small.median_s("olearn")
    context = (f"For context, olearn's start-up time (median on the 10-line file, above) is "
               f"{startup:.3f} s: {startup / text:.0%} of the text median and "
               f"{startup / cached:.0%} of the cache median.")
    if min(text, cached) > startup:
        context += (" Subtracting it from both medians leaves a ratio of "
                    f"{(text - startup) / (cached - startup):.2f} for the rest of the run.")
    else:
        context += (" (It was measured on another input at another moment, so on a busy machine "
                    "it can exceed a whole run's median.)")
    return [title,
            f"`{source}` ({source_mb:.1f} MB) copied to a temporary directory. One untimed `-c` "
            f"run there wrote `{cache}` ({cache_mb:.1f} MB), so every timed `-c` run reads the "
            f"cache; {said}. {len(c.timing.runs['text'])} timed runs per input, alternated.\n",
            *comparison_lines(c),
            f"Wall-time ratio text / cache (medians): **{text / cached:.2f}**. CPU-time ratio: "
            f"{fmt(c.timing.cpu_ratio('text', 'cache'), '.2f')}. {context}\n"]


def shared_section(r: Results, shared_dir: str, runs: int) -> list[str]:
    if not r.shared:
        return ["## Shared datasets\n", r.shared_note + "\n"]
    has_vw = len(r.tools) > 1
    rows = []
    for name, t in r.shared.items():
        rows.append([name, f"{t.median_s('olearn'):.2f}",
                     f"{t.median_s('VW'):.2f}" if has_vw else DASH, fmt(t.ratio(), ".2f"),
                     f"{t.median_rss('olearn'):.0f}",
                     f"{t.median_rss('VW'):.0f}" if has_vw else DASH,
                     t.losses["olearn"] or "not found",
                     (t.losses["VW"] or "not found") if has_vw else DASH,
                     fmt(t.loss_difference(), ".1e")])
    differ = [n for n, t in r.shared.items() if (t.loss_difference() or 0.0) > 0.01]
    heavy = [n for n, t in r.shared.items()
             if max(run.rss_mb for run in t.runs["olearn"]) > RSS_TARGET_MB]
    command = r.tools[0].command("-d", f"{shared_dir}/NAME/train.vw.gz", "--quiet")
    notes = [f"Median of {runs} alternated runs per tool."]
    if has_vw:
        notes.append("Average losses differing by more than 1%: "
                     + (", ".join(differ) or "none") + ".")
    notes.append(f"olearn peak RSS above {RSS_TARGET_MB:g} MB in some run: "
                 + (", ".join(heavy) or "none") + ".")
    return ["## Shared datasets (`train.vw.gz`)\n",
            f"    {shlex.join(command)}    (VW: the same arguments)\n",
            table(["dataset", "olearn s", "VW s", "ratio", "olearn RSS MB", "VW RSS MB",
                   "olearn loss", "VW loss", "rel. diff"], rows) + "\n",
            " ".join(notes) + "\n"]


def report(r: Results, args: argparse.Namespace) -> str:
    sections = (header_section(r) + targets_section(r, args.copies, args.rss_tolerance)
                + big_file_section(r) + memory_section(r, args.copies) + small_section(r)
                + l1_section(r) + workloads_section(r) + shapes_section(r)
                + versus_section(r.long, f"## The 200k file {args.copies}× over\n")
                + parsers_section(r)
                + cache_section(r) + experts_section(r) + python_section(r)
                + shared_section(r, args.shared, args.shared_runs)
                + [f"Total benchmark time: {r.seconds:.0f} s; load average at the end "
                   f"{r.load_at_end}.\n"])
    return "\n".join(sections)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7,
                        help="timed runs per tool on the 200k and 10-line files, per command "
                        "in the L1 check, tripled in the cache check, and, halved (at least 3), "
                        "in the workloads and shapes (default 7)")
    parser.add_argument("--shared-runs", type=int, default=3,
                        help="timed runs per tool per shared dataset (default 3)")
    parser.add_argument("--rss-runs", type=int, default=5,
                        help="runs per input size and mode in the memory check (default 5: "
                             "peaks vary by a few percent from run to run)")
    parser.add_argument("--copies", type=int, default=10,
                        help="copies of the 200k file in the memory check (default 10)")
    parser.add_argument("--rss-tolerance", type=float, default=0.05,
                        help="peak RSS growth still counted as unchanged (default 0.05)")
    parser.add_argument("--data", default="data/bench200k.vw",
                        help="generated file, relative to the repo (default data/bench200k.vw)")
    parser.add_argument("--shared", default="../shared/data",
                        help="shared datasets, relative to the repo (default ../shared/data)")
    for name, what in (("shared", f"the shared datasets (and the cache check on {CACHE_DATASET})"),
                       ("l1", f"olearn with vs without --l1 {L1_STRENGTH}"),
                       ("workloads", "olearn vs VW on each workload (WORKLOADS)"),
                       ("quadratic", "olearn vs VW with interactions of other namespace shapes"),
                       ("cache", f"olearn reading {CACHE_DATASET} as text vs from its -c cache"),
                       ("long", "olearn vs VW on the 200k file written --copies times over"),
                       ("parsers", "the parsers' throughput per thread"),
                       ("experts", "the BOA/SAEW/EG throughput"),
                       ("python", "the Python API against scikit-learn and River")):
        parser.add_argument(f"--skip-{name}", action="store_true", help=f"skip {what}")
    parser.add_argument("--no-vw", action="store_true",
                        help="run only olearn, even when vowpalwabbit is installed")
    parser.add_argument("--out", default="BENCHMARKS.md",
                        help="report path, relative to the repo (default BENCHMARKS.md)")
    args = parser.parse_args()
    if min(args.runs, args.shared_runs, args.rss_runs, args.copies) < 1:
        parser.error("--runs, --shared-runs, --rss-runs and --copies must be at least 1")
    return args


# The sections written elsewhere at the end of the report, kept from the first of them on: the
# first run's (by hand: an empty cache, a fresh install), the experiments' (scripts/
# apple_experiment.py and scripts/saew_experiment.py, 10-30 minutes each, with their caveats),
# scripts/bench_dask.py's (a cluster), scripts/bench_daemon.py's (a server) and
# scripts/bench_reductions.py's (a row per reduction): none is rerun here.
KEPT_SECTIONS = ("<!-- first-run begin -->", "<!-- experiments begin -->",
                 "<!-- dask-bench begin -->",
                 "<!-- daemon-bench begin -->", "<!-- reductions-bench begin -->")


def main() -> None:
    args = parse_args()
    os.chdir(REPO)
    results = benchmark(args)
    out = Path(args.out)
    old = out.read_text() if out.exists() else ""
    starts = [old.find(marker) for marker in KEPT_SECTIONS if marker in old]
    kept = old[min(starts):] if starts else ""
    out.write_text(report(results, args) + ("\n" + kept if kept else ""))
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
