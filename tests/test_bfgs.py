"""--bfgs and --conjugate_gradient (learners/bfgs.py): the kernels' sums against the plain-Python
reference (tests/reference.py), the optimum the passes reach, the feature regularizer files
(persistence/regularizer.py), models and refusals.

tests/test_contract.py's family contract does not apply as it stands: a batch method
continued from a model of half the data is not one run over all of it (its state between
passes is not kept: VW's bfgs loads and saves weights alone)."""
import struct

import numpy as np
import pytest
from conftest import olearn_here
from examples import kernel_outputs, random_examples
from reference import bfgs_curvature, bfgs_first_pass

from olearn import Learner
from olearn.engine.learner import OnlineLearner
from olearn.engine.passes import run_passes
from olearn.errors import OptionError
from olearn.learners.bfgs import C_COND, C_DIR, C_G, K_CURVATURE, K_IMPORTANCE, K_LOSS, K_STORED
from olearn.learners.weights import W_W
from olearn.options.config import Config
from olearn.persistence import regularizer, vw_binary

BITS = 8


def _learned_once(config):
    """A learner after one pass over the random examples, from random weights."""
    learner = OnlineLearner(config)
    learner.weights[:, W_W] = np.random.default_rng(1).normal(scale=0.1, size=1 << BITS)
    start = learner.weights[:, W_W].copy()
    examples = random_examples(n=300, bits=BITS)
    kernel_outputs(examples, config, learner)
    return learner, examples, start


def test_first_pass_sums_gradient_preconditioner_and_loss():
    learner, examples, start = _learned_once(Config(bfgs=True, passes=2, bit_precision=BITS))
    g, cond, loss, stored, importance = bfgs_first_pass(examples, start, BITS)
    family = learner.family
    np.testing.assert_allclose(family.coords[:, C_G], g, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(family.coords[:, C_COND], cond, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(family.sums[K_LOSS], loss, rtol=1e-6)
    assert family.sums[K_IMPORTANCE] == importance
    n = int(family.sums[K_STORED])
    np.testing.assert_allclose(family.stored[:n], stored, rtol=1e-6, atol=1e-7)


def test_curvature_pass_replays_the_first_pass_predictions():
    config = Config(bfgs=True, passes=3, bit_precision=BITS)
    learner, examples, _ = _learned_once(config)
    _, _, _, stored, _ = bfgs_first_pass(examples, learner.weights[:, W_W], BITS)
    assert not learner.end_pass(len(examples), False)
    direction = learner.family.coords[:, C_DIR].copy()
    kernel_outputs(examples, config, learner)
    np.testing.assert_allclose(learner.family.sums[K_CURVATURE],
                               bfgs_curvature(examples, direction, stored), rtol=1e-5)


def _ridge_examples():
    """200 examples on 20 coordinates, a linear label with noise."""
    rng = np.random.default_rng(5)
    truth = rng.normal(size=20)
    examples = []
    for _ in range(200):
        idx = rng.choice(20, size=5, replace=False)
        val = rng.normal(size=5)
        examples.append((float(truth[idx] @ val + rng.normal(scale=0.1)), 1.0,
                         list(zip(idx.tolist(), val.tolist()))))
    return examples


@pytest.mark.parametrize("options", [{"bfgs": True, "mem": 5},
                                     {"bfgs": True, "hessian_on": True},
                                     {"conjugate_gradient": True}])
def test_passes_reach_the_ridge_solution(options):
    """Squared loss plus ½λ‖w‖² (no clipping: a fixed range): the weights solve
    (2XᵀX + λI) w = 2Xᵀy."""
    examples = _ridge_examples()
    config = Config(passes=60, termination=0.0, l2=1.0, bit_precision=BITS,
                    min_prediction=-100.0, max_prediction=100.0, **options)
    learner = OnlineLearner(config)
    run_passes(learner, lambda _: (kernel_outputs(examples, config, learner), 0)[1])
    x = np.zeros((len(examples), 20))
    for row, (_, _, features) in enumerate(examples):
        for j, v in features:
            x[row, j] = np.float32(v)
    y = np.array([np.float32(label) for label, _, _ in examples])
    want = np.linalg.solve(2 * x.T @ x + np.eye(20), 2 * x.T @ y)
    np.testing.assert_allclose(learner.weights[:20, W_W], want, atol=2e-3)


def _data(tmp_path):
    rng = np.random.default_rng(2)
    path = tmp_path / "d.vw"
    path.write_text("".join(f"{rng.choice([0, 1])} |a x:{rng.normal():.3f} c{rng.integers(8)}\n"
                            for _ in range(80)))
    return path


def test_regularizer_files_hold_the_same_prior(tmp_path):
    binary, text = tmp_path / "r.bin", tmp_path / "r.txt"
    olearn_here("-d", _data(tmp_path), "--bfgs", "--l2", "0.5", "-c", "--passes", "40",
                "--termination", "0.05", "--holdout_off", "-b", BITS, "--quiet",
                "--output_feature_regularizer_binary", binary,
                "--output_feature_regularizer_text", text)
    prior = regularizer.read_binary(str(binary), BITS)
    lines = text.read_text().splitlines()
    entries = dict(line.split(":") for line in lines[lines.index(":1") + 1:])
    listed = np.flatnonzero(prior)
    assert sorted(int(i) for i in entries) == listed.tolist()
    # the text's file adds the preconditioner's share once more (VW's, per file written)
    text_prior = np.array([float(entries[str(i)]) for i in listed.tolist()])
    mean = listed % 2 == 1
    np.testing.assert_allclose(text_prior[mean], prior[listed][mean], rtol=1e-5)
    assert (text_prior[~mean] > prior[listed][~mean]).all()


def test_binary_header_checksum_is_vws():
    """VW 9.11.9's checksum of a -b 7 --bfgs regularizer's header with labels in [0, 1]."""
    config = Config(bfgs=True, bit_precision=7)
    header = vw_binary.header_bytes(0.0, 1.0, 7, regularizer.header_options(config))
    assert header[-4:] == struct.pack("<I", 0x64E4AD6B)


def test_input_regularizer_sets_weights_and_precisions(tmp_path):
    binary = tmp_path / "r.bin"
    olearn_here("-d", _data(tmp_path), "--bfgs", "--l2", "0.5", "-c", "--passes", "40",
                "--termination", "0.05", "--holdout_off", "-b", BITS, "--quiet",
                "--output_feature_regularizer_binary", binary)
    prior = regularizer.read_binary(str(binary), BITS)
    learner = OnlineLearner.start(Config(bfgs=True, passes=2, bit_precision=BITS,
                                         input_feature_regularizer=str(binary)))
    np.testing.assert_array_equal(learner.weights[:, W_W], prior[1::2])
    np.testing.assert_array_equal(learner.family.coords[:, C_COND], prior[0::2])


def test_regularizer_of_another_size_is_refused(tmp_path):
    binary = tmp_path / "r.bin"
    olearn_here("-d", _data(tmp_path), "--bfgs", "-c", "--passes", "40", "--termination",
                "0.05", "--holdout_off", "-b", BITS, "--quiet",
                "--output_feature_regularizer_binary", binary)
    with pytest.raises(Exception, match="not of -b 9"):
        regularizer.read_binary(str(binary), 9)


def test_bfgs_starts_from_a_gradient_descent_model(tmp_path):
    data, model = _data(tmp_path), tmp_path / "gd.model"
    olearn_here("-d", data, "-b", BITS, "--quiet", "-f", model, "--predict_only_model")
    gd = Learner.load(model)._learner
    learner = OnlineLearner.start(Config(initial_regressor=str(model), bfgs=True, passes=2,
                                         quiet=True))
    np.testing.assert_array_equal(learner.weights[:, W_W], gd.weights[:, W_W])


def test_saved_model_predicts_as_the_trained_learner(tmp_path):
    data, model = _data(tmp_path), tmp_path / "m.model"
    learner = Learner(bfgs=True, passes=5, holdout_off=True, bit_precision=BITS,
                      cache_file=str(tmp_path / "c"), quiet=True).fit(data)
    learner.save(model)
    np.testing.assert_array_equal(Learner.load(model).predict(data), learner.predict(data))


@pytest.mark.parametrize("options, message", [
    ({"bfgs": True, "conjugate_gradient": True}, "cannot be used together"),
    ({"bfgs": True, "explicit": frozenset({"bfgs"})}, "At least 2 passes"),
    ({"bfgs": True, "passes": 2, "oaa": 3}, "works with gradient descent, not with --bfgs"),
])
def test_refusals(options, message):
    with pytest.raises(OptionError, match=message):
        Config(**options)
