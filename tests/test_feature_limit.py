"""--feature_limit (olearn/features/feature_limit.py): each namespace's features cut as VW's
unique_features cuts them."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olearn.errors import OptionError
from olearn.features.feature_limit import NO_LIMIT, limited, limits_of
from olearn.options.config import Config


def reference_limited(examples, limits):
    """Plain Python: each example's [(index, value, ns)] with each namespace over its limit
    sorted by (index, value), repeats of an index dropped, cut to its limit."""
    out = []
    for feats in examples:
        order = list(dict.fromkeys(ns for _, _, ns in feats))
        kept = []
        for ns in order:
            mine = [f for f in feats if f[2] == ns]
            if len(mine) > limits[ns]:
                unique = []
                for f in sorted(mine, key=lambda f: (f[0], f[1])):
                    if not unique or unique[-1][0] != f[0]:
                        unique.append(f)
                mine = unique[:limits[ns]]
            kept += mine
        out.append(kept)
    return out


features = st.lists(st.lists(st.tuples(st.integers(0, 6), st.sampled_from([-1.0, 0.5, 2.0]),
                                       st.sampled_from([97, 98, 128])), max_size=12), max_size=6)


@settings(max_examples=200, deadline=None)
@given(features, st.integers(0, 4), st.integers(0, 4))
def test_limited_features_are_the_references(examples, limit_a, limit_all):
    limits = np.full(256, limit_all, dtype=np.int64)
    limits[97] = limit_a
    offsets = np.cumsum([0] + [len(f) for f in examples]).astype(np.int64)
    flat = [f for feats in examples for f in feats]
    index = np.array([f[0] for f in flat], dtype=np.uint32)
    value = np.array([f[1] for f in flat], dtype=np.float32)
    namespace = np.array([f[2] for f in flat], dtype=np.uint8)
    new_offsets, kept = limited(offsets, index, value, namespace, limits)
    got = [[(int(index[k]), float(value[k]), int(namespace[k]))
            for k in kept[new_offsets[e]:new_offsets[e + 1]]] for e in range(len(examples))]
    assert got == reference_limited(examples, limits)


@pytest.mark.parametrize(("texts", "a", "b"), [
    (["a3"], 3, NO_LIMIT), (["2"], 2, 2), (["a:10"], 0, NO_LIMIT), (["5", "b1"], 5, 1),
    (["a-1"], NO_LIMIT, NO_LIMIT)])
def test_limits_read_as_vw_reads_them(texts, a, b):
    limits = limits_of(Config(feature_limit=texts))
    assert (limits[97], limits[98]) == (a, b)


def test_feature_limit_with_ngram_names_is_refused():
    with pytest.raises(OptionError, match="cannot name features"):
        Config(feature_limit=["2"], ngram=["2"], audit=True)


def test_limited_refuses_offsets_beyond_the_features():
    with pytest.raises(ValueError, match="do not fit"):
        limited(np.array([0, 5]), np.zeros(2, np.uint32), np.ones(2, np.float32),
                np.zeros(2, np.uint8), np.full(256, 1, dtype=np.int64))
