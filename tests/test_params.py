"""The kernels' parameters come from their declarations (kernel/layouts.py PARAMS)."""
from __future__ import annotations

import numpy as np
import pytest

from olearn.engine.learner import OnlineLearner
from olearn.kernel import layouts, loop
from olearn.kernel.layouts import PARAMS, P
from olearn.options.command_line import config_of


def test_each_declared_parameter_has_an_index_by_name():
    assert [getattr(P, name) for name in PARAMS.names] == list(range(len(PARAMS)))


@pytest.mark.parametrize("argv, name, value", [
    ([], "classes", 0.0),
    (["--l1", "0.25"], "l1", 0.25),
    (["--l1", "0.25"], "regularized", 1.0),
    (["--oaa", "3"], "classes", 3.0),
    (["--link", "logistic"], "link", float(layouts.LINKS["logistic"])),
    (["--holdout_off", "--passes", "2", "-c", "-k"], "holdout_period", 0.0),
    (["--min_prediction", "-1"], "fixed_range", 1.0),
])
def test_a_learner_reads_its_parameters_from_the_declarations(argv, name, value):
    learner = OnlineLearner(config_of(["--quiet", *argv]))
    assert learner.params[getattr(P, name)] == value
    assert np.array_equal(learner.params, PARAMS.of(learner.config))


def test_the_oaa_constant_is_widened_as_the_batch_indices():
    learner = OnlineLearner(config_of(["--quiet", "--oaa", "5", "-b", "10"]))
    constant = np.array([11650396 & learner.config.mask], dtype=np.uint32)
    assert learner.params[P.constant] == learner.reduction.widen(constant)[0]


def test_settings_give_every_parameter_by_name_in_its_kind():
    params = np.arange(len(PARAMS), dtype=np.float64) * 0.75  # 0 first, fractions after
    settings = loop.settings(params)
    for p in PARAMS.params:
        got = getattr(settings, p.name)
        raw = params[getattr(P, p.name)]
        assert type(got) is p.kind, p.name
        assert got == {bool: raw != 0, int: int(raw), float: raw}[p.kind], p.name
