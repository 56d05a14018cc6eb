"""Focused SAEW measurements on fresh seeds (issue 15): robust sparsity and calibration.

Each check runs a few methods on the SAEW paper's synthetic data (scripts/saew_experiment.py's
``make_data``, drawn from a seed set of its own: ``--seed``), through the Python API on numpy
matrices (no text rounding), and records ln ||theta_hat - theta*||^2 (with the intercept in the
quantile settings) at log-spaced checkpoints. Results go to ``<out>/checks-<check>.json`` and a
markdown table on stdout.

Checks:

* ``robust``: the quantile long horizon (d = 100, tau = 0.8, the constant as intercept, radius
  1.1): SAEW with default options against BOA's iterate and BOA's average. A run is
  *catastrophic* when SAEW's final error is above BOA's (iterate or average).
* ``regrow``: the square and quantile long horizons, SAEW's --saew_regrow (without the floor)
  and --saew_regrow_floor (the default) with d0 = 5 and with d0 = 3 (fewer than theta*'s 5
  nonzeros: the truncation must err).
* ``calib``: square and quantile (d = 500, T = 2000): calibrated SAEW against BOA and SAEW at
  fixed parameters.
* ``floor``: the paper's square and quantile settings (d = 500, T = 2000), SAEW's sparse output
  (--saew_C 0.5, --saew_center last, radius 1; 1.1 with the quantile's intercept) with d0 = 5, 2
  and 20 (right, too small, too large) under the default --saew_regrow_floor (and 20), the earlier
  default (--saew_regrow 0.75 without the floor) and the paper's exact d0.

``--plot JSON`` draws a check's saved results instead: per setting, the median ln error of each
method against t (log-log, the slope is the rate), and for the ``floor`` check a panel per d0.

Usage: python scripts/saew_checks.py robust|regrow|calib|floor [--runs 30] [--T 100000] [--seed 1]
       [--methods a,b] [--out experiments/saew]
       python scripts/saew_checks.py --plot experiments/saew/checks-floor-seed14.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from saew_experiment import OUT, PHI_INV_TAU, SIGMA, TAU, ln_err, make_data, stats

QUANTILE = {"loss_function": "quantile", "quantile_tau": TAU, "radius": 1.1}
SQUARE = {"noconstant": True}
CHECKS = {
    "robust": {"settings": {"quantile-long": (100, 100_000, QUANTILE)},
               "methods": {"boa": {"boa": True}, "boa-average": {"boa": True,
                                                                 "saew_output": "average"},
                           "saew": {"saew": True}, "saew-exact-d0": {"saew": True,
                                                                     "saew_regrow_floor": 0.0}}},
    "regrow": {"settings": {"square-long": (100, 100_000, SQUARE),
                            "quantile-long": (100, 100_000, QUANTILE)},
               "methods": {"boa": {"boa": True}, "boa-average": {"boa": True,
                                                                 "saew_output": "average"},
                           **{f"saew-d0{d0}-regrow{g:g}": {"saew": True, "saew_d0": d0,
                                                           "saew_regrow": g,
                                                           "saew_regrow_floor": 0.0}
                              for d0 in (3, 5) for g in (0.0, 0.5, 0.75, 1.0)},
                           **{f"saew-d0{d0}-floor{f:g}": {"saew": True, "saew_d0": d0,
                                                          "saew_regrow_floor": f}
                              for d0 in (3, 5) for f in (20.0, 50.0, 100.0)}}},
    "calib": {"settings": {"square": (500, 2000, SQUARE), "quantile": (500, 2000, QUANTILE)},
              "methods": {"boa": {"boa": True}, "boa-average": {"boa": True,
                                                                 "saew_output": "average"},
                          "saew": {"saew": True}, "saew-exact-d0": {"saew": True,
                                                                    "saew_regrow_floor": 0.0},
                          "saew-C1": {"saew": True, "saew_C": 1.0},
                          "saew-C0.25": {"saew": True, "saew_C": 0.25},
                          "calibrated": {"saew_calibrate": True}}},
    "floor": {"settings": {"square": (500, 2000, {**SQUARE, "radius": 1.0}),
                           "quantile": (500, 2000, QUANTILE)},
              "methods": {f"saew-d0{d0}-{name}": {"saew": True, "saew_C": 0.5,
                                                  "saew_center": "last",
                                                  "saew_output": "sparse", "saew_d0": d0,
                                                  **rule}
                          for d0 in (5, 2, 20)
                          for name, rule in (("floor50", {}),
                                             ("floor20", {"saew_regrow_floor": 20.0}),
                                             ("regrow0.75", {"saew_regrow": 0.75,
                                                             "saew_regrow_floor": 0.0}),
                                             ("exact", {"saew_regrow_floor": 0.0}))}},
}


def checkpoints(T: int) -> np.ndarray:
    return np.unique(np.round(np.geomspace(100, T, 30)).astype(int))


def run_method(olearn, X, y, opts: dict, cps: np.ndarray, intercept: bool) -> np.ndarray:
    """theta_hat (and the intercept) at each checkpoint."""
    from olearn.data.hashing import CONSTANT_HASH
    from olearn.data.matrices import column_indices
    learner = olearn.Learner(**opts)
    config = learner.config
    idx = column_indices(X.shape[1], config).astype(np.int64)
    if intercept:
        idx = np.append(idx, CONSTANT_HASH & config.mask)
    out = np.empty((len(cps), len(idx)))
    prev = 0
    for k, c in enumerate(cps):
        learner.fit(X[prev:c], y[prev:c])
        prev = c
        learner._learner.sync()
        out[k] = learner._learner.weights[idx, 0]
    return out


def plot(path: Path) -> Path:
    """The median curves of a saved check, next to its JSON (``.png``): a row per setting, and
    for the ``floor`` check a panel per d0."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    results = json.loads(path.read_text())
    rows = []  # per setting: (d0 or "", its methods)
    for r in results["settings"].values():
        groups: dict[str, list[str]] = {}
        for m in r["curves"]:
            d0 = m.split("-")[1][2:] if "floor" in path.name and m.startswith("saew-d0") else ""
            groups.setdefault(d0, []).append(m)
        rows.append(list(groups.items()))
    width = max(len(row) for row in rows)
    fig, axes = plt.subplots(len(rows), width, figsize=(4.2 * width, 3.4 * len(rows)),
                             squeeze=False)
    for (name, r), row, panel_row in zip(results["settings"].items(), rows, axes):
        for ax, (d0, methods) in zip(panel_row, row):
            for m in methods:
                ax.plot(r["checkpoints"], np.median(np.array(r["curves"][m]), axis=0), label=m)
            ax.set_xscale("log")
            ax.set_xlabel("t")
            ax.set_ylabel("median ln ||θ̂ - θ*||²")
            title = f"{name}, d0 = {d0}" if d0 else name
            ax.set_title(f"{title} (d = {r['d']}, {r['runs']} runs)", fontsize=9)
            ax.legend(fontsize=7)
        for ax in panel_row[len(row):]:
            ax.axis("off")
    fig.tight_layout()
    out = path.with_suffix(".png")
    fig.savefig(out, dpi=80)
    return out


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--plot"] and len(argv) == 2:
        print(f"(written {plot(Path(argv[1]))})")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("check", choices=sorted(CHECKS))
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--T", type=int, default=0, help="horizon (0: the setting's)")
    ap.add_argument("--seed", type=int, default=1, help="seed set (the tuning runs used 0)")
    ap.add_argument("--methods", default="", help="comma-separated subset of the methods")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--tag", default="", help="suffix of the JSON file")
    args = ap.parse_args(argv)
    import olearn
    spec = CHECKS[args.check]
    methods = {k: v for k, v in spec["methods"].items()
               if not args.methods or k in args.methods.split(",")}
    results = {"argv": sys.argv, "olearn": olearn.__file__, "settings": {}}
    for name, (d, T, base) in spec["settings"].items():
        T = args.T or T
        quantile = "loss_function" in base
        cps = checkpoints(T)
        curves: dict[str, list] = {m: [] for m in methods}
        seconds = {m: 0.0 for m in methods}
        for r in range(args.runs):
            X, y, theta = make_data(d, T, r, seed=args.seed)
            truth = np.append(theta, SIGMA * PHI_INV_TAU) if quantile else theta
            for m, opts in methods.items():
                start = time.perf_counter()
                est = run_method(olearn, X, y, {"quiet": True, **base, **opts}, cps, quantile)
                seconds[m] += time.perf_counter() - start
                curves[m].append(ln_err(est, truth).tolist())
            print(f"{name} run {r + 1}/{args.runs}: "
                  + ", ".join(f"{m} {c[-1][-1]:.2f}" for m, c in curves.items()),
                  file=sys.stderr, flush=True)
        results["settings"][name] = {"d": d, "T": T, "runs": args.runs,
                                     "checkpoints": cps.tolist(), "curves": curves,
                                     "seconds": seconds}
        print(f"\n### {name} (d = {d}, T = {T}, {args.runs} runs, seed set {args.seed})\n")
        print("| method | median | IQR | max | worst drop | s/run |\n|---|---|---|---|---|---|")
        for m, c in curves.items():
            a = np.array(c)
            s = stats(a[:, -1])
            drop = float(np.max(a[:, -1] - a.min(axis=1)))  # final minus the run's best so far
            print(f"| {m} | {s['median']:.2f} | [{s['q25']:.2f}, {s['q75']:.2f}] | "
                  f"{a[:, -1].max():.2f} | {drop:.2f} | {seconds[m] / args.runs:.1f} |")
        if "boa" in curves:
            boa = np.array(curves["boa"])[:, -1]
            ref = np.maximum(boa, np.array(curves.get("boa-average", curves["boa"]))[:, -1])
            for m, c in curves.items():
                if m.startswith("saew"):
                    final = np.array(c)[:, -1]
                    print(f"\n{m}: runs ending above BOA's iterate {int((final > boa).sum())}, "
                          f"above both BOA's iterate and average {int((final > ref).sum())}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"checks-{args.check}{args.tag}.json"
    path.write_text(json.dumps(results))
    print(f"\n(written {path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
