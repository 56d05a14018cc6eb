"""EG±, BOA and SAEW (optim/saew.py) against the dense numpy reference, and end to end."""
import numpy as np
import pytest

from olearn.config import Config
from olearn.errors import OlearnError
from olearn.learner import OnlineLearner

from examples import kernel_predictions
from reference import experts_predictions


def _sparse_regression(seed=5, n=400, features=30, d0=4):
    """Labels from a sparse θ* (||θ*||₁ = 1); examples with a few of the features each, some
    unlabeled or weightless, features appearing for the first time throughout."""
    rng = np.random.default_rng(seed)
    theta = np.zeros(features)
    support = rng.choice(features, d0, replace=False)
    theta[support] = rng.normal(size=d0)
    theta /= np.abs(theta).sum()
    examples = []
    for t in range(n):
        pool = min(features, 5 + t // 4)
        idx = rng.choice(pool, size=rng.integers(1, 6), replace=False)
        val = rng.normal(size=len(idx))
        label = float(np.float32(theta[idx] @ val + rng.normal(scale=0.1)))
        if rng.random() < 0.05:
            label = None
        imp = float(rng.choice([1.0, 1.0, 1.0, 0.5, 0.0]))
        examples.append((label, imp, [(int(j), float(np.float32(x))) for j, x in zip(idx, val)]))
    return examples


def _exported(config, examples):
    learner = OnlineLearner(config)
    preds = kernel_predictions(examples, config, learner)
    learner.sync()
    weights = learner.weights[:, 0]
    return preds, {j: float(weights[j]) for j in np.flatnonzero(weights)}


CASES = {
    "boa": ({"boa": True}, {"sub": "boa"}),
    "eg": ({"eg": True}, {"sub": "eg"}),
    "saew-boa-average": ({"saew": True, "saew_C": 0.05, "saew_center": "average"},
                         {"sub": "boa", "sessions": True, "C": 0.05}),
    "saew-boa-last": ({"saew": True, "saew_C": 0.05, "saew_center": "last"},
                      {"sub": "boa", "sessions": True, "C": 0.05, "center_last": True}),
    "saew-eg": ({"saew": True, "saew_sub": "eg", "saew_C": 0.05, "saew_d0": 3, "radius": 2.0,
                 "saew_center": "average"},
                {"sub": "eg", "sessions": True, "C": 0.05, "d0": 3, "radius": 2.0}),
}


@pytest.mark.parametrize("output", ["iterate", "average", "sparse"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_matches_dense_reference(case, output):
    options, settings = CASES[case]
    examples = _sparse_regression()
    config = Config(bit_precision=8, noconstant=True, saew_output=output, **options)
    got, theta = _exported(config, examples)
    want_theta = {}
    want = experts_predictions(examples, final=want_theta, output=output, **settings)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    keys = sorted(set(theta) | {j for j, v in want_theta.items() if v != 0})
    np.testing.assert_allclose([theta.get(j, 0.0) for j in keys],
                               [want_theta.get(j, 0.0) for j in keys], rtol=1e-4, atol=1e-6)
