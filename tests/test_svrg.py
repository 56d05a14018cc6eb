"""--svrg (learners/svrg.py) against the plain-Python reference of VW's svrg.cc
(tests/reference.py), pass after pass."""
import numpy as np
import pytest
from examples import kernel_outputs, random_examples
from reference import svrg_predictions

from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.options.config import Config


def _as_float32(examples):
    return [(None if y is None else float(np.float32(y)), imp,
             [(j, float(np.float32(x))) for j, x in f]) for y, imp, f in examples]


@pytest.mark.parametrize("stage_size, learning_rate", [(1, 0.5), (2, 0.1)])
def test_kernel_matches_reference_over_stages(stage_size, learning_rate):
    examples = _as_float32(random_examples(n=200))
    passes = 2 * (stage_size + 1)
    config = Config(bit_precision=8, svrg=True, stage_size=stage_size,
                    learning_rate=learning_rate)
    learner = OnlineLearner(config)
    got = []
    for _ in range(passes):
        got.append(kernel_outputs(examples, config, learner)[:, :2])
        learner.end_pass(len(examples), last=False)
    want = np.array(svrg_predictions(examples, passes, stage_size, learning_rate))
    np.testing.assert_allclose(np.concatenate(got), want, rtol=1e-5, atol=1e-6)


def test_first_pass_learns_only_the_stable_gradient():
    examples = _as_float32(random_examples(n=50))
    config = Config(bit_precision=8, svrg=True)
    assert not kernel_outputs(examples, config)[:, 1].any()


def test_refuses_another_family():
    with pytest.raises(OptionError, match="one learner family"):
        Config(svrg=True, freegrad=True)
