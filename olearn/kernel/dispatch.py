"""The example loop's calls into the learner family, chosen by the family's bundle type.

Each function below is a stub that numba replaces, when it compiles a caller, by the kernel of
the family whose bundle (learners/family.py ``BUNDLE``) the caller was given: the table is
learners/families.py's, read at compile time. So a loop is compiled once per family, with the
family's kernels in it and no branch on the family. The stubs never run in Python.
"""
from __future__ import annotations

import warnings

from numba.extending import overload

from olearn.learners.families import FAMILIES

_BY_BUNDLE = {family.BUNDLE: family for family in FAMILIES}

# numba's pedantic check after it inlines a call below into a loop and the kernel into the call
# (a kernel is inline="always" too) finds a variable of the inlined code "not in scope"; the
# compiled loop is right (the kernels' reference tests), so the warning would only alarm users
# on their first run.
warnings.filterwarnings("ignore", message=r"variable '.*' is not in scope")


def _family(bundle_type):
    """The family class whose bundle has this numba type, or None (numba then reports that no
    implementation fits)."""
    return _BY_BUNDLE.get(getattr(bundle_type, "instance_class", None))


def fits(family, model):
    raise NotImplementedError("compiled code only")


def predict(family, model, features, initial, imp, s, prefetch):
    raise NotImplementedError("compiled code only")


def learn_predict(family, model, features, initial, imp, s, prefetch):
    raise NotImplementedError("compiled code only")


def update(family, model, features, scored, s, work, prefetch):
    raise NotImplementedError("compiled code only")


def update_wide(family, model, chunks, scored, s, work, prefetch, expanded):
    raise NotImplementedError("compiled code only")


def chunks(family):
    raise NotImplementedError("compiled code only")


def shows_first(family):
    raise NotImplementedError("compiled code only")


def count(family, features):
    raise NotImplementedError("compiled code only")


def learns_weightless(family):
    raise NotImplementedError("compiled code only")


# inline: the call is replaced by the family's kernel call, with no function of its own between
# them (which would count the references of its arrays); prefer_literal: literal arguments
# (``prefetch``) reach the kernel as literals.
_OVERLOAD = {"inline": "always", "prefer_literal": True, "jit_options": {"_nrt": False}}


@overload(fits, **_OVERLOAD)
def _fits(family, model):
    found = _family(family)
    if found is not None:
        kernel = found.KERNELS.fits
        return lambda family, model: kernel(family, model)


def _predicting(name: str):
    """The typing of ``predict`` or ``learn_predict`` (the same arguments): the family's kernel
    of that ``name``."""
    def typed(family, model, features, initial, imp, s, prefetch):
        found = _family(family)
        if found is not None:
            kernel = getattr(found.KERNELS, name)

            def call(family, model, features, initial, imp, s, prefetch):
                return kernel(family, model, features, initial, imp, s, prefetch)
            return call
    return typed


overload(predict, **_OVERLOAD)(_predicting("predict"))
overload(learn_predict, **_OVERLOAD)(_predicting("learn_predict"))


@overload(update, **_OVERLOAD)
def _update(family, model, features, scored, s, work, prefetch):
    found = _family(family)
    if found is not None:
        kernel = found.KERNELS.update

        def call(family, model, features, scored, s, work, prefetch):
            kernel(family, model, features, scored, s, work, prefetch)
        return call


@overload(update_wide, **_OVERLOAD)
def _update_wide(family, model, chunks, scored, s, work, prefetch, expanded):
    """The family's ``update_wide``; ``expanded``: the loop's (a literal), whose examples are
    wide only when it expands them. A call that can never run compiles to nothing: numba
    compiles a branch it cannot rule out, and the chunked update is much of a loop's code."""
    found = _family(family)
    if found is None:
        return None
    kernel = found.KERNELS.update_wide
    # (the literal's value read as an attribute: the command line's stand-in numba, kernel/aot.py,
    # has no numba.types, and this typing runs under numba only)
    if kernel is None or getattr(expanded, "literal_value", None) is False:
        return lambda family, model, chunks, scored, s, work, prefetch, expanded: None

    def call(family, model, chunks, scored, s, work, prefetch, expanded):
        kernel(family, model, chunks, scored, s, work, prefetch)
    return call


@overload(chunks, **_OVERLOAD)
def _chunks(family):
    found = _family(family)
    if found is not None:
        on = found.KERNELS.update_wide is not None
        return lambda family: on


@overload(shows_first, **_OVERLOAD)
def _shows_first(family):
    found = _family(family)
    if found is not None:
        first = bool(found.SHOWS_FIRST)
        return lambda family: first


@overload(learns_weightless, **_OVERLOAD)
def _learns_weightless(family):
    found = _family(family)
    if found is not None:
        weightless = bool(found.LEARNS_WEIGHTLESS)
        return lambda family: weightless


@overload(count, **_OVERLOAD)
def _count(family, features):
    found = _family(family)
    if found is None:
        return None
    kernel = found.KERNELS.count
    if kernel is None:
        return lambda family, features: features.hi - features.lo
    return lambda family, features: kernel(family, features)
