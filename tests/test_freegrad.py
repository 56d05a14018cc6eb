"""--freegrad (learners/freegrad.py) against the plain-Python reference of VW's freegrad.cc
(tests/reference.py), and its options."""
import numpy as np
import pytest
from examples import kernel_outputs, random_examples
from reference import freegrad_predictions

from olearn.errors import OptionError
from olearn.options.config import Config

CASES = {"defaults": {},
         "restart": {"restart": True, "fepsilon": 0.5},
         "project adaptive": {"project": True, "flipschitz_const": 3.0},
         "project radius": {"project": True, "radius": 0.3, "restart": True}}


def _as_float32(examples):
    return [(None if y is None else float(np.float32(y)), imp,
             [(j, float(np.float32(x))) for j, x in f]) for y, imp, f in examples]


@pytest.mark.parametrize("case", list(CASES))
def test_kernel_matches_reference(case):
    options = CASES[case]
    examples = _as_float32(random_examples(n=400))
    config = Config(bit_precision=8, freegrad=True, **options)
    want = np.array(freegrad_predictions(
        examples, config.fepsilon, config.flipschitz_const, config.restart, config.project,
        config.radius))
    got = kernel_outputs(examples, config)[:, :2]
    # the same float32 operations in the same order; exp may round apart by an ulp (numpy's
    # float32 exp and LLVM's), and a sum of gradients that cancels to an ulp (a clipped
    # gradient against the hint) then bets 1e-8 where the other bets 0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)


def test_one_learner_family_at_a_time():
    with pytest.raises(OptionError, match="one learner family"):
        Config(freegrad=True, coin=True)


@pytest.mark.parametrize("option", [{"oaa": 3}, {"stage_poly": True}])
def test_refuses_what_gradient_descent_alone_does(option):
    with pytest.raises(OptionError, match="works with gradient descent, not with --freegrad"):
        Config(freegrad=True, **option)
