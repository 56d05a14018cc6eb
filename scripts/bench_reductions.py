"""Time olearn's reductions and learners against VW's and write the "Reductions and learners"
section of BENCHMARKS.md (between its markers; scripts/bench.py keeps the section).

Each row runs olearn and VW (``python -m vowpalwabbit``) with the same options on the same
generated file (scripts/make_data.py: a 10-class problem written as each reduction's labels, or
the regression data), once untimed (it gives each tool's average loss and warms the caches),
then ``--runs`` times each, alternated; the report gives the median wall times, their ratio and
the losses. Multi-pass rows give each tool its own cache file.

    .venv/bin/python scripts/bench_reductions.py      # about 15 minutes on 2 cores
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import Timing, environment, find_tools, log, time_commands  # noqa: E402
from bench_dask import write_section  # noqa: E402
from make_data import generate, generate_classes  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- reductions-bench begin -->", "<!-- reductions-bench end -->"
TARGET = 1.0  # olearn / VW wall time (issue 31: each reduction at most VW's time)
CLASSES = 10
FEATURES = 20
# The generated inputs: name -> (examples, labels; "regression" for make_data's default).
# 200k examples: about a second per run, so that start-up (0.15-0.2 s for either tool) does
# not decide the ratio.
INPUTS = {"class": (200_000, "class"), "binary": (200_000, "binary"),
          "costs": (200_000, "costs"), "lists": (200_000, "lists"),
          "actions": (40_000, "actions"), "regression": (200_000, "regression")}
# Each row: the input's name and the options both tools run with. CACHE marks a multi-pass
# row: each tool then reads its own cache file (their formats differ).
CACHE = "<cache>"
ROWS = (("class", f"--oaa {CLASSES}"),
        ("class", f"--oaa {CLASSES} --loss_function logistic --probabilities"),
        ("class", f"--oaa {CLASSES} --oaa_subsample 3"),
        ("costs", f"--csoaa {CLASSES}"),
        ("lists", f"--multilabel_oaa {CLASSES}"),
        ("actions", "--csoaa_ldf m"),
        ("actions", "--csoaa_ldf mc"),
        ("actions", "--wap_ldf mc"),
        ("binary", "--boosting 5"),
        ("binary", "--boosting 5 --alg adaptive"),
        ("regression", "--bootstrap 4"),
        ("regression", "--nn 10"),
        ("regression", "--nn 10 --inpass"),
        ("regression", "--autolink 3"),
        ("regression", "--ftrl"),
        ("regression", "--pistol"),
        ("regression", "--coin"),
        ("regression", "--freegrad"),
        ("regression", "--svrg"),
        ("regression", f"--bfgs --passes 5 {CACHE}"),
        ("regression", f"--conjugate_gradient --passes 5 {CACHE}"))


def inputs(folder: Path) -> dict[str, str]:
    """Generate the inputs (kept while present) and return their paths by name."""
    paths = {}
    for name, (examples, labels) in INPUTS.items():
        path = folder / f"reductions_{name}_{examples}.vw"
        if not path.exists():
            if labels == "regression":
                generate(str(path), examples, FEATURES, 1000, 1)
            else:
                generate_classes(str(path), examples, FEATURES, 1000, 1,
                                 2 if labels == "binary" else CLASSES, labels)
        paths[name] = str(path)
    return paths


def row_commands(tools, path: str, options: str, scratch: Path) -> dict[str, list[str]]:
    """Each tool's command for one row; a multi-pass row's cache file is the tool's own."""
    commands = {}
    for tool in tools:
        args = []
        for word in shlex.split(options):
            args += (["-k", "--cache_file", str(scratch / f"{tool.name}.cache")]
                     if word == CACHE else [word])
        commands[tool.name] = tool.command("-d", path, *args)
    return commands


def report(rows: list[tuple[str, str, Timing]], env: list[str], runs: int) -> str:
    """The section, between its markers."""
    lines = [BEGIN, "## Reductions and learners against VW (`scripts/bench_reductions.py`)", "",
             f"Median wall seconds of {runs} alternated runs "
             f"per tool, after an untimed run that gives the losses; target olearn ≤ {TARGET:g}× "
             f"VW. Inputs from `scripts/make_data.py` ({FEATURES} features per example): a "
             f"{CLASSES}-class problem written as each reduction's labels (`--classes "
             f"{CLASSES} --labels ...`; `actions`: {INPUTS['actions'][0]:,} examples of "
             f"{CLASSES} lines each), two classes as -1/1 (`binary`), or regression. "
             "Multi-pass rows (`-c`) read each tool's own cache file.", "",
             "| input | options | olearn s | VW s | olearn / VW | olearn loss | VW loss |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for name, options, timing in rows:
        ratio = timing.ratio()
        mark = "" if ratio is None or ratio <= TARGET else " ✗"
        shown = options.replace(CACHE, "-c")
        lines.append(f"| {name} ({INPUTS[name][0]:,}) | `{shown}` | "
                     f"{timing.median_s('olearn'):.2f} | {timing.median_s('VW'):.2f} | "
                     f"{ratio:.2f}{mark} | {timing.losses['olearn']} | {timing.losses['VW']} |")
    slower = [f"`{o.replace(CACHE, '-c')}`" for _, o, t in rows if (t.ratio() or 0) > TARGET]
    lines += ["", (f"Slower than VW: {', '.join(slower)}." if slower else
                   "Every row meets the target."), "", *(f"- {e}" for e in env), END]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per tool and row")
    parser.add_argument("--only", default="",
                        help="run only the rows whose options contain this text")
    parser.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    args = parser.parse_args()
    os.chdir(ROOT)
    tools = find_tools(no_vw=False)
    if len(tools) < 2:
        sys.exit("bench_reductions.py: VW (the vowpalwabbit package) is not installed")
    paths = inputs(ROOT / "data")
    scratch = ROOT / "data" / "reductions-scratch"
    scratch.mkdir(exist_ok=True)
    rows = []
    for name, options in ROWS:
        if args.only not in options:
            continue
        log(f"{options} on {name}: {args.runs} alternated runs per tool")
        timing = time_commands(row_commands(tools, paths[name], options, scratch), args.runs)
        rows.append((name, options, timing))
    write_section(report(rows, environment(), args.runs), Path(args.out), (BEGIN, END))
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
