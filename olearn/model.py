"""Model files: the whole learner state and the options it depends on, in one checked file.

Layout: ``MAGIC``, a little-endian uint32 header length, a JSON header (format version, the
model options, and each array's dtype, shape and byte range), the arrays' bytes, and a SHA-256
of everything before it. Written through a temporary file and renamed, so a crash never leaves
a half-written model.

A model file is untrusted input: its checksum catches accidents, not lies (anyone can write a
valid one). :func:`load` checks every field before use: the header's types, each option's type
and value, each array's dtype, shape and byte range, index ranges and uniqueness, finiteness,
and the invariants the kernels rely on (counts and sizes they index or loop with, divisors).
"""
from __future__ import annotations

import dataclasses
import json
import math
import struct

import numpy as np

import olearn
from olearn.config import EXPERT_LEARNERS, MODEL_OPTIONS, REGISTRY, Config, default
from olearn.errors import OlearnError
from olearn.features import stage_poly
from olearn.io.atomic import AtomicOutput
from olearn.optim import boa, experts, gd, regularize
from olearn.optim import layout as ew_layout
from olearn.optim.weights import COLUMNS, W_G, W_N

MAGIC = b"OLEARN-MODEL\n"
# Format 5 names the fields of its state arrays and may lack options (a model from an older
# olearn): they take their defaults. Formats 3 (olearn 0.1.0) and 4 stored the fields by
# position, in the order LEGACY_FIELDS freezes; format 3's state has no regularization step
# count, its last field, which loads as its default 0 (its accumulators are flushed when saved,
# so no steps are pending).
FORMAT_VERSION = 5
VERSIONS = (3, 4, 5)
_DIGEST = 32
HEADER_KEYS = {"format_version", "olearn", "options", "arrays"}
SPEC_KEYS = {"dtype", "shape", "offset", "bytes"}
# The dtype and shape (None: any length) of each array save() writes.
ARRAYS = {"index": ("<u4", (None,)), "rows": ("<f4", (None, None)),
          "state": ("<f8", (None,)), "poly_index": ("<u4", (None,)),
          "poly_depth": ("|u1", (None,)), "poly_flags": ("|u1", (None,)),
          "poly_ssm": ("<f8", (None, 2)), "poly_counters": ("<f8", (None,)),
          "ew_hashes": ("<i8", (None,)), "ew_corners": ("<f8", (None, boa.ROWS, None)),
          "ew_coord": ("<f8", (None, None, None)),
          "ew_es": ("<f8", (None, None)), "ew_shared": ("<f8", (None,)),
          "ew_meta": ("<f8", (boa.ROWS + 1, None))}
# The arrays whose fields are declared (olearn/fields.py), and the axis the fields run along.
NAMED = {"rows": (COLUMNS, 1), "state": (gd.STATE, 0), "poly_counters": (stage_poly.COUNTERS, 0),
         "ew_es": (ew_layout.ES, 1), "ew_shared": (ew_layout.SHARED, 0),
         "ew_coord": (ew_layout.COORD, 1)}
# The fields of formats 3 and 4, by position (format 3's state lacks the last one).
LEGACY_FIELDS = {
    "rows": ["w", "G", "N", "rate"],
    "state": ["norm", "total", "t", "min", "max", "reg_phi", "reg_sum", "reg_steps"],
    "poly_counters": ["sparsity", "examples", "period", "pending", "counter_base"],
    "ew_es": ["sum", "top", "eps", "session", "n", "q", "d0", "alpha", "u", "b", "b_scale", "eta",
              "var", "range", "off", "ref", "a", "touches", "b_max"],
    "ew_shared": ["active", "t", "meta_sum", "touched"],
    "ew_coord": ["center", "avg", "g", "snap", "scratch"]}
POLY_ARRAYS = {"poly_index", "poly_depth", "poly_flags", "poly_ssm", "poly_counters"}
EXPERT_ARRAYS = ("ew_hashes", "ew_corners", "ew_coord", "ew_es", "ew_shared", "ew_meta")
# Config's annotation of each option, and the JSON types each of its words accepts.
_ANNOTATIONS = {f.name: f.type for f in dataclasses.fields(Config)}
_JSON_TYPES = {"bool": (bool,), "int": (int,), "float": (int, float), "str": (str,),
               "None": (type(None),)}
# Counts and counters the kernels convert to int64 must stay below this.
_INT64_LIMIT = 1 << 63
# Relative tolerance of a stored weight or weight sum against its recomputation (the kernels
# sum in another order and use their own exp, within an ulp).
_REL_TOL = 1e-6


def _sha256(data: bytes) -> bytes:
    import hashlib  # here, not at the top: loading OpenSSL costs every run ~5 ms of start-up
    return hashlib.sha256(data).digest()


def _default_row(config: Config) -> np.ndarray:
    """The state row of a coordinate never updated (G starts at initial_t in adaptive mode)."""
    row = COLUMNS.defaults().astype(np.float32)
    if config.update_rule[0] and config.t0 > 0:
        row[W_G] = config.t0
    return row


def _expert_arrays(ew: tuple) -> dict:
    """The --eg/--boa/--saew state of the active coordinates (and BOA's ghost corner)."""
    _, hashes, _, _, corners, coord, es, shared, meta, _, _ = ew
    n = int(shared[ew_layout.SH_ACTIVE])
    if corners.shape[2] > 1:
        corners = np.concatenate([corners[:, :, :2 * n], corners[:, :, -1:]], axis=2)
    return dict(zip(EXPERT_ARRAYS, (hashes[:n], corners, coord[:, :, :n], es, shared, meta)))


def _restore_experts(arrays: dict, ew: tuple, path: str) -> None:
    """Put the saved experts' state into ``ew`` (load checked it against the model's options;
    the run's options may still ask for another grid)."""
    slot, hashes, _, _, corners, coord, es, shared, meta, _, _ = ew
    n = len(arrays["ew_hashes"])
    boa_sub = corners.shape[2] > 1
    expected = {"ew_corners": (corners.shape[0], corners.shape[1], 2 * n + 1 if boa_sub else 1),
                "ew_coord": (coord.shape[0], coord.shape[1], n), "ew_es": es.shape,
                "ew_shared": shared.shape, "ew_meta": meta.shape}
    if any(arrays[name].shape != shape for name, shape in expected.items()):
        raise OlearnError("model's --eg/--boa/--saew state does not fit these options "
                          "(a different calibration grid or subroutine?)", path)
    hashes[:n] = arrays["ew_hashes"]
    slot[hashes[:n]] = np.arange(n, dtype=slot.dtype)
    if boa_sub:
        corners[:, :, :2 * n] = arrays["ew_corners"][:, :, :-1]
        corners[:, :, -1] = arrays["ew_corners"][:, :, -1]
    coord[:, :, :n] = arrays["ew_coord"]
    options = es[:, experts.E_OPTIONS]  # the run's: an option given on the command line applies
    es[:] = arrays["ew_es"]
    es[:, experts.E_OPTIONS] = options
    shared[:] = arrays["ew_shared"]
    meta[:] = arrays["ew_meta"]


def save(path: str, config: Config, weights: np.ndarray, state: np.ndarray,
         poly: tuple | None = None, ew: tuple | None = None) -> None:
    """Write a model: only the coordinates that differ from a fresh learner's are stored, and,
    with --stage_poly, the monomials seen in training (depth, parent flag, SSM sums); with
    --eg/--boa/--saew, the experts' state."""
    saved = COLUMNS.saved
    changed = np.flatnonzero(np.any(weights[:, saved] != _default_row(config)[saved], axis=1))
    arrays = {"index": changed, "rows": weights[changed], "state": state}
    if config.experts:
        arrays.update(_expert_arrays(ew))
    if config.stage_poly:
        min_depth, flags, ssm, counters, _ = poly
        seen = np.flatnonzero((min_depth != stage_poly.NEVER) | (flags != 0))
        arrays.update(poly_index=seen, poly_depth=min_depth[seen], poly_flags=flags[seen],
                      poly_ssm=ssm[seen] if len(ssm) == len(min_depth) else ssm[:0],
                      poly_counters=counters)
    spec, offset, blobs, fields = {}, 0, [], {}
    for name, (layout, axis) in NAMED.items():
        if name in arrays:  # the saved fields only, each named
            arrays[name] = np.take(arrays[name], layout.saved, axis=axis)
            fields[name] = [layout.names[i] for i in layout.saved]
    for name, array in arrays.items():
        dtype = ARRAYS[name][0]
        data = np.ascontiguousarray(array, dtype=dtype).tobytes()
        spec[name] = {"dtype": dtype, "shape": list(array.shape), "offset": offset,
                      "bytes": len(data)}
        offset += len(data)
        blobs.append(data)
    header = json.dumps({"format_version": FORMAT_VERSION, "olearn": olearn.__version__,
                         "options": config.model_options(), "arrays": spec,
                         "fields": fields}).encode()
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


class _Invalid(Exception):
    """What is wrong in a model file's contents; load() reports it as a corrupted model."""


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise _Invalid(what)


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
        _require(start + header_len <= len(body), "header longer than the file")
        header = _header(body[start:start + header_len])
        version = header["format_version"]
        if version not in VERSIONS:
            raise OlearnError(f"unsupported model format version {version} (this olearn reads "
                              f"versions {VERSIONS[0]} to {VERSIONS[-1]})", path)
        keys = HEADER_KEYS | {"fields"} if version >= 5 else HEADER_KEYS
        _require(set(header) == keys and type(header["olearn"]) is str
                 and type(header["options"]) is dict, "unexpected header fields")
        unknown = sorted(set(header["options"]) - set(MODEL_OPTIONS))
        if unknown:
            raise OlearnError(f"the model (olearn {header['olearn']}) has options this olearn "
                              f"does not know: {', '.join(unknown)}", path)
        # a model from an older olearn lacks the options added since: they take their defaults
        options = {**_option_defaults(), **header["options"]}
        config = _config(options)
        arrays = _arrays(header["arrays"], body[start + header_len:], _names(config))
        _name_fields(arrays, header.get("fields"), version, config)
        _check_table(arrays, config)
        if config.stage_poly:
            _check_poly(arrays, config)
        if config.experts:
            _check_experts(arrays, config)
    except _Invalid as exc:
        raise OlearnError(f"corrupted model file ({exc})", path) from None
    return Model(options, arrays)


def _header(text: bytes) -> dict:
    """The JSON header: an object with an integer format version."""
    try:
        header = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deep for the parser
        raise _Invalid("unreadable header") from None
    _require(type(header) is dict and type(header.get("format_version")) is int,
             "header without a format version")
    return header


def _config(options: dict) -> Config:
    """The model's options as a Config: each of its Config field's type, then Config's checks."""
    for name, value in options.items():
        annotation = _ANNOTATIONS[name]
        if annotation == "list[str]":  # interaction terms: namespaces are bytes
            fits = type(value) is list and all(
                type(term) is str and max(map(ord, term), default=0) < 256 for term in value)
        else:
            fits = any(type(value) in _JSON_TYPES[word] for word in annotation.split(" | "))
        _require(fits, f"option {name} is a {type(value).__name__}, not {annotation}")
        _require(not (type(value) is float and math.isnan(value)), f"option {name} is NaN")
        _require(not (type(value) is int and abs(value) >= _INT64_LIMIT),
                 f"option {name} out of range")
    try:
        return Config(quiet=True, **options)
    except OlearnError as exc:
        raise _Invalid(f"options: {exc.message}") from None


def _option_defaults() -> dict:
    """Each model option's default (what a model that lacks the option was trained with)."""
    return {name: default(REGISTRY[name]) for name in MODEL_OPTIONS}


def _name_fields(arrays: dict, fields: object, version: int, config: Config) -> None:
    """Each declared array in the current layout, from its fields' names (format 5) or
    positions (formats 3 and 4); a field the file lacks takes its fresh value."""
    if version >= 5:
        _require(type(fields) is dict and set(fields) == set(NAMED) & set(arrays),
                 "unexpected field names")
    for name, (layout, axis) in NAMED.items():
        if name not in arrays:
            continue
        values = arrays[name]
        if version >= 5:
            names = fields[name]
            _require(type(names) is list and all(type(n) is str for n in names)
                     and len(set(names)) == len(names), f"{name}: malformed field names")
        else:
            names = LEGACY_FIELDS[name][:values.shape[axis]]
            missing = len(LEGACY_FIELDS[name]) - len(names)
            _require(missing == 0 or (version == 3 and name == "state" and missing == 1),
                     f"{name}: {values.shape[axis]} fields, not {len(LEGACY_FIELDS[name])}")
        _require(values.shape[axis] == len(names), f"{name}: not one value per field")
        fill = _default_row(config) if name == "rows" else layout.defaults()
        try:
            arrays[name] = layout.from_names(names, values, fill, axis)
        except KeyError as exc:
            raise _Invalid(f"{name}: fields this olearn does not know ({exc.args[0]}; "
                           "a newer olearn's model?)") from None


def _names(config: Config) -> set[str]:
    """The arrays a model of these options holds."""
    names = {"index", "rows", "state"}
    if config.stage_poly:
        names |= POLY_ARRAYS
    if config.experts:
        names |= set(EXPERT_ARRAYS)
    return names


def _arrays(specs: object, payload: bytes, names: set[str]) -> dict[str, np.ndarray]:
    """The arrays ``specs`` describe in ``payload``: each one's dtype the one save() writes,
    its shape of that rank (fixed dimensions equal), its byte range its size and inside."""
    _require(type(specs) is dict and set(specs) == names, "unexpected arrays")
    limit = len(payload)  # no dimension, offset or size can be larger

    def natural(x: object) -> bool:
        return type(x) is int and 0 <= x <= limit

    arrays = {}
    for name, spec in specs.items():
        dtype, pattern = ARRAYS[name]
        _require(type(spec) is dict and set(spec) == SPEC_KEYS, f"{name}: unexpected fields")
        _require(spec["dtype"] == dtype, f"{name}: not of dtype {dtype}")
        shape, offset, size = spec["shape"], spec["offset"], spec["bytes"]
        _require(type(shape) is list and len(shape) == len(pattern)
                 and all(natural(d) and p in (None, d) for d, p in zip(shape, pattern)),
                 f"{name}: unexpected shape")
        count = math.prod(shape)
        _require(natural(offset) and natural(size) and size == count * np.dtype(dtype).itemsize
                 and offset + size <= limit, f"{name}: byte range does not fit its shape")
        arrays[name] = np.frombuffer(payload, dtype=dtype, count=count,
                                     offset=offset).reshape(shape).copy()
    return arrays


def _increasing_below(a: np.ndarray, size: int) -> bool:
    """Whether ``a`` is strictly increasing (so without duplicates) and below ``size``."""
    return len(a) == 0 or (int(a[-1]) < size and bool(np.all(a[1:] > a[:-1])))


def _counts(a: np.ndarray) -> bool:
    """Whether ``a`` holds non-negative whole numbers that convert to int64."""
    return bool(np.all((a >= 0) & (a < _INT64_LIMIT) & (a == np.floor(a))))


def _check_table(arrays: dict, config: Config) -> None:
    """The weight rows and the learner state."""
    index, rows = arrays["index"], arrays["rows"]
    _require(len(rows) == len(index), "rows and index of different lengths")
    _require(_increasing_below(index, 1 << config.bit_precision),
             "index out of range, unsorted or repeated")
    # what OnlineLearner.save checks are finite (the update's scratch rate is not saved)
    _require(bool(np.isfinite(rows[:, COLUMNS.saved]).all()), "NaN or infinite weights")
    _require(bool(np.all(rows[:, [W_G, W_N]] >= 0)), "negative adaptive sums or normalizers")
    state = arrays["state"]
    _require(bool(np.isfinite(state).all()), "NaN or infinite state")
    _require(state[gd.S_NORM] >= 0 and state[gd.S_TOTAL] >= 0, "negative normalization totals")
    # the lazy snapshots are not saved: they are consistent only with flushed accumulators
    _require(not state[gd.S_REG:gd.S_REG + regularize.SIZE].any(),
             "regularization accumulators not flushed")
    fixed = config.min_prediction is not None or config.max_prediction is not None
    _require(fixed or state[gd.S_MIN] <= state[gd.S_MAX], "label range with min > max")


def _check_poly(arrays: dict, config: Config) -> None:
    """--stage_poly: the monomials' indices, depths, flags, SSM sums and the counters."""
    seen, depth, flags = arrays["poly_index"], arrays["poly_depth"], arrays["poly_flags"]
    _require(_increasing_below(seen, 1 << config.bit_precision),
             "poly_index out of range, unsorted or repeated")
    _require(len(depth) == len(seen) and len(flags) == len(seen),
             "poly arrays of different lengths")
    _require(bool(np.all(depth <= stage_poly.NEVER)), "monomial depth out of range")
    _require(not np.any(flags & ~stage_poly.PARENT), "unknown monomial flags")
    _require(bool(np.all((depth != stage_poly.NEVER) | (flags != 0))),
             "a monomial neither seen nor a parent")
    ssm = arrays["poly_ssm"]
    _require(len(ssm) == (len(seen) if config.poly_heuristic == "ssm" else 0),
             "poly_ssm of the wrong length")
    _require(bool(np.all(np.isfinite(ssm) & (ssm >= 0))), "negative or non-finite SSM sums")
    counters = arrays["poly_counters"]
    _require(bool(np.all(np.isfinite(counters) & (counters >= 0))),
             "negative or non-finite counters")
    _require(_counts(counters[[stage_poly.C_PERIOD, stage_poly.C_COUNTER_BASE]])
             and counters[stage_poly.C_PENDING] in (0.0, 1.0), "malformed counters")


def _check_experts(arrays: dict, config: Config) -> None:
    """--eg/--boa/--saew: shapes for the model's options, the active index, and what the
    kernels use as counts, indices and divisors; BOA's weights those of its experts' state."""
    L = ew_layout
    hashes, corners, coord = arrays["ew_hashes"], arrays["ew_corners"], arrays["ew_coord"]
    es, shared, meta = arrays["ew_es"], arrays["ew_shared"], arrays["ew_meta"]
    n, k = len(hashes), experts.instances(config)  # k before new_es: its grid can be large
    boa_sub = config.subroutine == "boa"
    _require(corners.shape[::2] == (k, 2 * n + 1 if boa_sub else 1) and coord.shape[::2] == (k, n)
             and len(es) == k and meta.shape[1] == k,
             "--eg/--boa/--saew state does not fit the model's options")
    _require(bool(np.all(hashes >= 0)) and len(np.unique(hashes)) == n
             and (n == 0 or int(hashes.max()) < 1 << config.bit_precision),
             "ew_hashes out of range or repeated")
    _require(all(np.isfinite(a).all() for a in (corners, coord, es, shared, meta)),
             "NaN or infinite --eg/--boa/--saew state")
    # coordinates arrive with the examples learned; examples without features leave the
    # subroutine untouched (saew._instance_learn), so BOA's lone ghost stays fresh
    learned = shared[L.SH_T] > 0
    _require(shared[L.SH_ACTIVE] == n and (n == 0 or learned)
             and _counts(shared[[L.SH_TOUCHED, L.SH_T]]) and shared[L.SH_TOUCHED] <= n,
             "malformed ew_shared")
    options = experts.E_OPTIONS
    _require(np.array_equal(es[:, options], experts.new_es(config)[:, options])
             and bool(np.all(es[:, [L.E_D0, L.E_ALPHA, L.E_U]] > 0)),
             "ew_es does not hold the model's options")
    # every scalar but BOA's log-weight offset is a count, a sum of squares, a rate, a weight
    # sum (a divisor once there are coordinates) or a non-negative offset
    _require(_counts(es[:, [L.E_SESSION, L.E_N]]) and bool(np.all(np.delete(es, L.E_TOP, 1) >= 0))
             and (n == 0 or bool(np.all(es[:, L.E_SUM] > 0))), "malformed ew_es")
    # the calibration's BOA over the instances (its weight sum divides)
    _require(_boa_weights_fit(meta[:boa.ROWS], None, math.log(max(k, 2)))
             and math.isclose(shared[L.SH_META_SUM], meta[boa.W].sum(), rel_tol=_REL_TOL),
             "malformed ew_meta")
    if boa_sub and n == 0 and learned:
        _require(all(_fresh(rows).all() for rows in corners), "BOA's ghost corner is not fresh")
    elif boa_sub and learned:  # (before the first example, the corners are reset when used)
        _require(all(_boa_weights_fit(corners[i], es[i, L.E_TOP], math.log(2 * n))
                     and math.isclose(es[i, L.E_SUM], corners[i, boa.W, :-1].sum(),
                                      rel_tol=_REL_TOL) for i in range(k)),
                 "BOA's corner weights are not those of their state")
    if not boa_sub:  # EG keeps every exp(±eta G - offset) <= 1
        log_weights = np.abs(es[:, L.E_ETA, None] * coord[:, L.K_G])
        _require(bool(np.all(log_weights <= es[:, L.E_OFF, None])),
                 "EG's offset below its log-weights")


def _fresh(experts_rows: np.ndarray) -> np.ndarray:
    """Which BOA experts (rows V, B2, R, W; a column each) are as boa.reset leaves them."""
    v, b2, r, w = experts_rows
    return (v == 0) & (b2 == boa.B2_START) & (r == 0) & (w == 1)


def _boa_weights_fit(experts_rows: np.ndarray, offset: float | None, log_n: float) -> bool:
    """Whether BOA experts (rows V, B2, R, W; a column each) are fresh (boa.reset) or weigh
    what their state says, eta e^(eta R - offset) (boa.weigh; ``offset`` None: the largest
    eta R, as the calibration's step). B2 > 0: the rates divide by it."""
    v, b2, r, w = experts_rows
    fresh = _fresh(experts_rows)
    if fresh.all():
        return True
    if not (np.all(v >= 0) and np.all(b2 > 0)):
        return False
    with np.errstate(all="ignore"):  # an overflow is a mismatch
        eta = np.where(v > 0, np.minimum(1 / b2, np.sqrt(log_n / np.where(v > 0, v, 1))), 1 / b2)
        a = eta * r
        weights = eta * np.exp(a - (a.max() if offset is None else offset))
    return bool(np.all(fresh | np.isclose(w, weights, rtol=_REL_TOL, atol=1e-300)))


def merged_config(config: Config, model: Model, path: str, warn) -> Config:
    """The run's options with ``-i``: the model's, except those given on the command line
    (a warning when they differ). A different ``-b`` is an error, as in VW, and so is another
    learner (the state would not be its)."""
    saved = model.options
    if "bit_precision" in config.explicit and config.bit_precision != saved["bit_precision"]:
        raise OlearnError(f"model has -b {saved['bit_precision']}, the command line asks for "
                          f"-b {config.bit_precision}", path)
    given = [name for name in MODEL_OPTIONS
             if name in config.explicit and getattr(config, name) != saved[name]]
    options = {**saved, **{name: getattr(config, name) for name in given}}
    if any(name in config.explicit for name in (*EXPERT_LEARNERS, "saew_calibrate")):
        # the command line names the learner: --boa replaces a model's --eg (it is not both)
        options.update({name: getattr(config, name) for name in EXPERT_LEARNERS})
    if _learner(options) != _learner(saved):
        raise OlearnError(f"model was trained with {_learner(saved)}, the command line asks for "
                          f"{_learner(options)} (a model continues with its own learner)", path)
    try:
        merged = dataclasses.replace(config, **options)
    except OlearnError as exc:  # the model's options with the command line's
        raise OlearnError(exc.message, path) from None
    for name in given:
        warn(f"[warning] --{name} {getattr(config, name)} from the command line overrides "
             f"the model's {saved[name]}")
    return merged


def _learner(options: dict) -> str:
    """The learner model options train, as its options (it decides what state is saved)."""
    chosen = [name for name in EXPERT_LEARNERS if options[name]]
    if not chosen:
        return "gradient descent"
    if chosen != ["saew"]:
        return " ".join(f"--{name}" for name in chosen)
    kind = "--saew_calibrate" if options["saew_calibrate"] else "--saew"
    return f"{kind} --saew_sub {options['saew_sub']}"
