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
from olearn.core.atomic import AtomicOutput
from olearn.core.checks import INT64_LIMIT, Invalid, increasing_below, require
from olearn.errors import OlearnError
from olearn.features.stage_poly import StagePoly
from olearn.kernel import layouts
from olearn.learners import regularize
from olearn.learners.families import FAMILIES, family_of
from olearn.learners.weights import COLUMNS, W_W, default_row
from olearn.options.config import EXPERT_LEARNERS, MODEL_OPTIONS, REGISTRY, Config, default
from olearn.outputs import report
from olearn.persistence import vw_binary, vw_model
from olearn.reductions.boosting import Boosting
from olearn.reductions.chosen import reduction_of
from olearn.reductions.log_multi import LogMulti
from olearn.reductions.marginal import Marginal
from olearn.reductions.oaa import AUTO, OneAgainstAll

# The options that choose a learner family (the state a model holds is that family's).
LEARNERS = (*EXPERT_LEARNERS, *(family.OPTION for family in FAMILIES if family.OPTION))
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
# Beside the weight table and the learner state, the expander's and the families' own.
OWNERS = (StagePoly, OneAgainstAll, Boosting, LogMulti, Marginal, *FAMILIES)
ARRAYS = {"index": ("<u4", (None,)), "rows": ("<f4", (None, None)),
          "state": ("<f8", (None,)), "counters": ("<f8", (None,)),
          **{name: spec for owner in OWNERS for name, spec in owner.ARRAYS.items()}}
# The arrays whose fields are declared (olearn/core/fields.py), and the axis the fields run along.
NAMED = {"rows": (COLUMNS, 1), "state": (layouts.STATE, 0), "counters": (report.COUNTERS, 0),
         **{name: named for owner in OWNERS for name, named in owner.NAMED.items()}}
# The arrays a model may lack: the progress counters (older olearns', --predict_only_model),
# and the owners' own (arrays added since an earlier olearn, which the owner's restore fills).
OPTIONAL_ARRAYS = {"counters",
                   *(name for owner in OWNERS for name in getattr(owner, "OPTIONAL_ARRAYS", ()))}
# The fields of formats 3 and 4, by position (format 3's state lacks the last one).
LEGACY_FIELDS = {
    "rows": ["w", "G", "N", "rate"],
    "state": ["norm", "total", "t", "min", "max", "reg_phi", "reg_sum", "reg_steps"],
    "poly_counters": ["sparsity", "examples", "period", "pending", "counter_base"],
    "ew_es": ["sum", "top", "eps", "session", "n", "q", "d0", "alpha", "u", "b", "b_scale", "eta",
              "var", "range", "off", "ref", "a", "touches", "b_max"],
    "ew_shared": ["active", "t", "meta_sum", "touched"],
    "ew_coord": ["center", "avg", "g", "snap", "scratch"]}
# Config's annotation of each option, and the JSON types each of its words accepts.
_ANNOTATIONS = {f.name: f.type for f in dataclasses.fields(Config)}
_JSON_TYPES = {"bool": (bool,), "int": (int,), "float": (int, float), "str": (str,),
               "None": (type(None),)}


def _sha256(data: bytes) -> bytes:
    import hashlib  # here, not at the top: loading OpenSSL costs every run ~5 ms of start-up
    return hashlib.sha256(data).digest()


def without_resume_state(weights: np.ndarray, config: Config) -> np.ndarray:
    """A copy of ``weights`` whose optimizer sums are a fresh learner's (--predict_only_model)."""
    fresh = np.tile(default_row(config), (weights.shape[0], 1))
    fresh[:, W_W] = weights[:, W_W]
    return fresh


def save(path: str, config: Config, weights: np.ndarray, state: np.ndarray,
         owners: tuple = (), counters: np.ndarray | None = None) -> None:
    """Write a model: only the coordinates that differ from a fresh learner's are stored, and
    what ``owners`` keep of their state (``model_arrays``: the --stage_poly expander's
    monomials, the learner family's own state), and the progress ``counters`` if given."""
    saved = COLUMNS.saved
    changed = np.flatnonzero(np.any(weights[:, saved] != default_row(config)[saved], axis=1))
    arrays = {"index": changed, "rows": weights[changed], "state": state}
    if counters is not None:
        arrays["counters"] = counters
    for owner in owners:
        arrays.update(owner.model_arrays())
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
        weights = np.tile(default_row(config), (1 << config.bit_precision, 1))
        weights[self.arrays["index"]] = self.arrays["rows"]
        return weights

    def restore(self, learner, path: str) -> None:
        """Put the saved state into ``learner`` (an OnlineLearner for the merged options)."""
        learner.restore(self.weights(learner.config), self.state)
        learner.family.restore(self.arrays, path)
        learner.expander.restore(self.arrays)
        learner.reduction.restore(self.arrays)


def load(path: str) -> Model:
    """Read and check a model; any problem is one OlearnError naming what is wrong."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise OlearnError("no such model file", path) from None
    except OSError as exc:
        raise OlearnError(f"cannot read model: {exc.strerror or exc}", path) from None
    if vw_binary.version_of(data) is not None:
        options, arrays = vw_model.read(data, path, _option_defaults())
        what = "VW model file"
    elif data.startswith(MAGIC):
        options, arrays = _olearn_parts(data, path)
        what = "model file"
    else:
        raise OlearnError("neither an olearn nor a VW model file", path)
    try:
        config = _config(options)
        _check_table(arrays, config)
        StagePoly.check(arrays, config)
        reduction_of(config).check(arrays, config)
        family_of(config).check(arrays, config)
    except Invalid as exc:
        raise OlearnError(f"corrupted {what} ({exc})", path) from None
    return Model(options, arrays)


def _olearn_parts(data: bytes, path: str) -> tuple[dict, dict]:
    """The options and arrays of an olearn model file's bytes, its checksum and layout
    checked."""
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
        require(start + header_len <= len(body), "header longer than the file")
        header = _header(body[start:start + header_len])
        version = header["format_version"]
        if version not in VERSIONS:
            raise OlearnError(f"unsupported model format version {version} (this olearn reads "
                              f"versions {VERSIONS[0]} to {VERSIONS[-1]})", path)
        keys = HEADER_KEYS | {"fields"} if version >= 5 else HEADER_KEYS
        require(set(header) == keys and type(header["olearn"]) is str
                 and type(header["options"]) is dict, "unexpected header fields")
        unknown = sorted(set(header["options"]) - set(MODEL_OPTIONS))
        if unknown:
            raise OlearnError(f"the model (olearn {header['olearn']}) has options this olearn "
                              f"does not know: {', '.join(unknown)}", path)
        # a model from an older olearn lacks the options added since: they take their defaults
        options = {**_option_defaults(), **header["options"]}
        config = _config(options)
        arrays = _arrays(header["arrays"], body[start + header_len:], _names(config),
                         OPTIONAL_ARRAYS)
        _name_fields(arrays, header.get("fields"), version, config)
    except Invalid as exc:
        raise OlearnError(f"corrupted model file ({exc})", path) from None
    return options, arrays


def _header(text: bytes) -> dict:
    """The JSON header: an object with an integer format version."""
    try:
        header = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deep for the parser
        raise Invalid("unreadable header") from None
    require(type(header) is dict and type(header.get("format_version")) is int,
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
        require(fits, f"option {name} is a {type(value).__name__}, not {annotation}")
        require(not (type(value) is float and math.isnan(value)), f"option {name} is NaN")
        require(not (type(value) is int and abs(value) >= INT64_LIMIT),
                 f"option {name} out of range")
    try:
        return Config(quiet=True, **options)
    except OlearnError as exc:
        raise Invalid(f"options: {exc.message}") from None


def _option_defaults() -> dict:
    """Each model option's default (what a model that lacks the option was trained with)."""
    return {name: default(REGISTRY[name]) for name in MODEL_OPTIONS}


def _name_fields(arrays: dict, fields: object, version: int, config: Config) -> None:
    """Each declared array in the current layout, from its fields' names (format 5) or
    positions (formats 3 and 4); a field the file lacks takes its fresh value."""
    if version >= 5:
        require(type(fields) is dict and set(fields) == set(NAMED) & set(arrays),
                 "unexpected field names")
    for name, (layout, axis) in NAMED.items():
        if name not in arrays:
            continue
        values = arrays[name]
        if version >= 5:
            names = fields[name]
            require(type(names) is list and all(type(n) is str for n in names)
                     and len(set(names)) == len(names), f"{name}: malformed field names")
        else:
            names = LEGACY_FIELDS[name][:values.shape[axis]]
            missing = len(LEGACY_FIELDS[name]) - len(names)
            require(missing == 0 or (version == 3 and name == "state" and missing == 1),
                     f"{name}: {values.shape[axis]} fields, not {len(LEGACY_FIELDS[name])}")
        require(values.shape[axis] == len(names), f"{name}: not one value per field")
        fill = default_row(config) if name == "rows" else layout.defaults()
        try:
            arrays[name] = layout.from_names(names, values, fill, axis)
        except KeyError as exc:
            raise Invalid(f"{name}: fields this olearn does not know ({exc.args[0]}; "
                           "a newer olearn's model?)") from None


def _names(config: Config) -> set[str]:
    """The arrays a model of these options holds."""
    names = {"index", "rows", "state"}
    if config.stage_poly:
        names |= set(StagePoly.ARRAYS)
    names |= reduction_of(config).saved(config)
    names |= set(family_of(config).ARRAYS) - OPTIONAL_ARRAYS
    return names


def _arrays(specs: object, payload: bytes, names: set[str], optional: set[str]
            ) -> dict[str, np.ndarray]:
    """The arrays ``specs`` describe in ``payload`` (``names``, and any of ``optional``):
    each one's dtype the one save() writes, its shape of that rank (fixed dimensions equal),
    its byte range its size and inside."""
    require(type(specs) is dict and set(specs) - optional == names, "unexpected arrays")
    limit = len(payload)  # no dimension, offset or size can be larger

    def natural(x: object) -> bool:
        return type(x) is int and 0 <= x <= limit

    arrays = {}
    for name, spec in specs.items():
        dtype, pattern = ARRAYS[name]
        require(type(spec) is dict and set(spec) == SPEC_KEYS, f"{name}: unexpected fields")
        require(spec["dtype"] == dtype, f"{name}: not of dtype {dtype}")
        shape, offset, size = spec["shape"], spec["offset"], spec["bytes"]
        require(type(shape) is list and len(shape) == len(pattern)
                 and all(natural(d) and p in (None, d) for d, p in zip(shape, pattern)),
                 f"{name}: unexpected shape")
        count = math.prod(shape)
        require(natural(offset) and natural(size) and size == count * np.dtype(dtype).itemsize
                 and offset + size <= limit, f"{name}: byte range does not fit its shape")
        arrays[name] = np.frombuffer(payload, dtype=dtype, count=count,
                                     offset=offset).reshape(shape).copy()
    return arrays


def _check_table(arrays: dict, config: Config) -> None:
    """The weight rows and the learner state."""
    index, rows = arrays["index"], arrays["rows"]
    require(len(rows) == len(index), "rows and index of different lengths")
    require(increasing_below(index, 1 << config.bit_precision),
             "index out of range, unsorted or repeated")
    # what OnlineLearner.save checks (the update's scratch rate is not saved)
    require(family_of(config).storable(rows), "NaN or infinite weights, or NaN or negative "
                                              "adaptive sums or normalizers")
    state = arrays["state"]
    require(bool(np.isfinite(state).all()), "NaN or infinite state")
    require(state[layouts.S_NORM] >= 0 and state[layouts.S_TOTAL] >= 0,
             "negative normalization totals")
    # the lazy snapshots are not saved: they are consistent only with flushed accumulators
    require(not state[layouts.S_REG:layouts.S_REG + regularize.SIZE].any(),
             "regularization accumulators not flushed")
    if "counters" in arrays:
        counters = arrays["counters"]
        counts = [report.COUNTERS.index(name) for name in (
            "w_labeled", "w_unlabeled", "examples", "features", "dump_at", "last_w_labeled",
            "passes")]
        require(bool(np.isfinite(counters).all() and (counters[counts] >= 0).all()),
                 "negative or non-finite progress counters")
    fixed = config.min_prediction is not None or config.max_prediction is not None
    require(fixed or state[layouts.S_MIN] <= state[layouts.S_MAX], "label range with min > max")
    require(state[layouts.S_INDEXING] in (0.0, 1.0, AUTO), "unknown --oaa indexing")


def merged_config(config: Config, model: Model, path: str, warn) -> Config:
    """The run's options with ``-i``: the model's, except those given on the command line
    (a warning when they differ). A different ``-b`` is an error, as in VW, and so is another
    learner (the state would not be its), except --bfgs from gradient descent's weights."""
    saved = model.options
    if "bit_precision" in config.explicit and config.bit_precision != saved["bit_precision"]:
        raise OlearnError(f"model has -b {saved['bit_precision']}, the command line asks for "
                          f"-b {config.bit_precision}", path)
    given = [name for name in MODEL_OPTIONS
             if name in config.explicit and getattr(config, name) != saved[name]]
    options = {**saved, **{name: getattr(config, name) for name in given}}
    if any(name in config.explicit for name in (*LEARNERS, "saew_calibrate")):
        # the command line names the learner: --boa replaces a model's --eg (it is not both)
        options.update({name: getattr(config, name) for name in LEARNERS})
    # --bfgs starts from any gradient-descent model's weights (a batch method keeps no state
    # between runs; VW's loads the weights alone)
    from_weights = _learner(saved) == "gradient descent" and (
        options.get("bfgs") or options.get("conjugate_gradient"))
    if _learner(options) != _learner(saved) and not from_weights:
        raise OlearnError(f"model was trained with {_learner(saved)}, the command line asks for "
                          f"{_learner(options)} (a model continues with its own learner)", path)
    try:
        merged = dataclasses.replace(config, **options)
        merged.check_subroutine(merged=True)  # a model of gradient descent has no subroutine
    except OlearnError as exc:  # the model's options with the command line's
        raise OlearnError(exc.message, path) from None
    _check_reduction_fits(model, merged, given, path)
    for name in given:
        warn(f"[warning] --{name} {getattr(config, name)} from the command line overrides "
             f"the model's {saved[name]}")
    return merged


def _check_reduction_fits(model: Model, merged: Config, given: list[str], path: str) -> None:
    """Refuse command-line options under which the model's reduction state does not fit
    (``-i`` of an --oaa 5 model with --oaa 3: VW refuses options that disagree with the
    model's too)."""
    reduction = reduction_of(merged)
    if not reduction.saved(merged) <= set(model.arrays):
        return  # a model without the state: the reduction starts afresh
    try:
        reduction.check(model.arrays, merged)
    except Invalid as exc:
        changed = " ".join(f"--{name} {getattr(merged, name)}" for name in given)
        raise OlearnError(f"the model's state does not fit {changed or 'the options'} "
                          f"({exc})", path) from None


def _learner(options: dict) -> str:
    """The learner model options train, as its options (it decides what state is saved)."""
    chosen = [name for name in LEARNERS if options.get(name)]
    if not chosen:
        return "gradient descent"
    if chosen != ["saew"]:
        return " ".join(f"--{name}" for name in chosen)
    kind = "--saew_calibrate" if options["saew_calibrate"] else "--saew"
    return f"{kind} --saew_sub {options['saew_sub']}"
