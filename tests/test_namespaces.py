"""--ignore, --keep and --redefine (olearn/features/namespaces.py). Indices, feature counts and
losses against VW's: tests/test_vw_oracle.py."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import run_olearn
from hypothesis import given, settings
from hypothesis import strategies as st

from olearn import Learner, OptionError
from olearn.data.hashing import CONSTANT_NAMESPACE, namespace_hash
from olearn.data.parse import FORMAT_SVMLIGHT, FORMAT_VW, IDENTITY, parse
from olearn.features.namespaces import Selection, linear_terms, select
from olearn.options.config import Config


def _parse(text: bytes, fmt: int = FORMAT_VW, index_of: np.ndarray = IDENTITY):
    ns_hash = namespace_hash(b"f" if fmt == FORMAT_SVMLIGHT else b" ")
    return parse(np.frombuffer(text, dtype=np.uint8), fmt, (1 << 18) - 1, 0,
                 False, True, True, ns_hash, index_of=index_of)


def _selection(**options) -> Selection:
    return Selection.of(Config(**options))


def reference_select(offsets, index, value, namespace, dropped, index_of, has_constant):
    """:func:`select` one feature at a time, in plain Python."""
    out_off, out = [0], []
    for e in range(len(offsets) - 1):
        for k in range(offsets[e], offsets[e + 1]):
            constant = has_constant and k == offsets[e + 1] - 1
            b = int(namespace[k]) if constant else int(index_of[namespace[k]])
            if constant or not dropped[b]:
                out.append((int(index[k]), float(value[k]), b))
        out_off.append(len(out))
    return out_off, out


@st.composite
def batches(draw):
    sizes = draw(st.lists(st.integers(0, 6), max_size=8))
    has_constant = draw(st.booleans())
    if has_constant:
        sizes = [size + 1 for size in sizes]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    nf = int(offsets[-1])
    namespace = np.array(draw(st.lists(st.sampled_from([32, 97, 98, 99, 128, 200]),
                                       min_size=nf, max_size=nf)), dtype=np.uint8)
    dropped = np.array(draw(st.lists(st.booleans(), min_size=256, max_size=256)))
    index_of = np.array(draw(st.lists(st.sampled_from([32, 97, 98, 122]), min_size=256,
                                      max_size=256)), dtype=np.uint8)
    return (offsets, np.arange(nf, dtype=np.uint32), np.arange(nf, dtype=np.float32) + 1,
            namespace, dropped, index_of, has_constant)


@pytest.mark.slow  # 300 batches: make check runs it, bounds-checked too
@settings(max_examples=300)
@given(batches())
def test_select_keeps_what_the_reference_keeps(batch):
    offsets, index, value, namespace, dropped, index_of, has_constant = batch
    audit = np.arange(len(index) * 2, dtype=np.int64).reshape(-1, 2)
    out_off, out_idx, out_val, out_ns, out_audit = select(
        offsets, index, value, namespace, audit, dropped, index_of, has_constant)
    want_off, want = reference_select(offsets, index, value, namespace, dropped, index_of,
                                      has_constant)
    assert out_off.tolist() == want_off
    assert list(zip(out_idx.tolist(), out_val.tolist(), out_ns.tolist())) == want
    np.testing.assert_array_equal(out_audit, audit[out_idx])


@pytest.mark.parametrize("broken", ["offsets", "value", "namespace", "audit", "dropped",
                                    "constant"])
def test_select_refuses_arrays_that_do_not_fit(broken):
    args = {"offsets": np.array([0, 2, 3]), "index": np.arange(3, dtype=np.uint32),
            "value": np.ones(3, dtype=np.float32), "namespace": np.full(3, 97, dtype=np.uint8),
            "audit": np.zeros((3, 2), dtype=np.int64), "dropped": np.zeros(256, dtype=np.bool_),
            "index_of": IDENTITY, "has_constant": True}
    if broken == "offsets":
        args["offsets"] = np.array([0, 4, 3])
    elif broken == "constant":
        args["offsets"] = np.array([0, 0, 3])  # an example without its constant
    elif broken == "audit":
        args["audit"] = np.zeros((2, 2), dtype=np.int64)
    else:
        args[broken] = args[broken][:-1]
    with pytest.raises(ValueError, match="select"):
        select(*args.values())


def test_ignore_takes_each_character_and_hex_escapes():
    dropped = _selection(ignore=["ab", "\\x20"], keep=[]).dropped
    assert sorted(np.flatnonzero(dropped).tolist()) == [32, 97, 98]


def test_keep_overrides_ignore_and_never_drops_the_constant():
    dropped = _selection(ignore=["a"], keep=["a"]).dropped
    assert not dropped[97] and not dropped[CONSTANT_NAMESPACE] and dropped[32] and dropped[98]


def test_keep_and_ignore_take_the_utf8_bytes_of_the_text():
    assert sorted(np.flatnonzero(_selection(ignore=["é"]).dropped).tolist()) == [0xA9, 0xC3]


def test_redefinitions_apply_in_order_and_spare_default_and_constant():
    index_of = _selection(redefine=["y:=:", "z:=ab", ":=c", "w:="]).index_of
    assert [chr(index_of[ord(c)]) for c in "abcdz"] == ["z", "z", " ", "y", "y"]
    assert index_of[32] == 32 and index_of[CONSTANT_NAMESPACE] == CONSTANT_NAMESPACE


def test_no_namespace_option_means_no_selection():
    assert _selection() is None


@pytest.mark.parametrize("bad", ["z=a", "za", ""])
def test_malformed_redefine_is_an_option_error(bad):
    with pytest.raises(OptionError, match="--redefine"):
        Learner(redefine=[bad])


def test_redefined_namespaces_merge_in_line_order():
    index_of = _selection(redefine=["z:=ab"]).index_of
    batch = _parse(b"1 |b x |c y |a w |b v\n", index_of=index_of)
    one_per_line = _parse(b"1 |b x\n1 |a w\n1 |b v\n1 |c y\n")  # each feature, hashed alone
    # b x, a w, b v share index z: one group, in the order of the line; then c, the constant
    assert batch.namespace.tolist() == [122, 122, 122, 99, CONSTANT_NAMESPACE]
    assert batch.index[:4].tolist() == one_per_line.index[one_per_line.offsets[:-1]].tolist()


def test_ignored_namespace_leaves_the_constant_and_counts():
    learner = Learner(ignore=["a"])
    learner.fit(["1 |a x y z", "0 |a x |b w"])
    assert "total feature number = 3" in _summary(learner)


def _summary(learner) -> str:
    from olearn.outputs.report import summary
    return summary(learner._learner.stats, learner._learner.config.loss,
                   learner._learner.config.loss_param, 1, None)


def test_a_model_keeps_its_namespace_options(tmp_path):
    learner = Learner(ignore=["a"], redefine=["z:=b"], quadratic=["zz"])
    learner.fit(["1 |a x |b y w", "0 |b y |a q"])
    learner.save(tmp_path / "m.olearn")
    loaded = Learner.load(tmp_path / "m.olearn")
    assert loaded._learner.config.ignore == ["a"]
    np.testing.assert_array_equal(loaded.predict(["|a x |b y w", "|b y"]),
                                  learner.predict(["|b y w", "|b y"]))


def test_svmlight_namespace_is_redefined_too(tmp_path):
    data = tmp_path / "d.svm"
    data.write_text("".join(f"{i % 2} 1:{i % 3} 2:1 {3 + i % 5}:0.5\n" for i in range(60)))
    runs = [run_olearn("-d", data, *options) for options in (["-q", "ff"],
                                                             ["--redefine", "g:=f", "-q", "gg"])]
    assert all(rc == 0 for rc, _, _ in runs)
    losses = [line for _, _, err in runs for line in err.splitlines() if "average loss" in line]
    assert len(losses) == 2 and losses[0] == losses[1]


def test_cache_depends_on_namespace_options(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{i % 2} |a x{i % 4} |b y{i % 3}\n" for i in range(50)))
    cache = tmp_path / "d.cache"

    def loss(*options):
        rc, _, err = run_olearn("-d", data, "--cache_file", cache, *options)
        assert rc == 0, err
        return next(line for line in err.splitlines() if "average loss" in line)

    ignored = loss("--ignore", "a")
    assert loss() != ignored  # the cache of the --ignore run is not reused
    assert loss("--ignore", "a") == ignored


def test_ignore_linear_flags_the_bytes_it_names():
    linear = linear_terms(Config(ignore_linear=["a\\x80"]))
    assert sorted(np.flatnonzero(~linear).tolist()) == [97, CONSTANT_NAMESPACE]


def test_ignored_linear_features_stay_at_zero_but_count_and_interact():
    learner = Learner(ignore_linear=["a"], quadratic=["ab"], bit_precision=10, noconstant=True)
    plain = Learner(quadratic=["ab"], bit_precision=10, noconstant=True)
    lines = ["1 |a x |b y", "0 |a x |b z", "1 |a w |b y"]
    learner.fit(lines)
    plain.fit(lines)
    a_features = _parse(b"|a x w\n").index[:2] & 1023
    assert not learner._learner.weights[a_features, 0].any()
    assert plain._learner.weights[a_features, 0].all()
    assert learner._learner.weights[:, 0].any()  # the interactions learned
    assert "total feature number = 9" in _summary(learner) and "= 9" in _summary(plain)
