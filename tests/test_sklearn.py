"""olearn.sklearn's estimators: scikit-learn's own estimator checks, and their use in
scikit-learn's tools. Two checks xfail (EXPECTED_FAILURES, with the reason); scikit-learn
skips its two array-API checks itself unless SCIPY_ARRAY_API is set (olearn takes numpy and
scipy.sparse input only)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from olearn import Learner  # noqa: E402
from olearn.sklearn import OlearnClassifier, OlearnRegressor  # noqa: E402

ONLINE = ("an online learner sees each example once, in order: an example of importance 2 "
          "is one importance-invariant update (VW's), not two updates, so weighting is not "
          "the same as repeating")
# The checks olearn's estimators are known to fail, each with its reason.
EXPECTED_FAILURES = {"check_sample_weight_equivalence_on_dense_data": ONLINE,
                     "check_sample_weight_equivalence_on_sparse_data": ONLINE}


@parametrize_with_checks([OlearnRegressor(), OlearnClassifier()],
                         expected_failed_checks=lambda estimator: EXPECTED_FAILURES)
def test_scikit_learns_estimator_checks(estimator, check):
    check(estimator)


def test_regressor_learns_what_the_learner_learns():
    X, y = make_regression(n_samples=300, n_features=8, noise=1.0, random_state=0)
    model = OlearnRegressor(passes=1).fit(X, y)
    np.testing.assert_array_equal(model.predict(X), Learner().fit(X, y).predict(X))
    assert model.coef_.shape == (8,) and isinstance(model.intercept_, float)


def test_classifier_probabilities_and_classes():
    X, y = make_classification(n_samples=400, n_features=6, random_state=1)
    labels = np.array(["no", "yes"])[y]
    model = OlearnClassifier().fit(X, labels)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(model.predict(X)) <= {"no", "yes"} and model.score(X, labels) > 0.8


def test_estimators_work_in_pipelines_and_grid_search():
    X, y = make_regression(n_samples=200, n_features=5, noise=1.0, random_state=2)
    search = GridSearchCV(make_pipeline(StandardScaler(), OlearnRegressor()),
                          {"olearnregressor__learning_rate": [0.1, 0.5]}, cv=3)
    search.fit(X, y)
    assert search.best_params_["olearnregressor__learning_rate"] in (0.1, 0.5)
    assert clone(OlearnRegressor(options="--sgd", l1=1e-6)).get_params()["options"] == "--sgd"


def test_partial_fit_continues_and_fit_starts_again():
    X, y = make_regression(n_samples=200, n_features=5, random_state=3)
    halves = OlearnRegressor().partial_fit(X[:100], y[:100]).partial_fit(X[100:], y[100:])
    np.testing.assert_array_equal(halves.predict(X), OlearnRegressor().fit(X, y).predict(X))
    refit = OlearnRegressor().fit(X, y).fit(X, y)
    np.testing.assert_array_equal(refit.predict(X), OlearnRegressor().fit(X, y).predict(X))


def test_multiclass_classifier_is_one_against_all():
    X, y = make_classification(n_samples=600, n_features=8, n_informative=6, n_classes=4,
                               random_state=3)
    labels = np.array(["a", "b", "c", "d"])[y]
    model = OlearnClassifier().fit(X, labels)
    assert model.learner_.config.oaa == 4
    proba = model.predict_proba(X)
    assert proba.shape == (600, 4)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(model.predict(X), model.classes_[proba.argmax(axis=1)])
    assert model.coef_.shape == (4, 8) and model.intercept_.shape == (4,)
    assert model.score(X, labels) > 0.5  # chance is 0.25


def test_quadratic_given_as_a_string_is_one_pair():
    """quadratic="ff" is VW's -q ff (it was split into letters, -q f -q f)."""
    X, y = make_regression(n_samples=100, n_features=4, random_state=4)
    model = OlearnRegressor(quadratic="ff").fit(X, y)
    np.testing.assert_array_equal(model.predict(X), Learner("-q ff").fit(X, y).predict(X))


def test_quadratic_none_is_no_pair():
    X, y = make_regression(n_samples=50, n_features=3, random_state=5)
    np.testing.assert_array_equal(OlearnRegressor(quadratic=None).fit(X, y).predict(X),
                                  OlearnRegressor().fit(X, y).predict(X))


@pytest.mark.parametrize("fit", [lambda m, X, y: m.fit(X, y),
                                 lambda m, X, y: m.partial_fit(X, y, classes=["a", "b"])],
                         ids=["fit", "partial_fit"])
def test_classes_that_cannot_be_ordered_are_a_value_error_naming_y(fit):
    X, _ = make_classification(n_samples=20, n_features=3, n_informative=2, n_redundant=0,
                               random_state=6)
    with pytest.raises(ValueError, match="y: classes must be of one orderable kind"):
        fit(OlearnClassifier(), X, np.array(["a", None] * 10, dtype=object))
