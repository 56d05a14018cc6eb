"""What a learner family is: the optimizer at the bottom of the stack (docs/architecture.md,
"Add an optimizer family").

A family is one class, :class:`LearnerFamily`'s subclass, beside its kernels in one module, and
one line in learners/families.py's table. The class holds the family's options and its state
beyond the weight table and the learner state (``bundle()``: the namedtuple ``BUNDLE`` the
kernels take), what a model file keeps of that state, its export into the weight table and its
description in the header. The example loop (olearn/kernel/loop.py) reaches the family's
kernels (``KERNELS``) through olearn/kernel/dispatch.py, which picks them by the bundle's type
when numba compiles the loop: each family compiles a loop of its own, with no branch on it.

The kernels, each a numba function of the family's bundle first, marked ``inline="always"``:
numba compiles them into the example loops, which run without numba's runtime (so they
allocate nothing), and a call costs nothing (as separate functions, passing the bundles cost
a fifth of a linear pass). A literal argument (``prefetch``) stays one inside them:

- ``fits(family, model)``: whether the bundle's arrays fit the model (kernel/bundles.py
  ``Model``: the weight table, state and parameters); learn_batch checks it before anything.
- ``predict(family, model, features, initial, imp, s, prefetch)``: the raw score of an example
  that is not learned (test-only, held out, unlabeled), from ``features`` (kernel/bundles.py
  ``Features``) starting at ``initial``; ``imp`` is its importance, ``s`` the loop's settings
  (``Settings``), ``prefetch`` a literal: whether the features are spread over the table
  (interactions).
- ``learn_predict`` (the same arguments): the raw score of an example about to be learned
  (after the label range took its label); a family may update its state here (VW's learners
  that predict inside their learn).
- ``update(family, model, features, scored, s, work, prefetch)``: learn from the example once
  it is scored (``Scored``: the clipped prediction, label, importance, initial prediction, loss
  and the loss's shared term); ``work`` is scratch (kernel/loop.py new_scratch).
- ``count(family, features)`` (optional): the feature count the table reports for the
  example (without it: its rows, ``hi - lo``).
- ``update_wide(family, model, chunks, scored, s, work, prefetch)`` (optional): ``update`` for
  an example too wide to expand at once (kernel/bundles.py ``Chunks``), each of its passes
  over the features a walk of kernel/example_features.py ``chunk``. A family that has it has a
  ``predict`` and ``learn_predict`` that add to ``initial`` (a chunk's score is the next one's
  start) and change no state but the features' own; under no reduction, the loop then learns
  such an example by chunks, in memory of ``s.chunk_rows`` rows. Without it an example's
  expansion is held whole.

A family whose work happens between passes (--bfgs: batch L-BFGS) has its kernels only
accumulate, and moves in :meth:`LearnerFamily.end_pass`, which may end the run; it can ask for
room before each batch (:meth:`LearnerFamily.before_batch`), and say that it prints no
progress table (``PROGRESS_TABLE``) and runs no kept calls (``KEPT_CALLS``: its bundle's arrays
may be replaced between batches).

``SHOWS_FIRST`` (a constant, not a kernel): the table and -p show the prediction ``predict``
gives before the label widens the range, while the loss is scored on ``learn_predict``'s (VW's
learners whose learn does not return its prediction: --ftrl, --coin).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.learners.weights import W_W, storable

Kernels = namedtuple("Kernels", ["fits", "predict", "learn_predict", "update", "count",
                                 "update_wide"], defaults=(None, None))


class LearnerFamily:
    """The interface of a learner family, with the defaults of a family whose whole state is
    the weight table and the learner state."""

    OPTION: str | None = None  # the flag that chooses the family (None: the default family)
    GROUP = ""  # its options' group in --help
    OPTIONS: tuple = ()
    BUNDLE: type  # the namedtuple the kernels take
    KERNELS: Kernels
    SHOWS_FIRST = False
    # whether a labeled example of importance 0 is learned (VW's learners whose update moves
    # state even then: --OjaNewton's clock); else it is only predicted
    LEARNS_WEIGHTLESS = False
    UNMERGEABLE = ""  # why --dask cannot merge the state ("": by the declared rules)
    # how many leading arrays of merged()'s means and of its highs have a row per coordinate
    # (--dask_sync sends only the rows that changed)
    MERGED_ROWS = 0
    ARRAYS: dict = {}  # model-file arrays: name -> (dtype, shape with None for any length)
    OPTIONAL_ARRAYS: tuple = ()  # those a model of an earlier olearn may lack
    NAMED: dict = {}  # those with declared fields: name -> (layout, axis)
    WARM_UP: dict | None = None  # the options of olearn --warm-cache's run of the family
    PROGRESS_TABLE = True  # whether the run prints VW's progress table
    KEPT_CALLS = True  # whether the Python API may keep its bundle across calls
    # whether the interaction terms are the family's (--rank's pair), not the expander's
    OWNS_TERMS = False
    # whether --audit's weights need a sync before each example (the model is not the table's)
    AUDIT_SYNC = False

    def __init__(self, config):
        self.config = config

    @classmethod
    def chosen(cls, config) -> bool:
        """Whether ``config`` trains this family."""
        return bool(getattr(config, cls.OPTION))

    def start(self, state) -> None:
        """Set what the family's run starts from in the learner state (kernel/layouts.py)."""

    @classmethod
    def flag(cls, config) -> str:
        """The option that chose the family, as the user wrote it."""
        return f"--{cls.OPTION}"

    @classmethod
    def check_options(cls, config) -> None:
        """Refuse the options the family cannot honour (an OptionError)."""

    def bundle(self) -> tuple:
        """The family's state as its kernels take it."""
        raise NotImplementedError

    def before_batch(self, batch, terms: np.ndarray) -> None:
        """Make room for ``batch`` (data/batch.py ``ExampleBatch``; ``terms``: the encoded
        interactions that expand its examples) before its kernel call."""

    @staticmethod
    def header_lines(config) -> list[str]:
        """Lines the family adds to the run's header (stderr), before the data's."""
        return []

    def end_pass(self, weights: np.ndarray, params: np.ndarray, holdout: float | None) -> bool:
        """After a learned pass: the family's own work on the whole model; True when the run
        is done (no more passes). ``holdout``: the pass's held-out loss (NaN: none held out),
        None without a holdout or in the first pass."""
        return False

    @staticmethod
    def describe(config) -> str:
        """The learner as the header's "Enabled learners" names it."""
        raise NotImplementedError

    def sync(self, weights, state) -> None:
        """Put the model itself into the weight table's weights (before it is saved, printed
        or used test-only); learning goes on as without it."""

    def model_arrays(self) -> dict:
        """The arrays (``ARRAYS``) a model file keeps of the family's state."""
        return {}

    def restore(self, arrays: dict, path: str) -> None:
        """Continue from a model's arrays (model.py checked them with :meth:`check`)."""

    @staticmethod
    def check(arrays: dict, config) -> None:
        """Refuse (core/checks.py ``require``) a model's arrays the kernels could not trust."""

    def merged(self) -> tuple:
        """The state --dask merges beyond the weight table and the learner state: arrays
        averaged by examples, and arrays whose maximum is kept (none: every task ends with a
        sync, after which the rest is not needed)."""
        return (), ()

    def put_merged(self, means: tuple, highs: tuple) -> None:
        """Take merged state, as :meth:`merged` gave it."""

    @staticmethod
    def storable(rows: np.ndarray) -> bool:
        """Whether weight rows may be saved and loaded (learners/weights.py)."""
        return storable(rows)

    def readable_rows(self, weights: np.ndarray, predict_only: bool) -> tuple:
        """The coordinates --readable_model writes and their values (a row each): every
        nonzero weight, its value only."""
        nonzero = np.flatnonzero(weights[:, W_W])
        return nonzero, weights[nonzero, W_W, None]
