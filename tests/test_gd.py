"""The gd kernel against the plain-Python reference of VW's update rules."""
import numpy as np
import pytest

from olearn.config import Config
from olearn.learner import OnlineLearner

from reference import gd_predictions


def _random_examples(seed=3, n=300, bits=8):
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=1 << bits)
    examples = []
    for _ in range(n):
        idx = rng.choice(1 << bits, size=rng.integers(1, 8), replace=False)
        val = rng.normal(scale=rng.choice([0.1, 1.0, 10.0]), size=len(idx))
        label = float(truth[idx] @ val + rng.normal(scale=0.1)) if rng.random() > 0.1 else None
        imp = float(rng.choice([1.0, 1.0, 0.5, 2.0, 0.0]))
        examples.append((label, imp, list(zip(idx.tolist(), val.tolist()))))
    return examples


def _kernel_predictions(examples, config, learner=None):
    from olearn.batch import ExampleBatch
    offsets = np.cumsum([0] + [len(f) for _, _, f in examples])
    numbers = np.array([[np.nan if y is None else y, imp, 0.0] for y, imp, _ in examples],
                       dtype=np.float32)
    index = np.array([j for _, _, f in examples for j, _ in f], dtype=np.uint32)
    value = np.array([x for _, _, f in examples for _, x in f], dtype=np.float32)
    empty = np.zeros((0, 4), dtype=np.int64)
    batch = ExampleBatch(np.zeros(0, np.uint8), "", 0, numbers, np.full((len(examples), 2), -1),
                         np.zeros(len(examples), np.int64), offsets, index, value,
                         np.zeros(len(index), np.uint8), empty, empty, 0, 0)
    learner = learner or OnlineLearner(config)
    preds = np.empty((len(examples), 2), dtype=np.float32)
    learner.learn(batch, preds)
    return preds[:, 0]


def _as_float32(examples):
    return [(None if y is None else float(np.float32(y)), imp,
             [(j, float(np.float32(x))) for j, x in f]) for y, imp, f in examples]


@pytest.mark.parametrize("options, rule", [
    ({}, (True, True, True)),
    ({"sgd": True, "learning_rate": 0.05}, (False, False, False)),
    ({"adaptive": True, "learning_rate": 0.3}, (True, False, False)),
    ({"normalized": True, "learning_rate": 0.3}, (False, True, False)),
    ({"invariant": True, "learning_rate": 0.05}, (False, False, True)),
    ({"adaptive": True, "normalized": True}, (True, True, False)),
    ({"power_t": 0.3, "initial_t": 10.0}, (True, True, True)),
])
def test_gd_kernel_matches_reference(options, rule):
    examples = _as_float32(_random_examples())
    config = Config(bit_precision=8, **options)
    assert config.update_rule == rule
    want = gd_predictions(examples, 8, *rule, eta=config.eta, power_t=config.power_t, t0=config.t0)
    got = _kernel_predictions(examples, config)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("options", [{}, {"sgd": True, "learning_rate": 0.05}],
                         ids=["default", "sgd"])
@pytest.mark.parametrize("l1, l2", [(1e-2, 0.0), (0.0, 5e-2), (1e-2, 5e-2), (1e-2, 0.5)],
                         ids=["l1", "l2", "elastic_net", "strong_l2_flushes"])
def test_lazy_regularization_equals_dense_proximal_steps(options, l1, l2):
    examples = _as_float32(_random_examples(n=400))
    config = Config(bit_precision=8, l1=l1, l2=l2, **options)
    want = gd_predictions(examples, 8, *config.update_rule, eta=config.eta,
                          power_t=config.power_t, t0=config.t0, l1=l1, l2=l2)
    unregularized = gd_predictions(examples, 8, *config.update_rule, eta=config.eta,
                                   power_t=config.power_t, t0=config.t0)
    assert np.max(np.abs(np.subtract(want, unregularized))) > 0.05  # the penalty matters here
    got = _kernel_predictions(examples, config)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_sync_brings_every_weight_up_to_date():
    examples = _as_float32(_random_examples(n=200))
    config = Config(bit_precision=8, l1=1e-2, l2=5e-2)
    want = {}
    gd_predictions(examples, 8, *config.update_rule, eta=config.eta, l1=1e-2, l2=5e-2,
                   final_weights=want)
    learner = OnlineLearner(config)
    _kernel_predictions(examples, config, learner)
    learner.sync()
    dense = np.zeros(1 << 8)
    dense[list(want)] = list(want.values())
    np.testing.assert_allclose(learner.weights[:, 0], dense, rtol=1e-3, atol=1e-5)
    assert (learner.lazy == 0).all() and (learner.state[-2:] == 0).all()


def test_unlabeled_and_zero_importance_examples_are_not_learned():
    examples = [(None, 1.0, [(1, 1.0)]), (5.0, 0.0, [(1, 1.0)]), (None, 1.0, [(1, 1.0)])]
    preds = _kernel_predictions(examples, Config(bit_precision=4))
    assert preds.tolist() == [0.0, 0.0, 0.0]


def test_fixed_prediction_range_clips():
    examples = [(10.0, 1.0, [(1, 1.0)])] * 20
    preds = _kernel_predictions(examples, Config(bit_precision=4, max_prediction=2.0))
    assert preds.max() <= 2.0 and preds[-1] == pytest.approx(2.0)
