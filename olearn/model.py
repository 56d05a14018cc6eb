"""Model files: the whole learner state and the options it depends on, in one checked file.

Layout: ``MAGIC``, a little-endian uint32 header length, a JSON header (format version, the
model options, and each array's dtype, shape and byte range), the arrays' bytes, and a SHA-256
of everything before it. Written through a temporary file and renamed, so a crash never leaves
a half-written model.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import struct

import numpy as np

import olearn
from olearn.config import MODEL_OPTIONS, Config
from olearn.errors import OlearnError
from olearn.io.atomic import AtomicOutput

MAGIC = b"OLEARN-MODEL\n"
FORMAT_VERSION = 2
_DIGEST = 32


def _default_row(config: Config) -> np.ndarray:
    """The state row of a coordinate never updated (G starts at initial_t in adaptive mode)."""
    row = np.zeros(4, dtype=np.float32)
    if config.update_rule[0] and config.t0 > 0:
        row[1] = config.t0
    return row


def save(path: str, config: Config, weights: np.ndarray, state: np.ndarray) -> None:
    """Write a model: only the coordinates that differ from a fresh learner's are stored."""
    changed = np.flatnonzero(np.any(weights != _default_row(config), axis=1)).astype(np.uint32)
    arrays = {"index": changed, "rows": weights[changed], "state": state}
    spec, offset, blobs = {}, 0, []
    for name, array in arrays.items():
        data = np.ascontiguousarray(array).tobytes()
        spec[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset,
                      "bytes": len(data)}
        offset += len(data)
        blobs.append(data)
    header = json.dumps({"format_version": FORMAT_VERSION, "olearn": olearn.__version__,
                         "options": config.model_options(), "arrays": spec}).encode()
    body = MAGIC + struct.pack("<I", len(header)) + header + b"".join(blobs)
    out = AtomicOutput(path)
    try:
        out.write(body)
        out.write(hashlib.sha256(body).digest())
        out.commit()
    except BaseException:
        out.discard()
        raise


@dataclasses.dataclass
class Model:
    """A loaded model: its options and state, ready to be applied to a learner."""

    options: dict
    index: np.ndarray
    rows: np.ndarray
    state: np.ndarray

    def weights(self, config: Config) -> np.ndarray:
        weights = np.tile(_default_row(config), (1 << config.bit_precision, 1))
        weights[self.index] = self.rows
        return weights


def load(path: str) -> Model:
    """Read and check a model; any problem is one OlearnError naming what is wrong."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise OlearnError("no such model file", path) from None
    except OSError as exc:
        raise OlearnError(f"cannot read model: {exc.strerror or exc}", path) from None
    if not data.startswith(MAGIC):
        raise OlearnError("not an olearn model file (bad magic bytes)", path)
    start = len(MAGIC) + 4
    if len(data) < start + _DIGEST:
        raise OlearnError("truncated model file", path)
    (header_len,) = struct.unpack("<I", data[len(MAGIC):start])
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        too_short = len(data) < start + header_len + _DIGEST
        raise OlearnError("truncated model file" if too_short
                          else "corrupted model file (checksum mismatch)", path)
    try:
        header = json.loads(body[start:start + header_len])
    except ValueError:
        raise OlearnError("corrupted model file (unreadable header)", path) from None
    if header.get("format_version") != FORMAT_VERSION:
        raise OlearnError(f"unsupported model format version {header.get('format_version')} "
                          f"(this olearn reads version {FORMAT_VERSION})", path)
    payload = body[start + header_len:]
    arrays = {}
    for name, spec in header["arrays"].items():
        raw = payload[spec["offset"]:spec["offset"] + spec["bytes"]]
        arrays[name] = np.frombuffer(raw, dtype=np.dtype(spec["dtype"])).reshape(spec["shape"]).copy()
    from olearn.optim import gd
    if (set(arrays) != {"index", "rows", "state"} or arrays["state"].shape != (gd.STATE_SIZE,)
            or arrays["rows"].shape != (len(arrays["index"]), 4)
            or set(header["options"]) != set(MODEL_OPTIONS)):
        raise OlearnError("corrupted model file (unexpected contents)", path)
    return Model(header["options"], arrays["index"], arrays["rows"], arrays["state"])


def merged_config(config: Config, model: Model, path: str, warn) -> Config:
    """The run's options with ``-i``: the model's, except those given on the command line
    (a warning when they differ). A different ``-b`` is an error, as in VW."""
    options = dict(model.options)
    saved_bits = options["bit_precision"]
    if "bit_precision" in config.explicit and config.bit_precision != saved_bits:
        raise OlearnError(f"model has -b {saved_bits}, the command line asks for "
                          f"-b {config.bit_precision}", path)
    for name in MODEL_OPTIONS:
        if name in config.explicit and getattr(config, name) != options[name]:
            warn(f"[warning] --{name} {getattr(config, name)} from the command line overrides "
                 f"the model's {options[name]}")
            options[name] = getattr(config, name)
    return dataclasses.replace(config, **options)
