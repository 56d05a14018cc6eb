"""The reductions the example loop knows, by their bundle's type (kernel/bundles.py
``NoReduction``, reductions/oaa.py ``OneAgainstAllState``, reductions/csoaa.py
``CostSensitiveState``, reductions/multilabel.py ``MultilabelState``,
reductions/bootstrap.py ``BootstrapState`` and ``BootstrapClassesState``,
reductions/confidence.py ``ConfidenceState``, reductions/baseline.py ``BaselineState``,
reductions/ldf.py ``LdfState``,
reductions/boosting.py ``BoostingState``, reductions/autolink.py ``AutolinkState``,
reductions/marginal.py ``MarginalState``, reductions/nn.py ``NeuralState``,
reductions/lrq.py ``LowRankState``, reductions/ect.py ``EctState``, reductions/log_multi.py
``LogMultiState``): each one's kernels, which kernel/reducing.py puts into the loop when numba
compiles it.

A reduction's kernels (one module each; the class reductions take --oaa's ``room``:
reductions/one_problem.py, reductions/oaa_kernels.py,
reductions/csoaa_kernels.py, reductions/multilabel_kernels.py,
reductions/bootstrap_kernels.py, reductions/boosting_kernels.py,
reductions/autolink_kernels.py, reductions/marginal_kernels.py,
reductions/nn_kernels.py, reductions/lrq_kernels.py, reductions/ect_kernels.py,
reductions/log_multi_kernels.py, reductions/confidence_kernels.py,
reductions/baseline_kernels.py):
``fits(reduction, model, out)`` checks its state once per call; per example,
``room(reduction, features, s, scratch)`` gives the scratch rows its problems need beyond the
scratch's (the loop stops and grows them), ``predict(...)`` predicts and writes the prediction
row (``Predicted``), ``score(...)`` gives the reported loss, the multiclass log loss and what
``learn(...)`` updates from. ``tracks_labels``: the table's best constant and label sum apply
(a scalar label). ``reports_loss`` (default yes): a learned example's loss is progressive
loss; no (--oaa_subsample, as VW): it counts as unlabeled and the average loss is n.a.
``chunks`` (default no; one scalar problem and --oaa): its ``predict`` and ``learn`` take a wide
example (``Example.wide``:
the features are the first chunk of its expansion, kernel/example_features.py), for a family
that learns by chunks (learners/family.py ``update_wide``).
"""
from __future__ import annotations

from collections import namedtuple

from olearn.kernel.bundles import NoReduction
from olearn.reductions import (
    autolink_kernels,
    baseline_kernels,
    boosting_kernels,
    bootstrap_kernels,
    confidence_kernels,
    csoaa_kernels,
    ect_kernels,
    ldf_kernels,
    log_multi_kernels,
    lrq_kernels,
    marginal_kernels,
    multilabel_kernels,
    nn_kernels,
    oaa_kernels,
    one_problem,
    subsample_kernels,
)
from olearn.reductions.autolink import AutolinkState
from olearn.reductions.baseline import BaselineState
from olearn.reductions.boosting import BoostingState
from olearn.reductions.bootstrap import BootstrapClassesState, BootstrapState
from olearn.reductions.confidence import ConfidenceState
from olearn.reductions.csoaa import CostSensitiveState
from olearn.reductions.ect import EctState
from olearn.reductions.ldf import LdfState
from olearn.reductions.log_multi import LogMultiState
from olearn.reductions.lrq import LowRankState
from olearn.reductions.marginal import MarginalState
from olearn.reductions.multilabel import MultilabelState
from olearn.reductions.nn import NeuralState
from olearn.reductions.oaa import OneAgainstAllState
from olearn.reductions.subsample import SubsampledState

# unit_end(numbers, e): where the example whose first line is ``e`` ends, and ``e`` for a line
# that is not an example's first (None: an example per line); advances_t: whether a learned
# example advances the learner's clock t (VW's multi-line learners leave it).
ReductionKernels = namedtuple("ReductionKernels", ["fits", "room", "predict", "score", "learn",
                                                   "tracks_labels", "unit_end", "advances_t",
                                                   "reports_loss", "chunks"],
                              defaults=(None, True, True, False))

REDUCTIONS = {
    NoReduction: ReductionKernels(one_problem.fits, one_problem.room, one_problem.predict,
                                  one_problem.score, one_problem.learn, True, chunks=True),
    OneAgainstAllState: ReductionKernels(oaa_kernels.fits, oaa_kernels.room,
                                         oaa_kernels.predict, oaa_kernels.score,
                                         oaa_kernels.learn, False, chunks=True),
    CostSensitiveState: ReductionKernels(csoaa_kernels.fits, oaa_kernels.room,
                                         csoaa_kernels.predict, csoaa_kernels.score,
                                         csoaa_kernels.learn, False),
    MultilabelState: ReductionKernels(multilabel_kernels.fits, oaa_kernels.room,
                                      multilabel_kernels.predict, multilabel_kernels.score,
                                      multilabel_kernels.learn, False),
    BootstrapState: ReductionKernels(bootstrap_kernels.fits, oaa_kernels.room,
                                     bootstrap_kernels.predict, bootstrap_kernels.score,
                                     bootstrap_kernels.learn, True),
    BootstrapClassesState: ReductionKernels(bootstrap_kernels.fits_copies, oaa_kernels.room,
                                            bootstrap_kernels.predict_copies,
                                            oaa_kernels.score, bootstrap_kernels.learn_copies,
                                            False),
    LdfState: ReductionKernels(ldf_kernels.fits, ldf_kernels.room, ldf_kernels.predict,
                               ldf_kernels.score, ldf_kernels.learn, False,
                               ldf_kernels.unit_end, False),
    SubsampledState: ReductionKernels(subsample_kernels.fits, oaa_kernels.room,
                                      oaa_kernels.predict, oaa_kernels.score,
                                      subsample_kernels.learn, False, reports_loss=False),
    BoostingState: ReductionKernels(boosting_kernels.fits, oaa_kernels.room,
                                    boosting_kernels.predict, boosting_kernels.score,
                                    boosting_kernels.learn, True),
    AutolinkState: ReductionKernels(autolink_kernels.fits, autolink_kernels.room,
                                    autolink_kernels.predict, one_problem.score,
                                    one_problem.learn, True),
    MarginalState: ReductionKernels(marginal_kernels.fits, marginal_kernels.room,
                                    marginal_kernels.predict, marginal_kernels.score,
                                    marginal_kernels.learn, True),
    NeuralState: ReductionKernels(nn_kernels.fits, nn_kernels.room, nn_kernels.predict,
                                  nn_kernels.score, nn_kernels.learn, True),
    LowRankState: ReductionKernels(lrq_kernels.fits, lrq_kernels.room, lrq_kernels.predict,
                                   one_problem.score, lrq_kernels.learn, True),
    EctState: ReductionKernels(ect_kernels.fits, oaa_kernels.room, ect_kernels.predict,
                               ect_kernels.score, ect_kernels.learn, False),
    LogMultiState: ReductionKernels(log_multi_kernels.fits, oaa_kernels.room,
                                    log_multi_kernels.predict, log_multi_kernels.score,
                                    log_multi_kernels.learn, False),
    ConfidenceState: ReductionKernels(confidence_kernels.fits, one_problem.room,
                                      confidence_kernels.predict, one_problem.score,
                                      confidence_kernels.learn, True),
    BaselineState: ReductionKernels(baseline_kernels.fits, baseline_kernels.room,
                                    baseline_kernels.predict, one_problem.score,
                                    baseline_kernels.learn, True),
}
