"""Options, each declared once (docs/architecture.md, "Add an option").

A module declares the options it owns as a tuple ``OPTIONS`` of :class:`Option`: the flags the
command line takes, the type, the default, the help text, the checks of a single value, and
the scope. olearn/options/config.py gathers every module's into
:data:`olearn.options.config.REGISTRY`, from which come the ``Config`` dataclass (and so the
Python API's keywords), the command line's parser (olearn/frontends/cli.py), the options a model
file keeps and the options a cache depends on.

Scope: a ``model`` option changes features or predictions, so a model file keeps it and ``-i``
restores it; a ``parsing`` option changes what the parser produces, so a cache depends on it;
any other option belongs to one run only.

This module imports nothing from olearn but its errors, so that any module can declare options.
"""
from __future__ import annotations

import math
import numbers
import os
import re
from dataclasses import dataclass
from typing import Any, Callable

from olearn.errors import OptionError

_HEX = re.compile(rb"\\x([0-9a-fA-F]{2})")
MAX_COUNT = 2 ** 32 - 1  # VW's counters are 32-bit; every count stays exact in float64 params
_METAVARS = {int: "INTEGER", float: "FLOAT", str: "TEXT"}


@dataclass(frozen=True)
class Option:
    """One option. ``kind`` is bool (a flag), int, float, str or list (a repeatable string)."""

    flags: tuple[str, ...]  # the command line's spellings; the first --long one names it
    kind: type
    default: Any
    help: str
    model: bool = False     # a model file keeps it
    parsing: bool = False   # a cache depends on it
    name: str = ""          # the Config field and keyword (default: the first --long flag's)
    choices: tuple[str, ...] | None = None
    # numbers: the lowest value (allowed or not) and the highest (allowed for ints; for floats
    # only with high_allowed)
    low: float = -math.inf
    low_allowed: bool = True
    high_allowed: bool = False  # a float's high end is excluded unless this says otherwise
    high: float = math.inf
    optional: bool = False  # None allowed: "VW's default for this configuration"
    show_default: bool = False
    metavar: str | None = None
    # for types a range cannot check: the value normalized, or ValueError("expects ...")
    convert: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        if not self.name:
            long = next(f for f in self.flags if f.startswith("--"))
            object.__setattr__(self, "name", long[2:].replace("-", "_"))

    @property
    def flag(self) -> str:
        """How an error message names the option (``-b/--bit_precision``)."""
        return "/".join(self.flags)

    @property
    def annotation(self) -> str:
        """The Config field's type, as text."""
        text = {bool: "bool", int: "int", float: "float", str: "str", list: "list[str]"}[self.kind]
        return text + " | None" if self.optional or (self.default is None and self.kind is str
                                                      ) else text

    def check(self, value: Any) -> Any:
        """``value`` checked and normalized (a plain int or float, a list of strings), or an
        OptionError naming the option."""
        if value is None and (self.optional or self.default is None):
            return None
        if self.convert is not None:
            try:
                return self.convert(value)
            except ValueError as exc:  # what is wrong with the value
                raise OptionError(f"{self.flag} {exc}") from None
        if self.kind is bool:
            if not isinstance(value, (bool, numbers.Integral)) or value not in (0, 1):
                raise OptionError(f"{self.flag} is a flag (True or False), got {value!r}")
            return bool(value)
        if self.kind is int:
            if (not isinstance(value, numbers.Integral) or isinstance(value, bool)
                    or not self.low <= value <= self.high):
                raise OptionError(f"{self.flag} must be an integer from {self.low:.0f} to "
                                  f"{self.high:.0f}, got {value!r}")
            return int(value)
        if self.kind is float:
            if (not isinstance(value, numbers.Real) or isinstance(value, bool)
                    or not math.isfinite(value) or not self.low <= value <= self.high
                    or (value == self.low and not self.low_allowed)
                    or (value == self.high and not self.high_allowed)):
                raise OptionError(f"{self.flag} must be {self._describe_range()}, "
                                  f"got {value!r}")
            return float(value)
        if self.kind is list:
            values = [value] if isinstance(value, str) else value
            if not (isinstance(values, (list, tuple)) and all(isinstance(v, str) for v in values)):
                raise OptionError(f"{self.flag} expects text or a list of texts, got {value!r}")
            return list(values)
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str):
            raise OptionError(f"{self.flag} expects text, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise OptionError(f"{self.flag} must be one of {', '.join(self.choices)}, "
                              f"got {value!r}")
        return value

    def _describe_range(self) -> str:
        if self.high < math.inf:
            return f"in ({self.low:g}, {self.high:g}{']' if self.high_allowed else ')'}"
        if self.low == -math.inf:
            return "a finite number"
        return f"finite and {'>=' if self.low_allowed else '>'} {self.low:g}"

    def help_text(self) -> str:
        if self.show_default:
            return f"{self.help} [default: {self.default}]"
        return self.help


def flag(*flags: str, help: str, **more: Any) -> Option:
    """An on/off option (False unless given)."""
    return Option(flags, bool, False, help, **more)


def number(*flags: str, kind: type, default: Any, help: str, **more: Any) -> Option:
    """An int or float option (shown with its default unless it has none)."""
    more.setdefault("show_default", default is not None)
    return Option(flags, kind, default, help, optional=default is None, **more)


def choice(*flags: str, choices: tuple[str, ...], default: str, help: str,
           **more: Any) -> Option:
    """One of a few words (shown with its default)."""
    return Option(flags, str, default, help, choices=tuple(choices), show_default=True, **more)


def text(*flags: str, help: str, **more: Any) -> Option:
    """A file name or other text, None unless given."""
    return Option(flags, str, None, help, **more)


def repeated(*flags: str, help: str, **more: Any) -> Option:
    """A repeatable text option, a list of every value given."""
    return Option(flags, list, (), help, **more)


def metavar(option: Option) -> str:
    """The placeholder --help shows for the option's value."""
    if option.metavar:
        return option.metavar
    if option.choices is not None:
        return "[" + "|".join(option.choices) + "]"
    return _METAVARS[option.kind]


def option_bytes(text: str) -> bytes:
    """An option's namespace letters as the bytes VW compares with namespace indices: the
    UTF-8 of the text (as VW reads its command line), with ``\\xHH`` escapes decoded."""
    return _HEX.sub(lambda m: bytes([int(m.group(1), 16)]), os.fsencode(text))
