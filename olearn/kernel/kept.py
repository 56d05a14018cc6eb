"""Kept kernel calls for the Python API's single examples (``learn_one``, ``predict_one``):
loop.learn_batch's arguments for one kept batch, held in one numba structref.

A call of a compiled function from Python costs per argument: numba's dispatcher types each
(learn_batch's 6 bundles, their 32 arrays: about a microsecond) and the compiled code unboxes
each array (about as much again), where one example's own work is a few hundred nanoseconds. A
:class:`Kept` holds those arguments, plus learn_batch's scratch (loop.new_scratch), as one
object: a call of :data:`learn` or :data:`predict` unboxes one argument and allocates nothing.
The learner builds one per kept batch (olearn/engine/learner.py) and drops them when one of its
arrays is replaced. Everything it holds is still checked on every call (loop.learn_kept), as
learn_batch checks its arguments: a kept call trusts nothing more than a plain one.

The command line never imports this module: its ahead-of-time kernels (olearn/kernel/aot.py) have no
structrefs, and it learns batches, not single examples.
"""
from __future__ import annotations

import numpy as np
from numba import njit, typeof
from numba.core import types
from numba.experimental import structref

from olearn.kernel import layouts, loop

# loop.learn_batch's bundles (kernel/bundles.py), in its order, then the kept scratch and, for a
# prediction, the learner's parameters and state it copies (test-only) and fresh statistics
FIELDS = ("model", "family", "expander", "reduction", "examples", "out", "scratch",
          "model_params", "model_state", "fresh_stats")
NONE = np.empty(0)  # a learning call's model_params, model_state and fresh_stats


@structref.register
class KeptType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class Kept(structref.StructRefProxy):
    """A kept call's arguments (fields: FIELDS), built by :func:`kept`."""


structref.define_proxy(Kept, KeptType, list(FIELDS))


@njit(cache=True)
def _new(model, family, expander, reduction, examples, out, scratch, model_params, model_state,
         fresh_stats):
    return Kept(model, family, expander, reduction, examples, out, scratch, model_params,
                model_state, fresh_stats)


@njit(cache=True, nogil=True, _nrt=False)
def nonzero_finite(values):
    """Whether every value is nonzero and finite. A kept batch's values are checked here, not
    by the Python that wrote them (matrices.DictExamples.fast): a loop over them in the kernel
    costs nanoseconds, where Python's check took a fifth of learn_one's time."""
    for k in range(values.shape[0]):
        if values[k] == 0 or not np.isfinite(values[k]):
            return False
    return True


@njit(cache=True, nogil=True)
def learn(a):
    """loop.learn_batch on a kept call's arguments: the table row count, or -1 (nothing done)
    when a value is 0 or not finite (:func:`nonzero_finite`)."""
    if not nonzero_finite(a.examples.value):
        return -1
    return loop.learn_kept(a.model, a.family, a.expander, a.reduction, a.examples, a.out,
                           a.scratch)


@njit(cache=True, nogil=True)
def predict(a):
    """Predict a kept batch's examples without learning or touching the learner's state (as
    OnlineLearner.predict): the kept copies of the parameters and state are refreshed from the
    learner's (test-only), the statistics from fresh ones, then loop.learn_batch runs on them.
    Returns as :func:`learn`."""
    if not nonzero_finite(a.examples.value):
        return -1
    model, out = a.model, a.out
    params, state, stats = model.params, model.state, out.stats
    if not (a.model_params.shape[0] == params.shape[0] > layouts.P.test_only
            and a.model_state.shape[0] == state.shape[0]
            and a.fresh_stats.shape[0] == stats.shape[0]):
        raise ValueError("kept.predict: not a prediction's arguments")
    for j in range(params.shape[0]):
        params[j] = a.model_params[j]
    params[layouts.P.test_only] = 1.0
    for j in range(state.shape[0]):
        state[j] = a.model_state[j]
    for j in range(stats.shape[0]):
        stats[j] = a.fresh_stats[j]
    return loop.learn_kept(model, a.family, a.expander, a.reduction, a.examples, out,
                           a.scratch)


def kept(arguments: tuple, model_params: np.ndarray = NONE, model_state: np.ndarray = NONE,
         fresh_stats: np.ndarray = NONE) -> tuple:
    """A kept call of loop.learn_batch's ``arguments`` (its 6 bundles, in order): the compiled
    :data:`learn` (or, given the learner's parameters, state and fresh statistics, with copies
    of them in ``arguments``, :data:`predict`) for this call's types, and its :class:`Kept`.
    Calling the one on the other runs the kernel, numba's dispatcher left out: the types are
    those the function was compiled for, fixed in the structref."""
    model, _, expander = arguments[:3]
    call = _new(*arguments, loop.new_scratch(expander.terms, model.params), model_params,
                model_state, fresh_stats)
    function = learn if model_params is NONE else predict
    function.compile((typeof(call),))
    return function.overloads[(typeof(call),)].entry_point, call
