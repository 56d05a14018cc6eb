"""The kernel's arguments, in a few named bundles (numba compiles a namedtuple as a tuple whose
fields are read by name, at no cost at run time). Each bundle is defined here once:
``learn_batch(model, family, expander, reduction, examples, out)`` (kernel/loop.py) takes one
of each, and every function below it takes the bundles it reads, never their arrays one by one.
The example loops' options travel as ``Settings`` (kernel/layouts.py ``PARAMS.settings``, a
field per declared parameter, loop.settings). The ``family`` bundle is the learner family's own
(learners/family.py ``BUNDLE``): its type chooses the family's kernels (kernel/dispatch.py).
"""
from __future__ import annotations

from collections import namedtuple

# What the learner learns: the weight table (learners/weights.py), the learner state and the
# run's parameters (kernel/layouts.py STATE and PARAMS).
Model = namedtuple("Model", ["W", "state", "params"])

# In front of the family: the interaction terms (features/interactions.py), which namespaces
# are linear terms (--ignore_linear, features/namespaces.py) and --stage_poly's state
# (features/stage_poly.py: min_depth, flags, SSM sums, counters, origins).
Expander = namedtuple("Expander", ["terms", "linear", "poly"])

# Between the expander and the family: the reduction's own state (one scalar problem: none;
# --oaa: reductions/oaa.py ``OneAgainstAll.BUNDLE``). Its type chooses the reduction's kernels
# (reductions/table.py, through kernel/reducing.py).
NoReduction = namedtuple("NoReduction", [])

# A parsed batch (data/batch.py ExampleBatch): label, importance and initial prediction per
# example, the CSR features, each example's line in its source, the pass's line of line 0, and
# the cost-sensitive labels' classes and costs in CSR (--csoaa; else all empty).
Examples = namedtuple("Examples", ["numbers", "offsets", "index", "value", "namespace", "lines",
                                   "first_line", "cost_offsets", "cost_class", "cost_value"])

# What a call writes besides the model: the progress statistics (kernel/layouts.py STATS), each
# example's predictions and the progress-table rows.
Out = namedtuple("Out", ["stats", "preds", "rows"])

# One example's features as the family sees them: ``index``/``value`` rows ``lo:hi``, and the
# batch's namespace per row, ``namespace``, which those rows index only where they are the
# batch's own (no expansion: --rank's factors, learners/mf.py, read it so; a copy or an
# expansion carries the batch's array along unread).
Features = namedtuple("Features", ["index", "value", "lo", "hi", "namespace"])

# An example too wide to expand at once (kernel/example_features.py ``chunk``): the batch
# (``Examples``), its line ``e`` in it, the ``Expander``, the expansion scratch whose cursor
# walks its expansion a chunk at a time, and the shift added to each index (--oaa's class).
Chunks = namedtuple("Chunks", ["examples", "e", "expander", "expansion", "shift"])

# A scored example, as the family's update takes it: the clipped prediction, the label, the
# importance, the initial prediction, the loss and the loss's shared term (losses.shared_term).
Scored = namedtuple("Scored", ["p", "y", "imp", "initial", "loss", "shared"])

# One example as the example loop reads it (loop._label): label, importance, initial
# prediction, whether it has a label and whether it is learned, the classes and costs its
# cost-sensitive label lists (views of the batch's; empty without; a multi-line example's: its
# lines'), its ``Unit``, and whether it is wide: its features are the first chunk of its
# expansion (kernel/example_features.py ``chunk``).
Example = namedtuple("Example", ["y", "imp", "initial", "labeled", "learn", "classes",
                                 "costs", "unit", "wide"])

# Where an example lies in its batch: the batch (``Examples``), its lines ``first:end`` (one
# line, but a multi-line example's, --csoaa_ldf) and the batch's prediction rows, a row per line.
Unit = namedtuple("Unit", ["examples", "first", "end", "preds"])

# What a reduction's ``predict`` gives the example loop (kernel/reducing.py): the prediction
# shown, its probability (NaN: none), the feature count the table reports, and what the
# reduction's own ``score`` and ``learn`` read next (its type is the reduction's).
Predicted = namedtuple("Predicted", ["shown", "probability", "n_features", "inner"])

# The example loop's scratch (loop.new_scratch): the update's work rows, the interactions'
# expansion scratch (loop.expansion_scratch), --stage_poly's synthetic example and the
# reduction's per-class scratch.
Scratch = namedtuple("Scratch", ["work", "expansion", "synthetic", "classes"])

# A reduction's per-class scratch (empty for one scalar problem): one class's copy of an
# example's features (``index``, ``value``), each class's clipped score and probability.
Classes = namedtuple("Classes", ["index", "value", "scores", "probabilities"])

# --stage_poly's synthetic example (a row per slot of the table) and its walk's stack.
Synthetic = namedtuple("Synthetic", ["index", "value", "stack"])
