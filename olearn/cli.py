"""The ``olearn`` command: options → Config → run. No learning logic lives here."""
from __future__ import annotations

import os
import sys

import click

from olearn.config import (FORMATS, HASHES, POLY_HEURISTICS, SAEW_CENTERS, SAEW_DEFAULTS,
                           SAEW_OUTPUTS, SAEW_SUBROUTINES, Config)
from olearn.errors import OlearnError
from olearn.losses import NAMES as LOSS_NAMES
from olearn.optim.gd import LINKS


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.command(context_settings=CONTEXT)
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-d", "--data", "data", multiple=True, metavar="PATH",
              help="Example file (VW text or svmlight, plain or gzip); '-' or none reads stdin. "
                   "Repeatable; positional paths are read too, in order.")
@click.option("--format", "format_", type=click.Choice(FORMATS), default="auto", show_default=True,
              help="Input format; auto uses a .svm/.svmlight/.libsvm name, else the first line.")
@click.option("-b", "--bit_precision", type=int, default=18, show_default=True,
              help="Number of bits in the feature table (1..30).")
@click.option("-l", "--learning_rate", type=float, default=None,
              help="Learning rate [default: 0.5, or 10 unless adaptive and normalized].")
@click.option("--power_t", type=float, default=0.5, show_default=True, help="t power value.")
@click.option("--initial_t", type=float, default=None,
              help="Initial t value [default: 0, or 1 without --adaptive/--normalized].")
@click.option("--sgd", is_flag=True, help="Plain SGD: no adaptive, normalized or invariant update.")
@click.option("--adaptive", is_flag=True, help="Per-feature adaptive learning rates (AdaGrad).")
@click.option("--normalized", is_flag=True, help="Per-feature normalized updates.")
@click.option("--invariant", is_flag=True, help="Importance-invariant updates.")
@click.option("--loss_function", type=click.Choice(list(LOSS_NAMES)), default="squared",
              show_default=True, help="Loss function.")
@click.option("--quantile_tau", type=float, default=0.5, show_default=True,
              help="τ of the quantile (pinball) loss.")
@click.option("--link", type=click.Choice(list(LINKS)), default="identity", show_default=True,
              help="Link applied to the output (-p, progress table); the loss uses the raw score.")
@click.option("--binary", is_flag=True,
              help="Output the sign (-1/1) and report 0/1 loss; learning is unchanged.")
@click.option("--min_prediction", type=float, default=None,
              help="Smallest prediction to output (fixes the clipping range).")
@click.option("--max_prediction", type=float, default=None,
              help="Largest prediction to output (fixes the clipping range).")
@click.option("--stage_poly", is_flag=True,
              help="APPLE: grow polynomial features (monomials) in stages, from the best weights.")
@click.option("--sched_exponent", "--alpha", "sched_exponent", type=float, default=1.0,
              show_default=True,
              help="Each stage adds floor(s^alpha) parents (s: average input features/example).")
@click.option("--batch_sz", type=int, default=1000, show_default=True,
              help="Examples between stages (doubling after each); 0: a stage at each pass end.")
@click.option("--batch_sz_no_doubling", is_flag=True, help="Keep --batch_sz fixed.")
@click.option("--poly_heuristic", type=click.Choice(POLY_HEURISTICS), default="weight",
              show_default=True,
              help="Rank parent candidates by |w|·normalizer (VW's), or by the paper's SSM score.")
@click.option("--eg", is_flag=True,
              help="EG±: exponential weights on the 2d corners of the l1 ball of --radius, "
                   "online-calibrated learning rate, O(nonzeros) per example.")
@click.option("--boa", is_flag=True,
              help="BOA (Bernstein Online Aggregation) on the corners of the l1 ball of --radius: "
                   "per-corner adaptive rates, O(features seen) per example.")
@click.option("--saew", is_flag=True,
              help="SAEW: sessions of BOA or EG on shrinking l1 balls around sparse centers.")
@click.option("--radius", type=float, default=1.0, show_default=True,
              help="--eg/--boa/--saew: l1 radius U of the ball the weights live in.")
@click.option("--saew_sub", type=click.Choice(SAEW_SUBROUTINES), default="boa", show_default=True,
              help="SAEW's subroutine.")
@click.option("--saew_d0", type=int, default=SAEW_DEFAULTS["saew_d0"], show_default=True,
              help="SAEW: centers keep their d0 largest coordinates (the sparsity sought).")
@click.option("--saew_alpha", type=float, default=1.0, show_default=True,
              help="SAEW: strong-convexity constant of the risk (stopping rule).")
@click.option("--saew_B", "saew_B", type=float, default=0.0, show_default=True,
              help="SAEW: bound on ||gradient||∞ in the stopping rule; 0: its running max.")
@click.option("--saew_C", "saew_C", type=float, default=SAEW_DEFAULTS["saew_C"],
              show_default=True, help="SAEW: constant of the stopping rule (smaller: shorter "
                                      "sessions).")
@click.option("--saew_a", type=float, default=0.0, show_default=True,
              help="SAEW: the subroutine's constant a in the stopping rule; 0: sqrt(ln 2d).")
@click.option("--saew_b", type=float, default=0.0, show_default=True,
              help="SAEW: the subroutine's constant b in the stopping rule; 0: ln 2d.")
@click.option("--saew_center", type=click.Choice(SAEW_CENTERS),
              default=SAEW_DEFAULTS["saew_center"], show_default=True,
              help="SAEW: recenter on the truncated session average (the paper) or last iterate.")
@click.option("--saew_output", type=click.Choice(SAEW_OUTPUTS), default="iterate",
              show_default=True,
              help="--eg/--boa/--saew: what -f, -t, --readable_model and --invert_hash hold: the "
                   "iterate, the session average, or its d0-sparse truncation.")
@click.option("--saew_calibrate", is_flag=True,
              help="SAEW calibrated (Algorithm 3, implies --saew): BOA over a grid of SAEW "
                   "instances (d0, alpha, radius, B), restarted on blocks [2^j, 2^(j+1)).")
@click.option("--saew_grid_d0", type=int, default=3, show_default=True,
              help="--saew_calibrate: d0 values 1, 4, 16, ...")
@click.option("--saew_grid_alpha", type=int, default=3, show_default=True,
              help="--saew_calibrate: alpha values --saew_alpha × 4^k, k centered on 0.")
@click.option("--saew_grid_radius", type=int, default=3, show_default=True,
              help="--saew_calibrate: radius values --radius × 4^k, k centered on 0.")
@click.option("--saew_grid_B", "saew_grid_B", type=int, default=3, show_default=True,
              help="--saew_calibrate: B values (running max of ||g||∞) × 4^k, k centered on 0.")
@click.option("--l1", type=float, default=0.0, show_default=True,
              help="L1 regularization, applied lazily as exact proximal (FOBOS) steps.")
@click.option("--l2", type=float, default=0.0, show_default=True,
              help="L2 regularization (λ/2·‖w‖²), applied lazily as exact proximal steps.")
@click.option("--noconstant", is_flag=True, help="Don't add a constant feature.")
@click.option("-q", "--quadratic", multiple=True, metavar="AB",
              help="Interact the features of namespaces A and B (first letters). Repeatable.")
@click.option("--cubic", multiple=True, metavar="ABC",
              help="Interact the features of three namespaces. Repeatable.")
@click.option("--interactions", multiple=True, metavar="ABC...",
              help="Interactions of any length (2 or more namespaces). Repeatable.")
@click.option("--permutations", is_flag=True,
              help="Repeated namespaces give all ordered pairs, not only i <= j.")
@click.option("--leave_duplicate_interactions", is_flag=True,
              help="Keep interactions that repeat another up to order.")
@click.option("--hash", "hash_", type=click.Choice(HASHES), default="strings", show_default=True,
              help="How to hash features: strings (all-digit names as numbers) or all.")
@click.option("--hash_seed", type=int, default=0, show_default=True, help="Seed for hashing.")
@click.option("-p", "--predictions", metavar="FILE", help="File to output predictions to.")
@click.option("-r", "--raw_predictions", metavar="FILE",
              help="File to output raw scores to (before clipping and link).")
@click.option("-f", "--final_regressor", metavar="FILE",
              help="Save the model (state and options) to FILE after training.")
@click.option("--readable_model", metavar="FILE",
              help="Write the model as text (index:weight and its state) after training.")
@click.option("--invert_hash", metavar="FILE",
              help="As --readable_model, each weight named by its feature (e.g. a^x:55432:...).")
@click.option("--predict_only_model", is_flag=True,
              help="Text models hold only the weights, not the optimizer state.")
@click.option("-i", "--initial_regressor", metavar="FILE",
              help="Start from a saved model: continue training, or predict with -t.")
@click.option("-t", "--testonly", is_flag=True,
              help="Ignore labels for learning: predict (and report the loss) only.")
@click.option("--passes", type=int, default=1, show_default=True,
              help="Number of passes over the data (needs -c or --cache_file when > 1).")
@click.option("-c", "--cache", is_flag=True,
              help="Use a cache of parsed examples, <first data file>.cache: created by the "
                   "first run, read instead of the text by later passes and runs.")
@click.option("--cache_file", metavar="FILE", help="Use FILE as the cache (implies -c).")
@click.option("-k", "--kill_cache", is_flag=True, help="Rebuild the cache even if it is valid.")
@click.option("--holdout_off", is_flag=True, help="No holdout, even with several passes.")
@click.option("--holdout_period", type=int, default=10, show_default=True,
              help="With several passes, hold out every N-th line of each pass.")
@click.option("--holdout_after", type=int, default=0,
              help="Hold out every line after the N-th of each pass (even with one pass).")
@click.option("--early_terminate", type=int, default=3, show_default=True,
              help="Stop after N passes in a row without a better holdout loss.")
@click.option("--decay_learning_rate", type=float, default=1.0, show_default=True,
              help="Multiply the learning rate by this after each pass.")
@click.option("--save_per_pass", is_flag=True,
              help="Also save the model after each pass, as <-f file>.<pass>.")
@click.option("--dask", metavar="ADDRESS",
              help="Train data-parallel on a Dask cluster, averaging the workers' states after "
                   "each pass: local:N starts N local worker processes, tcp://HOST:PORT joins a "
                   "running scheduler. -d takes globs; each file is a partition. Needs olearn[dask].")
@click.option("--dask_partitions", type=int, default=0, metavar="N",
              help="With --dask: split plain-text (not gzip) files at line boundaries into at "
                   "least N partitions [default: one per file].")
@click.option("--quiet", is_flag=True, help="Don't output diagnostics or progress updates.")
@click.option("-a", "--audit", is_flag=True,
              help="Print each example's features (ns^name:index:value:weight@G) to stdout.")
@click.option("-P", "--progress", metavar="N|X.Y", default=None,
              help="Progress rows every N weighted examples (integer) or at weights growing by "
                   "a factor X.Y (float) [default: 2.0].")
@click.option("--strict_parse", is_flag=True, help="Make parse warnings fatal.")
@click.option("--warm-cache", "warm_cache", is_flag=True, hidden=True,
              help="Compile every kernel into numba's cache and exit.")
def command(paths, data, format_, hash_, warm_cache, **options):
    """olearn: fast online learning with Vowpal Wabbit's input, options and output.

    \b
    Examples:
      olearn -d train.vw                      one pass, progress table on stderr
      zcat train.vw.gz | olearn -p preds.txt  read stdin, write predictions
      olearn -d train.svm.gz --format svmlight
      olearn -d train.vw --audit              features of each example, as VW prints them
      olearn -d train.vw -c --passes 10       cache, holdout and early termination
      olearn -d train.vw --stage_poly --alpha 1   adaptive polynomial expansion (APPLE)
      olearn -d train.vw --saew --radius 1 --saew_d0 5   sparse exponential weights (SAEW)
      olearn -d 'part-*.vw.gz' --dask local:2 --passes 5 -f model.olearn
    """
    from olearn.run import run, warm_cache as warm
    if warm_cache:
        warm()
        return
    config = Config(data=list(data) + list(paths), format=format_, hash=hash_,
                    explicit=_given_on_command_line(), **options)
    if config.dask:
        from olearn.distributed import run as run_on_dask
        run_on_dask(config)
    else:
        run(config)


_PARAMETER_TO_OPTION = {"hash_": "hash", "format_": "format"}


def _given_on_command_line() -> frozenset:
    """Names (as Config fields) of the options the user typed, not left at their defaults."""
    ctx = click.get_current_context()
    return frozenset(_PARAMETER_TO_OPTION.get(name, name) for name in ctx.params
                     if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE)


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"olearn: error: {message}\n")
    return code


def main(argv: list[str] | None = None) -> None:
    """Console entry point: one line per failure, never a traceback; fast exit when done."""
    code = 0
    try:
        command.main(args=argv, prog_name="olearn", standalone_mode=False)
    except OlearnError as exc:
        code = _fail(str(exc), 1)
    except click.exceptions.NoArgsIsHelpError as exc:
        sys.stderr.write(exc.format_message() + "\n")
    except click.UsageError as exc:
        code = _fail(exc.format_message() + " (see olearn --help)", 2)
    except click.Abort:
        code = _fail("interrupted", 130)
    except KeyboardInterrupt:
        code = _fail("interrupted", 130)
    except BrokenPipeError:
        code = 0
        try:
            sys.stdout = None  # type: ignore[assignment]
        except Exception:
            pass
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
