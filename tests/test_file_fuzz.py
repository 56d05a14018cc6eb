"""Model and cache files are untrusted input. Whatever a file says, its checksum recomputed so
that only the validation stands between it and the kernels, reading it (and learning and
predicting with what was accepted) gives a result or one OlearnError line naming the file:
never another exception, a crash, or (under NUMBA_BOUNDSCHECK=1) an access outside an array.
"""
from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, model_file, run_olearn, split_model
from hypothesis import given, settings
from hypothesis import strategies as st
from test_model import _error_line

from olearn.data import cache, sources
from olearn.engine.learner import OnlineLearner
from olearn.errors import OlearnError
from olearn.features import stage_poly
from olearn.frontends.api import Learner
from olearn.kernel import layouts
from olearn.learners.experts import state as L
from olearn.options.config import Config
from olearn.outputs.predictions import format_predictions
from olearn.persistence import model

BITS = 8
# Labeled lines with importance and tags, and unlabeled ones.
LINES = ([f"{(i * 7) % 11 - 5} {1 + i % 3} 'e{i} |a x:{i % 5} y{i % 9} |b z{i % 4}"
          for i in range(60)] + ["|a x:1 |b z2", "'t |a y3"])
LEARNERS = {"default": {}, "l1": {"l1": 1e-3}, "quadratic": {"quadratic": ["ab"]},
            "stage_poly": {"stage_poly": True, "batch_sz": 5, "poly_heuristic": "ssm"},
            "boa": {"boa": True}, "saew": {"saew": True, "saew_C": 0.05},
            "calibrated eg": {"saew_calibrate": True, "saew_sub": "eg", "saew_grid_d0": 1,
                              "saew_grid_alpha": 2, "saew_grid_radius": 1, "saew_grid_B": 1}}
# Values a lying header field may hold.
ODD_VALUES = st.one_of(
    st.sampled_from([None, True, False, 0, 1, -1, 2, 4, 7, 8, 30, 31, 127, 255, 256, 2 ** 31,
                     2 ** 32, 2 ** 53, 2 ** 63, 2 ** 64, -2 ** 63, 0.5, -0.0, 1e300, math.nan,
                     math.inf, -math.inf, "", "x", "<f8", "<u4", "|u1", "<i8", ">f8", "O",
                     "boa", "eg", "ab", [], {}, [0], [1, 4], [-1], [2 ** 40, 0], [[]],
                     ["\u20ac"], {"a": 1}]),
    st.integers(-3, 300), st.floats())
# Element values per dtype, beside random bytes: the limits the checks are about.
SPECIAL = {"<f4": [math.nan, math.inf, -math.inf, -1.0, 0.0, 1e30, 3e38],
           "<f8": [math.nan, math.inf, -math.inf, -1.0, 0.0, 0.5, 1e300, 2.0 ** 63],
           "<u4": [0, 1, 255, 256, 2 ** 31, 2 ** 32 - 1], "<i4": [-2, -1, 0, 1, 2 ** 31 - 1],
           "|u1": [0, 1, 2, 3, 126, 127, 128, 255], "<i8": [-1, 0, 1, 255, 256, 2 ** 62]}


def _check_error(exc: OlearnError, path: Path) -> None:
    text = str(exc)
    assert text.startswith(f"{path}: ") and "\n" not in text, text


def _element(dtype: str) -> st.SearchStrategy[bytes]:
    size = np.dtype(dtype).itemsize
    return st.one_of(st.sampled_from([np.array(v, dtype=dtype).tobytes() for v in SPECIAL[dtype]]),
                     st.binary(min_size=size, max_size=size))


def _paths(node: object, prefix: tuple = ()) -> list[tuple]:
    """Every place in a JSON value: its containers, keys and elements."""
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, prefix + (i,))
    return out


def _mutated(header: object, data) -> object:
    """``header`` with one of its places replaced, tweaked, deleted or given an extra key."""
    header = json.loads(json.dumps(header))
    path = data.draw(st.sampled_from(_paths(header)))
    if not path:
        return data.draw(ODD_VALUES)
    parent = header
    for key in path[:-1]:
        parent = parent[key]
    key, value = path[-1], parent[path[-1]]
    action = data.draw(st.sampled_from(["replace", "tweak", "delete", "extra"]))
    if action == "tweak" and type(value) in (int, float):
        parent[key] = value + data.draw(st.sampled_from([-2, -1, 1, 2, 0.5]))
    elif action == "delete":
        del parent[key]
    elif action == "extra" and isinstance(value, dict):
        value["extra"] = data.draw(ODD_VALUES)
    else:
        parent[key] = data.draw(ODD_VALUES)
    return header


# --- model files ------------------------------------------------------------------------------

def _sealed(data: bytes) -> bytes:
    """A model file's bytes with their checksum recomputed."""
    return data[:-32] + model._sha256(data[:-32])


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("files")


@pytest.fixture(scope="module")
def models(folder) -> dict[str, bytes]:
    """A model file of each learner, trained on LINES."""
    out = {}
    for name, options in LEARNERS.items():
        path = folder / f"{name}.olearn"
        Learner(bit_precision=BITS, **options).fit(LINES).save(path)
        out[name] = path.read_bytes()
    return out


def _try_model(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path``, load it and, when accepted, continue learning from it and
    predict (test-only); whether it was accepted. Anything but an OlearnError fails."""
    path.write_bytes(data)
    try:
        saved = model.load(str(path))
        if saved.options["bit_precision"] <= BITS:  # larger tables cost time, not coverage
            learner = Learner.load(path)
            learner.fit(LINES[:6])
            learner.predict(LINES[:3])
        return True
    except OlearnError as exc:
        _check_error(exc, path)
        return False


def test_every_learner_model_is_accepted(folder, models):
    for name, data in models.items():
        assert _try_model(folder / "m.olearn", data), name


@pytest.mark.parametrize("name", LEARNERS)
def test_model_saved_before_any_example_is_accepted(folder, name):
    path = folder / "fresh.olearn"
    Learner(bit_precision=BITS, **LEARNERS[name]).save(path)
    assert _try_model(path, path.read_bytes())


@settings(max_examples=600)
@given(st.sampled_from(sorted(LEARNERS)), st.data())
def test_model_with_a_lying_header(folder, models, name, data):
    header, payload = split_model(models[name])
    _try_model(folder / "m.olearn", model_file(_mutated(header, data), payload))


@pytest.mark.slow  # a thousand models: make check runs it, bounds-checked too
@settings(max_examples=1000)
@given(st.sampled_from(sorted(LEARNERS)), st.data())
def test_model_with_lying_array_values(folder, models, name, data):
    header, payload = split_model(models[name])
    specs = {k: s for k, s in header["arrays"].items() if s["bytes"]}
    array = data.draw(st.sampled_from(sorted(specs)))
    spec = specs[array]
    size = np.dtype(spec["dtype"]).itemsize
    at = spec["offset"] + size * data.draw(st.integers(0, spec["bytes"] // size - 1))
    value = data.draw(st.one_of(_element(spec["dtype"]), st.just(payload[at - size:at])))
    if len(value) == size:  # (the element before, when there is one: a repeated index)
        payload = payload[:at] + value + payload[at + size:]
    _try_model(folder / "m.olearn", model_file(header, payload))


@settings(max_examples=400)
@given(st.sampled_from(sorted(LEARNERS)),
       st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), min_size=1,
                max_size=4))
def test_model_with_flipped_bytes(folder, models, name, flips):
    data = bytearray(models[name])
    for position, bits in flips:
        data[len(model.MAGIC) + position % (len(data) - 32 - len(model.MAGIC))] ^= bits
    _try_model(folder / "m.olearn", _sealed(bytes(data)))


def _with_array(data: bytes, name: str, change) -> bytes:
    """A model file with ``change`` applied to a copy of its array ``name`` (same shape)."""
    header, payload = split_model(data)
    spec = header["arrays"][name]
    array = np.frombuffer(payload, spec["dtype"], math.prod(spec["shape"]),
                          spec["offset"]).reshape(spec["shape"]).copy()
    change(array)
    raw = array.tobytes()
    return model_file(header, payload[:spec["offset"]] + raw
                       + payload[spec["offset"] + len(raw):])


def _refused(folder: Path, data: bytes) -> str:
    path = folder / "bad.olearn"
    path.write_bytes(data)
    with pytest.raises(OlearnError) as info:
        model.load(str(path))
    _check_error(info.value, path)
    return info.value.message


def test_another_dtype_is_refused(folder, models):
    header, payload = split_model(models["default"])
    header["arrays"]["state"]["dtype"] = "<f4"
    header["arrays"]["state"]["shape"] = [2 * layouts.STATE_SIZE]
    assert "state: not of dtype <f8" in _refused(folder, model_file(header, payload))


def test_byte_range_beyond_the_payload_is_refused(folder, models):
    header, payload = split_model(models["default"])
    header["arrays"]["rows"]["offset"] = len(payload)
    assert "rows: byte range" in _refused(folder, model_file(header, payload))


def test_shape_that_does_not_fit_its_bytes_is_refused(folder, models):
    header, payload = split_model(models["default"])
    header["arrays"]["rows"]["shape"][0] += 1
    assert "rows: byte range does not fit its shape" in _refused(
        folder, model_file(header, payload))


@pytest.mark.parametrize("name, value, message", [
    ("bit_precision", True, "option bit_precision is a bool, not int"),
    ("l1", "0", "option l1 is a str, not float"),
    ("quadratic", "ab", "option quadratic is a str, not list[str]"),
    ("learning_rate", math.nan, "option learning_rate is NaN"),
    ("hash_seed", 2 ** 64, "option hash_seed out of range"),
    ("l1", -1, "options: --l1 must be finite and >= 0, got -1"),
])
def test_option_of_another_type_or_value_is_refused(folder, models, name, value, message):
    header, payload = split_model(models["default"])
    header["options"][name] = value
    assert message in _refused(folder, model_file(header, payload))


def _change(where, to):
    """A change to an array: ``array[where] = to(array)``."""
    def change(array):
        array[where] = to(array)
    return change


@pytest.mark.parametrize("learner, array, change, message", [
    ("default", "index", _change(1, lambda a: a[0]), "index out of range, unsorted or repeated"),
    ("default", "index", _change(-1, lambda a: 1 << BITS), "index out of range"),
    ("default", "rows", _change((0, 0), lambda a: np.nan), "NaN or infinite weights"),
    ("default", "rows", _change((0, 1), lambda a: np.nan), "NaN or negative adaptive sums"),
    ("l1", "state", _change(layouts.S_REG, lambda a: 1.0), "not flushed"),
    ("stage_poly", "poly_depth", _change(0, lambda a: stage_poly.NEVER + 1), "depth out of range"),
    ("stage_poly", "poly_flags", _change(0, lambda a: stage_poly.CYCLE), "unknown monomial flags"),
    ("boa", "ew_shared", _change(L.SH_ACTIVE, lambda a: a[L.SH_ACTIVE] + 1), "malformed ew_shared"),
    ("saew", "ew_hashes", _change(1, lambda a: a[0]), "ew_hashes out of range or repeated"),
    ("calibrated eg", "ew_es", _change((slice(None), L.E_SUM), lambda a: 0.0), "malformed ew_es"),
    ("boa", "ew_es", _change((0, L.E_U), lambda a: 2 * a[0, L.E_U]),
     "does not hold the model's options"),
], ids=["repeated index", "index beyond the table", "NaN weight", "NaN adaptive sum",
        "unflushed regularization",
        "monomial depth beyond the walk", "unknown monomial flag",
        "active count other than the hashes", "repeated expert hash", "zero weight sum",
        "options in the experts' state not the model's"])
def test_array_breaking_an_invariant_is_refused(folder, models, learner, array, change, message):
    assert message in _refused(folder, _with_array(models[learner], array, change))


def test_command_line_radius_applies_to_the_restored_experts(folder, models):
    path = folder / "boa.olearn"
    path.write_bytes(models["boa"])
    learner = Learner.load(path, radius=3.0)
    assert learner._learner.family.ew[6][0, L.E_U] == 3.0


@pytest.mark.parametrize("name, given, message", [
    ("default", {"eg": True}, "trained with gradient descent, the command line asks for --eg"),
    ("boa", {"eg": True}, "trained with --boa, the command line asks for --eg"),
    ("saew", {"saew_sub": "eg"}, "asks for --saew --saew_sub eg"),
    ("boa", {"saew_calibrate": True}, "asks for --saew_calibrate --saew_sub boa"),
    ("boa", {"l1": 1e-3}, "--l1 works with gradient descent, not with --boa"),
])
def test_another_learner_than_the_models_is_refused(folder, models, name, given, message):
    path = folder / "learner.olearn"
    path.write_bytes(models[name])
    with pytest.raises(OlearnError) as info:
        Learner.load(path, **given)
    _check_error(info.value, path)
    assert message in info.value.message


def test_learner_the_models_options_cannot_build_is_an_error_naming_the_model(folder):
    path = folder / "wide.olearn"
    Learner(bit_precision=BITS, saew_calibrate=True).save(path)  # before any example: no index
    header, payload = split_model(path.read_bytes())
    header["options"]["bit_precision"] = 22
    path.write_bytes(model_file(header, payload))
    with pytest.raises(OlearnError, match="would reserve") as info:
        Learner.load(path)
    _check_error(info.value, path)


def test_another_learner_is_one_line_on_the_command_line(folder, models):
    path = folder / "learner.olearn"
    path.write_bytes(models["calibrated eg"])
    data = folder / "data.vw"
    data.write_text("\n".join(LINES) + "\n")
    assert "(a model continues with its own learner)" in _error_line(
        run_olearn("-d", data, "-i", path, "--boa"))


def test_model_of_olearn_0_1_0_continues_training(folder):
    # tests/fixtures: -b 10 --l1 1e-3 trained by olearn 0.1.0 (state of 7) on the first 100
    # lines, and 0.1.0's predictions for the last 100 in one run over all 200
    lines = [f"{(i * 7) % 11 - 5} |a x:{i % 5} y:{(i * 3) % 7 - 3} |b z{i % 4}\n"
             for i in range(100, 200)]
    data, predictions = folder / "second.vw", folder / "second.p"
    data.write_text("".join(lines))
    code, _, err = run_olearn("-d", data, "-i", FIXTURES / "l1-0.1.0.olearn", "-p", predictions,
                              "--quiet")
    assert code == 0, err
    np.testing.assert_allclose(np.loadtxt(predictions), np.loadtxt(FIXTURES / "l1-0.1.0.p"),
                               atol=2e-6)


# --- cache files ------------------------------------------------------------------------------

CACHE_CONFIG = Config(bit_precision=BITS, quadratic=["ab"], quiet=True)


@pytest.fixture(scope="module")
def cache_file(folder) -> tuple[bytes, dict]:
    """A cache of LINES in five sources (a record each; blank lines too), and its fingerprint."""
    paths = [str(folder / f"part{k}.vw") for k in range(5)]
    for k, path in enumerate(paths):
        Path(path).write_text("\n\n".join(LINES[13 * k:13 * k + 13]) + "\n" * (k % 2))
    fingerprint = cache.fingerprint(CACHE_CONFIG, paths)
    writer = cache.Writer(str(folder / "data.cache"), fingerprint)
    for batch in OnlineLearner(CACHE_CONFIG).batches(sources.all_blocks(paths)):
        writer.add(batch)
    writer.commit()
    return (folder / "data.cache").read_bytes(), fingerprint


def _records(data: bytes) -> list[tuple[int, tuple]]:
    """Each record's position and counts, as its counts say (until one leaves the file)."""
    (length,) = struct.unpack("<I", data[len(cache.MAGIC):len(cache.MAGIC) + 4])
    at, out = len(cache.MAGIC) + 4 + length, []
    while at + cache._RECORD.size <= len(data):
        counts = cache._RECORD.unpack_from(data, at)
        out.append((at, counts))
        at += cache._RECORD.size + sum(
            cache._padded(dtype.itemsize * math.prod(shape))
            for _, dtype, shape in cache._record_fields(counts))
    return out


def _resealed(data: bytes) -> bytes:
    """A cache's bytes with each record's checksum recomputed (those inside the file)."""
    out = bytearray(data)
    for at, counts in _records(data):
        start = at + cache._RECORD.size
        end = start + sum(cache._padded(dtype.itemsize * math.prod(shape))
                          for _, dtype, shape in cache._record_fields(counts))
        if end <= len(out):
            checksum = cache._checksum(np.frombuffer(bytes(out[start:end]), dtype=np.uint8))
            out[at:at + cache._RECORD.size] = cache._RECORD.pack(*counts[:-1], checksum)
    return bytes(out)


def _array_at(record: tuple[int, tuple], name: str) -> tuple[int, str, tuple]:
    """Where array ``name`` of a record starts, its dtype and shape."""
    at, counts = record
    at += cache._RECORD.size
    for field, dtype, shape in cache._record_fields(counts):
        if field == name:
            return at, dtype.str, shape
        at += cache._padded(dtype.itemsize * math.prod(shape))
    raise KeyError(name)


def _try_cache(path: Path, data: bytes, fingerprint: dict) -> bool:
    """Write ``data`` to ``path``; whether the cache matches ``fingerprint`` (never raising);
    read it, learning every batch and formatting its predictions with its tags. Whether it was
    accepted; anything but an OlearnError fails."""
    path.write_bytes(data)
    assert cache.matches(str(path), fingerprint) in (True, False)
    learner = OnlineLearner(CACHE_CONFIG)
    try:
        for batch in cache.read(str(path), CACHE_CONFIG.mask):
            preds = np.empty((len(batch), 2), dtype=np.float32)
            learner.learn(batch, preds)
            format_predictions(preds[:, 0], batch.tags, batch.text)
        return True
    except OlearnError as exc:
        _check_error(exc, path)
        return False


def test_cache_of_several_sources_and_records_is_accepted(folder, cache_file):
    data, fingerprint = cache_file
    assert len(_records(data)) > 4
    assert _try_cache(folder / "c.cache", data, fingerprint)
    assert cache.matches(str(folder / "c.cache"), fingerprint)


@settings(max_examples=800)
@given(st.data())
def test_cache_with_lying_records(folder, cache_file, data):
    content, fingerprint = cache_file
    records = _records(content)
    record = data.draw(st.sampled_from(records))
    if data.draw(st.booleans()):  # a count, line number or source
        at, counts = record
        field = data.draw(st.integers(0, 8))
        limit = (1 << 32) - 1 if field < 6 else (1 << 63) - 1
        value = data.draw(st.one_of(st.sampled_from([0, 1, limit]),
                                    st.integers(-2, 2).map(lambda d: counts[field] + d),
                                    st.integers(0, limit)))
        if field >= 6 or value >= 0:
            value = max(min(value, limit), -1 << 63)
            head = cache._RECORD.pack(*counts[:field], value, *counts[field + 1:])
            content = content[:at] + head + content[at + len(head):]
    else:  # an element of one of its arrays
        name = data.draw(st.sampled_from([f for f, _, _ in cache._fields(1, 1, 1, 1, 1)]))
        at, dtype, shape = _array_at(record, name)
        count = math.prod(shape)
        if count:
            size = np.dtype(dtype).itemsize
            at += size * data.draw(st.integers(0, count - 1))
            content = content[:at] + data.draw(_element(dtype)) + content[at + size:]
    _try_cache(folder / "c.cache", _resealed(content), fingerprint)


@settings(max_examples=300)
@given(st.data())
def test_cache_with_a_lying_header(folder, cache_file, data):
    content, fingerprint = cache_file
    (length,) = struct.unpack("<I", content[len(cache.MAGIC):len(cache.MAGIC) + 4])
    start = len(cache.MAGIC) + 4
    text = json.dumps(_mutated(json.loads(content[start:start + length]), data)).encode()
    if data.draw(st.booleans()):  # padded as the writer pads, so that records stay aligned
        text += b" " * (-(start + len(text)) % 8)
    _try_cache(folder / "c.cache", cache.MAGIC + struct.pack("<I", len(text)) + text
               + content[start + length:], fingerprint)


@settings(max_examples=300)
@given(st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), min_size=1,
                max_size=4))
def test_cache_with_flipped_bytes(folder, cache_file, flips):
    content, fingerprint = cache_file
    data = bytearray(content)
    for position, bits in flips:
        data[len(cache.MAGIC) + position % (len(data) - len(cache.MAGIC))] ^= bits
    _try_cache(folder / "c.cache", _resealed(bytes(data)), fingerprint)


def _refused_cache(folder: Path, content: bytes) -> str:
    path = folder / "bad.cache"
    path.write_bytes(_resealed(content))
    with pytest.raises(OlearnError) as info:
        for _ in cache.read(str(path), CACHE_CONFIG.mask):
            pass
    _check_error(info.value, path)
    return info.value.message


def _with_element(content: bytes, record: int, name: str, element: int, value) -> bytes:
    at, dtype, _ = _array_at(_records(content)[record], name)
    at += np.dtype(dtype).itemsize * element
    raw = np.array(value, dtype=dtype).tobytes()
    return content[:at] + raw + content[at + len(raw):]


def _with_count(content: bytes, record: int, field: int, value: int) -> bytes:
    at, counts = _records(content)[record]
    head = cache._RECORD.pack(*counts[:field], value, *counts[field + 1:])
    return content[:at] + head + content[at + len(head):]


def test_cache_record_claiming_more_examples_is_refused(folder, cache_file):
    content, _ = cache_file
    counts = _records(content)[0][1]
    assert "cache file (rebuild it with -k)" in _refused_cache(
        folder, _with_count(content, 0, 0, counts[0] + 1))


def test_cache_tag_outside_the_text_is_refused(folder, cache_file):
    content, _ = cache_file
    nt = _records(content)[1][1][2]
    assert "tag outside the text" in _refused_cache(
        folder, _with_element(content, 1, "tags", 1, nt + 1))


def test_cache_decreasing_lines_are_refused(folder, cache_file):
    content, _ = cache_file
    assert "example lines out of order" in _refused_cache(
        folder, _with_element(content, 0, "lines", 0, 3))


def test_cache_offsets_out_of_order_are_refused(folder, cache_file):
    content, _ = cache_file
    assert "feature offsets" in _refused_cache(
        folder, _with_element(content, 0, "offsets", 1, 10 ** 6))


def test_cache_source_out_of_range_is_refused(folder, cache_file):
    content, _ = cache_file
    assert "source number out of range" in _refused_cache(folder, _with_count(content, 0, 3, 5))


def test_cache_records_out_of_sequence_are_refused(folder, cache_file):
    content, _ = cache_file
    records = _records(content)
    assert "line numbers out of sequence" in _refused_cache(
        folder, _with_count(content, 1, 7, records[1][1][7] + 1))


def test_cache_infinite_importance_is_refused(folder, cache_file):
    content, _ = cache_file
    assert "non-finite importance" in _refused_cache(
        folder, _with_element(content, 0, "numbers", 1, np.inf))


@pytest.mark.parametrize("header", [
    b"[1, 2, 3]", b"\xff\xfe not UTF-8", b"[" * 100000, b'{"version": 2}',
    b'{"version": true, "sources": [], "options": {}}',
])
def test_cache_with_a_malformed_header_never_matches(folder, header):
    path = folder / "header.cache"
    header += b" " * (-(len(cache.MAGIC) + 4 + len(header)) % 8)
    path.write_bytes(cache.MAGIC + struct.pack("<I", len(header)) + header)
    assert cache.matches(str(path), {"version": cache.VERSION}) is False
    with pytest.raises(OlearnError, match="cache file"):
        next(cache.read(str(path), 255))


def test_cache_with_a_header_longer_than_the_file_never_matches(folder):
    path = folder / "long.cache"
    path.write_bytes(cache.MAGIC + struct.pack("<I", (1 << 32) - 8) + b"{}")
    assert cache.matches(str(path), {}) is False
    with pytest.raises(OlearnError, match="header length"):
        next(cache.read(str(path), 255))


def test_cache_truncated_while_read_is_an_error_not_a_crash(folder, cache_file):
    # another process cuts the cache after its first record was read: the reader mapped the
    # records (a ValueError, or SIGBUS when cut while mapped); now a short read is an error
    data, _ = cache_file
    path = folder / "shrinking.cache"
    path.write_bytes(data)
    code = ("import os, sys; from olearn.data import cache; from olearn.errors import OlearnError\n"
            f"batches = cache.read({str(path)!r}, {CACHE_CONFIG.mask})\n"
            "next(batches)\n"
            f"os.truncate({str(path)!r}, {_records(data)[1][0] + cache._RECORD.size + 8})\n"
            "try:\n    list(batches)\nexcept OlearnError as exc:\n    print(exc.message)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "truncated cache file" in result.stdout
