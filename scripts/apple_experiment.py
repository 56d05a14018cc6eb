"""Reproduce the APPLE experiment (Agarwal et al., NIPS 2014, Fig. 2) with olearn's --stage_poly.

Protocol (docs/algorithms.md section 5.1), on every dataset under ``../shared/data`` (or those named
with ``--datasets``), each with ``train.vw.gz``, ``test.vw.gz`` and ``meta.json`` (``task`` is
``binary``, labels -1/1, or ``regression``):

* Methods, all trained with olearn's defaults (squared loss, adaptive + normalized + invariant
  SGD, one pass, 18 bits unless stated):
  ``lin`` (plain), ``quad`` (``-q ff``), ``cubic`` (``--cubic fff -b 24``),
  ``apple-A`` for A in {0.125, 0.25, 0.5, 0.75, 1} (``--stage_poly --sched_exponent A``),
  ``apple-ssm`` (``--stage_poly --poly_heuristic ssm --sched_exponent 1``: the paper calls alpha = 1
  the reliable default, so SSM is run at that one alpha only), ``apple-fb`` (alpha = 1 with the
  paper's consistency fallback, ``--stage_poly_fallback``) and, when the ``vowpalwabbit``
  package is importable, ``vw-apple``: VW 9's own ``--stage_poly`` at alpha = 1, run as
  ``python -m vowpalwabbit``. Every staged method runs the paper's schedule, 6 equal epochs in the
  single pass, i.e. 5 rounds of feature addition: olearn's ``--stages 6``; VW, which has no
  ``--stages``, the same schedule as ``--batch_sz ceil(n_train/6) --batch_sz_no_doubling``, where
  n_train is the line count of ``train.vw.gz`` (counted once per dataset).
* ``apple-best`` is derived, not run: per dataset, the apple-A row whose tuned progressive loss is
  the lowest (the smaller alpha on ties). The paper's apple-best takes the best alpha per dataset
  without saying on what; we select on training data only, so it is not an oracle on the test set.
* Learning rate (``-l``), tuned per method and dataset on the progressive validation loss (the
  squared loss of the ``average loss = ...`` line printed after the single training pass; the paper
  says "progressive validation error"): every rate of ``--grid`` (default 0.1, 0.5, 2) is tried;
  while the best rate is the largest (smallest) one tried, the grid is extended upwards (downwards)
  by a factor of 4, at most 12 times each way (a local search: it stops at the first worse
  rate). The extension is needed because the regression labels are unscaled (cadata's are about
  2e5): the chosen rates run from 2 (casp) to 5e5 (cadata), and from 0.025 to 128 on the binary
  tasks. Ties go to the smaller rate; a non-finite loss or a failed run loses. vw-apple is tuned
  the same way, on its own (its chosen rate can differ from apple-1's).
* With the chosen rate, the model is trained again with ``-f`` (this run is timed) and evaluated
  with ``-t -i model -d test.vw.gz -p preds -r raw``. Test error, from the predictions file and the
  labels of ``test.vw.gz``: binary, the 0-1 error of sign(prediction), a prediction of exactly 0
  counting as +1; regression, the mean squared error. Predictions are clipped to the training
  label range as VW does (so binary predictions lie in [-1, 1]). Binary tasks also get the test
  AUC (the paper's metric for classification) of the raw scores (before clipping, which would
  tie them), computed by ``olearn.outputs.metrics.auc``, the function of olearn's ``--metric auc``.
* ``const``, not a learner: the best constant fitted on the training labels (their mean for
  regression, the sign of their mean for binary), scored on the test set. Where every baseline's
  test error is near or above it, the baselines have not learned at their rate, and rel_err,
  which divides by the baselines' spread, says nothing: summary.md lists such datasets as
  caveats.
* Time: the wall time of that final training run, start-up included. olearn's start-up (Python,
  numpy, numba kernels from the cache) is about 0.3 s against 0.3-1 s for a whole lin run here, so
  rel_time is compressed towards 1 (summary.md gives the measured start-up of both tools, and VW's
  is smaller, which favours vw-apple's rel_time). The timed runs go one at a time
  after all tuning runs, whatever ``--jobs`` is, because olearn itself reads ahead on one thread and
  parses on two; tuning and test runs go ``--jobs`` at a time. train_cpu_seconds (user + system of
  the child) is recorded as well, to judge how noisy the wall times are.
* rel_err(alg) = (err(alg) - min(l,q,c)) / (max(l,q,c) - min(l,q,c)), with l, q, c the test errors
  of lin, quad and cubic (olearn's, also for vw-apple). A baseline that failed is left out of min
  and max (noted). When max == min, rel_err is 0 for an error equal to it, else +-inf.
  rel_time(alg) = time(alg) / time(lin), olearn's lin also for vw-apple.
* Acceptance checks: apple-1 has rel_err < 0.5 on at least 12 of 14 datasets (on a subset of n
  datasets: at least ceil(12 n / 14)); no olearn apple run (any alpha, or SSM) takes more than 10x
  the time of lin.
* cubic is run on every dataset, uncapped: the slowest cubic training runs (reuters about 40-50 s,
  connect4 about 20 s per run, against under 5 s elsewhere) fit the 30-minute budget (the full run
  with ``--jobs 2`` took about 15 minutes). Any run is killed after ``--timeout`` seconds (default
  900) and then counts as failed.

Reproducibility: other people may edit olearn while this runs, and any edit makes numba recompile
its kernels (up to a minute, which would be timed). So the script first copies the olearn package
(its .py files) to ``$TMPDIR/olearn-apple-snapshot-<sha1 of the sources>`` (kept, so a rerun on the
same sources reuses numba's kernel cache) and runs ``python -m olearn`` from that copy via
PYTHONPATH; it then trains and tests every method once on the first 600 lines of the first
dataset, so that no timed run includes compilation.

Outputs in ``--out`` (default ``experiments/apple``): results.csv (one row per dataset x method),
rel_err_cdf.png and rel_time_cdf.png (CDFs over the datasets, as the paper's Fig. 2; needs
matplotlib) and summary.md (also printed on stdout). A failed run is reported with its dataset,
method, command and last stderr line (models and predictions live in a temporary folder removed at
exit), and the rest goes on; the exit status is then 1 (2 for bad arguments or missing inputs).

``--methods apple-1,apple-fb`` runs only the named methods besides the baselines (which rel_err
needs); apple-best is then derived from the apple-A rows that ran.

Usage: python scripts/apple_experiment.py [--datasets a9a,cpusmall] [--methods apple-1,apple-fb]
       [--grid 0.1,0.5,2] [--quick] [--jobs 2] [--out experiments/apple]
"""
from __future__ import annotations

import argparse
import csv
import datetime
import gzip
import importlib.metadata
import importlib.util
import json
import math
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from olearn_snapshot import snapshot_olearn

from olearn.outputs.metrics import auc

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"
OUT = REPO / "experiments" / "apple"
ALPHAS = ("0.125", "0.25", "0.5", "0.75", "1")
STAGES = 6
CAVEAT_GAIN = 0.01  # a baseline must beat the best constant by 1% to count as learning
GRID = (0.1, 0.5, 2.0)
QUICK_RATE = 0.5  # VW's default rate, the one rate of --quick
EXTEND_FACTOR = 4.0
EXTEND_STEPS = 12
WARMUP_LINES = 600
ACCEPT_APPLE_ERR = 0.5
ACCEPT_DATASETS = (12, 14)  # rel_err < ACCEPT_APPLE_ERR on at least 12 of 14 datasets
ACCEPT_TIME = 10.0
BASELINES = ("lin", "quad", "cubic")
APPLE_1 = "apple-1"
APPLE_BEST = "apple-best"
LOSS = re.compile(r"^average loss = (\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Method:
    """A learner configuration; staged methods also get the 6-epoch schedule."""

    name: str
    tool: str  # "olearn" or "vw"
    args: tuple[str, ...]
    staged: bool = False


@dataclass(frozen=True)
class Dataset:
    """One dataset's files, task and training-set size."""

    name: str
    task: str
    train: Path
    test: Path
    n_train: int

    @property
    def batch_sz(self) -> int:
        return math.ceil(self.n_train / STAGES)


Pairs = list[tuple[Dataset, Method]]


@dataclass(frozen=True)
class Tools:
    """Command prefixes of both learners, and the environment and directory they run in."""

    prefixes: dict[str, tuple[str, ...]]
    env: dict[str, str]
    workdir: Path
    timeout: float


@dataclass(frozen=True)
class Run:
    """One finished (or failed) process."""

    command: tuple[str, ...]
    returncode: int
    seconds: float
    cpu_seconds: float
    last_stderr: str
    loss: float | None  # the "average loss" it printed, if any

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@dataclass(frozen=True)
class Failure:
    """A run that went wrong, with what is needed to reproduce it."""

    dataset: str
    method: str
    command: str
    reason: str


@dataclass(frozen=True)
class Tuning:
    """The progressive loss of every learning rate tried for one dataset x method."""

    dataset: str
    method: str
    losses: dict[float, float]
    failures: tuple[Failure, ...]

    @property
    def best(self) -> float | None:
        """The rate with the lowest finite loss (the smaller rate on ties), or None."""
        finite = [(loss, rate) for rate, loss in self.losses.items() if math.isfinite(loss)]
        return min(finite)[1] if finite else None


@dataclass(frozen=True)
class Result:
    """One CSV row: a dataset x method after tuning, timing and testing."""

    dataset: str
    task: str
    method: str
    rate: float | None = None
    loss: float | None = None
    error: float | None = None
    auc: float | None = None  # binary tasks: the test AUC of the raw scores
    seconds: float | None = None
    cpu_seconds: float | None = None
    rel_err: float | None = None
    rel_time: float | None = None
    note: str = ""


class UsageError(Exception):
    """An expected problem with the arguments or the environment: reported in one line."""


def methods(quick: bool, with_vw: bool) -> list[Method]:
    """The methods to run: the baselines, apple for each alpha (only 1 with quick), SSM, VW's."""
    stage = ("--stage_poly", "--sched_exponent")
    out = [Method("lin", "olearn", ()), Method("quad", "olearn", ("-q", "ff")),
           Method("cubic", "olearn", ("--cubic", "fff", "-b", "24"))]
    out += [Method(f"apple-{a}", "olearn", (*stage, a), True) for a in ALPHAS
            if not quick or f"apple-{a}" == APPLE_1]
    out.append(Method("apple-ssm", "olearn", (*stage, "1", "--poly_heuristic", "ssm"), True))
    out.append(Method("apple-fb", "olearn", (*stage, "1", "--stage_poly_fallback"), True))
    if with_vw:
        out.append(Method("vw-apple", "vw", (*stage, "1"), True))
    return out


def chosen(todo: list[Method], names: list[str] | None) -> list[Method]:
    """The baselines and the named methods (all without names)."""
    unknown = sorted(set(names or []) - {m.name for m in todo})
    if unknown:
        raise UsageError(f"unknown method(s) {', '.join(unknown)}; available: "
                         f"{', '.join(m.name for m in todo)}")
    return [m for m in todo if names is None or m.name in BASELINES or m.name in names]


def count_lines(path: Path) -> int:
    """Number of lines of a gzip file."""
    with gzip.open(path, "rb") as f:
        return sum(1 for _ in f)


def read_labels(path: Path) -> list[float]:
    """The label (first token) of every line of a gzip VW file."""
    with gzip.open(path, "rt") as f:
        return [float(line.split("|", 1)[0].split()[0]) for line in f if line.strip()]


def load_datasets(root: Path, names: list[str] | None) -> list[Dataset]:
    """The datasets under root (all, or the named ones, in that order), with their line counts."""
    available = sorted(p.name for p in root.iterdir() if (p / "meta.json").is_file()) \
        if root.is_dir() else []
    if not available:
        raise UsageError(f"no datasets (directories with meta.json) under {root}")
    unknown = [n for n in names or [] if n not in available]
    if unknown:
        raise UsageError(f"unknown dataset(s) {', '.join(unknown)}; "
                         f"available: {', '.join(available)}")
    return [load_dataset(root / name) for name in names or available]


def load_dataset(folder: Path) -> Dataset:
    """One dataset folder: its task from meta.json, its files and its training line count."""
    train, test = folder / "train.vw.gz", folder / "test.vw.gz"
    try:
        task = json.loads((folder / "meta.json").read_text())["task"]
        if task not in ("binary", "regression"):
            raise ValueError(f"task {task!r} is neither binary nor regression")
        if not test.is_file():
            raise ValueError(f"missing {test}")
        return Dataset(folder.name, task, train, test, count_lines(train))
    except (OSError, EOFError, KeyError, ValueError) as exc:
        raise UsageError(f"dataset {folder.name}: {type(exc).__name__}: {exc}") from None


def _snapshot() -> tuple[Path, str]:
    try:
        return snapshot_olearn("apple")
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None


def execute(tools: Tools, tool: str, args: Iterable[str]) -> Run:
    """Run a learner with args, timing it (wall and child CPU) and keeping its last stderr line."""
    command = (*tools.prefixes[tool], *args)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=tools.workdir, env=tools.env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              errors="replace", timeout=tools.timeout)
        returncode, stderr = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired:
        returncode, stderr = -1, f"killed after the {tools.timeout:g} s timeout"
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in stderr.splitlines() if line.strip()]
    return Run(command, returncode, seconds, cpu, lines[-1] if lines else "", last_loss(stderr))


def last_loss(stderr: str) -> float | None:
    """The number on the last 'average loss = ' line, if there is one and it is a number."""
    found = LOSS.findall(stderr)
    try:
        return float(found[-1]) if found else None
    except ValueError:
        return None


def train_args(ds: Dataset, method: Method, rate: float) -> list[str]:
    """Training arguments of method on ds at a learning rate."""
    args = ["-d", str(ds.train), "-l", f"{rate:.12g}", *method.args]
    if method.staged and method.tool == "olearn":
        args += ["--stages", str(STAGES)]
    elif method.staged:
        args += ["--batch_sz", str(ds.batch_sz), "--batch_sz_no_doubling"]
    return args


def failure(ds: Dataset, method: Method, run: Run, reason: str = "") -> Failure:
    """A Failure for a run: the given reason, else its exit status and last stderr line."""
    why = reason or f"exit status {run.returncode}: {run.last_stderr or '(no stderr)'}"
    return Failure(ds.name, method.name, shlex.join(run.command), why)


def line_search(evaluate: Callable[[float], float], grid: Iterable[float]) -> dict[float, float]:
    """Loss of every rate of grid; then, while the best rate is the largest (smallest) tried, try
    it times (divided by) EXTEND_FACTOR, at most EXTEND_STEPS times each way."""
    losses = {rate: evaluate(rate) for rate in grid}
    for factor in (EXTEND_FACTOR, 1 / EXTEND_FACTOR):
        for _ in range(EXTEND_STEPS):
            best = min(losses, key=lambda r: (losses[r], r))
            edge = max(losses) if factor > 1 else min(losses)
            if best != edge or not math.isfinite(losses[best]):
                break
            losses[edge * factor] = evaluate(edge * factor)
    return losses


def tune(tools: Tools, ds: Dataset, method: Method, grid: tuple[float, ...],
         extend: bool) -> Tuning:
    """Progressive loss of method on ds for each learning rate of the (extended) grid."""
    failures: list[Failure] = []

    def evaluate(rate: float) -> float:
        run = execute(tools, method.tool, train_args(ds, method, rate))
        if run.ok and run.loss is not None:
            return run.loss if math.isfinite(run.loss) else math.inf
        failures.append(failure(ds, method, run, "" if not run.ok else "no 'average loss' line"))
        return math.inf

    losses = line_search(evaluate, grid) if extend else {r: evaluate(r) for r in grid}
    return Tuning(ds.name, method.name, losses, tuple(failures))


def test_run(tools: Tools, ds: Dataset, method: Method, model: Path, preds: Path) -> Run:
    """Predict the test set of ds with a saved model: the predictions to ``preds``, the raw
    scores to :func:`raw_path` of it."""
    return execute(tools, method.tool, ["-t", "-i", str(model), "-d", str(ds.test),
                                        "-p", str(preds), "-r", str(raw_path(preds)), "--quiet"])


def raw_path(preds: Path) -> Path:
    return preds.with_suffix(".raw")


def read_scores(path: Path, n_labels: int) -> np.ndarray:
    """The first number of every line of a predictions file, one per test label."""
    with path.open() as f:
        values = np.array([float(line.split()[0]) for line in f if line.strip()])
    if len(values) != n_labels:
        raise ValueError(f"{len(values)} predictions for {n_labels} test labels")
    return values


def test_error(task: str, predictions: np.ndarray, labels: np.ndarray) -> float:
    """0-1 error of sign(prediction), 0 counting as +1 (binary), or the mean squared error."""
    if task == "binary":
        return float(np.mean((predictions >= 0) != (labels > 0)))
    return float(np.mean((predictions - labels) ** 2))


def constant_error(task: str, train: list[float], test: np.ndarray) -> float:
    """The test error of the best constant of the training labels: their mean (regression) or
    the sign of their mean (binary, 0 counting as +1)."""
    mean = statistics.fmean(train)
    return test_error(task, np.full(len(test), 1.0 if mean >= 0 else -1.0)
                      if task == "binary" else np.full(len(test), mean), test)


def relative(results: list[Result]) -> list[Result]:
    """Fill in rel_err (against the baselines' test errors) and rel_time (against lin's time)."""
    by_key = {(r.dataset, r.method): r for r in results}
    out = []
    for r in results:
        base = [by_key[r.dataset, b].error for b in BASELINES if (r.dataset, b) in by_key]
        base = [e for e in base if e is not None]
        lin = by_key.get((r.dataset, "lin"))
        note = r.note
        rel_err = rel_time = None
        if r.error is not None and base:
            lo, hi = min(base), max(base)
            if hi > lo:
                rel_err = (r.error - lo) / (hi - lo)
            else:
                rel_err = 0.0 if r.error == lo else math.copysign(math.inf, r.error - lo)
            if len(base) < len(BASELINES):
                note = "; ".join(filter(None, [note, f"rel_err from {len(base)} baseline(s)"]))
        if r.seconds is not None and lin is not None and lin.seconds:
            rel_time = r.seconds / lin.seconds
        out.append(replace(r, rel_err=rel_err, rel_time=rel_time, note=note))
    return out


def apple_best(results: list[Result]) -> list[Result]:
    """Per dataset, a copy of the apple-A row with the lowest progressive loss, as apple-best."""
    out = []
    for name in dict.fromkeys(r.dataset for r in results):
        rows = [r for r in results if r.dataset == name and r.method.startswith("apple-")
                and r.method[6:] in ALPHAS and r.loss is not None and r.error is not None]
        if rows:
            best = min(rows, key=lambda r: r.loss)
            out.append(replace(best, method=APPLE_BEST, note=f"alpha = {best.method[6:]}"))
    return out


def fmt(value: float | None, digits: int = 4) -> str:
    """A number in a table or CSV cell ('' for none)."""
    if value is None:
        return ""
    return f"{value:.{digits}g}" if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def write_csv(path: Path, results: list[Result]) -> None:
    """One row per dataset x method."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["dataset", "task", "method", "learning_rate", "progressive_loss",
                    "test_error", "test_auc", "train_seconds", "train_cpu_seconds", "rel_err",
                    "rel_time", "note"])
        for r in results:
            w.writerow([r.dataset, r.task, r.method, fmt(r.rate, 10), fmt(r.loss, 8),
                        fmt(r.error, 8), fmt(r.auc, 8), fmt(r.seconds, 4), fmt(r.cpu_seconds, 4),
                        fmt(r.rel_err, 6), fmt(r.rel_time, 4), r.note])


def method_order(results: list[Result]) -> list[str]:
    """Method names in first-seen order, apple-best right after the last apple-A."""
    names = list(dict.fromkeys(r.method for r in results if r.method != APPLE_BEST))
    if any(r.method == APPLE_BEST for r in results):
        last = max(i for i, m in enumerate(names) if m.startswith("apple-") and m[6:] in ALPHAS)
        names.insert(last + 1, APPLE_BEST)
    return names


def values(results: list[Result], method: str, field: str) -> list[float]:
    """A field's known values over the datasets, for one method."""
    return [getattr(r, field) for r in results
            if r.method == method and getattr(r, field) is not None]


def method_table(results: list[Result]) -> list[str]:
    """The per-method summary table, as markdown lines."""
    lines = ["| method | datasets | rel_err < 0 | rel_err < 0.5 | median rel_err "
             "| median rel_time | max rel_time |", "|---|---:|---:|---:|---:|---:|---:|"]
    for m in method_order(results):
        errs, times = values(results, m, "rel_err"), values(results, m, "rel_time")
        lines.append(f"| {m} | {len(errs)} | {sum(e < 0 for e in errs)} "
                     f"| {sum(e < ACCEPT_APPLE_ERR for e in errs)} "
                     f"| {fmt(statistics.median(errs) if errs else None, 3)} "
                     f"| {fmt(statistics.median(times) if times else None, 3)} "
                     f"| {fmt(max(times) if times else None, 3)} |")
    return lines


def dataset_table(results: list[Result], field: str, digits: int) -> list[str]:
    """A dataset x method table of one field, as markdown lines."""
    names = method_order(results)
    lines = ["| dataset | task | " + " | ".join(names) + " |",
             "|---|---|" + "---:|" * len(names)]
    by_key = {(r.dataset, r.method): r for r in results}
    for ds in dict.fromkeys(r.dataset for r in results):
        task = by_key[ds, names[0]].task if (ds, names[0]) in by_key else ""
        cells = [fmt(getattr(by_key[ds, m], field), digits) if (ds, m) in by_key else ""
                 for m in names]
        lines.append(f"| {ds} | {task} | " + " | ".join(cells) + " |")
    return lines


def acceptance(results: list[Result], n_datasets: int) -> list[str]:
    """The two acceptance checks, one markdown bullet each."""
    errs = values(results, APPLE_1, "rel_err")
    good = sum(e < ACCEPT_APPLE_ERR for e in errs)
    need = math.ceil(ACCEPT_DATASETS[0] * n_datasets / ACCEPT_DATASETS[1])
    first = (f"- apple (alpha = 1) has relative test error < {ACCEPT_APPLE_ERR} on at least "
             f"{need} of {n_datasets} datasets: **{'PASS' if good >= need else 'FAIL'}** "
             f"({good} of {n_datasets})")
    apple = [r for r in results if r.method.startswith("apple-") and r.method != APPLE_BEST
             and r.rel_time is not None]
    if not apple:
        return [first, "- apple is never slower than 10x lin: **not measured** (no apple times)"]
    worst = max(apple, key=lambda r: r.rel_time)
    slow = sum(r.rel_time > ACCEPT_TIME for r in apple)
    second = (f"- apple is never slower than {ACCEPT_TIME:g}x lin: "
              f"**{'PASS' if slow == 0 else 'FAIL'}** (all alphas, SSM and fallback, "
              f"{len(apple)} runs; "
              f"{slow} over {ACCEPT_TIME:g}x; the slowest is {worst.method} on {worst.dataset}, "
              f"{worst.rel_time:.2f}x)")
    return [first, second]


def line_style(method: str) -> dict[str, object]:
    """Plot style of a method: baselines dashed greys, apple-A along viridis, the rest colored."""
    import matplotlib.pyplot as plt

    fixed = {"lin": ("black", "--"), "quad": ("dimgray", "--"), "cubic": ("darkgray", "--"),
             APPLE_BEST: ("red", "-"), "apple-ssm": ("purple", "-."), "apple-fb": ("teal", "-."),
             "vw-apple": ("orange", ":")}
    if method in fixed:
        color, dash = fixed[method]
    else:
        color, dash = plt.get_cmap("viridis")(ALPHAS.index(method[6:]) / len(ALPHAS)), "-"
    wide = method in (APPLE_1, APPLE_BEST, "vw-apple")
    return {"color": color, "linestyle": dash, "linewidth": 2.2 if wide else 1.3}


def plot_cdfs(results: list[Result], out: Path) -> list[Path]:
    """rel_err_cdf.png and rel_time_cdf.png: per method, the CDF over datasets (paper's Fig. 2)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for field, label, limits, log in (
            ("rel_err", "relative test error (clipped to [-1, 2])", (-1.0, 2.0), False),
            ("rel_time", "relative training time (time / time of lin)", None, True)):
        fig, ax = plt.subplots(figsize=(7.5, 5))
        for m in method_order(results):
            xs = sorted(values(results, m, field))
            if not xs:
                continue
            if limits:
                xs = [min(max(x, limits[0]), limits[1]) for x in xs]
            ys = [(k + 1) / len(xs) for k in range(len(xs))]
            ax.step([xs[0], *xs], [0.0, *ys], where="post", label=m, **line_style(m))
        ax.set_xlabel(label)
        ax.set_ylabel("fraction of datasets")
        if log:
            ax.set_xscale("log")
        if limits:
            ax.set_xlim(*limits)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        ax.set_title(f"CDF of {field} over {len(set(r.dataset for r in results))} datasets")
        fig.tight_layout()
        path = out / f"{field}_cdf.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    return paths


def progress(message: str) -> None:
    """A progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


def warm_up(tools: Tools, ds: Dataset, todo: list[Method]) -> dict[str, float]:
    """Train and test every method once on the first lines of ds, so that numba compiles its
    kernels before any timed run; return each tool's start-up time (a lin run on those lines)."""
    sample = tools.workdir / "warmup.vw"
    with gzip.open(ds.train, "rt") as src, sample.open("w") as dst:
        for _, line in zip(range(WARMUP_LINES), src):
            dst.write(line)
    small = Dataset("warm-up", ds.task, sample, sample, WARMUP_LINES)
    model, preds = tools.workdir / "warmup.model", tools.workdir / "warmup.preds"
    for method in todo:
        run = execute(tools, method.tool,
                      ["--quiet", "-f", str(model), *train_args(small, method, QUICK_RATE)])
        if run.ok:
            run = test_run(tools, small, method, model, preds)
        if not run.ok:
            progress(f"warm-up of {method.name} failed: {shlex.join(run.command)}: "
                     f"{run.last_stderr}")
    return {tool: execute(tools, tool, ["--quiet", "-d", str(sample)]).seconds
            for tool in sorted({m.tool for m in todo})}


def make_tools(workdir: Path, snapshot: Path, with_vw: bool, timeout: float) -> Tools:
    """Prefixes for olearn (from the snapshot) and VW, in an environment that finds the snapshot."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(snapshot), env.get("PYTHONPATH")]))
    prefixes = {"olearn": (sys.executable, "-m", "olearn")}
    if with_vw:
        prefixes["vw"] = (sys.executable, "-m", "vowpalwabbit")
    return Tools(prefixes, env, workdir, timeout)


def tune_all(pool: ProcessPoolExecutor, tools: Tools, pairs: Pairs, grid: tuple[float, ...],
             extend: bool) -> dict[tuple[str, str], Tuning]:
    """Tune every dataset x method in the pool, the expensive ones (cubic, big files) first."""
    order = sorted(pairs, key=lambda p: (p[1].name != "cubic", -p[0].train.stat().st_size))
    futures = [pool.submit(tune, tools, ds, m, grid, extend) for ds, m in order]
    tunings = {}
    for i, fut in enumerate(futures, 1):
        t = fut.result()
        tunings[t.dataset, t.method] = t
        progress(f"[tune {i}/{len(order)}] {t.dataset} {t.method}: rate {fmt(t.best)} "
                 f"({len(t.losses)} rates tried)")
    return tunings


def time_all(tools: Tools, pairs: Pairs, tunings: dict[tuple[str, str], Tuning],
             failures: list[Failure]) -> dict[tuple[str, str], Result]:
    """Train every dataset x method at its chosen rate with -f, one run at a time, timed."""
    results = {}
    for i, (ds, m) in enumerate(pairs, 1):
        t = tunings[ds.name, m.name]
        row = Result(ds.name, ds.task, m.name, t.best, t.losses.get(t.best))
        if t.best is None:
            results[ds.name, m.name] = replace(row, note="failed: no learning rate trained")
            continue
        run = execute(tools, m.tool, ["-f", str(model_path(tools, ds, m)),
                                      *train_args(ds, m, t.best)])
        if run.ok:
            row = replace(row, seconds=run.seconds, cpu_seconds=run.cpu_seconds)
            progress(f"[time {i}/{len(pairs)}] {ds.name} {m.name}: {run.seconds:.2f} s")
        else:
            failures.append(failure(ds, m, run))
            row = replace(row, note="failed: final training")
        results[ds.name, m.name] = row
    return results


def model_path(tools: Tools, ds: Dataset, m: Method) -> Path:
    """Where the final model of ds x m goes (its predictions: the same with .preds)."""
    return tools.workdir / f"{ds.name}.{m.name}.model"


def labels_or_reason(ds: Dataset) -> np.ndarray | str:
    """The test labels of ds, or why they cannot be read."""
    try:
        return np.array(read_labels(ds.test))
    except (OSError, EOFError, ValueError, IndexError) as exc:
        return f"unreadable test labels in {ds.test}: {exc}"


def constant_errors(datasets: list[Dataset]) -> dict[str, float]:
    """Each dataset's best constant's test error (left out when its labels are unreadable)."""
    out = {}
    for ds in datasets:
        test = labels_or_reason(ds)
        try:
            if not isinstance(test, str):
                out[ds.name] = constant_error(ds.task, read_labels(ds.train), test)
        except (OSError, EOFError, ValueError, IndexError, statistics.StatisticsError) as exc:
            progress(f"no best constant for {ds.name}: {exc}")
    return out


def scored(ds: Dataset, run: Run, preds: Path, labels: np.ndarray | str
           ) -> tuple[float, float | None] | str:
    """The test error and (binary) AUC of a finished test run, or why there are none ('' for
    a failed run)."""
    if not run.ok or isinstance(labels, str):
        return "" if not run.ok else labels
    try:
        error = test_error(ds.task, read_scores(preds, len(labels)), labels)
        if ds.task != "binary":
            return error, None
        return error, auc(labels, read_scores(raw_path(preds), len(labels)))
    except (OSError, ValueError, IndexError) as exc:
        return f"unreadable predictions {preds}: {exc}"


def test_all(pool: ProcessPoolExecutor, tools: Tools, pairs: Pairs,
             results: dict[tuple[str, str], Result], failures: list[Failure]) -> None:
    """Predict each trained model's test set in the pool and fill in its test error and
    (binary) AUC."""
    trained = [(ds, m) for ds, m in pairs if results[ds.name, m.name].seconds is not None]
    preds = {(ds.name, m.name): model_path(tools, ds, m).with_suffix(".preds")
             for ds, m in trained}
    futures = [pool.submit(test_run, tools, ds, m, model_path(tools, ds, m),
                           preds[ds.name, m.name]) for ds, m in trained]
    labels: dict[str, np.ndarray | str] = {}
    for (ds, m), fut in zip(trained, futures):
        if ds.name not in labels:
            labels[ds.name] = labels_or_reason(ds)
        run, key = fut.result(), (ds.name, m.name)
        score = scored(ds, run, preds[key], labels[ds.name])
        if isinstance(score, str):
            failures.append(failure(ds, m, run, score))
            results[key] = replace(results[key], note="failed: test")
        else:
            results[key] = replace(results[key], error=score[0], auc=score[1])


def experiment(args: argparse.Namespace, datasets: list[Dataset], workdir: Path,
               snapshot: Path) -> tuple[list[Result], list[Failure], dict[str, float], int]:
    """Tune, time and test every method on every dataset; return the results (with apple-best),
    the failures, the tools' start-up times and the number of tuning runs."""
    with_vw = importlib.util.find_spec("vowpalwabbit") is not None
    tools = make_tools(workdir, snapshot, with_vw, args.timeout)
    todo = chosen(methods(args.quick, with_vw), args.methods)
    grid, extend = rate_plan(args)
    progress(f"warming up ({len(todo)} methods on {WARMUP_LINES} lines of {datasets[0].name})")
    startup = warm_up(tools, datasets[0], todo)
    pairs = [(ds, m) for ds in datasets for m in todo]
    failures: list[Failure] = []
    with ProcessPoolExecutor(args.jobs) as pool:
        tunings = tune_all(pool, tools, pairs, grid, extend)
        for t in tunings.values():
            failures += t.failures
        results = time_all(tools, pairs, tunings, failures)
        test_all(pool, tools, pairs, results, failures)
    ordered = list(results.values())
    ordered += apple_best(ordered)
    ordered.sort(key=lambda r: [ds.name for ds in datasets].index(r.dataset))
    runs = sum(len(t.losses) for t in tunings.values())
    return relative(ordered), failures, startup, runs


def rate_plan(args: argparse.Namespace) -> tuple[tuple[float, ...], bool]:
    """The learning rates to try first and whether to extend them (not with --quick)."""
    if args.grid:
        return tuple(args.grid), not args.quick
    return ((QUICK_RATE,), False) if args.quick else (GRID, True)


def not_learning(results: list[Result], constants: dict[str, float]) -> list[str]:
    """The datasets where no baseline's test error beats the best constant's by CAVEAT_GAIN."""
    out = []
    for name, const in constants.items():
        base = [r.error for r in results if r.dataset == name and r.method in BASELINES
                and r.error is not None]
        if base and min(base) > (1 - CAVEAT_GAIN) * const:
            out.append(name)
    return out


def caveats(results: list[Result], constants: dict[str, float]) -> list[str]:
    """The best constant beside the baselines, the datasets where they do not learn, and the
    per-method table without those datasets."""
    lines = [f"rel_err divides by the spread of the baselines' test errors: where no baseline "
             f"beats the best constant (of the training labels) by {CAVEAT_GAIN:.0%}, the "
             f"baselines have not learned at their learning rate, and a method that learns a "
             f"little more gets a large negative rel_err that says nothing about APPLE.", "",
             "| dataset | task | best constant | best baseline | baselines' spread | learning |",
             "|---|---|---:|---:|---:|---|"]
    flagged = not_learning(results, constants)
    for name, const in constants.items():
        base = [r.error for r in results if r.dataset == name and r.method in BASELINES
                and r.error is not None]
        task = next((r.task for r in results if r.dataset == name), "")
        spread = (max(base) - min(base)) / min(base) if base and min(base) > 0 else None
        lines.append(f"| {name} | {task} | {fmt(const)} | {fmt(min(base) if base else None)} | "
                     f"{fmt(None if spread is None else 100 * spread, 3)}% | "
                     f"{'**no**' if name in flagged else 'yes'} |")
    if not flagged:
        return lines + ["", "Every dataset's baselines learn."]
    kept = [r for r in results if r.dataset not in flagged]
    return lines + ["", f"Without {', '.join(flagged)}:", "", *method_table(kept)]


def summary(results: list[Result], failures: list[Failure], context: list[str],
            n_datasets: int, constants: dict[str, float]) -> str:
    """summary.md: run context, per-method table, acceptance checks, caveats, per-dataset
    tables."""
    binary = [r for r in results if r.task == "binary"]
    lines = ["# APPLE experiment (olearn --stage_poly vs lin / quad / cubic)", "", *context, "",
             "## Per method (over datasets)", "", *method_table(results), "",
             "## Acceptance checks", "", *acceptance(results, n_datasets), "",
             "## Caveat: baselines that do not learn", "", *caveats(results, constants), "",
             "## Test error (binary: 0-1 error; regression: mean squared error)", "",
             *dataset_table(results, "error", 4), "",
             "## Test AUC (binary tasks; raw scores)", "", *dataset_table(binary, "auc", 4), "",
             "## rel_err", "",
             *dataset_table(results, "rel_err", 3), "", "## rel_time", "",
             *dataset_table(results, "rel_time", 3), "", "## Chosen learning rate", "",
             *dataset_table(results, "rate", 4), "", "## Failures", ""]
    lines += [f"- {f.dataset} / {f.method}: {f.reason}  \n  `{f.command}`" for f in failures] \
        or ["none"]
    return "\n".join(lines) + "\n"


def name_list(text: str) -> list[str]:
    """A comma-separated list of names."""
    return [x for x in text.split(",") if x]


def rate_list(text: str) -> list[float]:
    """A comma-separated list of positive learning rates."""
    try:
        rates = [float(x) for x in text.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None
    if not rates or min(rates) <= 0:
        raise argparse.ArgumentTypeError(f"learning rates must be positive: {text!r}")
    return rates


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", type=name_list,
                   help="comma-separated dataset names (default: all)")
    p.add_argument("--methods", type=name_list,
                   help="comma-separated methods to run besides lin, quad and cubic "
                        "(default: all)")
    p.add_argument("--data", type=Path, default=DATA, help=f"datasets folder (default {DATA})")
    p.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    p.add_argument("--grid", type=rate_list,
                   help="learning rates to try first (default 0.1,0.5,2), extended by x4 steps "
                        "while the best is at an edge")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke test: only apple at alpha = 1 (plus SSM and VW) and one rate "
                        f"({QUICK_RATE:g}, or --grid without extension)")
    p.add_argument("--jobs", type=int, default=1,
                   help="tuning and test runs in parallel (timed runs are always serial)")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds after which a run is killed and counted as failed")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    return args


def git_state() -> str:
    """The repository's HEAD and whether olearn/ has uncommitted changes (read-only git)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "olearn"], cwd=REPO, text=True,
                               capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + (" with uncommitted changes in olearn/" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    """Run the experiment and write results.csv, the CDF plots and summary.md."""
    args = parse_args(argv)
    start, load_start = time.perf_counter(), os.getloadavg()
    try:
        if importlib.util.find_spec("matplotlib") is None:
            raise UsageError("matplotlib is needed for the plots: pip install matplotlib")
        datasets = load_datasets(args.data, args.datasets)
        snapshot, digest = _snapshot()
        args.out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="apple-experiment-") as tmp:
            results, failures, startup, runs = experiment(args, datasets, Path(tmp), snapshot)
        constants = constant_errors(datasets)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    write_csv(args.out / "results.csv", results)
    plots = plot_cdfs(results, args.out)
    wall = time.perf_counter() - start
    grid, extend = rate_plan(args)
    vw = ("not installed" if importlib.util.find_spec("vowpalwabbit") is None
          else importlib.metadata.version("vowpalwabbit") + ("" if "vw" in startup
                                                             else " (vw-apple not run)"))
    context = [
        f"- command: `{shlex.join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])])}`",
        f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}; total wall time "
        f"{wall / 60:.1f} min ({wall:.0f} s); {runs} tuning runs; --jobs {args.jobs}; "
        f"{os.cpu_count()} CPUs; load average {load_start[0]:.2f} at start, "
        f"{os.getloadavg()[0]:.2f} at end (other processes make wall times noisy)",
        f"- olearn: sources sha1 {digest[:16]}, repository {git_state()}, run from the "
        f"snapshot {snapshot}; vowpalwabbit {vw}",
        "- start-up time (a lin run on 600 lines): "
        + ", ".join(f"{tool} {s:.2f} s" for tool, s in startup.items()),
        f"- learning rates: first tried {','.join(f'{r:g}' for r in grid)}"
        f"{', extended x4 while the best is at an edge' if extend else ''}; progressive squared "
        f"loss; 6 equal epochs (olearn --stages 6; VW --batch_sz ceil(n_train/6) "
        f"--batch_sz_no_doubling); apple-best = the "
        f"alpha with the lowest progressive loss",
        f"- outputs: {args.out / 'results.csv'}, " + ", ".join(str(p) for p in plots),
    ]
    text = summary(results, failures, context, len(datasets), constants)
    (args.out / "summary.md").write_text(text)
    print(text, end="")
    for f in failures:
        progress(f"FAILED {f.dataset} / {f.method}: {f.reason}\n  command: {f.command}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
