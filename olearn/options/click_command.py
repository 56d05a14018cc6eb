"""The ``olearn`` command on click, generated from the option registry: its parsing, --help in
VW's groups, and shell completion. Only the command line and option strings import this module
(olearn/options/command_line.py imports it when there are words to parse): ``import olearn``,
the Python API's keywords and the daemon never import click.

The words mean what they meant under argparse, whose one-line messages are kept: a value is the
next word whatever it looks like (``--min_prediction -5``, ``--classweight -1:0.5``), as VW reads
it, unless that word is one of olearn's options: ``-d --quiet`` lacks its file (as under
argparse; VW would read a file named --quiet). Options may follow paths, and ``--`` ends them.
Where argparse took more than VW, click's reading is VW's: a long option is spelled in full
(``--bit 18`` is refused, naming --bit_precision), and a short option's value starts right after
it (``-b=18`` is the value ``=18``).
"""
from __future__ import annotations

import functools
import re
from typing import Any

import click
from click.core import ParameterSource
from click.shell_completion import CompletionItem, get_completion_class, shell_complete

from olearn.core.option import Option, metavar
from olearn.options.command_options import COMMAND_OPTIONS, COMPLETE_VAR, UsageError
from olearn.options.config import GROUPS

PROG = "olearn"
WIDTH = 100  # --help's widest lines, on a wider terminal
TERM_WIDTH = 30  # --help's first column; a longer option's help starts on the next line

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
  olearn --daemon --port 26542 -t -i model.olearn   serve predictions over TCP
  eval "$(olearn --completion bash)"      complete options and file names in bash
"""

# Metavars that name a file or a folder: their values complete as paths.
_FILE = re.compile(r"\b(FILE|PATH)\b")
_DIR = re.compile(r"\bDIR\b")


class _Value(click.ParamType):
    """An option's value: read as argparse did (int, float or text, one of its choices), or a
    one-line error naming the option; completed with the choices, or as a path."""

    def __init__(self, option: Option, flags: frozenset[str]):
        self.option = option
        self.name = metavar(option)
        self.flags = flags  # every option's spellings: none is a value

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        option = self.option
        if value in self.flags or value == "--":
            raise UsageError(f"argument {option.flag}: expected one argument")
        kind = str if option.kind is list else option.kind
        try:
            value = kind(value)
        except ValueError:
            raise UsageError(f"argument {option.flag}: invalid {kind.__name__} value: "
                             f"{value!r}") from None
        if option.choices is not None and value not in option.choices:
            raise UsageError(f"argument {option.flag}: invalid choice: {value!r} (choose from "
                             f"{', '.join(map(repr, option.choices))})")
        return value

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
        if self.option.choices is not None:
            return [CompletionItem(choice) for choice in self.option.choices
                    if choice.startswith(incomplete)]
        if _FILE.search(self.name):
            return [CompletionItem(incomplete, type="file")]
        if _DIR.search(self.name):
            return [CompletionItem(incomplete, type="dir")]
        return []


class _Command(click.Command):
    """--help: the description as written, then the path arguments and each group of options
    under its title."""

    def __init__(self, sections: list[tuple[str, list[click.Parameter]]], **kwargs: Any):
        super().__init__(**kwargs)
        self.sections = sections

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_paragraph()
        formatter.write(DESCRIPTION)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections = [("Arguments", [("PATH", "Example files, read after the -d ones.")])]
        sections += [(title, [record for param in params if (record := param.get_help_record(ctx))])
                     for title, params in self.sections]
        # One first column for all groups (click sizes each group's own), so that they line up;
        # at most 2/5 of a narrow terminal, which keeps room for the help.
        width = min(max(len(term) for _, rows in sections for term, _ in rows), TERM_WIDTH,
                    2 * formatter.width // 5)
        for title, rows in sections:
            with formatter.section(title):
                formatter.write_dl([(term.ljust(width), text) for term, text in rows],
                                   col_max=width)


def _parameter(option: Option, flags: frozenset[str], hidden: bool = False) -> click.Option:
    decls = [*option.flags, option.name]
    if option.kind is bool:
        return click.Option(decls, is_flag=True, help=option.help_text(), hidden=hidden)
    return click.Option(decls, type=_Value(option, flags), metavar=metavar(option),
                        multiple=option.kind is list, help=option.help_text(), hidden=hidden)


@functools.cache
def command() -> click.Command:
    """The ``olearn`` command, one click option per registry option (built once, ~4 ms)."""
    flags = frozenset(spelling for _, group in GROUPS for option in group
                      for spelling in option.flags)
    flags |= {spelling for option, _ in COMMAND_OPTIONS for spelling in option.flags}
    paths = click.Argument(["paths"], nargs=-1, type=click.Path(), metavar="[PATH]...")
    sections = [("Options", [_parameter(option, flags, hidden)
                             for option, hidden in COMMAND_OPTIONS])]
    sections += [(title, [_parameter(option, flags) for option in group])
                 for title, group in GROUPS]
    params = [paths, *(param for _, section in sections for param in section)]
    return _Command(sections, name=PROG, params=params, add_help_option=False)


def parse(argv: list[str]) -> dict:
    """The options ``argv`` gives, by name (the options not given are left out, so that models
    know which the user typed), and ``paths``, the positional files; a command line that does
    not parse is a :class:`UsageError`."""
    try:
        ctx = command().make_context(PROG, list(argv))
    except click.UsageError as exc:
        raise UsageError(_message(exc)) from None
    given = {name: list(value) if isinstance(value, tuple) else value
             for name, value in ctx.params.items()
             if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE}
    given["paths"] = list(ctx.params["paths"])
    return given


def _message(exc: click.UsageError) -> str:
    """argparse's words for what click's parser refuses."""
    if isinstance(exc, click.NoSuchOption):
        name = exc.option_name
        # a prefix of a long option (argparse takes one unless told not to, VW none), else a
        # typo
        meant = [spelling for param in command().params for spelling in param.opts
                 if spelling.startswith(name) and name.startswith("--")]
        meant = meant if 0 < len(meant) <= 3 else exc.possibilities
        hint = f" (did you mean {' or '.join(meant)}?)" if meant else ""
        return f"unrecognized arguments: {name}{hint}"
    if isinstance(exc, click.BadOptionUsage):
        param = next(param for param in command().params
                     if exc.option_name in getattr(param, "opts", ()))
        spelling = "/".join(param.opts)
        if param.is_flag:
            return f"argument {spelling}: takes no value"
        return f"argument {spelling}: expected one argument"
    return exc.format_message()


def help_text() -> str:
    """``olearn --help``, as wide as the terminal (up to WIDTH columns)."""
    return command().get_help(click.Context(command(), info_name=PROG, max_content_width=WIDTH))


def completion_script(shell: str) -> str:
    """The script that makes ``shell`` complete olearn's command lines."""
    return get_completion_class(shell)(command(), {}, PROG, COMPLETE_VAR).source()


def complete(instruction: str) -> int:
    """Answer the completion script (``instruction``: COMPLETE_VAR's value, such as
    ``bash_complete``); the exit code."""
    return shell_complete(command(), {}, PROG, COMPLETE_VAR, instruction)
