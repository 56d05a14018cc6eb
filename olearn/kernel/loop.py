"""The example loop: predict, report and learn each example of a batch in one numba kernel.

:func:`learn_batch` is the entry point Python calls: it checks once per call that its arrays fit
each other (shapes, the batch's offsets and indices, the optional states), so that no argument
can make it read or write outside them; the functions it calls trust what it checked. The
reduction (one scalar problem, or --oaa's K) and the learner family are chosen when numba
compiles it, by their bundles' types (kernel/reducing.py for the reductions,
kernel/dispatch.py for the families); every reduction runs in the one example loop,
:func:`_examples`: label -> features -> expansion -> the reduction's prediction -> statistics
-> the reduction's update.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from numba import literally, njit

from olearn.data.batch import valid_batch, valid_offsets
from olearn.features import stage_poly
from olearn.features.interactions import cursor_size, valid_terms
from olearn.kernel import dispatch, reducing
from olearn.kernel.bundles import (
    Classes,
    Example,
    Scratch,
    Synthetic,
    Unit,
)
from olearn.kernel.example_features import (
    example_features,
    expansion_scratch,
    some_not_linear,
    unit_rows,
)
from olearn.kernel.layouts import (
    PARAMS,
    PARAMS_SIZE,
    R_DUMP_AT,
    R_EXAMPLES,
    R_FEATURES,
    R_HOLDOUT_LOSS,
    R_HOLDOUT_LOSS_PASS,
    R_HOLDOUT_LOSS_SINCE,
    R_HOLDOUT_MC_LOG_LOSS,
    R_HOLDOUT_W,
    R_HOLDOUT_W_PASS,
    R_HOLDOUT_W_SINCE,
    R_LABEL1,
    R_LABEL2,
    R_LAST_LOSS,
    R_LAST_W_LABELED,
    R_MANY_LABELS,
    R_MC_LOG_LOSS,
    R_REFUSED,
    R_SUM_LOSS,
    R_W_LABEL_SUM,
    R_W_LABELED,
    R_W_UNLABELED,
    ROW_COLS,
    S_REFUSING,
    S_T,
    STATE_SIZE,
    STATS_SIZE,
    P,
)
from olearn.learners import gd
from olearn.learners.losses import known
from olearn.learners.weights import WIDTH


@njit(cache=True, nogil=True)
def _holdout_averages(stats, row):
    """A holdout row's losses: over the run's held-out examples, and since the last such row."""
    w = stats[R_HOLDOUT_W]
    row[5] = stats[R_HOLDOUT_LOSS] / w if w > 0 else np.nan
    since_w = stats[R_HOLDOUT_W_SINCE]
    row[6] = stats[R_HOLDOUT_LOSS_SINCE] / since_w if since_w > 0 else np.nan
    stats[R_HOLDOUT_LOSS_SINCE] = stats[R_HOLDOUT_W_SINCE] = 0.0


# _nrt=False, as scratch_fits: a function compiled with numba's runtime counts a reference to
# each array it is passed (an atomic operation each way), and learn_batch's arguments hold 32
# arrays. On one example (the Python API's kept calls, olearn/kernel/kept.py) that was ~150 of
# _check_arguments' ~400 ns, and all but 3 of scratch_fits' ~150 ns (in-process loops).
@njit(cache=True, nogil=True, _nrt=False)
def _check_arguments(model, family, expander, reduction, examples, out):
    """Raise ValueError unless :func:`learn_batch`'s arguments fit each other. O(1), plus one
    pass over the batch's offsets and indices (:func:`valid_batch`)."""
    W, state, params = model
    terms, linear, poly = expander
    numbers, offsets, index, value, namespace, lines, _, cost_offsets, cost_class, cost_value = (
        examples)
    stats, preds, rows = out
    if (params.shape[0] < PARAMS_SIZE or state.shape[0] < STATE_SIZE
            or stats.shape[0] < STATS_SIZE):
        raise ValueError("learn_batch: parameter, state or statistics array too short")
    size = W.shape[0]
    if W.shape[1] < WIDTH or size != np.int64(params[P.mask]) + 1:
        raise ValueError("learn_batch: the weight table does not match the mask")
    n = numbers.shape[0]
    if (numbers.shape[1] < 3 or offsets.shape[0] != n + 1 or lines.shape[0] < n
            or preds.shape[0] < n or preds.shape[1] < 2 or rows.shape[1] < ROW_COLS):
        raise ValueError("learn_batch: batch arrays of different lengths")
    if not known(int(params[P.loss])):
        raise ValueError("learn_batch: unknown loss code")
    if not valid_batch(offsets, index, value, namespace, size - 1):
        raise ValueError("learn_batch: malformed batch (offsets, lengths or feature indices)")
    if cost_offsets.shape[0] > 0 and not (cost_offsets.shape[0] == n + 1
                                          and cost_value.shape[0] == cost_class.shape[0]
                                          and valid_offsets(cost_offsets, cost_class.shape[0])):
        raise ValueError("learn_batch: malformed costs (offsets or lengths)")
    if not valid_terms(terms):
        raise ValueError("learn_batch: malformed interaction terms")
    if linear.shape[0] != 256:
        raise ValueError("learn_batch: linear must flag all 256 namespace indices")
    if not dispatch.fits(family, model):
        raise ValueError("learn_batch: the learner family's state does not fit the table")
    if params[P.stage_poly] != 0 and not (stage_poly.fits(poly, size, int(params[P.heuristic]))
                                          and 0 <= params[P.constant] < size):
        raise ValueError("learn_batch: --stage_poly state of the wrong shape")
    if not reducing.fits(reduction, model, out):
        raise ValueError("learn_batch: the reduction's state or class count does not fit")


@njit(cache=True, nogil=True)
def learn_batch(model, family, expander, reduction, examples, out):
    """Predict, report and (where the example allows) learn each example of a batch in order;
    the examples are their own features (:func:`learn_expanded_batch` learns those that expand
    with interactions, --ignore_linear or --stage_poly).

    The arguments are kernel/bundles.py's: the ``model`` learned (weights, state, parameters),
    the learner ``family``'s own state, the ``expander`` in front of it (interaction terms,
    --ignore_linear's linear namespaces, --stage_poly's state), the ``reduction`` between them
    (--oaa's per-class sums), the batch's ``examples`` and what the call writes, ``out``.

    Example ``e`` is on line ``first_line + lines[e]`` (0-based) of the pass, which decides
    whether it is held out (VW's holdout: predicted and scored apart, never learned). Writes
    each example's prediction (after link and --binary) and raw score (before clipping) to
    ``out.preds[e]`` (with --oaa: the class, its score, then each class's score or
    probability) and progress-table rows to ``out.rows``; returns the row count. The
    exponential-weights learners predict from their own state except in test-only mode, where
    the weight table holds the model they exported.
    """
    _check_arguments(model, family, expander, reduction, examples, out)
    if _expands(expander, model.params):
        raise ValueError("learn_batch: these examples expand (learn_expanded_batch's)")
    return _learn_examples(False, model, family, expander, reduction, examples, out,
                           new_scratch(expander.terms, model.params))


@njit(cache=True, nogil=True)
def learn_expanded_batch(model, family, expander, reduction, examples, out):
    """:func:`learn_batch` of examples that expand (any examples: those that need no expansion
    learn faster by :func:`learn_batch`)."""
    _check_arguments(model, family, expander, reduction, examples, out)
    return _learn_examples(True, model, family, expander, reduction, examples, out,
                           new_scratch(expander.terms, model.params))


def batch_kernel(terms: np.ndarray, linear: np.ndarray, params: np.ndarray) -> Callable:
    """The kernel that learns a batch with these interaction ``terms``, --ignore_linear's
    ``linear`` flags and parameters: :func:`learn_batch`, or :func:`learn_expanded_batch` where
    the examples expand. Two kernels, so that a run compiles the example loop it needs only
    (numba compiles every branch of a kernel: the two loops in one took twice as long)."""
    plain = (len(terms) == 0 and len(params) > P.stage_poly and params[P.stage_poly] == 0
             and len(linear) == 256 and int(np.sum(linear != 0)) == 256)
    return learn_batch if plain else learn_expanded_batch  # which checks its arguments


@njit(cache=True, nogil=True, inline="always")
def learn_kept(model, family, expander, reduction, examples, out, scratch):
    """:func:`learn_batch` with the scratch of a :func:`new_scratch` the caller keeps (the Python
    API's single examples, olearn/kernel/kept.py: a call allocates nothing then); checked as the
    other arguments are (:func:`scratch_fits`)."""
    _check_arguments(model, family, expander, reduction, examples, out)
    if not scratch_fits(scratch, expander.terms, model.params):
        raise ValueError("learn_batch: scratch of the wrong shape")
    return _learn(model, family, expander, reduction, examples, out, scratch)


@njit(cache=True, nogil=True)
def new_scratch(terms, params):
    """The example loop's scratch (:func:`_examples`, kernel/bundles.py ``Scratch``) for a
    learner's interaction terms and (checked) parameters: the update's work, the interactions'
    expansion scratch (16 rows, grown by :func:`_learn_examples` as examples need),
    --stage_poly's synthetic example (one row per slot of the table: the walk keeps each slot
    at most once; none without it) and its walk's stack, and --oaa's per-class scratch (a
    class's copy of an example, 16 rows grown as examples need; a score and a probability per
    class, the scores grown to one per line of a multi-line example)."""
    synthetic = np.int64(params[P.mask]) + 1 if params[P.stage_poly] != 0 else 0
    k = np.int64(params[P.classes])
    rows = 16 if k > 0 else 0
    return Scratch(np.empty((3, gd.UPDATE_BLOCK)), expansion_scratch(terms, 16),
                   Synthetic(np.empty(synthetic, dtype=np.uint32),
                             np.empty(synthetic, dtype=np.float32), stage_poly.new_stack()),
                   Classes(np.empty(rows, dtype=np.uint32), np.empty(rows, dtype=np.float32),
                           np.zeros(k), np.zeros(k, dtype=np.float32)))


@njit(cache=True, nogil=True, _nrt=False)
def scratch_fits(scratch, terms, params):
    """Whether ``scratch`` has the shapes :func:`new_scratch` gives for these terms and
    parameters (at least its rows)."""
    work, (ranges, cursor, x_idx, x_val, no_src), (s_idx, s_val, stack), classes = scratch
    synthetic = np.int64(params[P.mask]) + 1 if params[P.stage_poly] != 0 else 0
    depth = stage_poly.MAX_DEPTH + 1
    k = np.int64(params[P.classes])
    return (work.shape[0] >= 3 and work.shape[1] >= 1 and ranges.shape[0] == 256
            and ranges.shape[1] == 2 and cursor.shape[0] >= cursor_size(terms)
            and x_val.shape[0] >= x_idx.shape[0] and no_src.shape[0] == 0
            and no_src.shape[1] >= terms.shape[1] and s_idx.shape[0] >= synthetic
            and s_val.shape[0] >= synthetic and stack[0].shape[0] >= depth
            and stack[1].shape[0] >= depth and stack[2].shape[0] >= depth
            and classes.value.shape[0] >= classes.index.shape[0]
            and classes.scores.shape[0] >= k and classes.probabilities.shape[0] >= k)


@njit(cache=True, nogil=True, inline="always")
def _learn(model, family, expander, reduction, examples, out, scratch):
    """:func:`learn_batch` on checked arguments and scratch: the example loop compiled
    without expansion where the batch needs none (no interactions, --stage_poly or
    --ignore_linear)."""
    # The stack is fixed at compile time: the reduction's bundle type chooses its kernels
    # (kernel/reducing.py), the family's its own (kernel/dispatch.py); numba compiles a loop for
    # each combination used. Whether examples need an expansion is chosen per batch.
    if not _expands(expander, model.params):
        return _learn_examples(False, model, family, expander, reduction, examples, out, scratch)
    return _learn_examples(True, model, family, expander, reduction, examples, out, scratch)


@njit(cache=True, nogil=True, inline="always")
def _expands(expander, params):
    """Whether examples expand: interactions, --stage_poly or --ignore_linear (as
    :func:`batch_kernel` decides in Python)."""
    return (expander.terms.shape[0] > 0 or params[P.stage_poly] != 0
            or some_not_linear(expander.linear))


def _settings_kernel():
    """The example loops' options, read once per batch: ``settings(params)`` gives every
    parameter of kernel/layouts.py's PARAMS by name, converted to its kind (``s.l1``,
    ``s.loss``...). Its source is generated from the declarations, so that a kernel-read option
    is one declaration plus the line that reads it; inlined into each loop (so never cached on
    its own)."""
    namespace = {"np": np, "Settings": PARAMS.settings}
    exec(PARAMS.settings_source("settings"), namespace)  # noqa: S102 - our own declarations
    return njit(nogil=True, inline="always")(namespace["settings"])


settings = _settings_kernel()


# The per-example helpers (_predict, _label, _count_held_out, _count_example) are plain njit
# functions, which LLVM inlines: numba's own inlining (inline="always") binds their array
# arguments to new variables, a reference count taken and dropped (atomically) per array per
# example, which cost more than the example's other work on short examples.
@njit(cache=True, nogil=True, _nrt=False)
def _label(e, numbers, params, first_line, lines, test_only):
    """Example ``e``'s label and importance, whether it has a label, whether it is held out
    (VW's holdout, by its line in the pass) and whether it is learned."""
    y = np.float64(numbers[e, 0])
    imp = np.float64(numbers[e, 1])
    labeled = not np.isnan(y)
    held = False
    period = np.int64(params[P.holdout_period])
    if period > 0:
        held = held_out(period, np.int64(params[P.holdout_after]), first_line + lines[e] + 1)
    return y, imp, labeled, held, labeled and imp > 0 and not test_only and not held


@njit(cache=True, nogil=True, _nrt=False)
def _cost_span(e, cost_offsets):
    """Example ``e``'s classes and costs in the batch's (none without cost-sensitive labels)."""
    if cost_offsets.shape[0] == 0:
        return 0, 0
    return cost_offsets[e], cost_offsets[e + 1]


@njit(cache=True, nogil=True)
def held_out(period, after, counter):
    """VW's holdout (``period`` > 0): whether the example on line ``counter`` (1-based) of the
    pass is held out. ``counter`` is a number (the kernels) or an array (--metric auc splits
    a batch's examples with it: plain numpy, no loop)."""
    if after > 0:
        return counter > after
    return counter % period == 0


@njit(cache=True, nogil=True, _nrt=False)
def _count_held_out(stats, reported, imp):
    for r in (R_HOLDOUT_LOSS, R_HOLDOUT_LOSS_SINCE, R_HOLDOUT_LOSS_PASS):
        stats[r] += reported
    for r in (R_HOLDOUT_W, R_HOLDOUT_W_SINCE, R_HOLDOUT_W_PASS):
        stats[r] += imp


@njit(cache=True, nogil=True, _nrt=False)
def _count_example(stats, rows, nrows, params, e, y, shown, probability, n_features):
    """Count a (not held-out) example ``e`` and write a table row when one is due; returns the
    row count."""
    stats[R_EXAMPLES] += 1
    stats[R_FEATURES] += n_features
    wsum = stats[R_W_LABELED] + stats[R_W_UNLABELED]
    if wsum < stats[R_DUMP_AT] or nrows >= rows.shape[0]:
        return nrows
    rows[nrows, 0] = stats[R_EXAMPLES]
    rows[nrows, 1] = wsum
    rows[nrows, 2] = y
    rows[nrows, 3] = shown
    rows[nrows, 4] = n_features
    rows[nrows, 8] = probability
    rows[nrows, 9] = e
    wl = stats[R_W_LABELED]
    if params[P.holdout_rows] != 0:
        _holdout_averages(stats, rows[nrows])
        rows[nrows, 7] = 1.0
    else:
        rows[nrows, 5] = stats[R_SUM_LOSS] / wl if wl > 0 else np.nan
        new_w = wl - stats[R_LAST_W_LABELED]
        rows[nrows, 6] = ((stats[R_SUM_LOSS] - stats[R_LAST_LOSS]) / new_w
                          if new_w > 0 else np.nan)
        rows[nrows, 7] = 0.0
    # a holdout row restarts the training loss's "since last" too (VW's resume state shows it)
    stats[R_LAST_LOSS] = stats[R_SUM_LOSS]
    stats[R_LAST_W_LABELED] = wl
    if params[P.progress_add] != 0:
        stats[R_DUMP_AT] = wsum + params[P.progress]
    else:
        stats[R_DUMP_AT] = wsum * params[P.progress]
    return nrows + 1


@njit(cache=True, nogil=True)
def _at_least(scores, rows):
    """``scores``, or zeros of ``rows`` rows if it has fewer."""
    return scores if scores.shape[0] >= rows else np.zeros(rows)


@njit(cache=True, nogil=True, inline="always")
def _learn_examples(expanded, model, family, expander, reduction, examples, out, scratch):
    """:func:`learn_batch` over a batch: runs :func:`_examples` (which runs without numba's
    runtime, so cannot allocate) with the scratch of :func:`new_scratch`; when it stops before
    an example, gives it a larger expansion or per-class scratch (for this batch) or runs the
    due --stage_poly stage, and lets it go on. ``expanded``: see :func:`_examples`."""
    s = settings(model.params)
    min_depth, flags, ssm, counters, _ = expander.poly
    # int64, not the literal 0: numba would first compile _examples for literal arguments too
    e = np.int64(0)
    nrows = np.int64(0)
    while True:
        e, nrows, rows_needed, class_rows_needed, stage = _examples(
            expanded, e, nrows, model, family, expander, reduction, examples, out, scratch)
        if rows_needed > 0:
            # doubled as examples need, but to no more than a chunk unless one example needs it
            grown = min(max(rows_needed, 2 * scratch.expansion[2].shape[0]),
                        max(rows_needed, s.chunk_rows))
            scratch = Scratch(scratch.work, expansion_scratch(expander.terms, grown),
                              scratch.synthetic, scratch.classes)
        elif class_rows_needed > 0:
            classes = scratch.classes
            grown = max(class_rows_needed, 2 * classes.index.shape[0])
            scratch = Scratch(scratch.work, scratch.expansion, scratch.synthetic,
                              Classes(np.empty(grown, dtype=np.uint32),
                                      np.empty(grown, dtype=np.float32),
                                      _at_least(classes.scores, grown),
                                      classes.probabilities))
        elif stage:
            stage_poly.run_stage(model.W, flags, ssm, min_depth, counters, s.constant,
                                 s.sched_exponent, s.heuristic, s.normalized, s.poly_fallback)
        else:
            return nrows


# _nrt=False: numba's runtime is off in the example loop, so that no reference is counted (an
# atomic operation per array argument per call: a fifth of the time of an interaction run) and
# nothing is allocated; numba refuses to compile an allocation here. Numba compiles each callee
# with its own options, not its caller's: every function the loop calls that is not inlined
# (_label, gd.update, interactions.expand, ...) is marked _nrt=False too, else it counts its
# array arguments' references on every example. Such a function must return no array (nothing
# would count the reference its caller drops).
@njit(cache=True, nogil=True, _nrt=False)
def _examples(expanded, e0, nrows, model, family, expander, reduction, examples, out, scratch):
    """:func:`learn_batch`'s example loop, from example ``e0`` with ``nrows`` table rows
    written. Returns (the example it stopped at, the row count, expansion rows needed,
    per-class rows needed, stage due): at the end of the batch (nothing needed, no stage due),
    or before an example (nothing of it done) whose interactions or per-class copies need more
    rows than the scratch holds, or before which a --stage_poly stage is due (it allocates).
    ``expanded`` is a literal, the family's kernels are its bundle type's (kernel/dispatch.py)
    and the reduction's its own (kernel/reducing.py): the stack expander → reduction → family
    → loss is fixed for the whole loop. ``expanded`` False: no interactions, --ignore_linear or
    --stage_poly, so each example's features are the batch's own. The scratch's synthetic
    example holds a row per slot of the table with --stage_poly (else none).

    Each example: label -> features -> expansion -> prediction -> statistics -> update."""
    literally(expanded)
    W, state, params = model
    numbers, lines, first_line = examples.numbers, examples.lines, examples.first_line
    stats, preds, rows = out
    s = settings(params)
    _, _, _, counters, _ = expander.poly
    not_linear = some_not_linear(expander.linear)
    interacting = expanded and (expander.terms.shape[0] > 0 or not_linear)
    # an example too wide to expand at once is learned by chunks where the stack can
    chunked = (expanded and dispatch.chunks(family) and reducing.chunks(reduction)
               and not s.stage_poly)
    tracks_labels = reducing.tracks_labels(reduction)
    advances_t = reducing.advances_t(reduction)
    reports_loss = reducing.reports_loss(reduction)
    weightless = dispatch.learns_weightless(family)
    for e in range(e0, numbers.shape[0]):
        # a multi-line example (--csoaa_ldf) is its lines e:end, taken at its first
        end = reducing.unit_end(reduction, numbers, e)
        if end <= e:
            continue
        y, imp, labeled, held, learn = _label(e, numbers, params, first_line, lines, s.test_only)
        if weightless and imp == 0 and labeled and not held and not s.test_only:
            learn = True
        if expanded and s.stage_poly and learn and stage_poly.stage_due(counters):
            return e, nrows, 0, 0, True
        # left_out: features left out of the linear terms, counted as VW counts them
        features, left_out, rows_needed, wide = example_features(
            e, examples, expander, s, not_linear, interacting, scratch.expansion, chunked)
        if rows_needed == 0 and end > e + 1:
            rows_needed = unit_rows(e, end, examples, expander, interacting, scratch.expansion)
        if rows_needed > 0:
            return e, nrows, rows_needed, 0, False
        # a wide example's classes walk its chunks, shifted: no copy
        class_rows_needed = 0 if wide else reducing.room(reduction, features, s, scratch)
        if class_rows_needed == 0 and end > e + 1 and end - e > scratch.classes.scores.shape[0]:
            class_rows_needed = end - e  # a score per line of a multi-line example
        if class_rows_needed > 0:
            return e, nrows, 0, class_rows_needed, False
        if expanded and s.stage_poly and learn:
            stage_poly.count_input(counters, features.hi - features.lo)
        c_lo, _ = _cost_span(e, examples.cost_offsets)
        _, c_hi = _cost_span(end - 1, examples.cost_offsets)
        ex = Example(y, imp, np.float64(numbers[e, 2]), labeled, learn,
                     examples.cost_class[c_lo:c_hi], examples.cost_value[c_lo:c_hi],
                     Unit(examples, e, end, preds), wide)
        predicted = reducing.predict(reduction, family, model, expander, features, ex, s,
                                     scratch, preds[e], expanded)
        if labeled:
            reported, log_loss, scored = reducing.score(reduction, model, predicted, ex, s,
                                                        scratch)
            if held:
                _count_held_out(stats, reported, imp)
                stats[R_HOLDOUT_MC_LOG_LOSS] += log_loss
                continue
            if reports_loss:
                stats[R_SUM_LOSS] += reported
                stats[R_W_LABELED] += imp
                stats[R_MC_LOG_LOSS] += log_loss
            else:  # VW's --oaa_subsample: no progressive loss, the example counts as unlabeled
                stats[R_W_UNLABELED] += imp
            if tracks_labels:
                _count_label(stats, y, imp)
            if learn:
                reducing.learn(reduction, family, model, expander, features, predicted, scored,
                               ex, s, scratch, expanded)
                if state[S_REFUSING] != 0.0:  # gd refused a step: counted once per example
                    state[S_REFUSING] = 0.0
                    stats[R_REFUSED] += 1
                if s.stage_poly:
                    stage_poly.after_training(counters, first_line + lines[e], s.doubling)
            if advances_t:
                state[S_T] += imp  # VW's t counts labeled examples only
        else:
            stats[R_W_UNLABELED] += imp
        nrows = _count_example(stats, rows, nrows, params, e, y, predicted.shown,
                               predicted.probability, predicted.n_features + left_out)
    return numbers.shape[0], nrows, 0, 0, False


@njit(cache=True, nogil=True, _nrt=False)
def _count_label(stats, y, imp):
    """The label sum and the first two distinct labels (the summary's best constant)."""
    stats[R_W_LABEL_SUM] += y * imp
    if np.isnan(stats[R_LABEL1]):
        stats[R_LABEL1] = y
    elif y != stats[R_LABEL1]:
        if np.isnan(stats[R_LABEL2]):
            stats[R_LABEL2] = y
        elif y != stats[R_LABEL2]:
            stats[R_MANY_LABELS] = 1.0
