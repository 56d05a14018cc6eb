"""--interact (olearn/features/interact.py): VW's interact reduction, element-wise products of
two namespaces matched by offset from their anchors."""
import numpy as np
import pytest
from conftest import olearn_here, run_olearn
from hypothesis import given, settings
from hypothesis import strategies as st
from test_vw_oracle import _both

from olearn.data.parsed import W_INTERACT_ANCHOR, W_INTERACT_ORDER
from olearn.errors import OptionError
from olearn.features.interact import interacted
from olearn.options.config import Config

A, B, CONSTANT = 97, 98, 128
MASK = (1 << 4) - 1


def reference_interacted(examples, mask=MASK):
    """Plain Python: each example's [(index, value, ns)] with A's features replaced (at A's
    first feature) by the products of the pairs of equal offsets, B's left out; and its
    problem (0, a bad anchor, falling offsets)."""
    out = []
    for feats in examples:
        ones = [f for f in feats if f[2] == A]
        twos = [f for f in feats if f[2] == B]
        if not ones or not twos or ones[0][1] != 1 or twos[0][1] != 1:
            out.append((feats, W_INTERACT_ANCHOR if ones and twos else 0))
            continue
        products = [(ones[0][0], np.float32(ones[0][1]) * np.float32(twos[0][1]), A)]
        problem = 0
        i1 = i2 = 1
        last1 = last2 = 0
        while i1 < len(ones) and i2 < len(twos):
            o1 = (ones[i1][0] - ones[0][0]) % (mask + 1)
            o2 = (twos[i2][0] - twos[0][0]) % (mask + 1)
            if o1 < last1 or o2 < last2:
                problem = W_INTERACT_ORDER
                break
            if o1 == o2:
                products.append((ones[i1][0], np.float32(ones[i1][1]) * np.float32(twos[i2][1]),
                                 A))
                i1, i2 = i1 + 1, i2 + 1
            elif o1 < o2:
                i1 += 1
            else:
                i2 += 1
            last1, last2 = o1, o2
        kept = []
        for f in feats:
            if f is ones[0]:
                kept += products
            elif f[2] not in (A, B):
                kept.append(f)
        out.append((kept, problem))
    return out


features = st.lists(st.lists(st.tuples(st.integers(0, 40), st.sampled_from([1.0, 0.5, -2.0]),
                                       st.sampled_from([A, B, CONSTANT])), max_size=12),
                    max_size=6)


@settings(max_examples=300, deadline=None)
@given(features)
def test_interacted_features_are_the_references(examples):
    offsets = np.cumsum([0] + [len(f) for f in examples]).astype(np.int64)
    flat = [f for feats in examples for f in feats]
    index = np.array([f[0] for f in flat], dtype=np.uint32)
    value = np.array([f[1] for f in flat], dtype=np.float32)
    namespace = np.array([f[2] for f in flat], dtype=np.uint8)
    new_offsets, kept, new_value, problems = interacted(offsets, index, value, namespace, A, B,
                                                        MASK)
    got = [([(int(index[k]), float(v), int(namespace[k]))
             for k, v in zip(kept[new_offsets[e]:new_offsets[e + 1]],
                             new_value[new_offsets[e]:new_offsets[e + 1]])], int(problems[e]))
           for e in range(len(examples))]
    want = [([(i, float(v), ns) for i, v, ns in kept], problem)
            for kept, problem in reference_interacted(examples)]
    assert got == want


def test_interacted_refuses_offsets_beyond_the_features():
    with pytest.raises(ValueError, match="do not fit"):
        interacted(np.array([0, 5]), np.zeros(2, np.uint32), np.ones(2, np.float32),
                   np.zeros(2, np.uint8), A, B, MASK)


@pytest.mark.parametrize(("options", "message"), [
    ({"interact": "abc"}, "two namespace letters"),
    ({"interact": "a"}, "two namespace letters"),
    ({"interact": "ab", "csoaa_ldf": "m"}, "does not take --csoaa_ldf")])
def test_bad_interact_options_are_refused(options, message):
    with pytest.raises(OptionError, match=message):
        Config(**options)


def _lines(n=300, seed=3):
    """Examples whose namespaces a and b hold an anchor 0:1 and sorted numeric features, some
    offsets shared."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        a = np.sort(rng.choice(np.arange(1, 60), size=rng.integers(1, 8), replace=False))
        b = np.sort(np.concatenate([rng.choice(a, size=rng.integers(0, len(a) + 1),
                                               replace=False),
                                    rng.choice(np.arange(60, 90), size=2, replace=False)]))
        av = rng.uniform(0.1, 2, size=len(a))
        bv = rng.uniform(0.1, 2, size=len(b))
        label = float(rng.integers(0, 2))
        lines.append(f"{label:g} |a 0:1 " + " ".join(f"{i}:{v:.4f}" for i, v in zip(a, av))
                     + " |b 0:1 " + " ".join(f"{i}:{v:.4f}" for i, v in zip(b, bv)))
    return lines


def test_interact_predicts_as_vw(tmp_path, vw):
    """VW's --interact (its audit-free path rounds slightly differently: VW's tolerance)."""
    data = tmp_path / "train.vw"
    data.write_text("\n".join(_lines()) + "\n")
    args = ["-d", data, "--interact", "ab", "-p"]
    ol, v = _both(args + [tmp_path / "ol.p"], args + [tmp_path / "vw.p"])
    np.testing.assert_allclose(np.loadtxt(tmp_path / "ol.p"), np.loadtxt(tmp_path / "vw.p"),
                               rtol=1e-3, atol=1e-4)


def test_a_model_keeps_interact(tmp_path):
    """-i brings --interact back: -t predicts as the model's run, not as plain features."""
    data = tmp_path / "train.vw"
    data.write_text("\n".join(_lines(100)) + "\n")
    olearn_here("-d", data, "--interact", "ab", "-f", tmp_path / "m", "--quiet")
    olearn_here("-d", data, "--interact", "ab", "-i", tmp_path / "m", "-t", "-p",
                tmp_path / "a.p", "--quiet")
    olearn_here("-d", data, "-i", tmp_path / "m", "-t", "-p", tmp_path / "b.p", "--quiet")
    olearn_here("-d", data, "-f", tmp_path / "plain", "--quiet")
    olearn_here("-d", data, "-i", tmp_path / "plain", "-t", "-p", tmp_path / "c.p", "--quiet")
    assert (tmp_path / "a.p").read_text() == (tmp_path / "b.p").read_text()
    assert (tmp_path / "a.p").read_text() != (tmp_path / "c.p").read_text()


@pytest.mark.parametrize(("line", "warning"), [
    ("1 |a 0:2 3:1 |b 0:1 3:1", "anchor feature of value 1"),
    ("1 |a 0:1 5:1 3:1 |b 0:1 5:1 7:1", "features out of order")])
def test_a_problem_example_is_warned_about_with_its_line(tmp_path, line, warning):
    data = tmp_path / "train.vw"
    data.write_text("1 |a 0:1 1:1 |b 0:1 1:1\n" + line + "\n")
    code, _, err = run_olearn("-d", data, "--interact", "ab")
    assert code == 0
    assert "train.vw:2: --interact: " in err
    assert warning in err
