"""The gd kernel against the plain-Python reference of VW's update rules."""
import numpy as np
import pytest
from examples import kernel_predictions, random_examples
from reference import gd_predictions

from olearn import Learner
from olearn.data.hashing import CONSTANT_HASH
from olearn.engine.learner import OnlineLearner
from olearn.errors import OlearnError, OptionError
from olearn.kernel import layouts
from olearn.learners import regularize
from olearn.options.config import Config


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
    examples = _as_float32(random_examples())
    config = Config(bit_precision=8, **options)
    assert config.update_rule == rule
    want = gd_predictions(examples, 8, *rule, eta=config.eta, power_t=config.power_t, t0=config.t0)
    got = kernel_predictions(examples, config)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("options", [{}, {"sgd": True, "learning_rate": 0.05}],
                         ids=["default", "sgd"])
@pytest.mark.parametrize("l1, l2", [(1e-2, 0.0), (0.0, 5e-2), (1e-2, 5e-2), (1e-2, 0.5)],
                         ids=["l1", "l2", "elastic_net", "strong_l2_flushes"])
def test_lazy_regularization_equals_dense_proximal_steps(options, l1, l2):
    examples = _as_float32(random_examples(n=400))
    config = Config(bit_precision=8, l1=l1, l2=l2, **options)
    want = gd_predictions(examples, 8, *config.update_rule, eta=config.eta,
                          power_t=config.power_t, t0=config.t0, l1=l1, l2=l2)
    unregularized = gd_predictions(examples, 8, *config.update_rule, eta=config.eta,
                                   power_t=config.power_t, t0=config.t0)
    assert np.max(np.abs(np.subtract(want, unregularized))) > 0.05  # the penalty matters here
    got = kernel_predictions(examples, config)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_sync_brings_every_weight_up_to_date():
    examples = _as_float32(random_examples(n=200))
    config = Config(bit_precision=8, l1=1e-2, l2=5e-2)
    want = {}
    gd_predictions(examples, 8, *config.update_rule, eta=config.eta, l1=1e-2, l2=5e-2,
                   final_weights=want)
    learner = OnlineLearner(config)
    kernel_predictions(examples, config, learner)
    learner.sync()
    dense = np.zeros(1 << 8)
    dense[list(want)] = list(want.values())
    np.testing.assert_allclose(learner.weights[:, 0], dense, rtol=1e-3, atol=1e-5)
    assert ((learner.family.lazy == 0).all()
            and (learner.state[layouts.S_REG:layouts.S_REG + regularize.SIZE] == 0).all())


def _steady_l1_learner(sum_so_far: float, steps_so_far: float) -> OnlineLearner:
    """``1 |a a`` learned 20000 times (sgd, power_t 0, -l 0.05, --l1 0.01) after a stream whose
    L1 accumulators reached ``sum_so_far`` over ``steps_so_far`` steps, every weight at 0."""
    config = Config(bit_precision=4, sgd=True, power_t=0.0, learning_rate=0.05, l1=0.01)
    learner = OnlineLearner(config)
    learner.state[layouts.S_REG + regularize.SUM] = sum_so_far
    learner.state[layouts.S_REG + regularize.STEPS] = steps_so_far
    learner.family.lazy[:, regularize.SNAP_SUM] = sum_so_far
    kernel_predictions([(1.0, 1.0, [(3, 1.0), (CONSTANT_HASH & 15, 1.0)])] * 20000, config,
                       learner)
    return learner


def test_l1_alone_stays_exact_on_long_streams():
    # w = 0.8 w + 0.1 - 0.05 * 0.01 at the fixed point: 0.4975 (each of the two weights). The
    # accumulators start as after 6e7 examples of step 0.05; float32 snapshots of a sum that
    # large lost the steps (0.497762 after 3e7 examples).
    learner = _steady_l1_learner(3e6, 6e7)
    learner.sync()
    assert learner.weights[3, 0] == pytest.approx(0.4975, abs=1e-6)


def test_l1_accumulators_restart_before_they_lose_precision():
    learner = _steady_l1_learner(3e6, regularize.STEPS_LIMIT - 10)
    # restarted after 10 steps, then 19990 more since
    assert learner.state[layouts.S_REG + regularize.STEPS] == 19990
    assert learner.state[layouts.S_REG + regularize.SUM] == pytest.approx(19990 * 0.05)
    learner.sync()
    assert learner.weights[3, 0] == pytest.approx(0.4975, abs=1e-6)


def test_unlabeled_and_zero_importance_examples_are_not_learned():
    examples = [(None, 1.0, [(1, 1.0)]), (5.0, 0.0, [(1, 1.0)]), (None, 1.0, [(1, 1.0)])]
    preds = kernel_predictions(examples, Config(bit_precision=4))
    assert preds.tolist() == [0.0, 0.0, 0.0]


def test_fixed_prediction_range_clips():
    examples = [(10.0, 1.0, [(1, 1.0)])] * 20
    preds = kernel_predictions(examples, Config(bit_precision=4, max_prediction=2.0))
    assert preds.max() <= 2.0 and preds[-1] == pytest.approx(2.0)


@pytest.mark.parametrize("options", [{}, {"normalized": True}, {"l1": 1e-3}])
def test_a_first_example_without_features_learns_nothing(options):
    # normalized updates divide by the average norm of the examples so far: 0 here (VW's
    # update is NaN, made 0); an internal error before
    learner = Learner(noconstant=True, **options)
    learner.fit(["1 |a", "0 |b x", "1 |"])
    assert learner.average_loss == pytest.approx((1 + 0 + 1) / 3)
    assert not learner._learner.weights[:, 0].any()


@pytest.mark.parametrize("argv", [[], ["-q", "ab"], ["--stage_poly", "--batch_sz", "2"],
                                  ["--oaa", "3"], ["--boa"], ["--saew"], ["--l1", "1e-4"],
                                  ["--ignore_linear", "a", "-q", "ab"]])
def test_a_learned_batch_is_freed(argv):
    """No reference to a batch's arrays outlives the kernel call (a reference counted and
    never given back kept every parsed batch alive: memory grew with the input)."""
    import gc
    import weakref

    from olearn.data import sources
    from olearn.data.parse import FORMAT_VW
    from olearn.options.command_line import config_of
    learner = OnlineLearner(config_of(["--quiet", *argv]))
    lines = [f"{i % 3 + 1} |a x{i} y |b z{i % 5}:0.5 w" for i in range(40)]
    block = next(sources.blocks_of_lines(lines))
    for _ in range(2):  # the second batch meets every state the first one left
        batch = learner.parse_block(block, FORMAT_VW)
        arrays = [weakref.ref(a) for a in (batch.numbers, batch.offsets, batch.index,
                                           batch.value, batch.namespace, batch.lines)]
        learner.learn(batch, learner.new_predictions(batch))
        del batch
        gc.collect()
        assert all(a() is None for a in arrays)


@pytest.mark.parametrize("options", [{}, {"sgd": True, "learning_rate": 0.05},
                                     {"adaptive": True, "learning_rate": 0.3}],
                         ids=["default", "sgd", "adaptive"])
def test_sparse_l2_steps_as_the_reference(options):
    """--sparse_l2: each update also steps by -λp, and an example whose loss is 0 steps by
    -λp alone, with the rates and multiplier the last update left (VW's)."""
    examples = _as_float32(random_examples(n=400))
    config = Config(bit_precision=8, sparse_l2=0.05, **options)
    want = gd_predictions(examples, 8, *config.update_rule, eta=config.eta,
                          power_t=config.power_t, t0=config.t0, sparse_l2=0.05)
    plain = gd_predictions(examples, 8, *config.update_rule, eta=config.eta,
                           power_t=config.power_t, t0=config.t0)
    assert np.max(np.abs(np.subtract(want, plain))) > 0.05  # the penalty matters here
    np.testing.assert_allclose(kernel_predictions(examples, config), want, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("options", [{}, {"sgd": True, "learning_rate": 0.05},
                                     {"normalized": True, "learning_rate": 0.3}],
                         ids=["default", "sgd", "normalized"])
def test_feature_mask_learns_only_nonzero_weights_as_the_reference(options):
    examples = _as_float32(random_examples(n=300))
    initial = {j: 0.1 * (j % 3) for j in range(0, 256, 2)}  # a third of them 0, odd ones 0
    config = Config(bit_precision=8, feature_mask="mask.model", **options)
    want, final = {}, {}
    preds = gd_predictions(examples, 8, *config.update_rule, eta=config.eta,
                           power_t=config.power_t, t0=config.t0, initial=initial,
                           final_weights=want)
    learner = OnlineLearner(config)
    learner.weights[list(initial), 0] = list(initial.values())
    np.testing.assert_allclose(kernel_predictions(examples, config, learner), preds, rtol=2e-4,
                               atol=2e-4)
    final = np.zeros(256)
    final[list(want)] = list(want.values())
    np.testing.assert_allclose(learner.weights[:, 0], final, rtol=1e-3, atol=1e-5)
    assert not learner.weights[[j for j in range(256) if not initial.get(j)], 0].any()


def test_feature_mask_gives_the_initial_weights_without_i(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 | a b\n0 | c\n")
    mask, out = tmp_path / "mask.model", tmp_path / "out.model"
    Learner("--quiet").fit(str(data)).save(mask)
    masked = Learner(f"--quiet --feature_mask {mask} -f {out}")
    first = masked.predict_one({"a": 1.0, "b": 1.0})
    assert first == pytest.approx(Learner.load(mask).predict_one({"a": 1.0, "b": 1.0}))


@pytest.mark.parametrize("option", [{"sparse_l2": 0.1}, {"feature_mask": "m.model"}])
def test_gradient_descent_options_are_refused_with_other_families(option):
    with pytest.raises(OptionError, match="works with gradient descent"):
        Config(ftrl=True, **option)


def test_feature_mask_of_other_bits_is_an_error_naming_the_file(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 | a b\n")
    mask = tmp_path / "mask.model"
    Learner("--quiet -b 10").fit(str(data)).save(mask)
    with pytest.raises(OlearnError, match="mask.model.*-b 10"):
        Learner(f"--quiet --feature_mask {mask}")


WILD_FIRST = ["3e38 |a x:3e38 y:3e38", "1 |a x:1 y:2", "2 |a x:2 y:1", "1 |a x:1 y:2"]


@pytest.mark.parametrize("options", ["--sgd", "--sgd --oaa 3", "--sgd --sparse_l2 0.1"])
def test_an_update_that_would_make_a_weight_infinite_is_refused_and_counted(options):
    lines = WILD_FIRST if "oaa" not in options else ["3 |a x:3e38 y:3e38", *WILD_FIRST[1:]]
    learner = Learner(f"{options} -b 10 --quiet")
    learner.fit(lines)
    assert np.isfinite(learner._learner.weights).all()
    assert learner._learner.stats[layouts.R_REFUSED] >= 1
    assert np.isfinite(learner.decision_function(lines[1:])).all()


def test_a_refused_step_moves_no_weight():
    from olearn.learners.gd import _step
    W = np.zeros((8, 4), dtype=np.float32)
    W[:, 0] = np.arange(8, dtype=np.float32) / 7
    before = W.copy()
    index = np.array([1, 2, 1, 5], dtype=np.uint32)
    value = np.array([0.5, -2.0, 0.25, 3e38], dtype=np.float32)
    assert not _step(W, index, value, 0, 4, 3.0, False, False, False)
    np.testing.assert_allclose(W, before, rtol=1e-6, atol=1e-7)
    assert _step(W, index, value, 0, 3, 3.0, False, False, False)  # the tame ones are taken
    assert W[1, 0] == pytest.approx(before[1, 0] + 3.0 * 0.75)


def test_the_summary_reports_refused_updates(tmp_path, capsys):
    from conftest import olearn_here
    data = tmp_path / "wild.vw"
    data.write_text("\n".join(WILD_FIRST) + "\n")
    olearn_here("-d", data, "--sgd")
    assert "updates refused (a weight would be non-finite) = 1" in capsys.readouterr().err
