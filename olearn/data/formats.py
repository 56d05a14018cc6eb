"""Choosing the parser of a source: --format, the file name, or its first data line."""
from __future__ import annotations

import re

from olearn.core.option import choice
from olearn.data.parse import FORMAT_CSV, FORMAT_SVMLIGHT, FORMAT_VW

SVM_SUFFIXES = (".svm", ".svmlight", ".libsvm")
_SVM_LINE = re.compile(rb"^\s*\S+(\s+[^\s:|]+:\S+)*\s*(#.*)?$")

OPTIONS = (
    choice("--format", choices=("auto", "vw", "svmlight", "csv"), default="auto", parsing=True,
           help="Input format; auto uses a .svm/.svmlight/.libsvm name, else the first line "
                "(csv: as --csv)."),
)


def requested(config) -> str:
    """The format the options ask for: --csv is VW's spelling of ``--format csv``."""
    return "csv" if config.csv else config.format


def check(config) -> None:
    """--csv and another --format contradict each other; CSV is read from whole files only
    (each brings its header line), which --daemon's clients and --dask's partitions are not."""
    from olearn.errors import OptionError
    if config.csv and config.format not in ("auto", "csv"):
        raise OptionError(f"--csv contradicts --format {config.format}")
    if requested(config) == "csv":
        for name in ("daemon", "dask"):
            if getattr(config, name):
                raise OptionError(f"--{name} does not take CSV input (--csv)")


def detect(requested: str, name: str, first_block: bytes) -> int:
    """The parser for a source: the format asked for, else svmlight if named
    ``*.svm*``/``*.libsvm*`` or if its first non-empty line has no ``|`` and only
    ``name:value`` tokens after the label (a CSV file is read as CSV only when asked: VW's)."""
    if requested != "auto":
        return {"svmlight": FORMAT_SVMLIGHT, "csv": FORMAT_CSV}.get(requested, FORMAT_VW)
    base = name.lower()
    for suffix in (".gz", ".bz2"):
        base = base.removesuffix(suffix)
    if base.endswith(SVM_SUFFIXES):
        return FORMAT_SVMLIGHT
    for line in first_block[:1 << 16].splitlines():
        line = line.lstrip(b"\xef\xbb\xbf").strip()
        if not line:
            continue
        if b"|" in line or b":" not in line:
            return FORMAT_VW
        return FORMAT_SVMLIGHT if _SVM_LINE.match(line) else FORMAT_VW
    return FORMAT_VW
