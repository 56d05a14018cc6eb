"""scikit-learn estimators on olearn's learner: :class:`OlearnRegressor` and
:class:`OlearnClassifier` (binary, or multiclass through --oaa). Needs scikit-learn
(``pip install 'olearn[sklearn]'``); the command line never imports this module.

Parameters are olearn's options (the common ones by name, any other in ``options``, a VW
option string). ``fit`` starts a new learner; ``partial_fit`` continues it. Input goes through
``olearn/data/matrices.py``: column j is feature ``j`` of namespace ``f``.
"""
from __future__ import annotations

import functools

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from olearn.data.hashing import CONSTANT_HASH
from olearn.data.matrices import column_indices, is_dask
from olearn.frontends.api import Learner
from olearn.learners.weights import W_W

SPARSE = ("csr", "csc", "coo")


class _OlearnEstimator(BaseEstimator):
    """What both estimators share: the options, the learner, the linear model's weights."""

    def __init__(self, options: str = "", *, passes: int = 1, learning_rate: float | None = None,
                 bit_precision: int = 18, l1: float = 0.0, l2: float = 0.0,
                 quadratic: str | tuple = (), loss_function: str | None = None):
        self.options = options
        self.passes = passes
        self.learning_rate = learning_rate
        self.bit_precision = bit_precision
        self.l1 = l1
        self.l2 = l2
        self.quadratic = quadratic
        self.loss_function = loss_function

    def _new_learner(self) -> Learner:
        # a string is one pair ("ab", as VW's -q ab), not one per letter; None: none
        pairs = ([self.quadratic] if isinstance(self.quadratic, str)
                 else list(self.quadratic or ()))
        keywords = {"passes": self.passes, "bit_precision": self.bit_precision,
                    "l1": self.l1, "l2": self.l2, "quadratic": pairs, **self._learner_options()}
        if self.learning_rate is not None:
            keywords["learning_rate"] = self.learning_rate
        if self.loss_function is not None:
            keywords["loss_function"] = self.loss_function
        return Learner(self.options, **keywords)

    def _learn(self, X, y, sample_weight, reset: bool):
        if is_dask(X):
            return self._learn_dask(X, y, sample_weight, reset)
        X, y = validate_data(self, X, y, reset=reset, accept_sparse=SPARSE, dtype=np.float64,
                             y_numeric=isinstance(self, RegressorMixin))
        weights = None if sample_weight is None else _check_sample_weight(sample_weight, X)
        if reset or not hasattr(self, "learner_"):
            self.learner_ = self._new_learner()
        self.learner_.fit(X, self._target(y), sample_weight=weights)
        return self

    def _learn_dask(self, X, y, sample_weight, reset: bool):
        """fit on Dask collections (olearn/scale/collections.py): X's columns taken by position,
        as validate_data's matrix gives them, and y mapped partition by partition."""
        if not (is_dask(y) and (sample_weight is None or is_dask(sample_weight))):
            raise ValueError("fit on a Dask X needs y (and sample_weight) as Dask collections "
                             "partitioned as X")
        columns = getattr(X, "columns", None)
        if reset or not hasattr(self, "n_features_in_"):
            self.n_features_in_ = len(columns) if columns is not None else X.shape[1]
            if columns is not None and all(isinstance(c, str) for c in columns):
                self.feature_names_in_ = np.asarray(columns, dtype=object)
        X = X.to_dask_array(lengths=True) if columns is not None else X
        y = y.to_dask_array(lengths=True) if hasattr(y, "to_dask_array") else y
        if reset or not hasattr(self, "learner_"):
            self.learner_ = self._new_learner()
        labels = (y if isinstance(self, RegressorMixin) else y.map_blocks(
            functools.partial(_class_labels, classes=self.classes_), dtype=np.float64))
        self.learner_.fit(X.astype(np.float64), labels, sample_weight=sample_weight)
        return self

    def _learner_options(self) -> dict:
        return {}

    def _validated(self, X):
        check_is_fitted(self, "learner_")
        return validate_data(self, X, reset=False, accept_sparse=SPARSE, dtype=np.float64)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _weights(self, index: np.ndarray) -> np.ndarray:
        """The weights of features ``index``: a row per class with --oaa, else one row."""
        check_is_fitted(self, "learner_")
        learner = self.learner_._learner
        learner.sync()
        slots = learner.reduction.class_slots(index.astype(np.uint32))
        return learner.weights[slots, W_W].astype(np.float64)

    @property
    def coef_(self) -> np.ndarray:
        """Each column's weight (the linear terms; with --quadratic, not the whole model);
        for more than two classes, a row per class."""
        weights = self._weights(column_indices(self.n_features_in_, self.learner_.config))
        return weights if len(weights) > 1 else weights[0]

    @property
    def intercept_(self) -> float | np.ndarray:
        """The constant feature's weight (0 with --noconstant); for more than two classes, one
        per class."""
        config = self.learner_.config
        weights = self._weights(np.array([CONSTANT_HASH & config.mask]))[:, 0]
        if config.noconstant:
            weights[:] = 0.0
        return weights if len(weights) > 1 else float(weights[0])


class OlearnRegressor(RegressorMixin, _OlearnEstimator):
    """Online linear regression (squared loss unless ``loss_function`` says otherwise)."""

    def fit(self, X, y, sample_weight=None) -> "OlearnRegressor":
        return self._learn(X, y, sample_weight, reset=True)

    def partial_fit(self, X, y, sample_weight=None) -> "OlearnRegressor":
        return self._learn(X, y, sample_weight, reset=not hasattr(self, "learner_"))

    def _target(self, y):
        return y

    def predict(self, X) -> np.ndarray:
        X = self._validated(X)
        return self.learner_.predict(X).astype(np.float64)


class OlearnClassifier(ClassifierMixin, _OlearnEstimator):
    """Online logistic regression. Two classes: one problem (the second class is the
    positive), ``predict_proba`` the logistic link of the score. More: VW's one against all
    (--oaa K), ``predict_proba`` the classes' logistic values normalized to sum 1."""

    def fit(self, X, y, sample_weight=None) -> "OlearnClassifier":
        self._set_classes(y)
        return self._learn(X, y, sample_weight, reset=True)

    def partial_fit(self, X, y, sample_weight=None, classes=None) -> "OlearnClassifier":
        if not hasattr(self, "classes_"):
            self._set_classes(y if classes is None else classes)
        return self._learn(X, y, sample_weight, reset=not hasattr(self, "learner_"))

    def _set_classes(self, y) -> None:
        if is_dask(y):  # the classes alone are computed, not y
            import dask.array
            y = (y.unique() if hasattr(y, "unique") else dask.array.unique(y)).compute()
        _check_targets(y)
        classes = np.unique(np.asarray(y))
        if len(classes) == 1:
            raise ValueError("Classifier can't train when only one class is present.")
        self.classes_ = classes

    @property
    def _multiclass(self) -> bool:
        return len(self.classes_) > 2

    def _learner_options(self) -> dict:
        if self._multiclass:  # the classes are 1..K, their probabilities in the predictions
            return {"loss_function": "logistic", "oaa": len(self.classes_), "indexing": 1,
                    "probabilities": True}
        return {"loss_function": "logistic", "link": "logistic"}

    def _target(self, y):
        return _class_labels(y, self.classes_)

    def decision_function(self, X) -> np.ndarray:
        """Raw scores (before clipping and link): positive for the second class; for more
        classes, the log of each class's probability, a column per class."""
        X = self._validated(X)
        scores = self.learner_.decision_function(X).astype(np.float64)
        return np.log(scores) if self._multiclass else scores

    def predict_proba(self, X) -> np.ndarray:
        X = self._validated(X)
        if self._multiclass:
            return self.learner_.decision_function(X).astype(np.float64)
        positive = self.learner_.predict(X).astype(np.float64)
        return np.column_stack([1.0 - positive, positive])

    def predict(self, X) -> np.ndarray:
        X = self._validated(X)
        if self._multiclass:
            return self.classes_[self.learner_.predict(X).astype(int) - 1]
        positive = self.learner_.predict(X) > 0.5
        return self.classes_[positive.astype(int)]


def _class_labels(y, classes: np.ndarray) -> np.ndarray:
    """The learner's labels of classes ``y``: ±1 for two classes (the second positive), else
    1..K."""
    _check_targets(y)
    unknown = ~np.isin(y, classes)
    if unknown.any():
        raise ValueError(f"y holds a class not in classes_: {y[unknown][0]!r}")
    if len(classes) > 2:
        return np.searchsorted(classes, y) + 1.0
    return np.where(y == classes[1], 1.0, -1.0)


def _check_targets(y) -> None:
    """scikit-learn's check of class labels, whose numpy TypeError (it sorts them: None among
    strings cannot be) is said as y's, a ValueError."""
    try:
        check_classification_targets(y)
    except TypeError as error:
        raise ValueError(f"y: classes must be of one orderable kind ({error})") from None
