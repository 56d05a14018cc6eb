"""The Python API: the command line's learner, driven from Python.

>>> import olearn
>>> model = olearn.Learner(loss_function="logistic", link="logistic")
>>> _ = model.fit(["1 |f a b", "-1 |f c", "1 |f a"] * 50)
>>> [round(float(p), 2) for p in model.predict(["|f a", "|f c"])]
[0.95, 0.08]
>>> round(model.average_loss, 3)
0.139
"""
from __future__ import annotations

import dataclasses
import difflib
import os
import shlex
import threading
import warnings
from collections.abc import Mapping
from typing import Callable, Iterable, Iterator, Union

import numpy as np

from olearn.data import matrices, sources
from olearn.data.batch import ExampleBatch
from olearn.data.labels import LABEL_CLASSES, LABEL_COSTS, LABEL_LDF, label_kind
from olearn.data.matrices import is_matrix
from olearn.data.multiline import chosen as multiline_examples
from olearn.engine.learner import OnlineLearner
from olearn.engine.passes import DataPlan, run_passes
from olearn.errors import OlearnError, OptionError, ParseWarning
from olearn.learners.weights import W_W
from olearn.options.command_line import config_of
from olearn.options.config import Config
from olearn.outputs.audit import NameCollector

Data = Union[str, os.PathLike, Iterable[Union[str, bytes]]]


class _Producing(threading.local):
    """The Learner whose data a thread is producing (the user's iterable runs on the read-ahead
    thread): a call back into that Learner would wait forever for the lock fit holds."""

    learner = None  # a class attribute: reading it in a thread that never set it raises nothing


_producing = _Producing()


def _produced_for(learner: "Learner", lines: Iterable) -> Iterator:
    """``lines``, each item produced with this thread marked as producing for ``learner``."""
    items = iter(lines)
    while True:
        _producing.learner = learner
        try:
            item = next(items)
        except StopIteration:
            return
        finally:
            _producing.learner = None
        yield item


def _check_dict(x) -> None:
    """learn_one's and predict_one's example: a dict of features (a TypeError otherwise)."""
    if type(x) is not dict and not isinstance(x, Mapping):
        raise TypeError(f"an example for learn_one/predict_one is a dict of features "
                        f"({{name: value}}), not {_kind(x)}")


# labels that are not one number, by their kind (data/labels.py)
_LABELS_NOT_NUMBERS = {LABEL_COSTS: "class:cost lists (--csoaa)",
                       LABEL_CLASSES: "lists of classes (--multilabel_oaa)",
                       LABEL_LDF: "multi-line examples (--csoaa_ldf, --wap_ldf)"}


def _labels_not_numbers(config: Config) -> str | None:
    """What the labels are when they are not one number per example (a dict's, a matrix
    row's), or None."""
    if config.named_labels is not None:
        return "names (--named_labels)"
    return _LABELS_NOT_NUMBERS.get(label_kind(config))


def _kind(data) -> str:
    """What ``data`` is, for a message: its type (a numpy array's dimensions and dtype), with a
    hint where a matrix was likely meant."""
    if data is None:
        return "None"
    if isinstance(data, np.ndarray):
        hint = " (one feature per row: X.reshape(-1, 1))" if data.ndim == 1 else ""
        return f"a {data.ndim}-d numpy array of {data.dtype}{hint}"
    hint = (" (example lines; np.array(X) makes a matrix)" if isinstance(data, (list, tuple))
            else " (a pandas Series: X.to_frame() is a DataFrame of one column)"
            if hasattr(data, "to_frame") else "")
    return f"a {type(data).__name__}{hint}"


def _check_keywords(options: dict) -> None:
    """A TypeError naming a keyword that is no option's long name, and the nearest ones."""
    known = {field.name for field in dataclasses.fields(Config) if field.init}
    for name in options:
        if name not in known:
            near = difflib.get_close_matches(name, known, n=3)
            hint = f" (did you mean {' or '.join(near)}?)" if near else ""
            raise TypeError(f"Learner: no option {name!r}: a keyword is an option's long name "
                            f"(bit_precision for -b){hint}")


def _is_path(data: Data) -> bool:
    return isinstance(data, (str, os.PathLike))


def _blocks(data: Data, learner: "Learner") -> Iterator[sources.Block]:
    """A path (VW text or svmlight, plain or gzip) or an iterable of example lines; anything
    else is a TypeError (bytes are not taken for a path, nor numbers for lines)."""
    if _is_path(data):
        path = os.fspath(data)
        sources.check_readable([path])
        return sources.all_blocks([path], multiline=multiline_examples(learner.config))
    kind = type(data).__name__
    if isinstance(data, np.ndarray):
        kind += f" of {data.dtype} in {data.ndim} dimension(s)"
        iterable = data.ndim == 1 and data.dtype.kind in "USO"  # strings, or objects checked
    else:  # (a dict's iteration is its keys: an example, not lines)
        iterable = not isinstance(data, (bytes, bytearray, memoryview, Mapping)) and hasattr(
            data, "__iter__")
    if not iterable:
        hint = (" (lines in one bytes object: pass [data])" if isinstance(data, bytes) else
                " (one example as a dict: learn_one or predict_one)"
                if isinstance(data, Mapping) else "")
        raise TypeError("data must be a path (str or os.PathLike) or an iterable of example "
                        f"lines (str or bytes), not {kind}{hint}")
    if not isinstance(data, (list, tuple)):
        data = _produced_for(learner, data)
    return sources.blocks_of_lines(data, multiline=multiline_examples(learner.config))


def _outputs(preds: np.ndarray) -> np.ndarray:
    """The outputs (after link and --binary) in a prediction array."""
    return preds[:, 0]


class Learner:
    """An online learner with VW's options, as a command line's string or as keyword arguments
    (``-b`` is ``bit_precision``, ``-l`` is ``learning_rate``, ``--loss_function`` is
    ``loss_function``, ...): ``Learner("-q ab --l1 1e-6")``, ``Learner(quadratic=["ab"])``.

    ``fit`` and ``partial_fit`` learn online (one pass, or ``passes``), predicting each example
    before learning it (progressive validation); ``predict`` only predicts. The state carries
    over between calls, so ``fit(a); fit(b)`` equals ``fit(a + b)``.

    Parse warnings are :class:`olearn.ParseWarning` warnings (``warnings`` module), or with
    ``strict_parse=True`` the first one is an :class:`olearn.OlearnError`. Calls from several
    threads run one at a time (a lock), each seeing the state the previous one left.

    With ``names=True`` the learner remembers the name of every feature it reads (as
    ``--invert_hash`` does; text is then parsed with its names, which is slower), and
    :meth:`weights` names each weight.
    """

    def __init__(self, args: str = "", /, names: bool = False, **options):
        """``args``: VW's options as one string (``"-q ab --l1 1e-6"``), as on the command line;
        ``options``: the same as keywords, which win over the string; ``names``: remember
        feature names for :meth:`weights`."""
        _check_keywords(options)
        options.setdefault("quiet", True)
        self.config = config_of(shlex.split(args), **options)
        if self.config.data:
            raise OptionError("-d/--data: give the examples to fit() or predict()")
        if self.config.dask:
            raise OptionError("dask is for the command line (olearn --dask); a Learner learns "
                              "in this process")
        if self.config.daemon:
            raise OptionError("daemon is for the command line (olearn --daemon); a Learner "
                              "answers its own calls")
        self._start(OnlineLearner.start(self.config), names)

    def _start(self, learner: OnlineLearner, names: bool) -> None:
        self._learner = learner
        self.config = learner.config
        self._lock = threading.Lock()
        self._namespaces: dict | None = None  # DataFrame columns by namespace (fit's)
        self._names = NameCollector(self.config) if names else None
        learner.parse_names = learner.parse_names or names
        self._dicts: matrices.DictExamples | None = None  # learn_one's: made on its first call
        self._labels = _labels_not_numbers(self.config)  # labels learn_one cannot take
        # learn_one checks its labels (a reduction's classes, or the labels it cannot take)
        self._checks_labels = learner.reduction.on or self._labels is not None
        self._one = np.empty((1, learner.prediction_columns()), dtype=np.float32)  # learn_one's

    def _locked(self) -> threading.Lock:
        """The lock, unless this thread is producing this learner's data: it would wait for
        itself (fit holds the lock while it reads the data). (learn_one and predict_one first
        try to take the lock without waiting: when that succeeds, no fit holds it, and this
        check, a thread-local's attribute, is not needed.)"""
        if _producing.learner is self:
            raise OlearnError("the data given to fit() or predict() uses the same Learner, "
                              "which is busy reading it: give a list, or use another Learner")
        return self._lock

    def fit(self, data: Data, y=None, sample_weight=None,
            namespaces: dict | None = None) -> "Learner":
        """Learn online from ``data``: a path or example lines, or a matrix ``X`` (a 2-d numpy
        array, a scipy.sparse matrix or a pandas DataFrame; olearn/data/matrices.py) with its labels
        ``y`` and optional importances ``sample_weight``; returns ``self``. ``namespaces``
        maps namespace names to DataFrame columns (``{"u": ["age"], "i": ["item"]}``, the
        rest in ``f``); later calls keep it unless given another.

        With ``passes`` > 1, ``data`` must be a path, a list or a matrix: each pass reads it
        again (from the cache with ``cache=True``), with VW's holdout and early termination;
        the learner keeps the last pass's state.

        A Dask collection (a DataFrame or array with ``y`` and ``sample_weight`` partitioned
        alike, or a bag of example lines) trains data-parallel on the current Dask client's
        cluster, as ``olearn --dask`` (``dask_sync=N``: merging every N examples of each
        partition); olearn/scale/collections.py.
        """
        config = self.config
        if matrices.is_dask(data):
            from olearn.scale import collections  # (Dask only when given a Dask collection)
            with self._locked():
                if namespaces is not None:
                    self._namespaces = dict(namespaces)
                collections.fit(self._learner, data, y, sample_weight, self._namespaces)
            return self
        matrix = is_matrix(data)
        if matrix and y is None:
            raise OptionError("fit(X, y): a matrix needs its labels y")
        if matrix and self._labels is not None:
            raise OptionError(f"fit(X, y): y holds a number per row, and these options' labels "
                              f"are {self._labels}: give fit example lines")
        if not matrix and (y is not None or sample_weight is not None):
            raise OptionError(f"y and sample_weight go with a matrix X (a 2-d numpy array, a "
                              f"scipy.sparse matrix or a DataFrame), not with {_kind(data)}")
        if config.passes > 1 and not (matrix or isinstance(data, (str, os.PathLike, list,
                                                                  tuple))):
            raise OptionError("several passes need a path or a list of lines to read again")
        if namespaces is not None and not isinstance(namespaces, Mapping):
            raise TypeError(f"namespaces: a dict of namespace names to lists of columns, not "
                            f"{_kind(namespaces)}")
        with self._locked():
            if namespaces is not None:
                self._namespaces = dict(namespaces)
            plan = DataPlan(config, [os.fspath(data)]) if _is_path(data) and config.cache else None

            def learn_pass(pass_no: int) -> int:
                batches = (plan.batches(self._learner, pass_no) if plan is not None
                           else self._batches(data, y, sample_weight))
                # warnings point past learn_pass, run_passes and fit: at fit's caller
                return self._run(batches, None, stacklevel=5)[1]

            try:
                run_passes(self._learner, learn_pass)  # no save: it keeps the last pass
            except BaseException:
                if plan is not None:
                    plan.discard()
                raise
        return self

    partial_fit = fit

    def predict(self, data: Data) -> np.ndarray:
        """Predictions (after link and --binary) for every example of ``data`` (lines, a path
        or a matrix, as for :meth:`fit`, with fit's ``namespaces``); no learning."""
        with self._locked():
            return self._run(self._batches(data), _outputs, stacklevel=3)[0]

    def decision_function(self, data: Data) -> np.ndarray:
        """Raw scores (before clipping, link and --binary) for every example of ``data``; with
        --oaa, a column per class: its clipped score (its probability with --probabilities)."""
        with self._locked():
            return self._run(self._batches(data), self._learner.scores, stacklevel=3)[0]

    def __getstate__(self) -> dict:
        """Pickled as its options and model file (not the progress statistics): a copy
        predicts and continues as the learner would."""
        import tempfile
        with self._locked(), tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "model.olearn")
            self._learner.save(path, "olearn")  # the whole state, whatever -f's format
            with open(path, "rb") as f:
                return {"config": self.config, "model": f.read(), "namespaces": self._namespaces,
                        "names": self._names}

    def __setstate__(self, state: dict) -> None:
        import tempfile
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "model.olearn")
            with open(path, "wb") as f:
                f.write(state["model"])
            self._start(OnlineLearner.start(dataclasses.replace(
                state["config"], explicit=frozenset(), initial_regressor=path)),
                state["names"] is not None)
        self._namespaces = state["namespaces"]
        self._names = state["names"]

    def learn_one(self, x: dict, y, weight: float = 1.0) -> "Learner":
        """Predict, then learn, one example given as a dict (River's convention; see
        matrices.DictExamples): ``{"age": 30, "city": "paris", ("u", "id"): 1}``."""
        if type(x) is not dict:
            _check_dict(x)
        lock = self._lock
        if not lock.acquire(False):  # (in a few instructions when it is free: see _locked)
            self._locked().acquire()
        try:
            dicts = self._dicts or self._dict_examples()
            batch = dicts.fast(x, y, weight)
            if self._checks_labels:  # a reduction's classes (--oaa's), as fit checks them
                if self._labels is not None:
                    raise OptionError(f"learn_one: a label is one number, and these options' "
                                      f"labels are {self._labels}: give fit example lines")
                self._warn(dicts.labelled(y, weight), stacklevel=2)
            if batch is None or not self._learner.learn_kept(batch, self._one):
                batch = dicts.batch(x, y, weight)
                self._learner.learn(batch, self._one)
                self._remember_names(batch)
        finally:
            lock.release()
        return self

    def predict_one(self, x: dict) -> float:
        """The prediction (after link and --binary) for one example given as a dict."""
        if type(x) is not dict:
            _check_dict(x)
        lock = self._lock
        if not lock.acquire(False):  # as in learn_one
            self._locked().acquire()
        try:
            dicts = self._dicts or self._dict_examples()
            batch = dicts.fast(x)
            if batch is None or not self._learner.predict_kept(batch, self._one):
                batch = dicts.batch(x)
                self._learner.predict(batch, self._one)
                self._remember_names(batch)
            return float(self._one[0, 0])
        finally:
            lock.release()

    def _dict_examples(self) -> matrices.DictExamples:
        """learn_one's and predict_one's examples (their kept arrays: made once, when first
        needed, so that a Learner only used with fit pays nothing for them)."""
        if self._dicts is None:
            self._dicts = matrices.DictExamples(self.config, self._names is not None)
        return self._dicts

    def weights(self) -> dict:
        """The model's nonzero weights (the experts' θ with --eg/--boa/--saew) by feature name,
        as ``--invert_hash`` names them: ``a^x``, ``a^x*b^y``, ``Constant``, ``f^3`` (a
        matrix's column 3), ``[k]`` for --oaa's class k. A weight whose feature this Learner
        has not read since it was made with ``names=True`` (every one without it, or the
        weights of a loaded model) is keyed by its index, an int."""
        with self._locked():
            learner = self._learner
            learner.sync()
            w = learner.weights[:, W_W]
            known = learner.feature_names(self._names.names) if self._names else {}
            return {known.get(j, j): float(w[j]) for j in np.flatnonzero(w).tolist()}

    def _remember_names(self, batch: ExampleBatch) -> None:
        if self._names is not None:
            self._names.add(batch, self._learner.terms)

    def _batches(self, data: Data, y=None, sample_weight=None) -> Iterator[ExampleBatch]:
        if is_matrix(data):
            batches = matrices.batches(data, y, sample_weight, self.config, self._namespaces,
                                       self._names is not None)
            # more than one batch: the next is made (its kernel releases the GIL) while the
            # learner learns this one, as the command line parses ahead of it
            return (sources.read_ahead(batches) if data.shape[0] > matrices.ROWS_PER_BATCH
                    else batches)
        return self._learner.batches(_blocks(data, self))

    def _warn(self, batch: ExampleBatch, stacklevel: int) -> None:
        """The batch's parse warnings, and its labels' (a label that is not a class is an
        OlearnError), as ParseWarnings pointing ``stacklevel`` frames up from the caller."""
        for message in self._learner.warnings(batch, self.config.strict_parse, prefix=""):
            warnings.warn(message, ParseWarning, stacklevel=stacklevel + 1)

    def _run(self, batches: Iterator[ExampleBatch],
             kept: Callable[[np.ndarray], np.ndarray] | None,
             stacklevel: int) -> tuple[np.ndarray | None, int]:
        """Learn every example (``kept`` None) or predict it, keeping ``kept`` of each piece's
        prediction array (:meth:`OnlineLearner.pieces`: what is kept, not K columns per
        example, is what grows with the data); returns what was kept and the number of lines
        read. Parse warnings point ``stacklevel`` frames up: at the caller of fit or predict."""
        learner = self._learner
        outputs = []
        lines = 0
        for batch in batches:
            self._warn(batch, stacklevel)
            for piece in learner.pieces(batch):
                preds = learner.new_predictions(piece)
                if kept is None:
                    learner.learn(piece, preds)
                else:
                    learner.predict(piece, preds)
                    outputs.append(kept(preds))
            self._remember_names(batch)
            lines = batch.pass_line + batch.n_lines
        if kept is None:
            return None, lines
        return (np.concatenate(outputs) if outputs
                else kept(np.empty((0, learner.prediction_columns()), dtype=np.float32)), lines)

    @property
    def history(self):
        """The progressive-validation history (olearn/outputs/history.py): the table's rows as
        arrays (examples, weight, average_loss, since_last, holdout) and ``pass_holdout``."""
        return self._learner.history

    @property
    def average_loss(self) -> float:
        """Progressive-validation loss of everything learned so far (NaN before any label)."""
        with self._locked():
            return self._learner.average_loss

    def save(self, path: str | os.PathLike) -> None:
        """Write a model file (the same format as ``olearn -f``)."""
        with self._locked():
            self._learner.save(os.fspath(path))

    @classmethod
    def load(cls, path: str | os.PathLike, names: bool = False, **options) -> "Learner":
        """A learner from a model file (as ``olearn -i``); ``options`` override the model's;
        ``names`` as for a new Learner (the file holds no names)."""
        _check_keywords(options)
        # checked as options beside -i: the model may supply what they need (--saew_sub: --saew)
        given = Config(**{"quiet": True, **options}, initial_regressor=os.fspath(path))
        learner = cls.__new__(cls)
        learner._start(OnlineLearner.start(dataclasses.replace(
            given, explicit=frozenset(options))), names)
        return learner
