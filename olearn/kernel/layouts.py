"""The kernel's declared arrays: the learner state, the progress statistics and the run's
parameters as the kernel reads them (float64 arrays of named fields, olearn/core/fields.py),
and the width of a progress-table row.

The kernels index fields through the module constants (``S_T``, ``R_SUM_LOSS``, ``P_ETA``),
which numba compiles as literals; Python code outside the kernels reads fields by name.
"""
from __future__ import annotations

from olearn.core.fields import Field, Layout
from olearn.learners import regularize
from olearn.reductions import oaa

# Learner state (float64 array).
STATE = Layout(
    "state",
    Field("norm", "S: sum of importance-weighted normalized norms", merge="mean"),
    Field("total", "T: sum of importance of normalized updates", merge="mean"),
    Field("t", "initial_t plus the weight of all examples seen", merge="mean"),
    Field("min", "bottom of the label range predictions are clipped to", merge="min"),
    Field("max", "top of that range", merge="max"),
    *regularize.ACCUMULATORS, *oaa.STATE_FIELDS)
S_NORM, S_TOTAL, S_T, S_MIN, S_MAX, S_INDEXING = STATE.indices("norm", "total", "t", "min", "max",
                                                               "indexing")
S_REG = STATE.index(regularize.ACCUMULATORS[0].name)  # where the accumulators start
STATE_SIZE = len(STATE)

# Progress statistics (float64 array), see report.py: never saved.
STATS = Layout(
    "stats",
    *(Field(name, merge="sum", saved=False) for name in (
        "sum_loss", "w_labeled", "w_unlabeled", "w_label_sum", "examples", "features")),
    Field("dump_at", "weight sum of the next table row", saved=False),
    Field("last_loss", "sum_loss at the last table row", saved=False),
    Field("last_w_labeled", "w_labeled at the last table row", saved=False),
    Field("label1", "the first two distinct labels (best constant)", merge="labels",
          saved=False),
    Field("label2", merge="labels", saved=False),
    Field("many_labels", "1: more than two distinct labels", merge="max", saved=False),
    # held-out examples: the whole run, since the last holdout row, and this pass
    *(Field(name, merge="sum", saved=False) for name in (
        "holdout_loss", "holdout_w", "holdout_loss_since", "holdout_w_since",
        "holdout_loss_pass", "holdout_w_pass")),
    # --oaa --probabilities: the multiclass log loss, of learned and of held-out examples
    *(Field(name, merge="sum", saved=False) for name in ("mc_log_loss", "holdout_mc_log_loss")))
(R_SUM_LOSS, R_W_LABELED, R_W_UNLABELED, R_W_LABEL_SUM, R_EXAMPLES, R_FEATURES, R_DUMP_AT,
 R_LAST_LOSS, R_LAST_W_LABELED, R_LABEL1, R_LABEL2, R_MANY_LABELS, R_HOLDOUT_LOSS, R_HOLDOUT_W,
 R_HOLDOUT_LOSS_SINCE, R_HOLDOUT_W_SINCE, R_HOLDOUT_LOSS_PASS, R_HOLDOUT_W_PASS, R_MC_LOG_LOSS,
 R_HOLDOUT_MC_LOG_LOSS) = range(len(STATS))
STATS_SIZE = len(STATS)
STATS.check_constants(globals(), "R_")

# Parameters (float64 array): the run's options as the kernel reads them, never saved.
PARAMS = Layout("params", *(Field(name, saved=False) for name in (
    "eta", "power_t", "progress", "adaptive", "normalized", "invariant", "loss",
    "fixed_range", "test_only", "progress_add",
    "loss_param",      # the loss's parameter (losses.py: τ for quantile)
    "link",            # LINKS
    "binary", "mask", "permutations", "l1", "l2",
    "holdout_period",  # hold out every n-th line of a pass (0: no holdout) ...
    "holdout_after",   # ... or, when > 0, every line after this one
    "holdout_rows",    # table rows report the holdout loss (from pass 2 on)
    "stage_poly",      # learn on the synthetic examples of --stage_poly
    "sched_exponent", "doubling", "heuristic",
    "poly_fallback",   # --stage_poly_fallback: each stage's shallowest parent
    "constant",        # the constant feature's index
    "oaa",             # --oaa's class count K (0: one scalar problem)
    "probabilities")))  # --oaa: probabilities instead of scores
(P_ETA, P_POWER_T, P_PROGRESS, P_ADAPTIVE, P_NORMALIZED, P_INVARIANT, P_LOSS, P_FIXED_RANGE,
 P_TEST_ONLY, P_PROGRESS_ADD, P_LOSS_PARAM, P_LINK, P_BINARY, P_MASK, P_PERMUTATIONS, P_L1, P_L2,
 P_HOLDOUT_PERIOD, P_HOLDOUT_AFTER, P_HOLDOUT_ROWS, P_STAGE_POLY, P_SCHED_EXPONENT, P_DOUBLING,
 P_HEURISTIC, P_POLY_FALLBACK, P_CONSTANT, P_OAA, P_PROBABILITIES) = range(len(PARAMS))
PARAMS_SIZE = len(PARAMS)
PARAMS.check_constants(globals(), "P_")

# examples, weight sum, label, prediction, features, average loss, since last, holdout row,
# the prediction's probability (--oaa --probabilities; else NaN)
ROW_COLS = 9
