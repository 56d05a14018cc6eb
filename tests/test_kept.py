"""Kept kernel calls (olearn/kernel/kept.py): learn_one's and predict_one's arguments in one numba
structref, against loop.learn_batch on the same arguments."""
from __future__ import annotations

import numpy as np
import pytest

from olearn import Learner
from olearn.data.matrices import DictExamples
from olearn.engine.learner import OnlineLearner
from olearn.kernel import kept, layouts, loop
from olearn.kernel.bundles import Scratch, Synthetic
from olearn.options.command_line import config_of

ROWS = [({"a": 1.5, "b": -2.0, ("u", "c"): 0.25}, 1.0), ({"a": 3.0, ("u", "d"): 1.0}, -1.0),
        ({"b": 0.5, ("u", "c"): 2.0, ("u", "d"): -1.0}, 1.0)] * 7
OPTIONS = ["", "-q fu", "--stage_poly --batch_sz 2", "--l1 1e-3 --l2 1e-3", "--boa",
           pytest.param("--coin", marks=pytest.mark.slow),  # make check: its own loops
           "--sgd --invariant", "--ignore_linear f -q fu"]


def _learner_and_batches(argv: str) -> tuple[OnlineLearner, list]:
    learner = OnlineLearner(config_of(["--quiet", *argv.split()]))
    dicts = DictExamples(learner.config)
    return learner, [(dicts.batch(x, y), x, y) for x, y in ROWS]


def _state(learner: OnlineLearner) -> list[np.ndarray]:
    family = [a for field in learner.family.bundle()  # the arrays, not the options
              for a in (field if isinstance(field, tuple) else (field,))
              if isinstance(a, np.ndarray)]
    return [learner.weights, *family, *learner.poly, learner.state, learner.stats]


@pytest.mark.parametrize("options", OPTIONS)
def test_a_kept_call_learns_what_learn_batch_learns(options):
    plain, batches = _learner_and_batches(options)
    by_kept, _ = _learner_and_batches(options)
    for batch, _, _ in batches:
        preds = [np.zeros((1, 2), dtype=np.float32) for _ in range(2)]
        rows = [np.zeros((8, layouts.ROW_COLS)) for _ in range(2)]
        n = plain._kernel(batch, preds[0], rows[0], plain.params, plain.state, plain.stats)
        function, call = kept.kept(by_kept._arguments(batch, preds[1], rows[1], by_kept.params,
                                                      by_kept.state, by_kept.stats))
        assert function(call) == n
        np.testing.assert_array_equal(preds[1], preds[0])
        np.testing.assert_array_equal(rows[1][:n], rows[0][:n])
    for a, b in zip(_state(by_kept), _state(plain)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("options", OPTIONS)
def test_a_kept_prediction_predicts_as_learner_predict_and_changes_nothing(options):
    learner, batches = _learner_and_batches(options)
    for batch, _, _ in batches[:10]:
        learner.learn(batch, learner.new_predictions(batch))
    learner.sync()  # the model into the weights, as predict does for the experts
    before = [a.copy() for a in _state(learner)]
    for batch, _, _ in batches[10:]:
        want, got = (learner.new_predictions(batch) for _ in range(2))
        learner.predict(batch, want)  # with the experts, exports θ first (kept's reads it)
        function, call = kept.kept(
            learner._arguments(batch, got, np.empty((0, layouts.ROW_COLS)), learner.params.copy(),
                               learner.state.copy(), learner.new_stats()),
            learner.params, learner.state, learner.new_stats())
        function(call)
        np.testing.assert_array_equal(got, want)
    for a, b in zip(_state(learner), before):
        np.testing.assert_array_equal(a, b)


def test_a_learning_call_is_refused_as_a_prediction():
    learner, batches = _learner_and_batches("")
    batch = batches[0][0]
    _, call = kept.kept(learner._arguments(batch, learner.new_predictions(batch),
                                           np.empty((4, layouts.ROW_COLS)), learner.params,
                                           learner.state, learner.stats))
    with pytest.raises(ValueError, match="not a prediction"):
        kept.predict(call)
    assert learner.params[layouts.P.test_only] == 0


@pytest.mark.parametrize("shrink", ["work", "expansion positions", "synthetic example", "stack"])
def test_a_kept_scratch_of_the_wrong_shape_is_refused(shrink):
    learner, batches = _learner_and_batches("--stage_poly -q fu")
    batch = batches[0][0]
    arguments = learner._arguments(batch, learner.new_predictions(batch),
                                   np.empty((4, layouts.ROW_COLS)), learner.params, learner.state,
                                   learner.stats)
    work, (ranges, pos, x_idx, x_val, no_src), (s_idx, s_val, stack), classes = (
        loop.new_scratch(learner.terms, learner.params))
    if shrink == "work":
        work = work[:, :0].copy()
    elif shrink == "expansion positions":
        pos = pos[:1].copy()
    elif shrink == "synthetic example":
        s_idx = s_idx[:-1].copy()
    else:
        stack = (stack[0][:3].copy(), *stack[1:])
    with pytest.raises(ValueError, match="scratch"):
        loop.learn_kept(*arguments, Scratch(work, (ranges, pos, x_idx, x_val, no_src),
                                            Synthetic(s_idx, s_val, stack), classes))
    assert learner.stats[layouts.R_EXAMPLES] == 0


def test_replacing_a_learner_array_drops_its_kept_calls():
    model = Learner()
    for _ in range(2):  # keys seen before: the second call is a kept one
        model.learn_one({"a": 1.0, "b": 2.0}, 1.0)
    learner = model._learner
    learning_calls = learner._kept_calls[0]
    assert learning_calls
    learner.stats = learner.new_stats()
    assert not learning_calls
    model.learn_one({"a": 1.0, "b": 2.0}, 1.0)
    assert learner.stats[layouts.R_EXAMPLES] == 1
    assert learning_calls


def test_learn_one_and_predict_one_take_kept_calls():
    model = Learner()
    for _ in range(3):
        model.learn_one({"a": 1.0, "b": 2.0}, 1.0)
        model.predict_one({"a": 1.0, "b": 2.0})
    learning, predicting = model._learner._kept_calls
    assert len(learning) == len(predicting) == 1
