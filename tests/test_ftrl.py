"""--ftrl, --pistol and --coin (learners/ftrl.py, pistol.py, coin.py) against the plain-Python
reference of docs/ftrl.md (tests/reference.py), and their options."""
import numpy as np
import pytest
from examples import kernel_outputs, random_examples
from reference import ftrl_predictions

from olearn.errors import OptionError
from olearn.options.config import Config

RULES = ["ftrl", "pistol", "coin"]
# each rule's defaults (α, β) and other values
CASES = {"ftrl": [({}, 0.5, 1.0),
                  ({"ftrl_alpha": 0.1, "ftrl_beta": 0.0, "l1": 0.5, "l2": 0.1}, 0.1, 0.0)],
         "pistol": [({}, 1.0, 0.5), ({"ftrl_alpha": 2.0, "ftrl_beta": 0.1}, 2.0, 0.1)],
         "coin": [({}, 4.0, 1.0), ({"ftrl_alpha": 1.0, "ftrl_beta": 3.0}, 1.0, 3.0)]}


def _as_float32(examples):
    return [(None if y is None else float(np.float32(y)), imp,
             [(j, float(np.float32(x))) for j, x in f]) for y, imp, f in examples]


# make test checks --ftrl's (each family compiles loops of its own); make check all of them
@pytest.mark.parametrize("rule, options, alpha, beta", [
    pytest.param(rule, *case, marks=[pytest.mark.slow] if rule != "ftrl" else [])
    for rule in RULES for case in CASES[rule]])
def test_kernel_matches_reference(rule, options, alpha, beta):
    examples = _as_float32(random_examples(n=400))
    config = Config(bit_precision=8, **{rule: True}, **options)
    want = np.array(ftrl_predictions(examples, rule, alpha, beta, config.l1, config.l2))
    got = kernel_outputs(examples, config)[:, :2]
    # the same float32 operations in the same order; PiSTOL's exp may round apart by an ulp
    # (numpy's float32 exp and LLVM's), which its next predictions amplify a little
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-30)


@pytest.mark.parametrize("rule", RULES)
def test_one_learner_family_at_a_time(rule):
    with pytest.raises(OptionError, match="one learner family"):
        Config(**{rule: True}, saew=True)


@pytest.mark.parametrize("option", [{"oaa": 3}, {"stage_poly": True}])
@pytest.mark.parametrize("rule", RULES)
def test_refuses_what_gradient_descent_alone_does(rule, option):
    with pytest.raises(OptionError, match=f"works with gradient descent, not with --{rule}"):
        Config(**{rule: True}, **option)
