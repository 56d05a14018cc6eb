"""--bfgs's feature regularizer files (--output_feature_regularizer_binary/_text,
--input_feature_regularizer): per coordinate i, a Gaussian prior as two float32 entries,
2i (its precision) and 2i + 1 (its mean), only the nonzero ones written, in VW's layouts.

The binary file is a VW model file (docs/vw-reference.md): VW's header (version, id, label
range, bits, options, a checksum of the header) and then ``reg_vector`` 1 and (uint32 index,
float32 value) pairs. The text file is olearn's text-model header (persistence/readable.py),
":1", then a line ``index:value`` per entry.
"""
from __future__ import annotations

import struct

import mmh3
import numpy as np

from olearn.core.atomic import write_whole
from olearn.errors import OlearnError
from olearn.kernel import layouts
from olearn.learners.bfgs import Bfgs
from olearn.persistence import readable

# The VW version whose model layout the binary file follows.
VW_LAYOUT = "9.11.9"


def write_outputs(learner) -> None:
    """After training: the regularizer files the run asked for, if --bfgs converged (VW
    computes the array afresh for each file, adding the preconditioner again each time)."""
    family, config = learner.family, learner.config
    if not isinstance(family, Bfgs) or not family.output_prior:
        return
    if config.output_feature_regularizer_binary:
        write_binary(config.output_feature_regularizer_binary, learner,
                     family.prior_to_write(learner.weights))
    if config.output_feature_regularizer_text:
        prior = family.prior_to_write(learner.weights)
        listed = np.flatnonzero(prior)
        lines = readable.header_lines(config, learner.state, prior[listed],
                                      readable.vw_kept_options(config))
        lines += [":1", *(f"{i}:{v:g}" for i, v in zip(listed.tolist(),
                                                      prior[listed].tolist()))]
        write_whole(config.output_feature_regularizer_text, ("\n".join(lines) + "\n").encode())


def _string(text: str) -> bytes:
    data = text.encode() + b"\0"
    return struct.pack("<I", len(data)) + data


def _header_fields(config, state) -> list[bytes]:
    """VW's binary header after its version, field by field (its checksum chains a hash of
    each)."""
    return [struct.pack("<I", 1), b"\0", b"m", struct.pack("<f", state[layouts.S_MIN]),
            struct.pack("<f", state[layouts.S_MAX]), struct.pack("<I", config.bit_precision),
            struct.pack("<I", 0), struct.pack("<I", 0), struct.pack("<I", 0),
            *_split_string(" " + readable.vw_kept_options(config))]


def _split_string(text: str) -> list[bytes]:
    data = _string(text)
    return [data[:4], data[4:]]


def _checksum(fields: list[bytes]) -> int:
    """VW's: a murmur hash of each field, seeded by the hash of those before."""
    h = 0
    for field in fields:
        h = mmh3.hash(field, h, signed=False)
    return h


def write_binary(path: str, learner, prior: np.ndarray) -> None:
    fields = _header_fields(learner.config, learner.state)
    listed = np.flatnonzero(prior)
    pairs = np.empty(len(listed), dtype=[("i", "<u4"), ("v", "<f4")])
    pairs["i"], pairs["v"] = listed, prior[listed]
    data = b"".join([_string(VW_LAYOUT), *fields, struct.pack("<II", 4, _checksum(fields)), b"\1",
                     pairs.tobytes()])
    write_whole(path, data)


class _Reader:
    """Reads VW's binary fields, refusing a file that ends early."""

    def __init__(self, data: bytes, path: str):
        self.data, self.path, self.at = data, path, 0

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise OlearnError("not a VW feature regularizer file (it ends early)", self.path)
        part = self.data[self.at:self.at + size]
        self.at += size
        return part

    def number(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> bytes:
        return self.take(self.number("<I"))


def read_binary(path: str, bits: int) -> np.ndarray:
    """The regularizer array (2·2^bits float32) of a binary regularizer file, for a table of
    ``bits`` bits."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise OlearnError(f"cannot read the feature regularizer: {exc.strerror}", path) from None
    reader = _Reader(data, path)
    reader.string()  # VW's version
    reader.string()  # the model id
    reader.take(1)  # 'm'
    reader.take(8)  # the label range
    if reader.number("<I") != bits:
        raise OlearnError(f"the feature regularizer is not of -b {bits}", path)
    reader.take(4)  # lda
    if reader.number("<I") or reader.number("<I"):
        raise OlearnError("a feature regularizer with --ngram or --skips is not supported",
                          path)
    reader.string()  # the options
    reader.string()  # the checksum
    if reader.take(1) != b"\1":
        raise OlearnError("not a feature regularizer (a model file of weights)", path)
    rest = data[reader.at:]
    if len(rest) % 8:
        raise OlearnError("not a VW feature regularizer file (a partial entry)", path)
    pairs = np.frombuffer(rest, dtype=[("i", "<u4"), ("v", "<f4")])
    prior = np.zeros(2 << bits, dtype=np.float32)
    if len(pairs) and int(pairs["i"].max()) >= len(prior):
        raise OlearnError("a feature regularizer entry is outside the table", path)
    prior[pairs["i"]] = pairs["v"]
    return prior


def load_input(learner) -> None:
    """--input_feature_regularizer: the family starts from the file's prior."""
    path = learner.config.input_feature_regularizer
    if path and isinstance(learner.family, Bfgs):
        learner.family.take_prior(read_binary(path, learner.config.bit_precision),
                                  learner.weights)

