"""The ``olearn`` command: options (olearn/options/click_command.py) → Config
(olearn/options/command_line.py) → run. No learning logic lives here."""
from __future__ import annotations

import os
import signal
import sys
from typing import Callable

from olearn.core.atomic import STDOUT
from olearn.data import cache
from olearn.errors import OlearnError, OptionError, OutputClosed
from olearn.options import click_command
from olearn.options.command_line import config_from
from olearn.options.command_options import COMPLETE_VAR, UsageError
from olearn.options.config import Config


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every cleanup (``finally``, ``except
    BaseException``) runs as for Ctrl-C: no temporary output is left behind."""


def _terminate(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated


def command(argv: list[str]) -> None:
    """Parse ``argv`` and run it."""
    given = click_command.parse(argv)
    if given.get("help"):
        sys.stdout.write(click_command.help_text())
        return
    if given.get("completion"):
        sys.stdout.write(click_command.completion_script(given["completion"]))
        return
    from olearn.frontends.run import run, warm_cache
    if given.get("warm_cache"):
        warm_cache()
        return
    config = config_from(given, {})
    check_outputs(config)
    if config.dask:
        from olearn.scale.distributed import run as run_on_dask
        run_on_dask(config)
    elif config.audit_regressor is not None:
        from olearn.frontends import audit_regressor
        audit_regressor.check(config)
        audit_regressor.run(config)
    elif config.daemon:
        from olearn.serving.daemon import run as serve
        serve(config)
    else:
        run(config)


# Output options, as the command line names them.
FINAL_REGRESSOR = "-f/--final_regressor"
OUTPUTS = (("predictions", "-p/--predictions"), ("raw_predictions", "-r/--raw_predictions"),
           ("final_regressor", FINAL_REGRESSOR), ("readable_model", "--readable_model"),
           ("invert_hash", "--invert_hash"), ("learning_curve", "--learning_curve"),
           ("cache_file", "--cache_file"), ("audit_regressor", "--audit_regressor"))


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


def main(argv: list[str] | None = None, after: Callable[[], None] | None = None) -> None:
    """Console entry point: one line per failure, never a traceback; fast exit when done
    (``after`` runs first, when the command succeeded).

    Exit codes: 1 a data error, 2 a usage error, 130 Ctrl-C, 141 an output closed early (a
    broken pipe, as a shell reports SIGPIPE), 143 SIGTERM, 70 a bug."""
    code = 0
    signal.signal(signal.SIGTERM, _terminate)
    try:
        instruction = os.environ.get(COMPLETE_VAR)
        if instruction:  # the shell asks for completions (olearn --completion's script)
            code = click_command.complete(instruction)
        else:
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
    except MemoryError:  # where the learner knows which example, an OlearnError above
        code = _fail("out of memory", 1)
    except BrokenPipeError:  # stdout (--audit) or stderr
        code = _fail("broken pipe (an output was closed before the run finished)", 141)
    except Exception as exc:  # a bug: still one line, with the traceback on request
        if os.environ.get("OLEARN_DEBUG"):
            raise
        code = _fail(f"internal error: {type(exc).__name__}: {exc} "
                     "(set OLEARN_DEBUG=1 for a traceback)", 70)
    if after is not None and code == 0:
        try:
            after()
        except Exception:  # the command's work is done and right: its exit status stands
            pass
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