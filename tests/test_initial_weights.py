"""--initial_weight, --random_weights and --random_seed (VW's weight initialisation)."""
from __future__ import annotations

import numpy as np
import pytest

from olearn import Learner, OptionError
from olearn.data.hashing import CONSTANT_HASH
from olearn.learners.weights import (
    LCG_INCREMENT,
    LCG_MULTIPLIER,
    W_G,
    W_W,
    normal_weights,
    random_weights,
    truncated,
)

LINES = ["1 |a x:2 y", "0 |a y z:0.5", "1 |b w"]


def reference_random_weights(seed: int, n: int) -> np.ndarray:
    """VW's generator one draw at a time, in Python integers."""
    out, state = [], seed
    for _ in range(n):
        state = (LCG_MULTIPLIER * state + LCG_INCREMENT) % (1 << 64)
        bits = ((state >> 25) & 0x7FFFFF) | 0x3F800000
        out.append(np.array([bits], dtype=np.uint32).view(np.float32)[0] - np.float32(1.5))
    return np.array(out, dtype=np.float32)


@pytest.mark.parametrize("seed", [0, 1, 7, 2 ** 64 - 1])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 64, 1000])
def test_random_weights_are_the_generators_draws_in_order(seed, n):
    np.testing.assert_array_equal(random_weights(seed, n), reference_random_weights(seed, n))


def test_random_weights_lie_in_half_open_unit_interval_around_zero():
    w = random_weights(3, 1 << 16)
    assert w.dtype == np.float32 and w.min() >= -0.5 and w.max() < 0.5
    assert abs(float(w.mean())) < 0.01


def test_initial_weight_sets_every_weight_and_nothing_else():
    learner = Learner(bit_precision=4, initial_weight=0.25)._learner
    assert (learner.weights[:, W_W] == np.float32(0.25)).all()
    assert (learner.weights[:, W_G] == Learner(bit_precision=4)._learner.weights[:, W_G]).all()


def test_nonzero_initial_weight_wins_over_random_weights():
    learner = Learner(bit_precision=4, initial_weight=-1.0, random_weights=True)._learner
    assert (learner.weights[:, W_W] == -1.0).all()


def test_random_seed_chooses_the_random_weights():
    learner = Learner("-b 5 --random_weights --random_seed 9")._learner
    np.testing.assert_array_equal(learner.weights[:, W_W], random_weights(9, 32))


def test_random_seed_alone_leaves_weights_at_zero():
    assert not Learner("-b 5 --random_seed 9")._learner.weights.any()


def test_an_untrained_learner_predicts_with_the_initial_weights():
    learner = Learner("--initial_weight 0.5 --noconstant --min_prediction -9 --max_prediction 9")
    np.testing.assert_array_equal(learner.predict(["|a x:2 y", "|b z:-4"]), [1.5, -2.0])


def test_random_initial_model_survives_save_and_load(tmp_path):
    learner = Learner("-b 8 --random_weights --random_seed 3")
    learner.fit(LINES)
    learner.save(tmp_path / "m.olearn")
    loaded = Learner.load(tmp_path / "m.olearn")
    np.testing.assert_array_equal(loaded.predict(LINES), learner.predict(LINES))


@pytest.mark.parametrize("options", ["--boa --random_weights", "--saew --initial_weight 0.5"])
def test_initial_weights_are_refused_with_exponential_weights(options):
    with pytest.raises(OptionError, match="works with gradient descent"):
        Learner(options)


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_initial_weight_must_be_finite(value):
    with pytest.raises(OptionError, match="--initial_weight"):
        Learner(f"--initial_weight {value}")


def _merand48(state: int) -> tuple[int, float]:
    """VW's generator step in plain Python: the new state and its float32 draw in [0, 1)."""
    state = (LCG_MULTIPLIER * state + LCG_INCREMENT) % 2 ** 64
    bits = ((state >> 25) & 0x7FFFFF) | 0x3F800000
    return state, float(np.array([bits], dtype=np.uint32).view(np.float32)[0]) - 1.0


def reference_normal(index: int) -> float:
    """VW's merand48_boxmuller seeded with ``index``, one weight at a time (float32 steps)."""
    state = index
    while True:
        state, a = _merand48(state)
        state, b = _merand48(state)
        x1, x2 = np.float32(2 * a - 1), np.float32(2 * b - 1)
        radius = np.float32(x1 * x1 + x2 * x2)
        if 0 < radius < 1:
            return float(x1 * np.sqrt(np.float32(-2) * np.log(radius) / radius))


@pytest.mark.parametrize("stride", [1, 4])
def test_normal_weights_are_box_muller_draws_seeded_by_vw_index(stride):
    got = normal_weights(200, stride)
    want = [reference_normal(i * stride) for i in range(200)]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert abs(float(normal_weights(1 << 16, 4).std()) - 1) < 0.02


def test_truncated_weights_fold_back_beyond_twice_the_deviation():
    drawn = normal_weights(1 << 12, 4)
    bound = 2 * float(drawn.astype(np.float64).std())
    folded = truncated(drawn)
    inside = np.abs(drawn) <= bound
    assert np.abs(folded[~inside]).max() <= bound / 2 + 1e-6  # an IEEE remainder: at most half
    np.testing.assert_array_equal(folded[inside], drawn[inside])
    assert (folded[~inside] != drawn[~inside]).all() and (~inside).any()


def test_normal_weights_use_vw_stride_of_the_update_rule():
    plain = Learner(bit_precision=6, sgd=True, normal_weights=True)._learner.weights[:, W_W]
    default = Learner(bit_precision=6, normal_weights=True)._learner.weights[:, W_W]
    np.testing.assert_array_equal(plain, normal_weights(64, 1))
    np.testing.assert_array_equal(default, normal_weights(64, 4))


def test_constant_starts_the_constant_weight_only():
    weights = Learner(bit_precision=10, constant=1000.0)._learner.weights[:, W_W]
    assert weights[CONSTANT_HASH & 1023] == 1000.0 and np.count_nonzero(weights) == 1
