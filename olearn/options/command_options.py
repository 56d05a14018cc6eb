"""The ``olearn`` command's own options, its usage error and its completion variable: what the
command line shares without importing click (olearn/options/command_line.py, the console entry
point) with the click command (olearn/options/click_command.py)."""
from __future__ import annotations

from olearn.core.option import Option, flag
from olearn.errors import OptionError

SHELLS = ("bash", "zsh", "fish")
# The environment variable the shell completion scripts set when they run olearn for a Tab
# (click's name for it).
COMPLETE_VAR = "_OLEARN_COMPLETE"
# The command's own options, (option, hidden from --help): they ask for something other than a
# run, and have no Config field.
COMMAND_OPTIONS = (
    (flag("-h", "--help", help="Show this message and exit."), False),
    (Option(("--completion",), str, None, choices=SHELLS,
            help="Print the script that completes olearn's options, their values and file "
                 "names in this shell (see README.md)."), False),
    (flag("--warm-cache", help="Compile the kernels (olearn/kernel/aot.py)."), True))


class UsageError(OptionError):
    """A command line that does not parse (exit code 2, as VW and click)."""
