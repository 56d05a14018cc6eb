"""Command-line words -> Config, for the ``olearn`` command and ``olearn.Learner("-q ab --l1
1e-6")`` alike. The words are parsed by the click command generated from the option registry
(olearn/options/click_command.py), imported only when there are words: click's import costs
~10 ms, which keywords alone (the Python API, the daemon's Config) never pay.
"""
from __future__ import annotations

from olearn.options.command_options import COMMAND_OPTIONS
from olearn.options.config import Config


def parse(argv: list[str]) -> dict:
    """The options ``argv`` gives by name, and ``paths``: its positional files."""
    from olearn.options import click_command
    return click_command.parse(argv)


def config_of(argv: list[str], **overrides) -> Config:
    """The Config of a command line; ``overrides`` are options given apart (keywords). No
    arguments (a Learner of keywords only) need no parser, nor click."""
    return config_from(parse(argv) if argv else {"paths": []}, overrides)


def config_from(given: dict, overrides: dict) -> Config:
    """The Config of parsed arguments: the paths after -d's, and which options were given."""
    for option, _ in COMMAND_OPTIONS:
        given.pop(option.name, None)
    data = given.pop("data", []) + given.pop("paths")
    if data:
        given["data"] = data
    return Config(**{**given, **overrides}, explicit=frozenset(given) | frozenset(overrides))
