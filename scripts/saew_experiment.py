"""Reproduce the SAEW paper's Section 5 (Gaillard & Wintenberger, AISTATS 2017) with olearn's
--eg, --boa and --saew, and pick SAEW's defaults (--saew_C, --saew_center, --saew_d0) from evidence.

Protocol (docs/algorithms.md section 4.1):

* Data: Y_t = X_t^T theta* + sigma N(0,1), X_t ~ N(0, I_d), theta* with d0 = 5 nonzeros on a random
  support, drawn N(0,1) and scaled to ||theta*||_1 = 1, sigma = 0.1. Settings:
  ``square`` (d = 500, T = 2000, square loss, --noconstant), ``quantile`` (the same data files,
  pinball loss at tau = 0.8 with olearn's constant feature as the intercept, whose true value is
  the noise's 0.8-quantile sigma Phi^-1(0.8); the error is measured over theta and the intercept;
  the l1 methods get --radius 1.1 >= ||(theta*, b*)||_1 ~ 1.084 since the paper gives them the
  true l1 norm), ``small`` (the paper's Fig. 4: d0 = d = 2, sigma = 0.3, T = --small_T, square
  loss), ``long`` and ``long-quantile`` (d = 100, T = 1e5, square and quantile loss, the paper's
  Figs. 5-7; run by turns, as many as fit in --long_minutes). Seeds are fixed: run r of a setting
  uses numpy's default_rng((SEED, d, T, r, seed set)); the tuning seed set (--tune_seed) chooses
  SAEW's defaults, the SGD rate and RDA's (lam, gamma); every reported run is on --seed.
  Data are VW text files (``y |x 0:v0 1:v1 ...``, 6 significant digits) in a temporary folder
  deleted at exit.
* Metric: ln ||theta_hat_t - theta*||_2^2 (the instantaneous excess risk, as E[xx^T] = I).
  Finals at T of the headline methods (plain SGD at its tuned rate, BOA, the recommended SAEW,
  calibrated SAEW) come from the command line (``python -m olearn`` ... ``--invert_hash``,
  parsed by feature name x^j / Constant); every curve against t, and the finals of the variant
  sweep, come from the Python API (a partial fit over chunks up to log-spaced checkpoints,
  reading ``weights[:, 0]`` after ``sync()``; text lines in square and quantile, numpy matrices
  in small and long). CLI and API finals are compared (they must agree).
* Cumulative risk (Figs. 3, 4, 7): sum over t of (yhat_t - x_t^T theta* [- b*])^2 over the
  progressive predictions yhat_t (an unbiased estimate of the sum of instantaneous excess risks
  ||theta_hat_{t-1} - theta*||^2 for the square loss), from the API (and ``-p`` for the CLI).
* Methods: ``sgd-l<rate>``: olearn's default learner (VW's adaptive, normalized, invariant
  gradient descent) over the -l grid --sgd_grid, ``sgd`` = the rate with the best median final
  error on the tuning seeds ("plain SGD"); ``rda``: l1-RDA (Xiao 2010, scripts/saew_rda.py),
  the paper's baseline, (lam, gamma) tuned on the tuning seeds; ``eg`` (--eg); ``boa`` (--boa);
  ``boa-average`` (--boa --saew_output average, the long-horizon figures' averaged BOA);
  ``saew-C<C>-<center>`` (--saew --saew_C C --saew_center center, BOA subroutine, d0 = 5,
  alpha = 1, B = running max, radius as above) for C in --C_grid, center in {average, last};
  ``saew-eg-...`` the same with --saew_sub eg; ``...-out<average|sparse>`` with --saew_output;
  ``...-d0<k>`` with --saew_d0 k; ``calibrated`` (--saew_calibrate with no d0/alpha/U/B given).
* Defaults: among the (C, center) pairs run on the tuning seeds of square, quantile, long and
  long-quantile, the one whose worst gap (median final ln error minus the best pair's, per
  setting) is smallest.

Reproducibility: other people may edit olearn while this runs, so the script copies the olearn
package to ``$TMPDIR/olearn-saew-snapshot-<sha1>`` and imports it (and runs the CLI) from there;
the first use of a new snapshot compiles numba's kernels once.

Outputs in --out (default experiments/saew): fig1_boxplots.png, fig2_curves.png,
fig3_cumulative_risk.png, fig4_small.png, fig5_long_curves.png, fig6_long_slopes.png,
fig7_long_cumrisk.png, fig_defaults.png, results.json and summary.md (also printed).

Usage: python scripts/saew_experiment.py [--runs 30] [--long_minutes 12] [--calib_runs 10]
       [--quick] [--out experiments/saew]
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import pickle
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from olearn_snapshot import snapshot_olearn
from saew_rda import rda_run

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "experiments" / "saew"
SEED = 20170420
SIGMA = 0.1
D0 = 5
TAU = 0.8
PHI_INV_TAU = 0.8416212335729143  # Phi^-1(0.8)
LASSO_REF = -8.8
SGD_GRID = (0.03, 0.1, 0.3, 1.0, 3.0)
C_GRID = (16.0, 4.0, 2.0, 1.0, 0.5, 0.25)
RDA_LAM = (0.0, 5e-4, 1e-3, 2e-3, 4e-3, 8e-3, 0.016, 0.032, 0.1)
RDA_GAMMA = (1.5, 2.0, 3.0, 4.5, 7.0, 10.0, 15.0, 30.0, 100.0)
SMALL_SIGMA = 0.3  # the paper's Fig. 4: d0 = d = 2, sigma = 0.3
CENTERS = ("average", "last")
N_CHECKPOINTS = 25
N_TAIL_CHECKPOINTS = 40
PICKLE = Path(tempfile.gettempdir()) / "saew-experiment-state.pkl"


@dataclass
class Setting:
    name: str
    d: int
    T: int
    quantile: bool
    radius: float
    runs: int
    seed: int = 1  # the seed set of make_data
    long: bool = False
    methods: dict[str, dict] = field(default_factory=dict)
    cps: np.ndarray | None = None  # the checkpoints t at which errors are recorded
    d0: int = D0
    sigma: float = SIGMA
    matrix: bool = False  # the API learns from numpy matrices (no text, no CLI runs)

    def base(self) -> dict:
        if self.quantile:
            return {"loss_function": "quantile", "quantile_tau": TAU}
        return {"noconstant": True}

    def intercept(self) -> float:
        return self.sigma * PHI_INV_TAU if self.quantile else 0.0

    def data(self, run: int, seed: int | None = None):
        """X, y, theta* of run ``run`` of seed set ``seed`` (default: the setting's)."""
        return make_data(self.d, self.T, run, self.seed if seed is None else seed, self.d0,
                         self.sigma)


def fmt(x: float | None, digits: int = 2) -> str:
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{x:.{digits}f}"


def progress(msg: str) -> None:
    print(f"[{datetime.datetime.now():%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


# --- snapshot of olearn ----------------------------------------------------------------------

def import_snapshot(root: Path):
    sys.path.insert(0, str(root))
    for name in [m for m in sys.modules if m == "olearn" or m.startswith("olearn.")]:
        del sys.modules[name]
    import olearn  # noqa: PLC0415
    if Path(olearn.__file__).resolve().parent != (root / "olearn").resolve():
        sys.exit(f"error: imported olearn from {olearn.__file__}, not the snapshot {root}")
    return olearn


# --- data --------------------------------------------------------------------------------------

def make_data(d: int, T: int, run: int, seed: int = 0, d0: int = D0,
              sigma: float = SIGMA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run ``run`` of seed set ``seed`` (0: the runs that chose the defaults); theta* has ``d0``
    nonzeros, the noise is N(0, sigma^2)."""
    rng = np.random.default_rng((SEED, d, T, run, seed) if seed else (SEED, d, T, run))
    theta = np.zeros(d)
    support = rng.choice(d, d0, replace=False)
    v = rng.standard_normal(d0)
    theta[support] = v / np.abs(v).sum()
    X = rng.standard_normal((T, d))
    y = X @ theta + sigma * rng.standard_normal(T)
    return X, y, theta


def vw_lines(X: np.ndarray, y: np.ndarray) -> list[str]:
    template = "%.6g |x " + " ".join(f"{j}:%.6g" for j in range(X.shape[1]))
    data = np.column_stack([y, X]).tolist()
    return [template % tuple(row) for row in data]


def checkpoints(T: int, tail: bool) -> np.ndarray:
    cps = set(np.unique(np.round(np.geomspace(10, T, N_CHECKPOINTS)).astype(int)))
    if tail:
        cps |= set(np.unique(np.round(np.geomspace(T / 10, T, N_TAIL_CHECKPOINTS)).astype(int)))
    cps.add(T)
    return np.array(sorted(cps))


# --- running olearn ----------------------------------------------------------------------------

def cli_args(opts: dict) -> list[str]:
    args = []
    for key, value in opts.items():
        if value is True:
            args.append(f"--{key}")
        elif value is not False and value is not None:
            args += [f"--{key}", f"{value:g}" if isinstance(value, float) else str(value)]
    return args


def parse_invert_hash(path: Path) -> dict[str, tuple[int, float]]:
    """feature name -> (index, weight) from an --invert_hash file."""
    out = {}
    for line in path.read_text().splitlines():
        parts = line.rsplit(":", 2)  # name:index:weight [adaptive normalized]
        if len(parts) == 3 and parts[0] and parts[1].isdigit():
            out[parts[0]] = (int(parts[1]), float(parts[2].split()[0]))
    return out


def theta_from_names(table: dict[str, tuple[int, float]], d: int, intercept: bool) -> np.ndarray:
    theta = np.zeros(d + (1 if intercept else 0))
    for j in range(d):
        if f"x^{j}" in table:
            theta[j] = table[f"x^{j}"][1]
    if intercept and "Constant" in table:
        theta[d] = table["Constant"][1]
    return theta


class Runner:
    def __init__(self, olearn, snapshot: Path, workdir: Path):
        self.olearn = olearn
        self.env = {**os.environ, "PYTHONPATH": str(snapshot)}
        self.workdir = workdir
        self.index: dict[int, np.ndarray] = {}

    def cli(self, data: Path, opts: dict, tag: str) -> tuple[dict, np.ndarray, float]:
        ih = self.workdir / f"{tag}.ih"
        preds = self.workdir / f"{tag}.pred"
        cmd = [sys.executable, "-m", "olearn", "-d", str(data), "--quiet", "--invert_hash",
               str(ih), "-p", str(preds), *cli_args(opts)]
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=self.env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"{shlex.join(cmd)} failed: {proc.stderr.strip()[-500:]}")
        table = parse_invert_hash(ih)
        p = np.loadtxt(preds, usecols=0, ndmin=1)
        ih.unlink()
        preds.unlink()
        return table, p, wall

    def indices(self, d: int) -> np.ndarray:
        """Hashed weight indices of x^0..x^{d-1} and Constant, from a tiny --invert_hash run."""
        if d not in self.index:
            path = self.workdir / f"names{d}.vw"
            path.write_text("1 |x " + " ".join(f"{j}:1" for j in range(d)) + "\n")
            table, _, _ = self.cli(path, {}, f"names{d}")
            self.index[d] = np.array([table[f"x^{j}"][0] for j in range(d)]
                                     + [table["Constant"][0]])
        return self.index[d]

    def api(self, data, opts: dict, cps: np.ndarray, d: int,
            intercept: bool) -> tuple[np.ndarray, np.ndarray]:
        """theta_hat (and the intercept) at every checkpoint, shape (len(cps), d [+1]), and the
        progressive predictions (each example's, before learning it). ``data``: example lines,
        or (X, y) numpy matrices (features f^j, not rounded to text)."""
        learner = self.olearn.Learner(**opts)
        if isinstance(data, tuple):
            matrices = importlib.import_module("olearn.data.matrices")
            hashing = importlib.import_module("olearn.data.hashing")
            idx = np.append(matrices.column_indices(d, learner.config).astype(np.int64),
                            hashing.CONSTANT_HASH & learner.config.mask)
        else:
            idx = self.indices(d)
        if not intercept:
            idx = idx[:d]
        out = np.empty((len(cps), len(idx)))
        preds = []
        prev = 0
        for k, c in enumerate(cps):
            chunk = ((data[0][prev:c], data[1][prev:c]) if isinstance(data, tuple)
                     else (data[prev:c],))
            # partial_fit, keeping the progressive predictions
            for batch in learner._batches(*chunk):
                for piece in learner._learner.pieces(batch):
                    predicted = learner._learner.new_predictions(piece)
                    learner._learner.learn(piece, predicted)
                    preds.append(predicted[:, 0].copy())
            prev = c
            learner._learner.sync()
            out[k] = learner._learner.weights[idx, 0]
        return out, np.concatenate(preds).astype(float)


# --- methods ------------------------------------------------------------------------------------

def saew_opts(C: float, center: str, radius: float, sub: str = "boa", d0: int = D0,
              **extra) -> dict:
    return {"saew": True, "saew_sub": sub, "saew_C": C, "saew_center": center, "radius": radius,
            "saew_d0": d0, **extra}


def sweep_methods(setting: Setting, quick: bool, c_grid: tuple[float, ...],
                  sgd_grid: tuple[float, ...]) -> dict[str, dict]:
    """The methods of a setting's reported runs ("sgd" and "rda" join after tuning). The long and
    small settings add calibrated SAEW (the API's; the T = 2000 settings run it by the CLI)."""
    r = setting.radius
    m: dict[str, dict] = {}
    if not setting.long:
        for lr in sgd_grid:
            m[f"sgd-l{lr:g}"] = {"learning_rate": lr}
        m["eg"] = {"eg": True, "radius": r}
    m["boa"] = {"boa": True, "radius": r}
    m["boa-average"] = {"boa": True, "radius": r, "saew_output": "average"}
    for C in c_grid:
        for center in CENTERS:
            m[f"saew-C{C:g}-{center}"] = saew_opts(C, center, r, d0=setting.d0)
    if setting.matrix:
        m["calibrated"] = {"saew_calibrate": True}
    if quick or setting.name == "small":
        return m
    long = setting.long
    if not long:
        for C in (2.0, 1.0, 0.5):
            if C in c_grid:
                m[f"saew-eg-C{C:g}-last"] = saew_opts(C, "last", r, sub="eg")
    for C in (2.0, 0.5):
        if C in c_grid:
            for out in (("average",) if long else ("average", "sparse")):
                m[f"saew-C{C:g}-last-out{out}"] = saew_opts(C, "last", r, saew_output=out)
    if not long:
        for C in (2.0, 0.5):
            if C in c_grid:
                for d0 in ((3, 6, 10) if setting.quantile else (3, 10)):
                    m[f"saew-C{C:g}-last-d0{d0}"] = {**saew_opts(C, "last", r), "saew_d0": d0}
    return m


# --- statistics -------------------------------------------------------------------------------

def ln_err(est: np.ndarray, truth: np.ndarray) -> np.ndarray:
    return np.log(np.sum((est - truth) ** 2, axis=-1))


def stats(values) -> dict:
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {"n": 0}
    q25, med, q75 = np.percentile(v, [25, 50, 75])
    return {"n": int(v.size), "median": float(med), "q25": float(q25), "q75": float(q75),
            "mean": float(v.mean())}


def slope(ts: np.ndarray, lnerr: np.ndarray, T: int) -> float:
    sel = ts >= T / 10
    return float(np.polyfit(np.log(ts[sel]), lnerr[sel], 1)[0])


# --- experiment ---------------------------------------------------------------------------------

@dataclass
class Record:
    """Per setting and method: per-run ln error curves (API) and CLI finals / cumulative risk."""

    curves: list = field(default_factory=list)       # arrays over checkpoints
    cli_final: list = field(default_factory=list)     # ln error at T from --invert_hash
    cumrisk: list = field(default_factory=list)       # arrays over t (CLI -p)
    api_cumrisk: list = field(default_factory=list)   # arrays over checkpoints (API)
    api_cli_diff: list = field(default_factory=list)  # max |theta_api - theta_cli|
    api_theta_T: list = field(default_factory=list)   # theta at T per run (API)
    cli_seconds: list = field(default_factory=list)   # wall time per CLI run
    seconds: float = 0.0


def rda_estimates(X: np.ndarray, y: np.ndarray, s: Setting, lam, gamma,
                  cps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """l1-RDA (scripts/saew_rda.py) for the pairs (lam[p], gamma[p]): estimates at the
    checkpoints, shape (len(cps), P, d [+1]), and progressive predictions, shape (T, P). In the
    quantile settings a column of ones is the intercept, penalized like every coordinate."""
    if s.quantile:
        X = np.column_stack([X, np.ones(len(X))])
    return rda_run(X, y, lam, gamma, cps, TAU if s.quantile else None)


def tune_rda(s: Setting, runs: int, seed: int) -> tuple[tuple[float, float], dict]:
    """RDA's (lam, gamma) over the grid RDA_LAM x RDA_GAMMA, on ``runs`` runs of seed set
    ``seed``: the best median final ln error among the *stable* pairs, whose cumulative risk at
    T is below the zero predictor's (sum_t (x_t' theta* [+ b*])^2) in every run (a small gamma
    can blow up for thousands of examples and still end well); every pair's median, with a
    "*" on the unstable ones."""
    pairs = [(lam, gamma) for lam in RDA_LAM for gamma in RDA_GAMMA]
    lams, gammas = np.array(pairs).T
    finals = []
    stable = np.ones(len(pairs), dtype=bool)
    for r in range(runs):
        X, y, theta = s.data(r, seed)
        truth = np.append(theta, s.intercept()) if s.quantile else theta
        est, preds = rda_estimates(X, y, s, lams, gammas, np.array([s.T]))
        finals.append(np.nan_to_num(ln_err(est[-1], truth), nan=np.inf))
        signal = X @ theta + s.intercept()
        risk = np.nan_to_num(np.sum((preds - signal[:, None]) ** 2, axis=0), nan=np.inf)
        stable &= risk < np.sum(signal ** 2)
    med = np.median(finals, axis=0)
    best = int(np.argmin(np.where(stable, med, np.inf) if stable.any() else med))
    return pairs[best], {f"{lam:g},{gamma:g}" + ("" if ok else "*"): float(v)
                         for (lam, gamma), v, ok in zip(pairs, med, stable)}


def run_one(runner: Runner, s: Setting, r: int, records: dict, cps: np.ndarray,
            data_cache: dict | None) -> None:
    """Run ``r`` of setting ``s``: every method's ln error curve and cumulative risk (API)."""
    X, y, theta = s.data(r)
    data = (X, y) if s.matrix else vw_lines(X, y)
    truth = np.append(theta, s.intercept()) if s.quantile else theta
    signal = X @ theta + s.intercept()
    if data_cache is not None:
        data_cache[r] = (X, y, theta, data)
    for name, opts in s.methods.items():
        start = time.perf_counter()
        if "rda_lam" in opts:
            est, preds = rda_estimates(X, y, s, [opts["rda_lam"]], [opts["rda_gamma"]], cps)
            est, preds = est[:, 0], preds[:, 0]
        else:
            est, preds = runner.api(data, {**s.base(), **opts}, cps, s.d, s.quantile)
        rec = records[s.name].setdefault(name, Record())
        rec.seconds += time.perf_counter() - start
        rec.curves.append(ln_err(est, truth))
        rec.api_theta_T.append(est[-1])
        rec.api_cumrisk.append(np.cumsum((preds - signal) ** 2)[cps - 1])


def run_sweep(runner: Runner, settings: list[Setting], runs: int, deadline: float | None,
              records: dict, data_cache: dict | None) -> int:
    """Runs 0, 1, ... of the settings, interleaved (run r of each, then r + 1), until ``runs``
    or the deadline (checked before each round); returns the rounds done."""
    done = 0
    for r in range(runs):
        if deadline is not None and time.perf_counter() > deadline:
            break
        for s in settings:
            t0 = time.perf_counter()
            run_one(runner, s, r, records, s.cps, data_cache)
            best = min(((float(np.median([c[-1] for c in rec.curves])), n)
                        for n, rec in records[s.name].items()))
            progress(f"{s.name} run {r + 1}/{runs} ({time.perf_counter() - t0:.0f} s); "
                     f"best median so far {best[1]} {best[0]:.2f}")
        done += 1
    return done


def run_cli(runner: Runner, s: Setting, runs: int, records: dict, methods: dict[str, dict],
            calib_runs: int, data_cache: dict, workdir: Path) -> None:
    for r in range(runs):
        X, y, theta, lines = data_cache[r] if r in data_cache else (None, None, None, None)
        if X is None:
            X, y, theta = s.data(r)
            lines = vw_lines(X, y)
        path = workdir / f"{s.name}-{r}.vw"
        if not path.exists():
            path.write_text("\n".join(lines) + "\n")
        truth = np.append(theta, s.intercept()) if s.quantile else theta
        signal = X @ theta + s.intercept()
        for name, opts in methods.items():
            if name == "calibrated" and r >= calib_runs:
                continue
            table, preds, wall = runner.cli(path, {**s.base(), **opts}, f"{s.name}-{r}-{name}")
            est = theta_from_names(table, s.d, s.quantile)
            rec = records[s.name].setdefault(name, Record())
            rec.cli_final.append(float(ln_err(est, truth)))
            rec.cumrisk.append(np.cumsum((preds - signal) ** 2))
            rec.cli_seconds.append(wall)
            if r < len(rec.api_theta_T):
                rec.api_cli_diff.append(float(np.max(np.abs(rec.api_theta_T[r] - est))))
        progress(f"{s.name} CLI run {r + 1}/{runs} done")


def choose_defaults(records: dict, settings: list[str], c_grid) -> tuple[tuple, list]:
    rows = []
    for C in c_grid:
        for center in CENTERS:
            name = f"saew-C{C:g}-{center}"
            meds = {}
            for sname in settings:
                rec = records[sname].get(name)
                if rec is not None and rec.curves:
                    meds[sname] = float(np.median([c[-1] for c in rec.curves]))
            rows.append((C, center, meds))
    best = {sname: min(m[sname] for _, _, m in rows if sname in m) for sname in settings}
    scored = []
    for C, center, meds in rows:
        if all(sname in meds for sname in settings):
            gap = max(meds[sname] - best[sname] for sname in settings)
            scored.append((gap, C, center, meds))
    scored.sort(key=lambda x: (round(x[0], 6), -x[1]))
    return scored[0], [(C, center, meds, (max(meds[s] - best[s] for s in settings)
                                         if all(s in meds for s in settings) else None))
                       for C, center, meds in rows]


def session_counts(olearn, settings: dict[str, Setting], c_grid, runs: int = 3) -> dict:
    """Sessions SAEW started by T (0: it stayed BOA) per (C, center), on the first runs of each
    setting (1 run of the long one)."""
    layout = importlib.import_module("olearn.learners.experts.state")
    out: dict[str, dict[str, list[int]]] = {}
    for sname, s in settings.items():
        for r in range(1 if s.long else runs):
            X, y, _ = s.data(r)
            data = (X, y) if s.matrix else (vw_lines(X, y),)
            for C in c_grid:
                for center in CENTERS:
                    learner = olearn.Learner(**s.base(), **saew_opts(C, center, s.radius,
                                                                     d0=s.d0))
                    learner.fit(*data)
                    es = learner._learner.family.ew[6]
                    out.setdefault(sname, {}).setdefault(f"saew-C{C:g}-{center}", []).append(
                        int(es[0, layout.E_SESSION]))
    return out


# --- plots ---------------------------------------------------------------------------------------

PALETTE = ("tab:blue", "tab:red", "tab:orange", "tab:cyan", "tab:pink", "tab:olive", "tab:green",
           "navy", "gold", "lime", "maroon", "teal")
SAEW_COLORS: dict[str, str] = {}


def style(name: str) -> dict:
    if name.startswith("sgd"):
        return {"color": "tab:gray", "linestyle": ":"}
    if name == "boa":
        return {"color": "black", "linestyle": "--"}
    if name == "eg":
        return {"color": "tab:brown", "linestyle": "-."}
    if name == "calibrated":
        return {"color": "tab:purple", "linestyle": "-"}
    if name == "boa-average":
        return {"color": "black", "linestyle": ":"}
    if name == "rda":
        return {"color": "tab:green", "linestyle": "-."}
    if name not in SAEW_COLORS:
        SAEW_COLORS[name] = PALETTE[len(SAEW_COLORS) % len(PALETTE)]
    return {"color": SAEW_COLORS[name], "linestyle": "--" if "-C16-" in name else "-"}


def save_figure(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt  # noqa: PLC0415
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def label_axes(ax, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)


def present(records: dict, sname: str, names: list[str], attr: str = "curves") -> list[str]:
    return [n for n in dict.fromkeys(names) if n in records[sname]
            and getattr(records[sname][n], attr)]


def curve_panel(ax, records: dict, s: Setting, names: list[str], title: str) -> None:
    """Mean over runs of ln error against ln t."""
    for n in present(records, s.name, names):
        ax.plot(np.log(s.cps), np.mean(records[s.name][n].curves, axis=0), label=n, **style(n))
    label_axes(ax, "ln t", "mean over runs of ln ||theta_hat_t - theta*||^2", title)


def cumrisk_panel(ax, records: dict, s: Setting, names: list[str], title: str) -> None:
    """Mean over runs of the cumulative risk against t, log-log (API progressive predictions)."""
    for n in present(records, s.name, names, "api_cumrisk"):
        rec = records[s.name][n]
        ax.plot(s.cps, np.mean(rec.api_cumrisk, axis=0), label=f"{n} ({len(rec.api_cumrisk)} runs)",
                **style(n))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("t")
    ax.set_ylabel("mean cumulative sum of (yhat_t - x_t' theta* [- b*])^2")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")


def slope_guides(ax, s: Setting, y0: float) -> None:
    x0 = np.log(s.T / 10)
    xs = np.array([x0, np.log(s.T)])
    ax.plot(xs, y0 + 0.5 - (xs - x0), color="black", linewidth=0.8, linestyle=":",
            label="slope -1")
    ax.plot(xs, y0 + 0.5 - 0.5 * (xs - x0), color="gray", linewidth=0.8, linestyle=":",
            label="slope -1/2")


def plot_all(out: Path, records: dict, settings: dict[str, Setting], headline: dict[str, list],
             rec_name: str, long_methods: list[str]) -> list[Path]:
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    paths = []
    short = [k for k in ("square", "quantile") if k in settings]

    fig, axes = plt.subplots(1, len(short), figsize=(6.5 * len(short), 5), squeeze=False)
    for ax, sname in zip(axes[0], short):
        names = [n for n in dict.fromkeys(headline[sname])
                 if n in records[sname] and final_values(records[sname][n])[0]]
        ax.boxplot([final_values(records[sname][n])[0] for n in names],
                   tick_labels=[n.replace("saew-", "saew\n") for n in names])
        if sname == "square":
            ax.axhline(LASSO_REF, color="green", linestyle="--",
                       label="batch Lasso+CV (paper) -8.8")
            ax.legend(loc="upper right", fontsize=8)
        ax.set_title(f"{sname}: ln ||theta_hat_T - theta*||^2 at T = {settings[sname].T}, "
                     f"{settings[sname].runs} fresh runs"
                     + (" (theta and intercept)" if sname == "quantile" else ""), fontsize=9)
        ax.set_ylabel("ln squared L2 error")
        ax.tick_params(axis="x", labelsize=7, rotation=45)
    paths.append(save_figure(fig, out / "fig1_boxplots.png"))

    fig, axes = plt.subplots(1, len(short), figsize=(6.5 * len(short), 5), squeeze=False)
    for ax, sname in zip(axes[0], short):
        if sname == "square":
            ax.axhline(LASSO_REF, color="green", linestyle="--", linewidth=0.8, label="Lasso -8.8")
        curve_panel(ax, records, settings[sname], headline[sname],
                    f"{sname} (Python API, {settings[sname].runs} fresh runs)")
    paths.append(save_figure(fig, out / "fig2_curves.png"))

    fig, axes = plt.subplots(1, len(short), figsize=(6.5 * len(short), 5), squeeze=False)
    for ax, sname in zip(axes[0], short):
        cumrisk_panel(ax, records, settings[sname], headline[sname],
                      f"{sname}: cumulative risk (API progressive predictions)")
    paths.append(save_figure(fig, out / "fig3_cumulative_risk.png"))

    if "small" in settings and records["small"]:
        s = settings["small"]
        fig, axes = plt.subplots(1, 2, figsize=(13, 5))
        cumrisk_panel(axes[0], records, s, headline["small"],
                      f"small: d0 = d = 2, sigma = {s.sigma:g}, T = {s.T}: cumulative risk")
        curve_panel(axes[1], records, s, headline["small"],
                    f"small: ln error ({s.runs} fresh runs)")
        paths.append(save_figure(fig, out / "fig4_small.png"))

    longs = [k for k in ("long", "long-quantile") if k in settings and records[k]]
    if longs:
        fig, axes = plt.subplots(1, len(longs), figsize=(7.5 * len(longs), 5.5), squeeze=False)
        for ax, sname in zip(axes[0], longs):
            s = settings[sname]
            boa = np.mean(records[sname]["boa"].curves, axis=0)
            slope_guides(ax, s, boa[np.searchsorted(s.cps, s.T / 10)])
            curve_panel(ax, records, s, long_methods,
                        f"{sname}: d = {s.d}, T = {s.T}, {s.runs} fresh runs")
        paths.append(save_figure(fig, out / "fig5_long_curves.png"))

        fig, axes = plt.subplots(1, len(longs), figsize=(7.5 * len(longs), 5), squeeze=False)
        for ax, sname in zip(axes[0], longs):
            s = settings[sname]
            names = present(records, sname, long_methods)
            data = [[slope(s.cps, c, s.T) for c in records[sname][n].curves] for n in names]
            ax.boxplot(data, tick_labels=[n.replace("saew-", "saew\n") for n in names])
            ax.axhline(-1.0, color="green", linewidth=0.8, label="-1 (fast rate)")
            ax.axhline(-0.5, color="olive", linewidth=0.8, label="-1/2 (slow rate)")
            ax.set_ylabel("per-run slope of ln error vs ln t over [T/10, T]")
            ax.set_title(f"{sname}: log-log slopes over the last decade", fontsize=9)
            ax.tick_params(axis="x", labelsize=7, rotation=45)
            ax.legend(fontsize=7)
        paths.append(save_figure(fig, out / "fig6_long_slopes.png"))

        fig, axes = plt.subplots(1, len(longs), figsize=(7.5 * len(longs), 5.5), squeeze=False)
        for ax, sname in zip(axes[0], longs):
            cumrisk_panel(ax, records, settings[sname], long_methods,
                          f"{sname}: cumulative risk (API progressive predictions)")
        paths.append(save_figure(fig, out / "fig7_long_cumrisk.png"))

    fig, axes = plt.subplots(1, len(settings), figsize=(5 * len(settings), 4.2), squeeze=False)
    for ax, sname in zip(axes[0], settings):
        for center, color in (("average", "tab:blue"), ("last", "tab:red")):
            xs, med, lo, hi = [], [], [], []
            for C in sorted({float(n.split("-C")[1].split("-")[0]) for n in records[sname]
                             if n.startswith("saew-C") and n.count("-") == 2}):
                rec = records[sname].get(f"saew-C{C:g}-{center}")
                if rec is None or not rec.curves:
                    continue
                q = np.percentile([c[-1] for c in rec.curves], [25, 50, 75])
                xs.append(C)
                lo.append(q[0])
                med.append(q[1])
                hi.append(q[2])
            ax.plot(xs, med, "o-", color=color, label=f"center {center} (median, IQR)")
            ax.fill_between(xs, lo, hi, color=color, alpha=0.15)
        for n, ls in (("boa", "--"), ("boa-average", ":")):
            ax.axhline(np.median([c[-1] for c in records[sname][n].curves]), color="black",
                       linestyle=ls, label=f"{n} median")
        ax.set_xscale("log", base=2)
        label_axes(ax, "--saew_C", "ln error at T", f"{sname} (fresh runs)")
    paths.append(save_figure(fig, out / "fig_defaults.png"))
    return paths


# --- main ----------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=30, help="runs of the T = 2000 settings")
    p.add_argument("--small_runs", type=int, default=30, help="runs of the small setting")
    p.add_argument("--small_T", type=int, default=10_000,
                   help="horizon of the small setting (d0 = d = 2, sigma = 0.3)")
    p.add_argument("--long_runs", type=int, default=30, help="at most this many long runs")
    p.add_argument("--long_minutes", type=float, default=12.0,
                   help="time budget of the long-horizon sweeps (long and long-quantile run "
                        "by turns; no new round starts after it)")
    p.add_argument("--long_T", type=int, default=100_000)
    p.add_argument("--calib_runs", type=int, default=10,
                   help="CLI runs of --saew_calibrate per T = 2000 setting (about 3 s each)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 3 runs, C in {2, 0.5}, long T = 1e4 for 1 minute")
    p.add_argument("--tune_runs", type=int, default=10,
                   help="runs per setting of the sweeps that choose SAEW's defaults, the SGD "
                        "rate and RDA's (lam, gamma)")
    p.add_argument("--tune_seed", type=int, default=0,
                   help="seed set of the tuning runs (0: the runs that chose the defaults)")
    p.add_argument("--seed", type=int, default=1,
                   help="seed set of the reported runs (fresh: not --tune_seed)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--skip_long", action="store_true")
    p.add_argument("--replot", action="store_true",
                   help=f"redo figures and summary from the last run's state ({PICKLE})")
    args = p.parse_args(argv)
    if args.quick:
        args.runs = min(args.runs, 3)
        args.small_runs = min(args.small_runs, 3)
        args.small_T = min(args.small_T, 2000)
        args.long_T = min(args.long_T, 10_000)
        args.long_minutes = min(args.long_minutes, 1.0)
        args.calib_runs = min(args.calib_runs, 1)
        args.tune_runs = min(args.tune_runs, 2)
    if args.seed == args.tune_seed:
        p.error("--seed must differ from --tune_seed: the reported runs must be fresh")
    return args


DEFAULT_SETTINGS = ("square", "quantile", "long", "long-quantile")  # where defaults are chosen


def make_settings(args) -> dict[str, Setting]:
    settings = {
        "square": Setting("square", 500, 2000, False, 1.0, args.runs, args.seed),
        "quantile": Setting("quantile", 500, 2000, True, 1.1, args.runs, args.seed),
        "small": Setting("small", 2, args.small_T, False, 1.0, args.small_runs, args.seed,
                         d0=2, sigma=SMALL_SIGMA, matrix=True),
    }
    if not args.skip_long:
        settings["long"] = Setting("long", 100, args.long_T, False, 1.0, args.long_runs,
                                   args.seed, long=True, matrix=True)
        settings["long-quantile"] = Setting("long-quantile", 100, args.long_T, True, 1.1,
                                            args.long_runs, args.seed, long=True, matrix=True)
    return settings


def tune(runner: Runner, settings: dict[str, Setting], args, c_grid, sgd_grid,
         timing: dict) -> tuple[dict, dict, dict]:
    """On the tuning seed set: SAEW's (C, center) sweep (the settings of DEFAULT_SETTINGS), the
    SGD rate and RDA's (lam, gamma) of every setting. The chosen SGD and RDA join each setting's
    methods as "sgd" and "rda"."""
    tuning: dict[str, dict[str, Record]] = {k: {} for k in settings}
    sgd_best, rda_best = {}, {}
    for sname, s in settings.items():
        t0 = time.perf_counter()
        methods = {f"sgd-l{lr:g}": {"learning_rate": lr} for lr in sgd_grid}
        if sname in DEFAULT_SETTINGS:
            methods.update({n: o for n, o in s.methods.items() if n.count("-") == 2
                            and n.startswith("saew-C")})
        tune_s = Setting(s.name, s.d, s.T, s.quantile, s.radius, args.tune_runs, args.tune_seed,
                         s.long, methods, s.cps, s.d0, s.sigma, s.matrix)
        run_sweep(runner, [tune_s], tune_s.runs, None, tuning, None)
        sgd = {n: np.median([c[-1] for c in tuning[sname][n].curves]) for n in methods
               if n.startswith("sgd-l")}
        sgd_best[sname] = min(sgd, key=sgd.get)
        pair, table = tune_rda(s, args.tune_runs, args.tune_seed)
        rda_best[sname] = {"lam": pair[0], "gamma": pair[1], "medians": table}
        progress(f"{sname}: tuned sgd {sgd_best[sname]}, rda lam {pair[0]:g} gamma {pair[1]:g}")
        s.methods = {"sgd": {"learning_rate": float(sgd_best[sname][5:])},
                     "rda": {"rda_lam": pair[0], "rda_gamma": pair[1]}, **s.methods}
        timing[f"{sname} tuning"] = time.perf_counter() - t0
    return tuning, sgd_best, rda_best


def main(argv=None) -> int:
    args = parse_args(argv)
    wall0 = time.perf_counter()
    if args.replot:
        with open(PICKLE, "rb") as f:
            state = pickle.load(f)
        args.out.mkdir(parents=True, exist_ok=True)
        return report(args, argv, *state)
    try:
        snapshot, digest = snapshot_olearn("saew")
    except RuntimeError as exc:
        sys.exit(f"error: {exc}")
    olearn = import_snapshot(snapshot)
    args.out.mkdir(parents=True, exist_ok=True)
    c_grid = (2.0, 0.5) if args.quick else C_GRID
    sgd_grid = (0.3, 1.0) if args.quick else SGD_GRID
    settings = make_settings(args)
    for s in settings.values():
        s.methods = sweep_methods(s, args.quick, c_grid, sgd_grid)
        s.cps = checkpoints(s.T, s.long)
    records: dict[str, dict[str, Record]] = {k: {} for k in settings}
    timing = {}
    with tempfile.TemporaryDirectory(prefix="saew-experiment-") as tmp:
        workdir = Path(tmp)
        runner = Runner(olearn, snapshot, workdir)
        progress("warm-up (compiles numba kernels for a new snapshot)")
        t0 = time.perf_counter()
        runner.indices(500)
        warm = make_data(50, 50, 0)[:2]
        for s in settings.values():
            for opts in list(s.methods.values())[:1] + [{"eg": True}, {"boa": True},
                                                         {"saew": True, "saew_sub": "eg"},
                                                         {"saew_calibrate": True}]:
                olearn.Learner(**{**s.base(), **opts}).fit(vw_lines(*warm))
                olearn.Learner(**{**s.base(), **opts}).fit(*warm)
        timing["warm-up"] = time.perf_counter() - t0

        tuning, sgd_best, rda_best = tune(runner, settings, args, c_grid, sgd_grid, timing)
        scored_best, default_rows = choose_defaults(
            tuning, [k for k in DEFAULT_SETTINGS if k in settings], c_grid)
        _, rec_C, rec_center, _ = scored_best
        rec_name = f"saew-C{rec_C:g}-{rec_center}"
        progress(f"recommended: {rec_name}")

        caches = {}
        for sname in ("square", "quantile", "small"):
            s = settings[sname]
            t0 = time.perf_counter()
            caches[sname] = {}
            run_sweep(runner, [s], s.runs, None, records, caches[sname])
            timing[f"{sname} API sweep"] = time.perf_counter() - t0

        headline = {}
        for sname in ("square", "quantile"):
            s = settings[sname]
            cli_methods = {"sgd": s.methods["sgd"], "boa": s.methods["boa"],
                           rec_name: s.methods[rec_name],
                           "calibrated": {"saew_calibrate": True}}
            t0 = time.perf_counter()
            run_cli(runner, s, s.runs, records, cli_methods, args.calib_runs, caches[sname],
                    workdir)
            timing[f"{sname} CLI runs"] = time.perf_counter() - t0
            caches[sname].clear()
        for sname in settings:
            headline[sname] = ["sgd", "eg", "rda", "boa", "boa-average", rec_name, "calibrated"]
        longs = [settings[k] for k in ("long", "long-quantile") if k in settings]
        if longs:
            t0 = time.perf_counter()
            n = run_sweep(runner, longs, args.long_runs, t0 + 60 * args.long_minutes, records,
                          None)
            for s in longs:
                s.runs = n
            timing["long + long-quantile API sweep"] = time.perf_counter() - t0

    timing["total"] = time.perf_counter() - wall0
    state = (settings, records, headline, rec_name, default_rows, scored_best, sgd_best,
             rda_best, timing, digest, snapshot)
    with open(PICKLE, "wb") as f:
        pickle.dump(state, f)
    return report(args, argv, *state)


def report(args, argv, settings, records, headline, rec_name, default_rows, scored_best,
           sgd_best, rda_best, timing, digest, snapshot) -> int:
    out = args.out
    c_grid = sorted({float(n.split("-C")[1].split("-")[0]) for n in records["square"]
                     if n.startswith("saew-C") and n.count("-") == 2}, reverse=True)
    progress("counting SAEW sessions on the first runs")
    sessions = session_counts(import_snapshot(snapshot), settings, c_grid)
    plots = plot_all(out, records, settings, headline, rec_name,
                     ["sgd", "rda", "boa", "boa-average", "saew-C16-last", "saew-C2-last",
                      rec_name, f"{rec_name}-outaverage", "calibrated"])
    text, results = summary(args, argv, settings, records, rec_name, default_rows, scored_best,
                            sgd_best, rda_best, timing, plots, digest, snapshot, sessions)
    (out / "summary.md").write_text(text)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    print(text)
    return 0


def final_values(rec: Record) -> tuple[list, str]:
    if rec.cli_final:
        return rec.cli_final, "CLI"
    return [c[-1] for c in rec.curves], "API"


def comparison(results: dict, settings: dict, rec_name: str) -> list[str]:
    """Where SAEW (the recommended fixed parameters, and calibrated) beats each baseline: the
    difference of medians and the runs it ends below the baseline (paired by run; calibrated
    by the CLI has fewer runs), in final ln error and in cumulative risk at T."""
    L = ["## Where SAEW beats the baselines (fresh seeds)\n",
         "Final ln error: difference of medians (SAEW minus baseline; negative: SAEW better) and "
         "runs where SAEW ends below the baseline. Cumulative risk at T: ratio of medians "
         "(SAEW / baseline) and runs below.\n",
         "| setting | SAEW | baseline | ln error: median diff | runs below | cum. risk: ratio "
         "| runs below |", "|---|---|---|---|---|---|---|"]
    for sname in settings:
        m = results["settings"].get(sname, {}).get("methods", {})
        for who in (rec_name, "calibrated"):
            if who not in m:
                continue
            for base in ("boa-average", "boa", "rda", "sgd", "eg"):
                if base not in m:
                    continue
                a, b = m[who]["final_ln_err"], m[base]["final_ln_err"]
                n = min(len(a), len(b))
                wins = sum(x < y for x, y in zip(a[:n], b[:n]))
                diff = float(np.median(a[:n]) - np.median(b[:n]))
                risk = ""
                if "api_cumrisk_T" in m[who] and "api_cumrisk_T" in m[base]:
                    ra, rb = m[who]["api_cumrisk_T"], m[base]["api_cumrisk_T"]
                    k = min(len(ra), len(rb))
                    risk = (f"{np.median(ra[:k]) / np.median(rb[:k]):.2f} | "
                            f"{sum(x < y for x, y in zip(ra[:k], rb[:k]))}/{k}")
                else:
                    risk = "n/a | n/a"
                L.append(f"| {sname} | {who} | {base} | {diff:+.2f} | {wins}/{n} | {risk} |")
    L.append("")
    return L


def summary(args, argv, settings, records, rec_name, default_rows, scored_best, sgd_best,
            rda_best, timing, plots, digest, snapshot, sessions):
    L = []
    results = {"settings": {}, "recommended": rec_name, "timing_s": timing}
    cmd = shlex.join(["python", "scripts/saew_experiment.py",
                      *[a for a in (argv or sys.argv[1:]) if a != "--replot"]])
    L.append("# SAEW paper, Section 5, with olearn (scripts/saew_experiment.py)\n")
    L.append(f"- command: `{cmd}` (from the repository root, with the project's venv)")
    L.append(f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}; total wall "
             f"{timing['total'] / 60:.1f} min; {os.cpu_count()} CPUs, load average "
             f"{os.getloadavg()[0]:.2f} at end; olearn sources sha1 {digest[:16]} (snapshot "
             f"{snapshot})")
    L.append(f"- protocol: SAEW's defaults (C, center), the SGD rate and RDA's (lam, gamma) are "
             f"chosen on seed set {args.tune_seed} ({args.tune_runs} runs per setting: 'Tuning' "
             f"below); every other number and figure is on the fresh seed set {args.seed}")
    lg = settings.get("long")
    sm = settings["small"]
    L.append("- data: X ~ N(0, I_d), theta* with d0 nonzeros (random support, N(0,1) values "
             "scaled to ||theta*||_1 = 1), noise N(0, sigma^2); square: d = 500, d0 = 5, "
             "sigma = 0.1, T = 2000, --noconstant; quantile: the same data, --loss_function "
             "quantile --quantile_tau 0.8 with the constant feature as intercept (true value "
             "0.1 Phi^-1(0.8) = 0.0842), error over theta and intercept, l1 methods with --radius "
             "1.1 (>= ||(theta*, b*)||_1 ~ 1.084); "
             f"small (the paper's Fig. 4): d0 = d = {sm.d}, sigma = {sm.sigma:g}, T = {sm.T} "
             "(the paper does not say its T), square loss, SAEW with --saew_d0 2, "
             f"{sm.runs} runs; "
             + (f"long (the paper's Figs. 5-7): d = 100, d0 = 5, sigma = 0.1, T = {lg.T}, square "
                f"loss, {lg.runs} runs (as many as fit in {args.long_minutes:g} min, long and "
                "long-quantile by turns); long-quantile: the long data with the quantile "
                f"setting's loss, intercept and radius, {settings['long-quantile'].runs} runs. "
                if lg else "long: not run. ")
             + "boa-average: --boa --saew_output average (the averaged estimator of the paper's "
             "long-horizon figures)")
    L.append("- metric: ln ||theta_hat - theta*||^2. In square and quantile, the finals of sgd / "
             "boa / the recommended SAEW / calibrated come from the CLI (`--invert_hash`, parsed "
             "by name) on VW text files (6 significant digits); every curve and all other finals "
             "from the Python API (partial fit up to 25 log-spaced checkpoints, `weights[:, 0]` "
             "after `sync()`; long settings add 40 checkpoints in [T/10, T]), on the same text "
             "lines in square and quantile and on the numpy matrices in small, long and "
             "long-quantile (where calibrated SAEW runs by the API too). The exported theta is "
             "the instantaneous iterate unless the name says -outaverage / -outsparse. "
             "Cumulative risk: sum_t (yhat_t - x_t' theta* [- b*])^2 over the progressive "
             "predictions (each example predicted before it is learnt; API, and the CLI's `-p` "
             "for the CLI methods' table line).")
    L.append("- sgd = olearn's default learner (adaptive, normalized, invariant GD) with -l "
             "tuned over " + ", ".join(f"{x:g}" for x in (SGD_GRID if not args.quick else (0.3, 1)))
             + " on the tuning seeds: " + "; ".join(f"{k}: {v}" for k, v in sgd_best.items()))
    L.append("- rda = l1-RDA (Xiao 2010; scripts/saew_rda.py, plain numpy on the unrounded "
             "matrices; square loss 0.5 (yhat - y)^2 or pinball 0.8 with a column of ones as "
             "intercept; no l1 ball: it is not told ||theta*||_1), (lam, gamma) tuned over "
             f"lam in {{{', '.join(f'{x:g}' for x in RDA_LAM)}}} x gamma in "
             f"{{{', '.join(f'{x:g}' for x in RDA_GAMMA)}}} on the tuning seeds (the best "
             "median final ln error among the pairs whose cumulative risk stays below the zero "
             "predictor's): "
             + "; ".join(f"{k}: lam {v['lam']:g}, gamma {v['gamma']:g}"
                         for k, v in rda_best.items()))
    L.append(f"- calibrated = `--saew_calibrate` with none of d0/alpha/radius/B given (square and "
             f"quantile: CLI only, first {args.calib_runs} runs, no curve; small and long: API, "
             "every run)")
    diffs = [d for s in records.values() for r in s.values() for d in r.api_cli_diff]
    if diffs:
        L.append(f"- CLI vs API check at T: max |theta_api - theta_cli| over {len(diffs)} runs = "
                 f"{max(diffs):.2e} (the --invert_hash file has 6 significant digits)")
    L.append("")
    for sname, s in settings.items():
        recs = records[sname]
        L.append(f"## {sname}: ln error at T = {s.T} ({s.runs} runs)\n")
        ref = sname == "square"
        L.append("| method | source | n | median | IQR | mean |"
                 + (" median - (-8.8) |" if ref else "") + " slope [T/10,T] | cum. risk at T |")
        L.append("|---|---|---|---|---|---|" + ("---|" if ref else "") + "---|---|")
        rows = {}
        order = sorted(recs, key=lambda n: np.median(final_values(recs[n])[0])
                       if final_values(recs[n])[0] else 1e9)
        for n in order:
            vals, src = final_values(recs[n])
            if not vals:
                continue
            st = stats(vals)
            sl = (slope(s.cps, np.mean(recs[n].curves, axis=0), s.T) if recs[n].curves
                  else float("nan"))
            sl_runs = ([slope(s.cps, c, s.T) for c in recs[n].curves] if recs[n].curves else [])
            st["slope_mean_curve"] = sl
            st["slope_runs_median"] = float(np.median(sl_runs)) if sl_runs else None
            st["source"] = src
            st["final_ln_err"] = [float(v) for v in vals]
            if recs[n].cumrisk:
                st["cumrisk_T_median"] = float(np.median([c[-1] for c in recs[n].cumrisk]))
            if recs[n].api_cumrisk:
                st["api_cumrisk_T"] = [float(c[-1]) for c in recs[n].api_cumrisk]
                st["api_cumrisk_T_median"] = float(np.median(st["api_cumrisk_T"]))
            if recs[n].cli_seconds:
                st["cli_seconds_median"] = float(np.median(recs[n].cli_seconds))
            st["api_seconds_per_run"] = recs[n].seconds / max(len(recs[n].curves), 1)
            rows[n] = st
            L.append(f"| {n} | {src} | {st['n']} | {fmt(st['median'])} | [{fmt(st['q25'])}, "
                     f"{fmt(st['q75'])}] | {fmt(st['mean'])} |"
                     + (f" {fmt(st['median'] - LASSO_REF):>5} |" if ref else "")
                     + f" {fmt(sl)} | {st.get('api_cumrisk_T_median', float('nan')):.3g} |")
        results["settings"][sname] = {"d": s.d, "T": s.T, "runs": s.runs, "methods": rows}
        if any(recs[n].cumrisk for n in recs):
            L.append("\nCumulative risk at T by the CLI's -p (median over runs): " + ", ".join(
                f"{n} {np.median([c[-1] for c in recs[n].cumrisk]):.3g}"
                for n in recs if recs[n].cumrisk))
        L.append("")

    L.extend(comparison(results, settings, rec_name))
    # defaults evidence
    L.append(f"## Tuning (seed set {args.tune_seed}, {args.tune_runs} runs per setting)\n")
    L.append("SAEW's defaults: median ln error at T; BOA subroutine, d0 = 5\n")
    tuned = [k for k in DEFAULT_SETTINGS if k in settings]
    L.append("| C | center | " + " | ".join(tuned) + " | worst gap to best |")
    L.append("|---|---|" + "---|" * len(tuned) + "---|")
    for C, center, meds, gap in default_rows:
        L.append(f"| {C:g} | {center} | " + " | ".join(fmt(meds.get(k)) for k in tuned)
                 + f" | {fmt(gap)} |")
    L.append("")
    L.append("RDA: the five best (lam, gamma) pairs by median ln error at T; * marks an "
             "unstable pair (cumulative risk above the zero predictor's in a tuning run), which "
             "is not chosen (full table in results.json)\n")
    L.append("| setting | pairs (lam, gamma): median |")
    L.append("|---|---|")
    for sname, v in rda_best.items():
        top = sorted(v["medians"].items(), key=lambda kv: kv[1])[:5]
        L.append(f"| {sname} | " + "; ".join(f"({k}): {fmt(x)}" for k, x in top) + " |")
    results["rda_tuning"] = rda_best
    L.append("")
    names = list(settings)
    L.append("Sessions started by T (SAEW restarts; 0 = identical to BOA), first 3 runs "
             "(long: first run):\n")
    L.append("| C | center | " + " | ".join(names) + " |")
    L.append("|---|---|" + "---|" * len(names))
    for C, center, _, _ in default_rows:
        key = f"saew-C{C:g}-{center}"
        L.append(f"| {C:g} | {center} | " + " | ".join(
            ",".join(str(v) for v in sessions.get(k, {}).get(key, [])) for k in names) + " |")
    results["sessions"] = sessions
    same = [(k, n) for k in names for n in ("saew-C16-average", "saew-C16-last")
            if n in records[k] and records[k][n].curves]
    diffs = []
    for k, n in same:
        diff = max(abs(a[-1] - b[-1]) for a, b in zip(records[k][n].curves,
                                                       records[k]["boa"].curves))
        diffs.append(f"{k} {n} {diff:.2g}")
    if diffs:
        L.append("\nmax over runs of |ln err(SAEW C = 16) - ln err(BOA)| at T: " + "; ".join(diffs))
    L.append("")
    L.append("BOA for comparison: " + ", ".join(
        f"{k} {np.median([c[-1] for c in records[k]['boa'].curves]):.2f}" for k in names))
    L.append("")
    extra = []
    for sname in names:
        for n, rec in records[sname].items():
            if ("-eg-" in n or "-out" in n or "-d0" in n) and rec.curves:
                v = [c[-1] for c in rec.curves]
                extra.append(f"| {sname} | {n} | {np.median(v):.2f} | "
                             f"[{np.percentile(v, 25):.2f}, {np.percentile(v, 75):.2f}] |")
    if extra:
        L.append("Variants (subroutine EG, exported output, d0):\n")
        L.append("| setting | variant | median | IQR |")
        L.append("|---|---|---|---|")
        L.extend(extra)
        L.append("")
    L.append(f"**Recommended: `{rec_name}`** (--saew_C {scored_best[1]:g} --saew_center "
             f"{scored_best[2]}): the smallest worst-case gap ({scored_best[0]:.2f}) to the best "
             f"(C, center) pair over {', '.join(tuned)} (tuning seeds).\n")
    L.append("## Runtime\n")
    L.append("| phase | seconds |")
    L.append("|---|---|")
    for k, v in timing.items():
        L.append(f"| {k} | {v:.0f} |")
    L.append("")
    L.append("## Figures\n")
    for p in plots:
        L.append(f"![{p.stem}]({p.name})")
    L.append("")
    return "\n".join(L) + "\n", results


if __name__ == "__main__":
    sys.exit(main())
