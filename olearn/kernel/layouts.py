"""The kernel's declared arrays: the learner state, the progress statistics and the run's
parameters as the kernel reads them (float64 arrays of named fields, olearn/core/fields.py),
and the width of a progress-table row.

The kernels index fields through the module constants (``S_T``, ``R_SUM_LOSS``, ``P.eta``),
which numba compiles as literals; Python code outside the kernels reads fields by name.
"""
from __future__ import annotations

from olearn.core.fields import Field, Layout, Param, Parameters
from olearn.data.hashing import CONSTANT_HASH
from olearn.features import interactions, stage_poly
from olearn.learners import regularize
from olearn.reductions import baseline, boosting, oaa

# Learner state (float64 array).
STATE = Layout(
    "state",
    Field("norm", "S: sum of importance-weighted normalized norms", merge="mean"),
    Field("total", "T: sum of importance of normalized updates", merge="mean"),
    Field("t", "initial_t plus the weight of all examples seen", merge="mean"),
    Field("min", "bottom of the label range predictions are clipped to", merge="min"),
    Field("max", "top of that range", merge="max"),
    # 0 between examples: the example loop moves it to the statistics' "refused"
    Field("refusing", "1 while an example's update is refused (non-finite)", merge="max",
          saved=False),
    *regularize.ACCUMULATORS, *oaa.STATE_FIELDS, *regularize.PENDING)
S_NORM, S_TOTAL, S_T, S_MIN, S_MAX, S_REFUSING, S_INDEXING = STATE.indices(
    "norm", "total", "t", "min", "max", "refusing", "indexing")
S_L1_STATE, S_L2_STATE = STATE.indices("l1_state", "l2_state")
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
    *(Field(name, merge="sum", saved=False) for name in ("mc_log_loss", "holdout_mc_log_loss")),
    Field("refused", "updates refused: they would have made a weight non-finite", merge="sum",
          saved=False))
(R_SUM_LOSS, R_W_LABELED, R_W_UNLABELED, R_W_LABEL_SUM, R_EXAMPLES, R_FEATURES, R_DUMP_AT,
 R_LAST_LOSS, R_LAST_W_LABELED, R_LABEL1, R_LABEL2, R_MANY_LABELS, R_HOLDOUT_LOSS, R_HOLDOUT_W,
 R_HOLDOUT_LOSS_SINCE, R_HOLDOUT_W_SINCE, R_HOLDOUT_LOSS_PASS, R_HOLDOUT_W_PASS, R_MC_LOG_LOSS,
 R_HOLDOUT_MC_LOG_LOSS, R_REFUSED) = range(len(STATS))
STATS_SIZE = len(STATS)
STATS.check_constants(globals(), "R_")

# How --link's functions are coded in the "link" parameter (gd.output).
LINKS = {"identity": 0, "logistic": 1, "glf1": 2, "poisson": 3}


def _constant(config) -> int:
    """The constant feature's index: VW's, widened as --oaa widens every index."""
    return (((CONSTANT_HASH & config.mask) << oaa.index_shift(oaa.slot_count(config)))
            & config.mask)


# Parameters (float64 array): the run's options as the kernels read them, never saved. A
# kernel-read option is one line here; the kernels read it as ``s.name`` (the example loops'
# settings, kernel/loop.py) or ``params[P.name]``. The passes and the test-only calls change
# holdout_rows, eta and test_only as they go.
PARAMS = Parameters(
    "params",
    Param("eta", lambda c: c.eta),
    Param("power_t", lambda c: c.power_t),
    Param("progress", lambda c: c.progress_arg, doc="table rows: the step or the factor"),
    Param("progress_add", lambda c: c.progress_add, bool, "table rows: add the step"),
    Param("adaptive", lambda c: c.update_rule[0], bool),
    Param("normalized", lambda c: c.update_rule[1], bool),
    Param("invariant", lambda c: c.update_rule[2], bool),
    Param("loss", lambda c: c.loss.code, int),
    Param("loss_param", lambda c: c.loss_param, doc="the loss's parameter (τ for quantile)"),
    Param("fixed_range", lambda c: c.min_prediction is not None or c.max_prediction is not None,
          bool, "--min_prediction/--max_prediction fix the clipping range"),
    Param("test_only", lambda c: c.testonly, bool),
    Param("link", lambda c: LINKS[c.link], int),
    Param("binary", lambda c: c.binary, bool),
    Param("mask", lambda c: c.mask, int),
    Param("permutations", lambda c: c.permutations, bool),
    Param("chunk_rows", lambda c: interactions.CHUNK_ROWS, int,
          "rows of an expansion's chunk: a wider example is learned by chunks where it can"),
    Param("l1", lambda c: c.l1),
    Param("l2", lambda c: c.l2),
    Param("regularized", lambda c: c.l1 > 0 or c.l2 > 0, bool),
    Param("sparse_l2", lambda c: c.sparse_l2, doc="--sparse_l2's λ"),
    Param("feature_mask", lambda c: c.feature_mask is not None, bool,
          "--feature_mask: only nonzero weights are updated"),
    Param("holdout_period", lambda c: c.holdout_period if c.holdout else 0, int,
          "hold out every n-th line of a pass (0: no holdout) ..."),
    Param("holdout_after", lambda c: c.holdout_after if c.holdout else 0, int,
          "... or, when > 0, every line after this one"),
    Param("holdout_rows", lambda c: False, bool,
          "table rows report the holdout loss (from pass 2 on)"),
    Param("stage_poly", lambda c: c.stage_poly, bool,
          "learn on the synthetic examples of --stage_poly"),
    Param("sched_exponent", lambda c: c.sched_exponent),
    Param("doubling", lambda c: not c.batch_sz_no_doubling, bool),
    Param("heuristic", lambda c: stage_poly.HEURISTICS[c.poly_heuristic], int),
    Param("poly_fallback", lambda c: c.stage_poly_fallback, bool,
          "--stage_poly_fallback: each stage's shallowest parent"),
    Param("constant", _constant, int, "the constant feature's index"),
    Param("classes", oaa.class_count, int,
          "--oaa's, --csoaa's or --multilabel_oaa's class count K, --bootstrap's copies, "
          "--boosting's weak learners (0: one scalar problem)"),
    Param("confidence_after", lambda c: c.confidence_after_training, bool,
          "--confidence: the sensitivity after the example is learned"),
    Param("baseline_global", lambda c: c.global_only, bool,
          "--baseline: the baseline is a global constant of its own"),
    Param("baseline_check", lambda c: c.check_enabled, bool,
          "--baseline: only flagged examples take the baseline"),
    Param("baseline_rate", baseline.rate, float,
          "--baseline: the baseline's learning-rate multiplier (0: from the label range)"),
    Param("baseline_row", baseline.global_row, int, "--global_only's constant's weight row"),
    Param("vote", lambda c: c.bootstrap is not None and c.bs_type == "vote", bool,
          "--bootstrap: the copies vote"),
    Param("boost_alg", lambda c: boosting.ALGORITHMS[c.alg], int,
          "--boosting's algorithm (reductions/boosting.py ALGORITHMS)"),
    Param("gamma", lambda c: c.gamma, doc="--boosting --alg BBM: the weak learners' edge"),
    Param("inpass", lambda c: c.inpass, bool,
          "--nn: the output layer reads the example's features too"),
    Param("dropout", lambda c: c.dropout, bool, "--nn: learn with dropout"),
    Param("absolute_loss", lambda c: c.cs_absolute_loss, bool,
          "--csoaa: the loss is the predicted class's cost"),
    Param("probabilities", lambda c: c.probabilities, bool,
          "--oaa: probabilities instead of scores"),
    Param("class_lists", lambda c: c.scores or c.probabilities, bool,
          "--oaa: -p writes every class's score or probability"),
    Param("swap_resistance", lambda c: c.swap_resistance, int,
          "--log_multi: a leaf's other labels' examples needed for a swap, per root example"))
P = PARAMS.index
PARAMS_SIZE = len(PARAMS)

# examples, weight sum, label, prediction, features, average loss, since last, holdout row,
# the prediction's probability (--oaa --probabilities; else NaN), the example's position in its
# batch (--multilabel_oaa's table writes its label and prediction from the batch)
ROW_COLS = 10
