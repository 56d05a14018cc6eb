"""VW's binary model files as olearn's models: ``-i`` reads them (told from olearn's by their
content) and ``-f FILE --model_format vw`` writes them (docs/vw-model-files.md).

What crosses: VW's gradient descent (the weights and, with VW's resume state, their adaptive
sums and normalizers, the learner's sums and the progress counters) and --ftrl, --pistol and
--coin (their per-coordinate state in the same records), the options of the
features and their hashing, and the reductions of which VW's file holds no state of their own
(vw_state.VW_KEPT: --oaa, --csoaa, --nn, ...; VW keeps the normalizer sums of their first class
or copy only, so the others start afresh, in VW as in olearn). A VW model of anything else is
refused, naming the option; so is a write of a model VW's format cannot hold, before any
learning.

After the header (persistence/vw_binary.py), a VW 9 model of these options holds one byte (1
when the resume state follows), the resume block (persistence/vw_state.py ``RESUME``), and then
a record per weight until the end: its index (uint32; uint64 from -b 31, beyond olearn's -b)
and, with the resume state, its w, G (adaptive) and N (normalized) as float32; without it, w
alone.
"""
from __future__ import annotations

import struct

import numpy as np

from olearn.core.atomic import write_whole
from olearn.errors import OlearnError, OptionError
from olearn.kernel import layouts
from olearn.learners import regularize
from olearn.learners.coordinates import CoordinateFamily
from olearn.learners.families import family_of
from olearn.learners.gd import GradientDescent
from olearn.learners.weights import W_G, W_N, W_W, default_row
from olearn.options.config import MODEL_OPTIONS, REGISTRY, Config, default
from olearn.outputs import report
from olearn.persistence.vw_binary import Header, Reader, header_bytes, read_header
from olearn.persistence.vw_state import RESUME, VW_KEPT, VW_UNKEPT, kept_options, resume_values
from olearn.reductions.chosen import reduction_of
from olearn.reductions.oaa import CLASS_NORM, CLASS_TOTAL

_FLAGS = {flag: option for option in REGISTRY.values() for flag in option.flags}
# VW 8's models keep --l1_state and --l2_state as options (VW 9's, in the resume block), and
# VW keeps its random generator's state, which olearn's gradient descent does not use once
# the weights are loaded.
_STATE_OPTIONS = {"l1_state": layouts.S_L1_STATE, "l2_state": layouts.S_L2_STATE}
_IGNORED = ("random_seed",)
READS = frozenset(VW_KEPT + VW_UNKEPT + tuple(_STATE_OPTIONS) + _IGNORED)
_CARRIED = ("VW's format carries gradient descent, --ftrl, --pistol, --coin, the feature "
            "options and the reductions whose state is all in the weights: "
            "docs/vw-model-files.md")
# The counters (outputs/report.py COUNTERS) from the resume block's fields.
_COUNTED = {"sum_loss": "sum_loss", "weighted_labeled_examples": "w_labeled",
            "weighted_unlabeled_examples": "w_unlabeled", "weighted_labels": "w_label_sum",
            "example_number": "examples", "total_features": "features",
            "dump_interval": "dump_at", "sd::oec.weighted_labeled_examples": "last_w_labeled",
            "current_pass": "passes"}


def check_writable(config: Config) -> None:
    """Refuse (an OptionError) a run whose -f is to be VW's format but whose model it cannot
    hold: another learner than gradient descent, or a model option VW's files do not keep."""
    if config.model_format != "vw":
        return
    family = family_of(config)
    if not issubclass(family, (GradientDescent, CoordinateFamily)):
        raise OptionError(f"--model_format vw: VW's model files cannot hold "
                          f"{family.flag(config)}'s state (olearn writes gradient descent's, "
                          "--ftrl's, --pistol's and --coin's)")
    for name in MODEL_OPTIONS:
        if name not in VW_KEPT + VW_UNKEPT and getattr(config, name) != default(REGISTRY[name]):
            raise OptionError(f"--model_format vw: VW's model files cannot hold --{name} "
                              f"({_CARRIED})")
    for grams in (config.ngram, config.skips):
        if any(len(gram) > 3 for gram in grams):
            raise OptionError("--model_format vw: VW's model files hold --ngram and --skips "
                              "definitions of at most 3 characters")


def write(path: str, learner, passes: int) -> None:
    """Write ``learner``'s model (an OnlineLearner, synced, after ``passes`` passes) as VW's
    binary model file; with --predict_only_model the weights alone, the pending
    --l1_state/--l2_state applied (VW's)."""
    config, state = learner.config, learner.state
    header = header_bytes(state[layouts.S_MIN], state[layouts.S_MAX], config.bit_precision,
                          kept_options(config, VW_KEPT), tuple(config.ngram),
                          tuple(config.skips))
    if config.predict_only_model:
        weights = regularize.settled(learner.weights[:, W_W], state[layouts.S_L1_STATE],
                                     state[layouts.S_L2_STATE])
        listed = np.flatnonzero(weights)
        values, block = weights[listed, None], b"\0"
    else:
        listed, values = learner.family.readable_rows(learner.weights, False)
        block = b"\1" + b"".join(
            struct.pack("<" + field.fmt, int(value) if field.fmt == "Q" else value)
            for field, value in zip(RESUME, resume_values(learner, passes, table=True)))
    records = np.empty(len(listed), dtype=_record(values.shape[1]))
    records["i"], records["v"] = listed, values
    write_whole(path, header + block + records.tobytes())


def read(data: bytes, path: str, defaults: dict) -> tuple[dict, dict]:
    """The model options (``defaults`` and what the file says) and the arrays (olearn's
    model arrays: persistence/model.py) of a VW model file's bytes ``data``."""
    reader = Reader(data, path)
    header = read_header(reader)
    options, pending = _options(header, defaults, path)
    config = _config(options, path)
    state = layouts.STATE.defaults()
    state[layouts.S_MIN], state[layouts.S_MAX] = header.min_label, header.max_label
    for name, value in pending.items():
        state[_STATE_OPTIONS[name]] = value
    arrays = {"state": state}
    resume = reader.take(1) != b"\0"
    if resume:
        values = {field.name: reader.number(field.fmt) for field in RESUME
                  if field.since is None or header.version >= field.since}
        if values["initial_t"] != config.t0:
            options["initial_t"] = values["initial_t"]
            config = _config(options, path)
        arrays.update(_resume_arrays(values, state))
    family = family_of(config)(config)
    if not resume:
        state[layouts.S_T] = config.t0
        family.start(state)
    table, slots = _columns(family, config, resume)
    index, values = _records(reader, header, 1 + len(table) + slots)
    arrays["index"] = index
    arrays["rows"] = np.tile(default_row(config), (len(index), 1))
    arrays["rows"][:, [W_W, *table]] = values[:, :1 + len(table)]
    if slots:
        family.slots[index] = values[:, 1:]
    arrays.update(family.model_arrays())
    arrays.update(reduction_of(config)(config).model_arrays())
    if resume and "oaa_classes" in arrays:  # VW keeps the first class's sums only
        classes = arrays["oaa_classes"]
        classes[0, CLASS_NORM], classes[0, CLASS_TOTAL] = state[layouts.S_NORM], state[
            layouts.S_TOTAL]
    return options, arrays


def _options(header: Header, defaults: dict, path: str) -> tuple[dict, dict]:
    """The model options a VW header gives, and the pending --l1_state/--l2_state of a VW 8
    model's options."""
    options = {**defaults, "bit_precision": header.bits, "ngram": list(header.ngram),
               "skips": list(header.skips), "interactions": list(header.interactions)}
    for flag, value in (("--lda", header.lda), ("--rank", header.rank)):
        if value:
            raise _unread(flag, path)
    pending, tokens, at = {}, header.options.split(), 0
    while at < len(tokens):
        flag = tokens[at]
        option = _FLAGS.get(flag)
        if option is None:
            if flag.startswith("-"):
                raise OlearnError(f"the VW model uses {flag}, which olearn does not have", path)
            raise OlearnError(f"corrupted VW model file (its options: '{flag}' is no option)",
                              path)
        if option.name not in READS:
            raise _unread(flag, path)
        if option.kind is bool:
            value, at = True, at + 1
        elif at + 1 < len(tokens):
            value, at = _value(option, tokens[at + 1], path), at + 2
        else:
            raise OlearnError(f"corrupted VW model file (its options: {flag} without a value)",
                              path)
        if option.name in _STATE_OPTIONS:
            pending[option.name] = value
        elif option.kind is list:
            options[option.name] = [*options[option.name], value]
        elif option.name not in _IGNORED:
            options[option.name] = value
    return options, pending


def _unread(flag: str, path: str) -> OlearnError:
    return OlearnError(f"the VW model uses {flag}, which olearn does not read from VW's "
                       f"files ({_CARRIED})", path)


def _value(option, text: str, path: str):
    """An option's value in a VW model's options, as the command line would take it."""
    try:
        value = option.kind(text) if option.kind in (int, float) else text
    except ValueError:
        value = None
    if value is None or (option.choices and value not in option.choices):
        raise OlearnError(f"corrupted VW model file (its options: {option.flags[-1]} {text})",
                          path)
    return value


def _config(options: dict, path: str) -> Config:
    try:
        return Config(quiet=True, **options)
    except OlearnError as exc:
        raise OlearnError(f"the VW model's options: {exc.message}", path) from None


def _resume_arrays(values: dict, state: np.ndarray) -> dict:
    """The learner state's sums and the progress counters from a resume block's ``values``
    (a VW 9 block: older ones lack the last fields)."""
    state[layouts.S_NORM], state[layouts.S_T] = values["norm normalizer"], values["t"]
    state[layouts.S_MIN], state[layouts.S_MAX] = values["min_label"], values["max_label"]
    state[layouts.S_TOTAL] = values.get("total_weight", 0.0)
    for name, field in _STATE_OPTIONS.items():
        if name in values:
            state[field] = values[name]
    counters = report.COUNTERS.defaults()
    for name, counter in _COUNTED.items():
        counters[report.COUNTERS.index(counter)] = values.get(name, 0.0)
    counters[report.COUNTERS.index("last_loss")] = (values["sum_loss"]
                                                    - values["sum_loss_since_last_dump"])
    return {"counters": counters}


def _record(floats: int) -> np.dtype:
    """A weight record: its index and ``floats`` float32. VW's index is a uint32 below -b 31
    (a uint64 from 31, beyond olearn's 30 bits: such a model's options are refused first)."""
    return np.dtype([("i", "<u4"), ("v", "<f4", (floats,))])


def _columns(family, config: Config, resume: bool) -> tuple[list[int], int]:
    """What a weight record holds after w: the weight table's columns (gradient descent's G
    and N, as its rule keeps them) and the number of the family's own (--ftrl's, --pistol's
    and --coin's per-coordinate state); w alone without the resume state."""
    if not resume:
        return [], 0
    if isinstance(family, CoordinateFamily):
        return [], len(family.COLUMNS)
    adaptive, normalized, _ = config.update_rule
    return [W_G] * adaptive + [W_N] * normalized, 0


def _records(reader: Reader, header: Header, floats: int) -> tuple[np.ndarray, np.ndarray]:
    """The weight records to the end of the file: the indices, sorted (a repeated one's last
    record wins, as in VW), and their ``floats`` values each."""
    record = _record(floats)
    if reader.left() % record.itemsize:
        raise reader.fail("a partial weight record at its end")
    records = np.frombuffer(reader.data, dtype=record, offset=reader.at)
    index = records["i"]
    if len(index) and int(index.max()) >> header.bits:
        raise reader.fail(f"a weight index outside the table of -b {header.bits}")
    unique, last = np.unique(index[::-1], return_index=True)
    return unique, records["v"][len(index) - 1 - last]
