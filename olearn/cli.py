"""The ``olearn`` command: options → Config → run. No learning logic lives here.

argparse rather than click: importing click cost ~14 ms of every run's start-up (a third of the
time a cached run spends learning); argparse costs ~3 ms.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys

from olearn.config import (FORMATS, HASHES, POLY_HEURISTICS, SAEW_CENTERS, SAEW_DEFAULTS,
                           SAEW_OUTPUTS, SAEW_SUBROUTINES, Config)
from olearn.errors import OlearnError, OptionError, OutputClosed
from olearn.io import cache
from olearn.io.atomic import STDOUT
from olearn.losses import BY_NAME as LOSSES
from olearn.optim.gd import LINKS

DESCRIPTION = """olearn: fast online learning with Vowpal Wabbit's input, options and output.

Examples:
  olearn -d train.vw                      one pass, progress table on stderr
  zcat train.vw.gz | olearn -p preds.txt  read stdin, write predictions
  olearn -d train.svm.gz --format svmlight
  olearn -d train.vw --audit              features of each example, as VW prints them
  olearn -d train.vw -c --passes 10       cache, holdout and early termination
  olearn -d train.vw --stage_poly --alpha 1   adaptive polynomial expansion (APPLE)
  olearn -d train.vw --saew --radius 1 --saew_d0 5   sparse exponential weights (SAEW)
  olearn -d 'part-*.vw.gz' --dask local:2 --passes 5 -f model.olearn"""
_METAVARS = {int: "INTEGER", float: "FLOAT", str: "TEXT"}


class UsageError(Exception):
    """A command line that does not parse (exit code 2, as VW and click)."""


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every cleanup (``finally``, ``except
    BaseException``) runs as for Ctrl-C: no temporary output is left behind."""


def _terminate(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse prints its usage and exits; we report one line
        raise UsageError(message)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """``-b, --bit_precision INTEGER`` (argparse repeats the metavar after every name)."""

    def __init__(self, prog: str):
        super().__init__(prog, max_help_position=32,
                         width=min(100, shutil.get_terminal_size().columns - 2))

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if not action.option_strings or action.nargs == 0:
            return super()._format_action_invocation(action)
        return f"{', '.join(action.option_strings)} {action.metavar}"


def parser() -> tuple[argparse.ArgumentParser, dict]:
    """The command line's parser, and every option's default (the parser itself leaves options
    not given out of its result, so that models know which options the user typed)."""
    parser = _Parser(prog="olearn", usage="olearn [OPTIONS] [PATH]...", description=DESCRIPTION,
                     formatter_class=_Formatter, add_help=False, allow_abbrev=False)
    parser.add_argument("paths", nargs="*", default=[], metavar="PATH",
                        help="Example files, read after the -d ones.")
    defaults: dict = {}

    def add(*names: str, help: str, default=None, flag: bool = False, append: bool = False,
            show_default: bool = False, type: type = str, choices=None, metavar=None,
            hidden: bool = False) -> None:
        flags = [name for name in names if name.startswith("-")]
        dest = next((name for name in names if not name.startswith("-")),
                    flags[-1].lstrip("-"))
        if show_default:
            help += f" [default: {default}]"
        kwargs = {"dest": dest, "default": argparse.SUPPRESS,
                  "help": argparse.SUPPRESS if hidden else help}
        if flag:
            kwargs["action"], default = "store_true", False
        else:
            kwargs.update(type=type, choices=choices,
                          metavar=metavar or ("[" + "|".join(choices) + "]" if choices
                                              else _METAVARS[type]))
            if append:
                kwargs["action"], default = "append", ()
        parser.add_argument(*flags, **kwargs)
        defaults[dest] = default

    add("-h", "--help", flag=True, help="Show this message and exit.")
    add("-d", "--data", "data", append=True, metavar="PATH",
        help="Example file (VW text or svmlight, plain or gzip); '-' or none reads stdin. "
             "Repeatable; positional paths are read too, in order.")
    add("--format", "format", choices=FORMATS, default="auto", show_default=True,
        help="Input format; auto uses a .svm/.svmlight/.libsvm name, else the first line.")
    add("-b", "--bit_precision", type=int, default=18, show_default=True,
        help="Number of bits in the feature table (1..30).")
    add("-l", "--learning_rate", type=float, default=None,
        help="Learning rate, > 0 [default: 0.5, or 10 unless adaptive and normalized].")
    add("--power_t", type=float, default=0.5, show_default=True, help="t power value.")
    add("--initial_t", type=float, default=None,
        help="Initial t value, >= 0 [default: 0, or 1 without --adaptive/--normalized].")
    add("--sgd", flag=True, help="Plain SGD: no adaptive, normalized or invariant update.")
    add("--adaptive", flag=True, help="Per-feature adaptive learning rates (AdaGrad).")
    add("--normalized", flag=True, help="Per-feature normalized updates.")
    add("--invariant", flag=True, help="Importance-invariant updates.")
    add("--loss_function", choices=list(LOSSES), default="squared",
        show_default=True, help="Loss function.")
    add("--quantile_tau", type=float, default=0.5, show_default=True,
        help="τ of the quantile (pinball) loss.")
    add("--link", choices=list(LINKS), default="identity", show_default=True,
        help="Link applied to the output (-p, progress table); the loss uses the raw score.")
    add("--binary", flag=True,
        help="Output the sign (-1/1) and report 0/1 loss; learning is unchanged.")
    add("--min_prediction", type=float, default=None,
        help="Smallest prediction to output (fixes the clipping range).")
    add("--max_prediction", type=float, default=None,
        help="Largest prediction to output (fixes the clipping range; above "
             "--min_prediction).")
    add("--stage_poly", flag=True,
        help="APPLE: grow polynomial features (monomials) in stages, from the best weights.")
    add("--sched_exponent", "--alpha", "sched_exponent", type=float, default=1.0,
        show_default=True,
        help="Each stage adds floor(s^alpha) parents (s: average input features/example).")
    add("--batch_sz", type=int, default=1000, show_default=True,
        help="Examples between stages (doubling after each); 0: a stage at each pass end.")
    add("--batch_sz_no_doubling", flag=True, help="Keep --batch_sz fixed.")
    add("--poly_heuristic", choices=POLY_HEURISTICS, default="weight",
        show_default=True,
        help="Rank parent candidates by |w|·normalizer (VW's), or by the paper's SSM score.")
    add("--eg", flag=True,
        help="EG±: exponential weights on the 2d corners of the l1 ball of --radius, "
             "online-calibrated learning rate, O(nonzeros) per example.")
    add("--boa", flag=True,
        help="BOA (Bernstein Online Aggregation) on the corners of the l1 ball of --radius: "
             "per-corner adaptive rates, O(features seen) per example.")
    add("--saew", flag=True,
        help="SAEW: sessions of BOA or EG on shrinking l1 balls around sparse centers.")
    add("--radius", type=float, default=1.0, show_default=True,
        help="--eg/--boa/--saew: l1 radius U of the ball the weights live in.")
    add("--saew_sub", choices=SAEW_SUBROUTINES, default="boa", show_default=True,
        help="SAEW's subroutine.")
    add("--saew_d0", type=int, default=SAEW_DEFAULTS["saew_d0"], show_default=True,
        help="SAEW: centers keep their d0 largest coordinates (the sparsity sought).")
    add("--saew_alpha", type=float, default=1.0, show_default=True,
        help="SAEW: strong-convexity constant of the risk (stopping rule).")
    add("--saew_B", "saew_B", type=float, default=0.0, show_default=True,
        help="SAEW: bound on ||gradient||∞ in the stopping rule; 0: its running max.")
    add("--saew_C", "saew_C", type=float, default=SAEW_DEFAULTS["saew_C"],
        show_default=True, help="SAEW: constant of the stopping rule (smaller: shorter "
                                "sessions).")
    add("--saew_a", type=float, default=0.0, show_default=True,
        help="SAEW: the subroutine's constant a in the stopping rule; 0: sqrt(ln 2d).")
    add("--saew_b", type=float, default=0.0, show_default=True,
        help="SAEW: the subroutine's constant b in the stopping rule; 0: ln 2d.")
    add("--saew_center", choices=SAEW_CENTERS,
        default=SAEW_DEFAULTS["saew_center"], show_default=True,
        help="SAEW: recenter on the truncated session average (the paper) or last iterate.")
    add("--saew_output", choices=SAEW_OUTPUTS, default="iterate",
        show_default=True,
        help="--eg/--boa/--saew: what -f, -t, --readable_model and --invert_hash hold: the "
             "iterate, the session average, or its d0-sparse truncation.")
    add("--saew_calibrate", flag=True,
        help="SAEW calibrated (Algorithm 3, implies --saew): BOA over a grid of SAEW "
             "instances (d0, alpha, radius, B), restarted on blocks [2^j, 2^(j+1)).")
    add("--saew_grid_d0", type=int, default=3, show_default=True,
        help="--saew_calibrate: d0 values 1, 4, 16, ... (each grid: 1 to 16 values)")
    add("--saew_grid_alpha", type=int, default=3, show_default=True,
        help="--saew_calibrate: alpha values --saew_alpha × 4^k, k centered on 0.")
    add("--saew_grid_radius", type=int, default=3, show_default=True,
        help="--saew_calibrate: radius values --radius × 4^k, k centered on 0.")
    add("--saew_grid_B", "saew_grid_B", type=int, default=3, show_default=True,
        help="--saew_calibrate: B values (running max of ||g||∞) × 4^k, k centered on 0.")
    add("--l1", type=float, default=0.0, show_default=True,
        help="L1 regularization, applied lazily as exact proximal (FOBOS) steps.")
    add("--l2", type=float, default=0.0, show_default=True,
        help="L2 regularization (λ/2·‖w‖²), applied lazily as exact proximal steps.")
    add("--noconstant", flag=True, help="Don't add a constant feature.")
    add("-q", "--quadratic", append=True, metavar="AB",
        help="Interact the features of namespaces A and B (first letters). Repeatable.")
    add("--cubic", append=True, metavar="ABC",
        help="Interact the features of three namespaces. Repeatable.")
    add("--interactions", append=True, metavar="ABC...",
        help="Interactions of any length (2 or more namespaces). Repeatable.")
    add("--permutations", flag=True,
        help="Repeated namespaces give all ordered pairs, not only i <= j.")
    add("--leave_duplicate_interactions", flag=True,
        help="Keep interactions that repeat another up to order.")
    add("--hash", "hash", choices=HASHES, default="strings", show_default=True,
        help="How to hash features: strings (all-digit names as numbers) or all.")
    add("--hash_seed", type=int, default=0, show_default=True,
        help="Seed for hashing, a uint32 (-N is 2^32 - N, as VW reads it).")
    add("-p", "--predictions", metavar="FILE", help="File to output predictions to.")
    add("-r", "--raw_predictions", metavar="FILE",
        help="File to output raw scores to (before clipping and link).")
    add("-f", "--final_regressor", metavar="FILE",
        help="Save the model (state and options) to FILE after training.")
    add("--readable_model", metavar="FILE",
        help="Write the model as text (index:weight and its state) after training.")
    add("--invert_hash", metavar="FILE",
        help="As --readable_model, each weight named by its feature (e.g. a^x:55432:...).")
    add("--predict_only_model", flag=True,
        help="Text models hold only the weights, not the optimizer state.")
    add("-i", "--initial_regressor", metavar="FILE",
        help="Start from a saved model: continue training, or predict with -t.")
    add("-t", "--testonly", flag=True,
        help="Ignore labels for learning: predict (and report the loss) only.")
    add("--passes", type=int, default=1, show_default=True,
        help="Number of passes over the data (needs -c or --cache_file when > 1).")
    add("-c", "--cache", flag=True,
        help="Use a cache of parsed examples, <first data file>.cache: created by the "
             "first run, read instead of the text by later passes and runs.")
    add("--cache_file", metavar="FILE", help="Use FILE as the cache (implies -c).")
    add("-k", "--kill_cache", flag=True, help="Rebuild the cache even if it is valid.")
    add("--holdout_off", flag=True, help="No holdout, even with several passes.")
    add("--holdout_period", type=int, default=10, show_default=True,
        help="With several passes, hold out every N-th line of each pass.")
    add("--holdout_after", type=int, default=0,
        help="Hold out every line after the N-th of each pass (even with one pass).")
    add("--early_terminate", type=int, default=3, show_default=True,
        help="Stop after N passes in a row without a better holdout loss.")
    add("--decay_learning_rate", type=float, default=1.0, show_default=True,
        help="Multiply the learning rate by this after each pass.")
    add("--save_per_pass", flag=True,
        help="Also save the model after each pass, as <-f file>.<pass>.")
    add("--dask", metavar="ADDRESS",
        help="Train data-parallel on a Dask cluster, averaging the workers' states after "
             "each pass: local:N starts N local worker processes, tcp://HOST:PORT joins a "
             "running scheduler. -d takes globs; each file is a partition. Needs olearn[dask].")
    add("--dask_partitions", type=int, default=0, metavar="N",
        help="With --dask: split plain-text (not gzip) files at line boundaries into at "
             "least N partitions [default: one per file].")
    add("--quiet", flag=True, help="Don't output diagnostics or progress updates.")
    add("-a", "--audit", flag=True,
        help="Print each example's features (ns^name:index:value:weight@G) to stdout.")
    add("-P", "--progress", metavar="N|X.Y", default=None,
        help="Progress rows every N weighted examples (integer) or at weights growing by "
             "a factor X.Y (float) [default: 2.0].")
    add("--strict_parse", flag=True, help="Make parse warnings fatal.")
    add("--warm-cache", "warm_cache", flag=True, hidden=True,
        help="Compile every kernel into numba's cache and exit.")
    return parser, defaults


def command(argv: list[str]) -> None:
    """Parse ``argv`` and run it."""
    parse, defaults = parser()
    given = vars(parse.parse_intermixed_args(argv))
    paths = given.pop("paths")
    if given.get("help"):
        sys.stdout.write(parse.format_help())
        return
    options = {name: list(value) if isinstance(value, tuple) else value
               for name, value in {**defaults, **given}.items()}
    del options["help"]
    from olearn.run import run, warm_cache
    if options.pop("warm_cache"):
        warm_cache()
        return
    config = Config(data=options.pop("data") + paths, explicit=frozenset(given), **options)
    check_outputs(config)
    if config.dask:
        from olearn.distributed import run as run_on_dask
        run_on_dask(config)
    else:
        run(config)


# Output options, as the command line names them.
FINAL_REGRESSOR = "-f/--final_regressor"
OUTPUTS = (("predictions", "-p/--predictions"), ("raw_predictions", "-r/--raw_predictions"),
           ("final_regressor", FINAL_REGRESSOR), ("readable_model", "--readable_model"),
           ("invert_hash", "--invert_hash"), ("cache_file", "--cache_file"))


def _is_file(path: str) -> bool:
    """Whether ``path`` is, or would be created as, a regular file (stdout, devices and pipes
    are written in place and may be shared)."""
    return path not in STDOUT and (os.path.isfile(path) or not os.path.exists(path))


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist yet
        return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(config: Config) -> None:
    """Refuse, before anything is written, an output file that is an input (a data file or
    the -i model) or another output. -f may be the -i model: continuing a model in place is
    a normal workflow, and -f is replaced atomically."""
    inputs = [("the data file", path) for path in config.data if path != "-"]
    model = config.initial_regressor
    outputs = [(flag, getattr(config, name)) for name, flag in OUTPUTS if getattr(config, name)]
    if config.cache and not (config.cache_file or config.dask or config.data[:1] in ([], ["-"])):
        outputs.append(("-c/--cache", cache.default_path(config.data)))
    for i, (flag, path) in enumerate(outputs):
        if not _is_file(path):
            continue
        for what, other in inputs:
            if _same_file(path, other):
                raise OptionError(f"{flag} {path} would overwrite {what} {other}")
        if model and flag != FINAL_REGRESSOR and _same_file(path, model):
            raise OptionError(f"{flag} {path} would overwrite the -i/--initial_regressor "
                              f"model {model}")
        for other_flag, other in outputs[:i]:
            if _same_file(path, other):
                raise OptionError(f"{other_flag} and {flag} name the same file {path}")


def _fail(message: str, code: int) -> int:
    try:
        sys.stderr.write(f"olearn: error: {message}\n")
    except (OSError, ValueError):  # stderr closed too: the exit code still tells
        pass
    return code


def main(argv: list[str] | None = None) -> None:
    """Console entry point: one line per failure, never a traceback; fast exit when done.

    Exit codes: 1 a data error, 2 a usage error, 130 Ctrl-C, 141 an output closed early (a
    broken pipe, as a shell reports SIGPIPE), 143 SIGTERM, 70 a bug."""
    code = 0
    signal.signal(signal.SIGTERM, _terminate)
    try:
        command(sys.argv[1:] if argv is None else argv)
    except OutputClosed as exc:
        code = _fail(str(exc), 141)
    except OptionError as exc:
        code = _fail(str(exc), 2)
    except OlearnError as exc:
        code = _fail(str(exc), 1)
    except UsageError as exc:
        code = _fail(f"{exc} (see olearn --help)", 2)
    except KeyboardInterrupt:
        code = _fail("interrupted", 130)
    except Terminated:
        code = _fail("terminated", 143)
    except BrokenPipeError:  # stdout (--audit) or stderr
        code = _fail("broken pipe (an output was closed before the run finished)", 141)
    except Exception as exc:  # a bug: still one line, with the traceback on request
        if os.environ.get("OLEARN_DEBUG"):
            raise
        code = _fail(f"internal error: {type(exc).__name__}: {exc} "
                     "(set OLEARN_DEBUG=1 for a traceback)", 70)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    # Everything is flushed and every output closed: skip the interpreter's slow teardown.
    os._exit(code)


if __name__ == "__main__":
    main()
