"""--boosting (olearn/reductions/boosting.py, reductions/boosting_kernels.py): VW's online
boosting, BBM, logistic and adaptive, and its state in model files."""
import math

import numpy as np
import pytest
from conftest import olearn_here
from examples import kernel_outputs, random_examples
from reference import boosting_predictions, parse_vw_line

from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.kernel.layouts import R_SUM_LOSS
from olearn.options.config import Config
from olearn.reductions.boosting_kernels import bbm_weight, choose

BITS = 8


def _examples(n=300):
    """Labels in (-1, 1) of a linear score (some unlabeled, some weighted), float32 as the
    kernel reads them: the margins stay where float32 and float64 agree on e^s."""
    return [(None if y is None else float(np.float32(np.tanh(y))), imp,
             [(j, float(np.float32(x))) for j, x in feats])
            for y, imp, feats in random_examples(seed=4, n=n, bits=BITS)]


@pytest.mark.parametrize("alg", ["BBM", "logistic", "adaptive"])
def test_boosting_kernel_equals_the_reference_boosting(alg):
    examples = _examples()
    config = Config(bit_precision=BITS, boosting=4, alg=alg, quiet=True)
    learner = OnlineLearner(config)
    got = kernel_outputs(examples, config, learner)
    want = boosting_predictions(examples, 4, BITS, alg=alg)
    np.testing.assert_allclose(got[:, 0], [p for p, _ in want], rtol=2e-4, atol=1e-5)
    labeled = sum(loss for (y, _, _), (_, loss) in zip(examples, want) if y is not None)
    assert math.isclose(learner.stats[R_SUM_LOSS], labeled, rel_tol=2e-4)


def test_choose_is_the_binomial_coefficient():
    assert [[choose(n, k) for k in range(-1, n + 2)] for n in range(12)] == [
        [0, *(math.comb(n, k) for k in range(n + 1)), 0] for n in range(12)]


def test_bbm_weight_is_zero_outside_the_binomial_range():
    # learner 0 of 3 at margin s: k = floor((3 - s) / 2) must be in 0..2
    assert bbm_weight(3, 0, np.float32(4.0), np.float32(0.1)) == 0.0
    assert bbm_weight(3, 0, np.float32(-3.0), np.float32(0.1)) == 0.0
    assert math.isclose(bbm_weight(3, 0, np.float32(0.0), np.float32(0.1)),
                        2 * 0.6 * 0.4, rel_tol=1e-6)


@pytest.mark.parametrize("alg", ["logistic", "adaptive"])
def test_a_saved_model_predicts_with_its_alpha_and_v(tmp_path, alg):
    """-f keeps α and v; -t -i predicts as the reference does after the same training."""
    rng = np.random.default_rng(8)
    lines = [f"{rng.normal():.4f} |a " + " ".join(f"f{j}:{rng.normal():.4f}"
                                                   for j in rng.choice(40, 4, replace=False))
             for _ in range(200)]
    train, test = tmp_path / "train.vw", tmp_path / "test.vw"
    train.write_text("\n".join(lines[:150]) + "\n")
    test.write_text("\n".join(lines[150:]) + "\n")
    model, preds = tmp_path / "m", tmp_path / "p"
    olearn_here("-d", train, "-f", model, "-b", BITS, "--boosting", 3, "--alg", alg, "--quiet")
    olearn_here("-d", test, "-i", model, "-t", "-p", preds, "--quiet")
    examples = [(float(np.float32(y)), imp, [(j, float(np.float32(x))) for j, x, _ in feats])
                for y, imp, _, _, feats in (parse_vw_line(line.encode(), BITS)
                                            for line in lines)]
    want = boosting_predictions(examples, 3, BITS, alg=alg, learned=150)
    got = [float(line) for line in preds.read_text().split()]
    np.testing.assert_allclose(got, [p for p, _ in want[150:]], rtol=2e-4, atol=2e-5)
    assert len({round(p, 3) for p in got}) > 10


@pytest.mark.parametrize(("options", "message"), [
    ({"boosting": 2, "oaa": 3}, "--boosting does not take --oaa"),
    ({"boosting": 2, "link": "logistic"}, "--boosting does not take --link"),
    ({"alg": "logistic", "explicit": frozenset({"alg"})}, "--alg needs --boosting"),
    ({"gamma": 0.2, "explicit": frozenset({"gamma"})}, "--gamma needs --boosting"),
])
def test_boosting_refuses_what_it_cannot_combine(options, message):
    with pytest.raises(OptionError, match=message):
        Config(**options)


def test_boosting_is_refused_with_dask():
    from olearn.errors import OlearnError
    from olearn.scale.distributed import check_options
    with pytest.raises(OlearnError, match="--boosting's weak learners"):
        check_options(Config(boosting=2, data=["x.vw"], dask="local:1"))


@pytest.mark.parametrize(("alg", "lines"), [("BBM", 0), ("logistic", 4), ("adaptive", 7)])
def test_readable_model_lists_alpha_and_v_as_vw(tmp_path, alg, lines):
    """After the header: ``boosts N``, each α (logistic, adaptive), each v (adaptive)."""
    data, text = tmp_path / "d.vw", tmp_path / "m.txt"
    data.write_text("1 |a x\n-1 |a y\n0.5 |a x y\n")
    olearn_here("-d", data, "--boosting", 3, "--alg", alg, "--readable_model", text, "--quiet")
    got = text.read_text().splitlines()
    start = next(i for i, line in enumerate(got) if line.startswith("Checksum")) + 1
    block = got[start:got.index(":1")]
    assert [line.split()[0] for line in block] == (
        ["boosts", *["alpha"] * 3, *["v"] * 3][:lines])


@pytest.mark.parametrize("family", [{"ftrl": True}, {"bfgs": True}, {"saew": True}])
def test_boosting_refuses_other_learner_families(family):
    with pytest.raises(OptionError, match="--boosting works with gradient descent"):
        Config(boosting=2, **family)
