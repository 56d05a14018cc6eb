"""--preserve_performance_counters: a model file keeps the progress counters, and -i with the
flag continues them (outputs/report.py ``COUNTERS``)."""
import numpy as np
import pytest

from olearn.engine.learner import OnlineLearner
from olearn.kernel import layouts
from olearn.options.config import Config
from olearn.outputs import report
from olearn.persistence import model


def _trained(tmp_path, **options):
    """A learner trained on 3 examples and saved; its model's path."""
    from examples import kernel_predictions
    config = Config(bit_precision=8, **options)
    learner = OnlineLearner(config)
    kernel_predictions([(1.0, 1.0, [(1, 1.0)]), (0.0, 2.0, [(2, 1.0)]), (None, 1.0, [(3, 1.0)])],
                       config, learner)
    learner.end_pass(3, True)
    path = tmp_path / "m.model"
    learner.save(str(path))
    return learner, path


def test_counters_round_trip_through_the_model_file(tmp_path):
    learner, path = _trained(tmp_path)
    saved = model.load(str(path)).arrays["counters"]
    np.testing.assert_array_equal(saved, report.counters_of(learner.stats, 1))
    assert saved[report.COUNTERS.index("w_labeled")] == 3.0
    assert saved[report.COUNTERS.index("examples")] == 3.0


@pytest.mark.parametrize("options, kept", [({"preserve_performance_counters": True}, True),
                                           ({}, False),
                                           ({"preserve_performance_counters": True,
                                             "testonly": True}, False)],
                         ids=["preserved", "not_asked", "test_only"])
def test_i_continues_the_counters_only_when_training_with_the_flag(tmp_path, options, kept):
    learner, path = _trained(tmp_path)
    loaded = OnlineLearner.start(Config(initial_regressor=str(path), **options))
    counted = list(report.COUNTED)
    if kept:
        np.testing.assert_array_equal(loaded.stats[counted], learner.stats[counted])
        assert loaded.passes_before == 1
    else:
        assert loaded.stats[layouts.R_EXAMPLES] == 0 and loaded.passes_before == 0


def test_a_predict_only_model_keeps_no_counters(tmp_path):
    _, path = _trained(tmp_path, predict_only_model=True)
    assert "counters" not in model.load(str(path)).arrays
    loaded = OnlineLearner.start(Config(initial_regressor=str(path),
                                        preserve_performance_counters=True))
    assert loaded.stats[layouts.R_EXAMPLES] == 0
