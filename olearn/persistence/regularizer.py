"""--bfgs's feature regularizer files (--output_feature_regularizer_binary/_text,
--input_feature_regularizer): per coordinate i, a Gaussian prior as two float32 entries,
2i (its precision) and 2i + 1 (its mean), only the nonzero ones written, in VW's layouts.

The binary file is a VW model file (persistence/vw_binary.py): VW's header and then
``reg_vector`` 1 and (uint32 index, float32 value) pairs. The text file is the text models'
header (persistence/readable.py), ":1", then a line ``index:value`` per entry.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from olearn.core.atomic import write_whole
from olearn.errors import OlearnError
from olearn.kernel import layouts
from olearn.learners.bfgs import Bfgs
from olearn.persistence import readable
from olearn.persistence.vw_binary import Reader, header_bytes, read_header
from olearn.persistence.vw_state import kept_options


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
        lines = readable.header_lines(config, learner.state, header_options(config))
        lines += [":1", *(f"{i}:{v:g}" for i, v in zip(listed.tolist(),
                                                      prior[listed].tolist()))]
        write_whole(config.output_feature_regularizer_text, ("\n".join(lines) + "\n").encode())


def header_options(config) -> str:
    """The options a regularizer file's header keeps: the model's, but --l1 and --l2 (VW's)."""
    return kept_options(dataclasses.replace(config, l1=0.0, l2=0.0))


def write_binary(path: str, learner, prior: np.ndarray) -> None:
    config, state = learner.config, learner.state
    listed = np.flatnonzero(prior)
    pairs = np.empty(len(listed), dtype=[("i", "<u4"), ("v", "<f4")])
    pairs["i"], pairs["v"] = listed, prior[listed]
    header = header_bytes(state[layouts.S_MIN], state[layouts.S_MAX], config.bit_precision,
                          header_options(config), config.ngram, config.skips)
    write_whole(path, header + b"\1" + pairs.tobytes())


def read_binary(path: str, bits: int) -> np.ndarray:
    """The regularizer array (2·2^bits float32) of a binary regularizer file, for a table of
    ``bits`` bits."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise OlearnError(f"cannot read the feature regularizer: {exc.strerror}", path) from None
    reader = Reader(data, path)
    header = read_header(reader)
    if header.bits != bits:
        raise OlearnError(f"the feature regularizer is not of -b {bits}", path)
    if header.ngram or header.skips:
        raise OlearnError("a feature regularizer with --ngram or --skips is not supported",
                          path)
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

