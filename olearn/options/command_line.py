"""Command-line words -> Config: the argparse parser generated from the option registry, used by
the ``olearn`` command and by ``olearn.Learner("-q ab --l1 1e-6")`` alike.

argparse rather than click: importing click cost ~14 ms of every run's start-up (a third of the
time a cached run spends learning); argparse costs ~3 ms.
"""
from __future__ import annotations

import argparse
import shutil

from olearn.core.option import metavar
from olearn.errors import OptionError
from olearn.options.config import GROUPS, Config

DESCRIPTION = """olearn: fast online learning with Vowpal Wabbit's input, options and output.

Examples:
  olearn -d train.vw                      one pass, progress table on stderr
  zcat train.vw.gz | olearn -p preds.txt  read stdin, write predictions
  olearn -d train.svm.gz --format svmlight
  olearn -d train.vw --audit              features of each example, as VW prints them
  olearn -d train.vw -c --passes 10       cache, holdout and early termination
  olearn -d train.vw --stage_poly --sched_exponent 1   adaptive polynomial expansion (APPLE)
  olearn -d train.vw --saew --radius 1 --saew_d0 5   sparse exponential weights (SAEW)
  olearn -d 'part-*.vw.gz' --dask local:2 --passes 5 -f model.olearn
  olearn --daemon --port 26542 -t -i model.olearn   serve predictions over TCP"""


class UsageError(OptionError):
    """A command line that does not parse (exit code 2, as VW and click)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse prints its usage and exits; we report one line
        raise UsageError(message)

    def parse_intermixed_args(self, args=None, namespace=None):
        """argparse's, with a value that starts with ``-`` and is no option attached to its
        option (``--classweight -1:0.5``, as VW reads it; argparse would take ``-1:0.5`` for
        an option)."""
        return super().parse_intermixed_args(self._dash_values_attached(args or []), namespace)

    def _dash_values_attached(self, argv: list[str]) -> list[str]:
        out: list[str] = []
        k = 0
        while k < len(argv):
            flag = argv[k]
            action = self._option_string_actions.get(flag)
            following = argv[k + 1] if k + 1 < len(argv) else ""
            if (action is not None and action.nargs != 0 and following.startswith("-")
                    and following not in self._option_string_actions and following != "--"):
                out.append(f"{flag}={following}" if flag.startswith("--") else flag + following)
                k += 2
            else:
                out.append(flag)
                k += 1
        return out


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
    """The command line's parser, from the option registry (olearn/options/config.py). Options not
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
    return config_from(given, overrides)


def config_from(given: dict, overrides: dict) -> Config:
    """The Config of parsed arguments: the paths after -d's, and which options were given."""
    for name in ("help", "warm_cache"):
        given.pop(name, None)
    data = given.pop("data", []) + given.pop("paths")
    if data:
        given["data"] = data
    return Config(**{**given, **overrides}, explicit=frozenset(given) | frozenset(overrides))
