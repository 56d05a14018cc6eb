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

from olearn.config import GROUPS, Config
from olearn.errors import OlearnError, OptionError, OutputClosed
from olearn.io import cache
from olearn.io.atomic import STDOUT
from olearn.options import metavar

DESCRIPTION = """olearn: fast online learning with Vowpal Wabbit's input, options and output.

Examples:
  olearn -d train.vw                      one pass, progress table on stderr
  zcat train.vw.gz | olearn -p preds.txt  read stdin, write predictions
  olearn -d train.svm.gz --format svmlight
  olearn -d train.vw --audit              features of each example, as VW prints them
  olearn -d train.vw -c --passes 10       cache, holdout and early termination
  olearn -d train.vw --stage_poly --alpha 1   adaptive polynomial expansion (APPLE)
  olearn -d train.vw --saew --radius 1 --saew_d0 5   sparse exponential weights (SAEW)
  olearn -d 'part-*.vw.gz' --dask local:2 --passes 5 -f model.olearn
  olearn --daemon --port 26542 -t -i model.olearn   serve predictions over TCP"""


class UsageError(OptionError):
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


def parser() -> argparse.ArgumentParser:
    """The command line's parser, from the option registry (olearn/config.py). Options not
    given are left out of its result, so that models know which options the user typed."""
    parser = _Parser(prog="olearn", usage="olearn [OPTIONS] [PATH]...", description=DESCRIPTION,
                     formatter_class=_Formatter, add_help=False, allow_abbrev=False)
    parser.add_argument("paths", nargs="*", default=[], metavar="PATH",
                        help="Example files, read after the -d ones.")
    parser.add_argument("-h", "--help", dest="help", action="store_true",
                        default=argparse.SUPPRESS, help="Show this message and exit.")
    parser.add_argument("--warm-cache", dest="warm_cache", action="store_true",
                        default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    for title, group in GROUPS:
        section = parser.add_argument_group(title)
        for option in group:
            kwargs = {"dest": option.name, "default": argparse.SUPPRESS,
                      "help": option.help_text()}
            if option.kind is bool:
                kwargs["action"] = "store_true"
            else:
                kwargs.update(metavar=metavar(option), choices=option.choices,
                              type=str if option.kind is list else option.kind)
                if option.kind is list:
                    kwargs["action"] = "append"
            section.add_argument(*option.flags, **kwargs)
    return parser


def config_of(argv: list[str], **overrides) -> Config:
    """The Config of a command line; ``overrides`` are options given apart (keywords). No
    arguments (a Learner of keywords only) need no parser, whose building costs a millisecond."""
    given = vars(parser().parse_intermixed_args(argv)) if argv else {"paths": []}
    return _config(given, overrides)


def _config(given: dict, overrides: dict) -> Config:
    """The Config of parsed arguments: the paths after -d's, and which options were given."""
    for name in ("help", "warm_cache"):
        given.pop(name, None)
    data = given.pop("data", []) + given.pop("paths")
    if data:
        given["data"] = data
    return Config(**{**given, **overrides}, explicit=frozenset(given) | frozenset(overrides))


def command(argv: list[str]) -> None:
    """Parse ``argv`` and run it."""
    parse = parser()
    given = vars(parse.parse_intermixed_args(argv))
    if given.get("help"):
        sys.stdout.write(parse.format_help())
        return
    from olearn.run import run, warm_cache
    if given.get("warm_cache"):
        warm_cache()
        return
    config = _config(given, {})
    check_outputs(config)
    if config.dask:
        from olearn.distributed import run as run_on_dask
        run_on_dask(config)
    elif config.daemon:
        from olearn.daemon import run as serve
        serve(config)
    else:
        run(config)


# Output options, as the command line names them.
FINAL_REGRESSOR = "-f/--final_regressor"
OUTPUTS = (("predictions", "-p/--predictions"), ("raw_predictions", "-r/--raw_predictions"),
           ("final_regressor", FINAL_REGRESSOR), ("readable_model", "--readable_model"),
           ("invert_hash", "--invert_hash"), ("learning_curve", "--learning_curve"),
           ("cache_file", "--cache_file"))


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
    except UsageError as exc:
        code = _fail(f"{exc} (see olearn --help)", 2)
    except OptionError as exc:
        code = _fail(str(exc), 2)
    except OlearnError as exc:
        code = _fail(str(exc), 1)
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
