"""--rank (learners/mf.py, VW's gd_mf) against the plain-Python reference (tests/reference.py),
its start, its options and its model files."""
import numpy as np
import pytest
from conftest import olearn_here
from examples import kernel_outputs
from reference import mf_draw_slots, mf_predictions

from olearn.errors import OptionError
from olearn.learners.mf import initial_slots
from olearn.options.config import Config

USER, ITEM = ord("u"), ord("i")


def _examples(seed=4, n=300, bits=8):
    """Ratings of a user (namespace u) and an item (i), some examples missing a side, some
    unlabeled or weighted, plus a feature of another namespace."""
    rng = np.random.default_rng(seed)
    examples = []
    for _ in range(n):
        feats = [(int(rng.integers(1 << bits)), 1.0, USER),
                 (int(rng.integers(1 << bits)), 1.0, ITEM)]
        kind = rng.integers(10)
        if kind == 0:
            feats = feats[:1]
        elif kind == 1:
            feats.append((int(rng.integers(1 << bits)), float(np.float32(rng.normal())), 0))
        label = float(rng.integers(1, 6)) if kind != 2 else None
        examples.append((label, float(rng.choice([1.0, 1.0, 0.5, 2.0])), feats))
    return examples


def test_start_is_vws_draw():
    slots = initial_slots(64, 3)
    for row in (0, 1, 37, 63):
        np.testing.assert_array_equal(slots[row], mf_draw_slots(row, 3))


@pytest.mark.parametrize("options, reference", [
    ({"quadratic": ["ui"]}, {"pair": (USER, ITEM)}),
    ({"quadratic": ["ui"], "loss_function": "classic", "learning_rate": 0.05, "power_t": 0.0,
      "l2": 1e-3},
     {"pair": (USER, ITEM), "classic": True, "eta": 0.05, "power_t": 0.0, "l2": 1e-3}),
    ({}, {}),
])
def test_kernel_matches_reference(options, reference):
    examples = _examples()
    config = Config(bit_precision=8, rank=3, **options)
    want = np.array(mf_predictions(examples, 3, 8, **reference))
    got = kernel_outputs(examples, config)[:, :2]
    # the same float32 operations in the same order; exp may round apart by an ulp
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_feature_count_adds_k_per_feature_of_the_pair(tmp_path, capsys):
    data = tmp_path / "d.vw"
    data.write_text("3 |u a |i b c |x d\n")
    olearn_here("-d", data, "--rank", "4", "-q", "ui")
    # 4 features and the constant, and 4 per feature of u and i (VW's count)
    assert "total feature number = 17" in capsys.readouterr().err


@pytest.mark.parametrize("options, message", [
    ({"adaptive": True}, "--adaptive does not work with --rank"),
    ({"oaa": 3}, "--oaa does not work with --rank"),
    ({"l1": 0.1}, "--l1 does not work with --rank"),
    ({"quadratic": ["ab", "cd"]}, "one -q pair"),
    ({"cubic": ["abc"]}, "one -q pair"),
    ({"quadratic": [":a"]}, "one -q pair"),
])
def test_refuses_what_gd_mf_cannot_do(options, message):
    with pytest.raises(OptionError, match=message):
        Config(rank=2, **options)
