"""Choosing the parser of a source: --format, the file name, or its first data line."""
from __future__ import annotations

import re

from olearn.core.option import choice
from olearn.data.parse import FORMAT_SVMLIGHT, FORMAT_VW

SVM_SUFFIXES = (".svm", ".svmlight", ".libsvm")
_SVM_LINE = re.compile(rb"^\s*\S+(\s+[^\s:|]+:\S+)*\s*(#.*)?$")

OPTIONS = (
    choice("--format", choices=("auto", "vw", "svmlight"), default="auto", parsing=True,
           help="Input format; auto uses a .svm/.svmlight/.libsvm name, else the first line."),
)


def detect(requested: str, name: str, first_block: bytes) -> int:
    """The parser for a source: svmlight if asked, named ``*.svm*``/``*.libsvm*``, or if its
    first non-empty line has no ``|`` and only ``name:value`` tokens after the label."""
    if requested != "auto":
        return FORMAT_SVMLIGHT if requested == "svmlight" else FORMAT_VW
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
