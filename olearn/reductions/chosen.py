"""Which reduction a configuration chooses (its class: reductions/oaa.py's interface)."""
from __future__ import annotations

from olearn.reductions import ldf, lrq
from olearn.reductions.autolink import Autolink
from olearn.reductions.baseline import Baseline
from olearn.reductions.boosting import Boosting
from olearn.reductions.bootstrap import Bootstrap, BootstrapClasses
from olearn.reductions.confidence import Confidence
from olearn.reductions.csoaa import CostSensitive
from olearn.reductions.ect import ErrorCorrectingTournament
from olearn.reductions.log_multi import LogMulti
from olearn.reductions.marginal import Marginal
from olearn.reductions.multilabel import Multilabel
from olearn.reductions.nn import NeuralNetwork
from olearn.reductions.oaa import OneAgainstAll
from olearn.reductions.subsample import Subsampled, on


def reduction_of(config) -> type[OneAgainstAll]:
    """--csoaa's class, --csoaa_ldf's and --wap_ldf's, --multilabel_oaa's, --bootstrap's
    (alone or over --oaa's classes), --oaa_subsample's, --boosting's, --autolink's, --nn's,
    --lrq's and --lrqfa's, --marginal's, --ect's, --log_multi's, --confidence's, --baseline's,
    or --oaa's (one scalar problem without --oaa)."""
    if ldf.chosen(config):
        return ldf.LabelDependent
    if config.csoaa is not None:
        return CostSensitive
    if config.bootstrap is not None:
        return Bootstrap if config.oaa is None else BootstrapClasses
    if on(config):
        return Subsampled
    if config.boosting is not None:
        return Boosting
    if config.autolink is not None:
        return Autolink
    if config.nn is not None:
        return NeuralNetwork
    if lrq.chosen(config):
        return lrq.LowRankQuadratic
    if config.marginal is not None:
        return Marginal
    if config.ect is not None:
        return ErrorCorrectingTournament
    if config.log_multi is not None:
        return LogMulti
    if config.confidence:
        return Confidence
    if config.baseline:
        return Baseline
    return Multilabel if config.multilabel_oaa is not None else OneAgainstAll

