"""The kernel's arguments, in a few named bundles (numba compiles a namedtuple as a tuple whose
fields are read by name, at no cost at run time). Each bundle is defined here once:
``learn_batch(model, family, expander, reduction, examples, out)`` (kernel/loop.py) takes one
of each, and every function below it takes the bundles it reads, never their arrays one by one.
"""
from __future__ import annotations

from collections import namedtuple

# What the learner learns: the weight table (learners/weights.py), the learner state and the
# run's parameters (kernel/layouts.py STATE and PARAMS).
Model = namedtuple("Model", ["W", "state", "params"])

# The learner families' own state: gradient descent's lazy --l1/--l2 snapshots
# (learners/regularize.py) and the exponential weights' arrays (learners/experts/state.py);
# the inactive family's arrays are tiny.
Family = namedtuple("Family", ["lazy", "ew"])

# In front of the family: the interaction terms (features/interactions.py), which namespaces
# are linear terms (--ignore_linear, features/namespaces.py) and --stage_poly's state
# (features/stage_poly.py: min_depth, flags, SSM sums, counters, origins).
Expander = namedtuple("Expander", ["terms", "linear", "poly"])

# Between the expander and the family: --oaa's per-class normalizer sums (reductions/oaa.py).
Reduction = namedtuple("Reduction", ["classes"])

# A parsed batch (data/batch.py ExampleBatch): label, importance and initial prediction per
# example, the CSR features, each example's line in its source and the pass's line of line 0.
Examples = namedtuple("Examples", ["numbers", "offsets", "index", "value", "namespace", "lines",
                                   "first_line"])

# What a call writes besides the model: the progress statistics (kernel/layouts.py STATS), each
# example's predictions and the progress-table rows.
Out = namedtuple("Out", ["stats", "preds", "rows"])

# One example's features as the family sees them: ``index``/``value`` rows ``lo:hi``.
Features = namedtuple("Features", ["index", "value", "lo", "hi"])

# The scalar example loop's scratch (loop.new_scratch): the update's work rows, the
# interactions' expansion scratch (loop.expansion_scratch), --stage_poly's synthetic example.
Scratch = namedtuple("Scratch", ["work", "expansion", "synthetic"])

# --stage_poly's synthetic example (a row per slot of the table) and its walk's stack.
Synthetic = namedtuple("Synthetic", ["index", "value", "stack"])

# The example loops' options, read from the parameters once per batch (loop.settings).
Settings = namedtuple("Settings", [
    "loss", "loss_param", "test_only", "fixed_range", "mask", "permutations", "l1", "l2",
    "regularized", "stage_poly", "constant", "sched_exponent", "heuristic", "doubling",
    "poly_fallback", "normalized", "binary"])
