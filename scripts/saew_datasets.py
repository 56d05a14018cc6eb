"""SAEW on real data, as a user would run it (issue 35, part 3).

For every dataset under ``../shared/data`` (or those named with ``--datasets``), each a folder with
``train.vw.gz``, ``test.vw.gz`` and ``meta.json`` (``task`` binary, labels -1/1, or regression),
and every method of ``--methods``, the script runs olearn's command line one process at a time:

* training, ``olearn -d train.vw.gz -f model --loss_function L [method options]`` with L logistic
  (binary) or squared (regression), timed (wall time, start-up included) with its peak RSS (the
  child's ``ru_maxrss`` from ``os.wait4``) and the progressive loss it prints
  (``average loss = ...``);
* testing, ``olearn -t -i model -d test.vw.gz -p preds -r raw --readable_model text``: the test
  error (binary: 0/1 error of the sign of the raw score, 0 counting as +1; regression: mean squared
  error of the -p predictions), the test AUC of the raw scores for binary tasks
  (``olearn.outputs.metrics.auc``) and the model's nonzero weights, counted in the readable model
  (the constant feature left out; ``n_features`` is the dataset's feature count).

Methods: ``default`` (no option), ``l1`` (``--l1 λ``, λ from ``--l1_grid``, chosen by the lowest
progressive loss, ties to the larger λ; never by test error; every grid run is timed and
``tune_s`` is their sum), ``saew-cal`` (``--saew --saew_calibrate``), ``saew`` (``--saew`` with
its defaults) and ``boa`` (``--boa``), each also trained with ``--saew_output sparse``
(``<method>-sparse``: the model saved is the truncated session average instead of the iterate;
training is the same, so its progressive loss is too). They are separate training runs because a
test-only run predicts with the θ the model file was saved with: ``-t -i model --saew_output
sparse`` changes what ``--readable_model`` writes, not the predictions. A ``const`` row holds the
test error of the best constant of the training labels (their mean, or the sign of their mean); a
method whose test error is not below it is marked ``no better than constant``.

``--head DATASET=N`` trains every method of that dataset on the first N training lines only (the
row's note says so); a run longer than ``--timeout`` seconds is killed and reported. Every olearn
process runs under ``nice -n 10`` with ``OLEARN_NO_BUILD=1``. Others may be editing olearn/ while
this runs (and an edit makes numba recompile, inside a timed run), so olearn runs as ``python -m
olearn`` from a copy of the package as it is at the start (scripts/olearn_snapshot.py, in
``$TMPDIR/olearn-saew-datasets-snapshot-<hash>``, kept so that a rerun reuses numba's kernel
cache). Every method is first trained and tested on the first
600 lines of a binary and a regression dataset, so that no timed run compiles. Start-up then
comes from numba's cache (about 0.5 s), not from the prebuilt start-up module of an installed
olearn (about 0.2 s).

Outputs in ``--out`` (default ``experiments/saew-datasets``): results.csv and summary.md.

Usage: python scripts/saew_datasets.py [--datasets cpusmall,magic04] [--methods default,saew-cal]
       [--l1_grid 1e-7,1e-6,1e-5,1e-4] [--head kddcup99=100000] [--timeout 480] [--out DIR]
"""
from __future__ import annotations

import argparse
import csv
import datetime
import gzip
import json
import math
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np
from apple_experiment import (
    constant_error,
    fmt,
    git_state,
    last_loss,
    progress,
    read_labels,
    read_scores,
)
from olearn_snapshot import snapshot_olearn

from olearn.outputs.metrics import auc

REPO = Path(__file__).resolve().parent.parent
DATA = Path("..") / "shared" / "data"  # relative to the repository
OUT = REPO / "experiments" / "saew-datasets"
L1_GRID = (1e-7, 1e-6, 1e-5, 1e-4)
SPARSE_OUT = ("--saew_output", "sparse")
METHODS: dict[str, tuple[str, ...]] = {
    "default": (),
    "l1": (),  # plus --l1 λ from the grid
    "saew-cal": ("--saew", "--saew_calibrate"),
    "saew-cal-sparse": ("--saew", "--saew_calibrate", *SPARSE_OUT),
    "saew": ("--saew",),
    "saew-sparse": ("--saew", *SPARSE_OUT),
    "boa": ("--boa",),
    "boa-sparse": ("--boa", *SPARSE_OUT),
}
WARMUP_LINES = 600
CONSTANT_HASH = 116060  # VW's constant feature at -b 18 (11650396 & (2^18 - 1))
LOSS = {"binary": "logistic", "regression": "squared"}


@dataclass(frozen=True)
class Dataset:
    """One dataset's folder, files and task."""

    name: str
    task: str
    train: Path
    test: Path
    n_features: int


@dataclass(frozen=True)
class Run:
    """One finished (or killed) olearn process."""

    command: tuple[str, ...]
    returncode: int
    seconds: float
    rss_mb: float
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def last_line(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else "(no stderr)"


@dataclass(frozen=True)
class Row:
    """One CSV row: a dataset x method."""

    dataset: str
    task: str
    method: str
    l1: float | None = None
    train_lines: int | None = None
    loss: float | None = None
    error: float | None = None
    auc: float | None = None
    train_s: float | None = None
    tune_s: float | None = None
    rss_mb: float | None = None
    test_s: float | None = None
    nnz: int | None = None
    n_features: int | None = None
    note: str = ""


class UsageError(Exception):
    """A problem with the arguments: reported in one line."""


def olearn_prefix() -> tuple[str, ...]:
    """``nice -n 10 python -m olearn`` (with root on PYTHONPATH, see :func:`execute`)."""
    return ("nice", "-n", "10", sys.executable, "-m", "olearn")


def execute(prefix: tuple[str, ...], args: list[str], workdir: Path, timeout: float,
            root: Path) -> Run:
    """Run olearn (from root) with args, timing it and reading its peak RSS from ``os.wait4``."""
    command = (*prefix, *args)
    env = {**os.environ, "OLEARN_NO_BUILD": "1", "PYTHONPATH": str(root)}
    err_path = workdir / "stderr.txt"
    with err_path.open("w") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err)
        killed = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if not killed and time.perf_counter() - start > timeout:
                os.kill(proc.pid, signal.SIGKILL)  # our own child, not yet reaped
                killed = True
            time.sleep(0.005)
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = err_path.read_text(errors="replace")
    if killed:
        stderr += f"\nkilled after the {timeout:g} s timeout"
    return Run(command, -1 if killed else proc.returncode, seconds, usage.ru_maxrss / 1024, stderr)


def load_datasets(root: Path, names: list[str] | None) -> list[Dataset]:
    """The datasets under root (all, or the named ones, in that order)."""
    available = sorted(p.name for p in root.iterdir() if (p / "meta.json").is_file())
    unknown = [n for n in names or [] if n not in available]
    if unknown:
        raise UsageError(f"unknown dataset(s) {', '.join(unknown)}; "
                         f"available: {', '.join(available)}")
    out = []
    for name in names or available:
        meta = json.loads((root / name / "meta.json").read_text())
        out.append(Dataset(name, meta["task"], root / name / "train.vw.gz",
                           root / name / "test.vw.gz", int(meta["n_features"])))
    return out


def head_file(source: Path, lines: int, path: Path) -> Path:
    """The first ``lines`` lines of a gzip file, as the gzip file path."""
    with gzip.open(source, "rt") as src, gzip.open(path, "wt") as dst:
        for i, line in enumerate(src):
            if i >= lines:
                break
            dst.write(line)
    return path


def count_nonzero(readable: Path) -> int:
    """Nonzero weights in a readable model (``index:weight ...`` lines), the constant left out."""
    count = 0
    with readable.open() as f:
        for line in f:
            index, sep, rest = line.partition(":")
            if sep and index.isdigit() and int(index) != CONSTANT_HASH:
                count += float(rest.split()[0]) != 0.0
    return count


def score(ds: Dataset, preds: Path, raw: Path, labels: np.ndarray) -> tuple[float, float | None]:
    """Test error and (binary) AUC: sign of the raw score, or MSE of the predictions."""
    if ds.task == "binary":
        scores = read_scores(raw, len(labels))
        return float(np.mean((scores >= 0) != (labels > 0))), auc(labels, scores)
    return float(np.mean((read_scores(preds, len(labels)) - labels) ** 2)), None


class Experiment:
    """Trains and tests the methods on one dataset at a time, one olearn process at a time."""

    def __init__(self, args: argparse.Namespace, workdir: Path, root: Path) -> None:
        self.args = args
        self.workdir = workdir
        self.root = root
        self.prefix = olearn_prefix()
        self.failures: list[str] = []

    def run(self, args: list[str], what: str) -> Run:
        """Execute and remember a failure (with its command) under ``what``."""
        run = execute(self.prefix, args, self.workdir, self.args.timeout, self.root)
        if not run.ok:
            self.failures.append(f"{what}: exit status {run.returncode}: {run.last_line}\n"
                                 f"  command: {shlex.join(run.command)}")
            progress(f"  FAILED {what}: {run.last_line}")
        return run

    def train(self, ds: Dataset, train: Path, method: str, extra: tuple[str, ...],
              model: Path) -> Run:
        """One training run of method on ds."""
        args = ["-d", str(train), "-f", str(model), "--loss_function", LOSS[ds.task],
                *METHODS[method], *extra]
        return self.run(args, f"{ds.name} / {method} {' '.join(extra)}".rstrip())

    def warm_up(self, datasets: list[Dataset], methods: list[str]) -> None:
        """Train and test every method on the first lines of a dataset of each task, so that
        numba compiles (or loads) every kernel before a timed run."""
        for ds in {d.task: d for d in reversed(datasets)}.values():
            small = head_file(ds.train, WARMUP_LINES, self.workdir / "warmup.vw.gz")
            warm = replace(ds, train=small, test=small)
            labels = np.array(read_labels(small))
            model = self.workdir / "warmup.model"
            progress(f"warm-up on {WARMUP_LINES} lines of {ds.name}")
            for method in methods:
                extra = ("--l1", "1e-6") if method == "l1" else ()
                if self.train(warm, small, method, extra, model).ok:
                    self.test(warm, model, labels, Row(ds.name, ds.task, method))
        self.failures = [f"warm-up: {f}" for f in self.failures]

    def test(self, ds: Dataset, model: Path, labels: np.ndarray, row: Row,
             extra: tuple[str, ...] = ()) -> Row:
        """Test a saved model: fill in the row's test error, AUC, nonzero weights, test time."""
        preds, raw, text = (model.with_suffix(s) for s in (".preds", ".raw", ".txt"))
        run = self.run(["-t", "-i", str(model), "-d", str(ds.test), "-p", str(preds), "-r",
                        str(raw), "--readable_model", str(text), "--quiet", *extra],
                       f"{ds.name} / {row.method} test")
        if not run.ok:
            return replace(row, note=(row.note + "; test failed").lstrip("; "))
        error, area = score(ds, preds, raw, labels)
        return replace(row, error=error, auc=area, nnz=count_nonzero(text), test_s=run.seconds)

    def dataset(self, ds: Dataset, methods: list[str]) -> list[Row]:
        """Every method's rows on ds, and the best constant's."""
        labels = np.array(read_labels(ds.test))
        train, lines, note = ds.train, None, ""
        if ds.name in self.args.head:
            lines = self.args.head[ds.name]
            train = head_file(ds.train, lines, self.workdir / f"{ds.name}.head{lines}.vw.gz")
            note = f"first {lines} training lines"
        const = constant_error(ds.task, read_labels(train), labels)
        base = Row(ds.name, ds.task, "", train_lines=lines, n_features=ds.n_features, note=note)
        rows = [replace(base, method="const", error=const, auc=0.5 if ds.task == "binary"
                        else None)]
        for method in methods:
            progress(f"{ds.name} / {method}")
            model = self.workdir / f"{ds.name}.{method}.model"
            if method == "l1":
                row = self.tune_l1(ds, train, base, model)
            else:
                run = self.train(ds, train, method, (), model)
                row = replace(base, method=method, loss=last_loss(run.stderr), train_s=run.seconds,
                              rss_mb=run.rss_mb, note=note if run.ok else
                              (note + "; training failed").lstrip("; "))
            if row.train_s is None or not model.is_file():
                rows.append(row)
                continue
            rows.append(self.test(ds, model, labels, row))
        for i, r in enumerate(rows):
            if r.method != "const" and r.error is not None and r.error >= const:
                rows[i] = replace(r, note=(r.note + "; no better than constant").lstrip("; "))
        return rows

    def tune_l1(self, ds: Dataset, train: Path, base: Row, model: Path) -> Row:
        """Train with every λ of the grid; keep the model of the lowest progressive loss."""
        best: tuple[float, float, Run] | None = None
        total = 0.0
        for lam in self.args.l1_grid:
            candidate = model.with_suffix(f".{lam:g}.model")
            run = self.train(ds, train, "l1", ("--l1", f"{lam:g}"), candidate)
            total += run.seconds
            loss = last_loss(run.stderr)
            if run.ok and loss is not None and math.isfinite(loss) and (
                    best is None or (loss, -lam) < (best[0], -best[1])):
                best = (loss, lam, run)
                candidate.replace(model)
        if best is None:
            return replace(base, method="l1", tune_s=total,
                           note=(base.note + "; every λ failed").lstrip("; "))
        loss, lam, run = best
        return replace(base, method="l1", l1=lam, loss=loss, train_s=run.seconds, tune_s=total,
                       rss_mb=run.rss_mb)


def write_csv(path: Path, rows: list[Row]) -> None:
    """results.csv: one row per dataset x method."""
    names = [f.name for f in fields(Row)]
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(names)
        for r in rows:
            out.writerow([fmt(v, 6) if isinstance(v, float) else ("" if v is None else v)
                          for v in (getattr(r, n) for n in names)])


def full_table(rows: list[Row]) -> list[str]:
    """Every row: the measurements of each dataset x method."""
    out = ["| dataset | method | test err | AUC | prog. loss | train s | peak RSS MB | "
           "nonzero / features | note |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        method = f"l1 ({r.l1:g})" if r.method == "l1" and r.l1 is not None else r.method
        train_s = fmt(r.train_s, 3) + (f" ({fmt(r.tune_s, 3)} all λ)" if r.tune_s else "")
        nnz = f"{r.nnz} / {r.n_features}" if r.nnz is not None else ""
        out.append(f"| {r.dataset} | {method} | {fmt(r.error)} | {fmt(r.auc)} | {fmt(r.loss)} "
                   f"| {train_s} | {fmt(r.rss_mb, 4)} | {nnz} | {r.note} |")
    return out


def compact_table(rows: list[Row], methods: list[str]) -> list[str]:
    """Test error per dataset (columns: the constant and the methods), best one in bold."""
    cols = ["const", *methods]
    by_key = {(r.dataset, r.method): r for r in rows}
    out = ["| dataset | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for name in dict.fromkeys(r.dataset for r in rows):
        errs = {c: by_key[name, c].error for c in cols if (name, c) in by_key}
        finite = [e for c, e in errs.items() if e is not None and c != "const"]
        best = min(finite) if finite else None
        cells = [("**" + fmt(e) + "**") if e is not None and e == best else fmt(e)
                 for e in (errs.get(c) for c in cols)]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out


def time_totals(rows: list[Row]) -> list[str]:
    """Total training (and l1 tuning) wall time per method."""
    totals: dict[str, float] = {}
    for r in rows:
        if r.train_s is not None:
            totals[r.method] = totals.get(r.method, 0.0) + (r.tune_s or r.train_s)
    return [f"- {m}: {s:.1f} s" + (" (all λ of the grid)" if m == "l1" else "")
            for m, s in totals.items()]


def summary(rows: list[Row], methods: list[str], context: list[str],
            failures: list[str]) -> str:
    """summary.md: the context, the tables and the failures."""
    parts = ["# SAEW on the 14 real datasets, as a user runs it (issue 35, part 3)", "",
             *context, "", "## Test error (binary: 0/1 error; regression: MSE)", "",
             *compact_table(rows, methods), "", "## All measurements", "",
             *full_table(rows), "", "## Total training wall time per method", "",
             *time_totals(rows), ""]
    if failures:
        parts += ["## Failed runs", "", *[f"- {f}" for f in failures], ""]
    return "\n".join(parts)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--data", type=Path, default=REPO / DATA,
                   help="folder of dataset folders (default ../shared/data from the repository)")
    p.add_argument("--datasets", type=lambda s: [n for n in s.split(",") if n],
                   help="comma-separated dataset names (default: all)")
    p.add_argument("--methods", default=",".join(METHODS),
                   help=f"comma-separated methods among {', '.join(METHODS)} (default: all)")
    p.add_argument("--l1_grid", default=",".join(f"{x:g}" for x in L1_GRID),
                   help="comma-separated λ values for --l1")
    p.add_argument("--head", action="append", default=[], metavar="DATASET=N",
                   help="train every method of DATASET on its first N lines (repeatable)")
    p.add_argument("--timeout", type=float, default=480.0,
                   help="kill an olearn run after this many seconds (default 480)")
    p.add_argument("--out", type=Path, default=OUT, help="output folder")
    args = p.parse_args(argv)
    args.methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(args.methods) - set(METHODS))
    if unknown:
        p.error(f"unknown method(s) {', '.join(unknown)}; available: {', '.join(METHODS)}")
    try:
        args.l1_grid = [float(x) for x in args.l1_grid.split(",") if x]
        args.head = {k: int(v) for k, v in (h.split("=", 1) for h in args.head)}
    except ValueError as exc:
        p.error(f"bad --l1_grid or --head: {exc}")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run every dataset x method; write results.csv and summary.md."""
    args = parse_args(argv)
    data = args.data.resolve()
    if not data.is_dir():
        print(f"no data folder at {data}: nothing to do (see --data)", file=sys.stderr)
        return 0
    start = time.perf_counter()
    state = git_state()
    try:
        try:
            root, digest = snapshot_olearn("saew-datasets")
        except RuntimeError as exc:
            raise UsageError(str(exc)) from None
        datasets = load_datasets(data, args.datasets)
        rows: list[Row] = []
        with tempfile.TemporaryDirectory(prefix="saew-datasets-") as tmp:
            exp = Experiment(args, Path(tmp), root)
            exp.warm_up(datasets, args.methods)
            for ds in datasets:
                rows += exp.dataset(ds, args.methods)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "results.csv", rows)
    wall = time.perf_counter() - start
    command = sys.argv[1:] if argv is None else argv
    context = [
        f"- command: `{shlex.join(['python', 'scripts/saew_datasets.py', *command])}`",
        f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}; total wall time "
        f"{wall / 60:.1f} min; {os.cpu_count()} CPUs, shared (wall times are noisy)",
        f"- olearn: sources {digest[:16]}, run from the copy {root} (scripts/olearn_snapshot.py; "
        f"the checkout was {state} at start, {git_state()} at end)",
        f"- every run: `nice -n 10 olearn ...`, OLEARN_NO_BUILD=1, one process at a time; "
        f"--loss_function logistic (binary) or squared (regression); --l1 grid "
        f"{', '.join(f'{x:g}' for x in args.l1_grid)}, chosen by progressive loss",
        "- test err: binary, 0/1 error of sign(raw score); regression, MSE. train s: wall time of "
        "the training run, start-up included. nonzero: weights != 0 in --readable_model, "
        "constant left out. -sparse: trained with --saew_output sparse.",
    ]
    text = summary(rows, args.methods, context, exp.failures)
    (args.out / "summary.md").write_text(text)
    print(text, end="")
    return 1 if exp.failures else 0


if __name__ == "__main__":
    sys.exit(main())
