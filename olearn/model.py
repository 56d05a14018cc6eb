"""Model files: the whole learner state and the options it depends on, in one checked file.

Layout: ``MAGIC``, a little-endian uint32 header length, a JSON header (format version, the
model options, and each array's dtype, shape and byte range), the arrays' bytes, and a SHA-256
of everything before it. Written through a temporary file and renamed, so a crash never leaves
a half-written model.
"""
from __future__ import annotations

import dataclasses
import json
import struct

import numpy as np

import olearn
from olearn.config import EXPERT_LEARNERS, MODEL_OPTIONS, Config
from olearn.errors import OlearnError
from olearn.features import stage_poly
from olearn.io.atomic import AtomicOutput
from olearn.optim import layout as ew_layout

MAGIC = b"OLEARN-MODEL\n"
FORMAT_VERSION = 3
_DIGEST = 32


def _sha256(data: bytes) -> bytes:
    import hashlib  # here, not at the top: loading OpenSSL costs every run ~5 ms of start-up
    return hashlib.sha256(data).digest()


def _default_row(config: Config) -> np.ndarray:
    """The state row of a coordinate never updated (G starts at initial_t in adaptive mode)."""
    row = np.zeros(4, dtype=np.float32)
    if config.update_rule[0] and config.t0 > 0:
        row[1] = config.t0
    return row


POLY_ARRAYS = {"poly_index", "poly_depth", "poly_flags", "poly_ssm", "poly_counters"}
EXPERT_ARRAYS = ("ew_hashes", "ew_corners", "ew_coord", "ew_es", "ew_shared", "ew_meta")


def _expert_arrays(ew: tuple) -> dict:
    """The --eg/--boa/--saew state of the active coordinates (and BOA's ghost corner)."""
    _, hashes, _, _, corners, coord, es, shared, meta, _, _ = ew
    n = int(shared[ew_layout.SH_ACTIVE])
    if corners.shape[2] > 1:
        corners = np.concatenate([corners[:, :, :2 * n], corners[:, :, -1:]], axis=2)
    return dict(zip(EXPERT_ARRAYS, (hashes[:n], corners, coord[:, :, :n], es, shared, meta)))


def _restore_experts(arrays: dict, ew: tuple, path: str) -> None:
    slot, hashes, _, _, corners, coord, es, shared, meta, _, _ = ew
    n = len(arrays["ew_hashes"])
    boa_sub = corners.shape[2] > 1
    expected = {"ew_corners": (corners.shape[0], corners.shape[1], 2 * n + 1 if boa_sub else 1),
                "ew_coord": (coord.shape[0], coord.shape[1], n), "ew_es": es.shape,
                "ew_shared": shared.shape, "ew_meta": meta.shape}
    if (any(arrays[name].shape != shape for name, shape in expected.items())
            or int(arrays["ew_shared"][ew_layout.SH_ACTIVE]) != n or n > len(hashes)):
        raise OlearnError("model's --eg/--boa/--saew state does not fit these options "
                          "(a different calibration grid or subroutine?)", path)
    hashes[:n] = arrays["ew_hashes"]
    slot[hashes[:n]] = np.arange(n, dtype=slot.dtype)
    if boa_sub:
        corners[:, :, :2 * n] = arrays["ew_corners"][:, :, :-1]
        corners[:, :, -1] = arrays["ew_corners"][:, :, -1]
    coord[:, :, :n] = arrays["ew_coord"]
    es[:] = arrays["ew_es"]
    shared[:] = arrays["ew_shared"]
    meta[:] = arrays["ew_meta"]


def save(path: str, config: Config, weights: np.ndarray, state: np.ndarray,
         poly: tuple | None = None, ew: tuple | None = None) -> None:
    """Write a model: only the coordinates that differ from a fresh learner's are stored, and,
    with --stage_poly, the monomials seen in training (depth, parent flag, SSM sums); with
    --eg/--boa/--saew, the experts' state."""
    changed = np.flatnonzero(np.any(weights != _default_row(config), axis=1)).astype(np.uint32)
    arrays = {"index": changed, "rows": weights[changed], "state": state}
    if config.experts:
        arrays.update(_expert_arrays(ew))
    if config.stage_poly:
        min_depth, flags, ssm, counters, _ = poly
        seen = np.flatnonzero((min_depth != stage_poly.NEVER) | (flags != 0)).astype(np.uint32)
        arrays.update(poly_index=seen, poly_depth=min_depth[seen], poly_flags=flags[seen],
                      poly_ssm=ssm[seen] if len(ssm) == len(min_depth) else ssm[:0],
                      poly_counters=counters)
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
        out.write(_sha256(body))
        out.commit()
    except BaseException:
        out.discard()
        raise


@dataclasses.dataclass
class Model:
    """A loaded model: its options and state, ready to be applied to a learner."""

    options: dict
    arrays: dict

    @property
    def state(self) -> np.ndarray:
        return self.arrays["state"]

    def weights(self, config: Config) -> np.ndarray:
        weights = np.tile(_default_row(config), (1 << config.bit_precision, 1))
        weights[self.arrays["index"]] = self.arrays["rows"]
        return weights

    def restore(self, learner, path: str) -> None:
        """Put the saved state into ``learner`` (an OnlineLearner for the merged options)."""
        learner.restore(self.weights(learner.config), self.state)
        if learner.config.experts:
            _restore_experts(self.arrays, learner.ew, path)
        if learner.config.stage_poly and "poly_index" in self.arrays:
            min_depth, flags, ssm, counters, _ = learner.poly
            seen = self.arrays["poly_index"]
            min_depth[seen] = self.arrays["poly_depth"]
            flags[seen] = self.arrays["poly_flags"]
            if len(ssm) == len(min_depth) and len(self.arrays["poly_ssm"]) == len(seen):
                ssm[seen] = self.arrays["poly_ssm"]
            counters[:] = self.arrays["poly_counters"]


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
    if _sha256(body) != digest:
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
    poly = POLY_ARRAYS if header["options"].get("stage_poly") else set()
    experts = set(EXPERT_ARRAYS) if any(header["options"].get(n) for n in EXPERT_LEARNERS) \
        else set()
    if (set(arrays) != {"index", "rows", "state"} | poly | experts
            or arrays["state"].shape != (gd.STATE_SIZE,)
            or arrays["rows"].shape != (len(arrays["index"]), 4)
            or set(header["options"]) != set(MODEL_OPTIONS)
            or (poly and (arrays["poly_counters"].shape != (stage_poly.COUNTERS_SIZE,)
                          or len({len(arrays[n]) for n in ("poly_index", "poly_depth",
                                                          "poly_flags")}) != 1))):
        raise OlearnError("corrupted model file (unexpected contents)", path)
    bits = header["options"]["bit_precision"]
    for name in ("index", "poly_index", "ew_hashes"):
        if name in arrays and len(arrays[name]) and int(arrays[name].max()) >> bits:
            raise OlearnError("corrupted model file (index out of range)", path)
    return Model(header["options"], arrays)


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
