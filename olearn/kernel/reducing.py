"""The example loop's calls into the reduction, chosen by the reduction's bundle type.

As kernel/dispatch.py does for the learner family: each function below is a stub that numba
replaces, when it compiles the loop, by the kernel of the reduction whose bundle the loop was
given (reductions/table.py, read at compile time). So the loop is compiled once per reduction
and family, with no branch on either. The stubs never run in Python.
"""
from __future__ import annotations

from numba.extending import overload

from olearn.reductions.table import REDUCTIONS


def _kernels(bundle_type):
    """The kernels of the reduction whose bundle has this numba type, or None (numba then
    reports that no implementation fits)."""
    return REDUCTIONS.get(getattr(bundle_type, "instance_class", None))


def fits(reduction, model, out):
    raise NotImplementedError("compiled code only")


def room(reduction, features, s, scratch):
    raise NotImplementedError("compiled code only")


def predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    raise NotImplementedError("compiled code only")


def score(reduction, model, predicted, ex, s, scratch):
    raise NotImplementedError("compiled code only")


def learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
          expanded):
    raise NotImplementedError("compiled code only")


def tracks_labels(reduction):
    raise NotImplementedError("compiled code only")


def advances_t(reduction):
    raise NotImplementedError("compiled code only")


def reports_loss(reduction):
    raise NotImplementedError("compiled code only")


def unit_end(reduction, numbers, e):
    raise NotImplementedError("compiled code only")


def chunks(reduction):
    raise NotImplementedError("compiled code only")


# as kernel/dispatch.py's: replaced by the kernel's call, literal arguments kept
_OVERLOAD = {"inline": "always", "prefer_literal": True, "jit_options": {"_nrt": False}}


@overload(fits, **_OVERLOAD)
def _fits(reduction, model, out):
    found = _kernels(reduction)
    if found is not None:
        kernel = found.fits
        return lambda reduction, model, out: kernel(reduction, model, out)


@overload(room, **_OVERLOAD)
def _room(reduction, features, s, scratch):
    found = _kernels(reduction)
    if found is not None:
        kernel = found.room
        return lambda reduction, features, s, scratch: kernel(reduction, features, s, scratch)


@overload(predict, **_OVERLOAD)
def _predict(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
    found = _kernels(reduction)
    if found is not None:
        kernel = found.predict

        def call(reduction, family, model, expander, features, ex, s, scratch, pred, expanded):
            return kernel(reduction, family, model, expander, features, ex, s, scratch, pred,
                          expanded)
        return call


@overload(score, **_OVERLOAD)
def _score(reduction, model, predicted, ex, s, scratch):
    found = _kernels(reduction)
    if found is not None:
        kernel = found.score
        return lambda reduction, model, predicted, ex, s, scratch: kernel(
            reduction, model, predicted, ex, s, scratch)


@overload(learn, **_OVERLOAD)
def _learn(reduction, family, model, expander, features, predicted, scored, ex, s, scratch,
           expanded):
    found = _kernels(reduction)
    if found is not None:
        kernel = found.learn

        def call(reduction, family, model, expander, features, predicted, scored, ex, s,
                 scratch, expanded):
            kernel(reduction, family, model, expander, features, predicted, scored, ex, s,
                   scratch, expanded)
        return call


def _constant(name: str):
    """The typing of a reduction's constant (``tracks_labels``, ``advances_t``,
    ``reports_loss``, ``chunks``): its table entry's value of that ``name``, a literal in
    the loop."""
    def typed(reduction):
        found = _kernels(reduction)
        if found is not None:
            value = bool(getattr(found, name))
            return lambda reduction: value
    return typed


overload(tracks_labels, **_OVERLOAD)(_constant("tracks_labels"))
overload(advances_t, **_OVERLOAD)(_constant("advances_t"))
overload(reports_loss, **_OVERLOAD)(_constant("reports_loss"))
overload(chunks, **_OVERLOAD)(_constant("chunks"))


@overload(unit_end, **_OVERLOAD)
def _unit_end(reduction, numbers, e):
    found = _kernels(reduction)
    if found is None:
        return None
    if found.unit_end is None:  # one line per example
        return lambda reduction, numbers, e: e + 1
    kernel = found.unit_end
    return lambda reduction, numbers, e: kernel(numbers, e)
