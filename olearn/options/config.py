"""Every option of a run, validated once; shared by the CLI, the Python API and model files.

The options come from the modules that own them (olearn/core/option.py): ``REGISTRY`` gathers
them in --help's order and groups, and :class:`Config` is generated from it, one field per
option, plus ``explicit`` (the options the user gave). The checks here are those that involve
several options.
"""
from __future__ import annotations

import dataclasses
import math
import sys

from olearn.core.option import Option
from olearn.data import csv_header, formats, hashing, labels
from olearn.errors import OptionError
from olearn.features import (
    affixes,
    dictionary,
    feature_limit,
    interact,
    interactions,
    namespaces,
    ngrams,
    stage_poly,
)
from olearn.features.interactions import terms_of
from olearn.learners import families, losses, regularize, weights
from olearn.learners.losses import Loss
from olearn.options import frontend
from olearn.reductions import (
    autolink,
    baseline,
    boosting,
    bootstrap,
    classweight,
    confidence,
    csoaa,
    ect,
    ldf,
    log_multi,
    lrq,
    marginal,
    multilabel,
    nn,
    oaa,
    subsample,
)

# --help's groups, in order; each option is declared beside the code that uses it. VW's
# groups where VW has the options: "Feature options" holds hashing, namespace control, n-grams
# and interactions, "Weight options" the initial weights (VW lists --random_seed apart).
# The stacks of reductions olearn runs: any other two reduction options together are refused.
REDUCTION_STACKS = ({"oaa", "bootstrap"}, {"oaa", "oaa_subsample"})
GROUPS = (("Input options", frontend.DATA + formats.OPTIONS),
          ("CSV input", csv_header.OPTIONS),
          ("Feature options", hashing.OPTIONS + namespaces.OPTIONS + ngrams.OPTIONS
           + affixes.OPTIONS + dictionary.OPTIONS + feature_limit.OPTIONS
           + interact.OPTIONS + interactions.OPTIONS),
          ("Weight options", weights.OPTIONS),
          *families.option_groups(),
          ("Loss", losses.OPTIONS),
          ("Regularization", regularize.OPTIONS),
          ("Feature expansion: APPLE (--stage_poly)", stage_poly.OPTIONS),
          ("One against all (multiclass)", oaa.OPTIONS + subsample.OPTIONS + labels.OPTIONS),
          ("Cost-sensitive one against all", csoaa.OPTIONS),
          ("Label-dependent features (multi-line examples)", ldf.OPTIONS),
          ("Multilabel one against all", multilabel.OPTIONS),
          ("Importance weight classes", classweight.OPTIONS),
          ("Bootstrap", bootstrap.OPTIONS),
          ("Boosting", boosting.OPTIONS),
          ("Autolink", autolink.OPTIONS),
          ("Confidence", confidence.OPTIONS),
          ("Baseline", baseline.OPTIONS),
          ("Neural network", nn.OPTIONS),
          ("Error-correcting tournament", ect.OPTIONS),
          ("Logarithmic-time multiclass tree", log_multi.OPTIONS),
          ("Low-rank quadratic features", lrq.OPTIONS),
          ("Marginal", marginal.OPTIONS),
          ("Output", frontend.OUTPUTS),
          ("Passes", frontend.PASSES),
          ("Data-parallel training", frontend.DASK),
          ("Daemon options", frontend.DAEMON),
          ("Console", frontend.CONSOLE))
REGISTRY: dict[str, Option] = {option.name: option for _, group in GROUPS for option in group}
# Options that change features or predictions: a model file keeps them and -i restores them.
MODEL_OPTIONS = tuple(name for name, option in REGISTRY.items() if option.model)
# Options that change what the parser produces: a cache depends on them.
PARSING_OPTIONS = tuple(name for name, option in REGISTRY.items() if option.parsing)
EXPERT_LEARNERS = ("eg", "boa", "saew")  # the options that replace gradient descent
DAEMON_ONLY = tuple(option.name for option in frontend.DAEMON if option.name != "daemon")


def default(option: Option) -> object:
    """The option's value when not given (a fresh list for repeatable options)."""
    return list(option.default) if option.kind is list else option.default


class _Checked:
    """What Config adds to its fields: the checks across options, and derived values."""

    def __post_init__(self) -> None:
        for name, option in REGISTRY.items():  # each option's own checks, in --help's order
            setattr(self, name, option.check(getattr(self, name)))
        self.hash_seed %= 1 << 32  # VW reads it as a uint32: -1 is 2^32 - 1
        if (self.min_prediction is not None and self.max_prediction is not None
                and not self.min_prediction < self.max_prediction):
            raise OptionError(f"--min_prediction ({self.min_prediction:g}) must be below "
                              f"--max_prediction ({self.max_prediction:g})")
        self._check_experts()
        self._check_daemon()
        csoaa.check(self)
        ldf.check(self)
        multilabel.check(self)
        oaa.check(self)
        subsample.check(self)
        classweight.check(self)
        bootstrap.check(self)
        family = families.family_of(self)  # the last, gradient descent, is the default
        boosting.check(self, None if family is families.FAMILIES[-1] else family.flag(self))
        autolink.check(self)
        confidence.check(self)
        baseline.check(self, None if family is families.FAMILIES[-1] else family.flag(self))
        nn.check(self)
        ect.check(self)
        log_multi.check(self)
        lrq.check(self)
        marginal.check(self)
        self._check_one_reduction()  # the pairs of reductions no check above refuses
        labels.check(self)
        formats.check(self)
        csv_header.check(self)
        losses.check(self)
        stage_poly.check(self)
        self._check_metric()
        namespaces.check(self)
        feature_limit.check(self)
        interact.check(self)
        affixes.codes_of(self)  # refuses a malformed --affix
        ngrams.Grams.of(self)  # refuses malformed --ngram/--skips
        self.progress_add, self.progress_arg = self._parse_progress(self.progress)
        self.terms = terms_of(self.quadratic, self.cubic, self.interactions, self.permutations,
                              self.leave_duplicate_interactions,
                              lambda text: self.quiet or sys.stderr.write(text + "\n"))

    def _check_experts(self) -> None:
        """--eg, --boa, --saew: one of them, and not with gradient descent's own options."""
        if self.saew_calibrate:
            self.saew = True
        if self.eg + self.boa + self.saew > 1:
            raise OptionError("choose one of --eg, --boa and --saew "
                              "(--saew_sub chooses SAEW's subroutine)")
        self.check_subroutine()
        families.check(self)

    def check_subroutine(self, merged: bool = False) -> None:
        """--saew_sub needs --saew, and SGD's options --saew_sub sgd. With -i and no learner
        named, the model's options may supply them: model.merged_config checks the merge
        (``merged``)."""
        if self.initial_regressor is not None and not self.experts and not merged:
            return
        sgd = self.saew and self.saew_sub == "sgd"
        for name, needs, ok in (("saew_sub", "--saew", self.saew),
                                ("saew_sgd_eta", "--saew_sub sgd", sgd),
                                ("saew_sgd_l1", "--saew_sub sgd", sgd)):
            if not ok and (name in self.explicit or getattr(self, name) != REGISTRY[name].default):
                raise OptionError(f"{REGISTRY[name].flag} needs {needs}")

    def _check_metric(self) -> None:
        """--metric auc ranks one score per example, kept in this process."""
        if self.metric != "auc":
            return
        for name, on in (("oaa", self.oaa is not None), ("csoaa", self.csoaa is not None),
                         ("multilabel_oaa", self.multilabel_oaa is not None),
                         ("dask", self.dask is not None)):
            if on:
                raise OptionError(f"--metric auc is for binary tasks in one process, not with "
                                  f"--{name}")

    def _check_one_reduction(self) -> None:
        """At most one reduction option, or one of REDUCTION_STACKS: one reduction class runs
        (reductions/chosen.py), and another option would go unread."""
        options = (("csoaa_ldf", self.csoaa_ldf is not None),
                   ("wap_ldf", self.wap_ldf is not None), ("csoaa", self.csoaa is not None),
                   ("multilabel_oaa", self.multilabel_oaa is not None),
                   ("bootstrap", self.bootstrap is not None),
                   ("oaa_subsample", self.oaa_subsample is not None),
                   ("boosting", self.boosting is not None),
                   ("autolink", self.autolink is not None), ("nn", self.nn is not None),
                   ("lrqfa" if self.lrqfa is not None else "lrq", lrq.chosen(self)),
                   ("marginal", self.marginal is not None),
                   ("ect", self.ect is not None), ("log_multi", self.log_multi is not None),
                   ("confidence", self.confidence), ("baseline", self.baseline),
                   ("oaa", self.oaa is not None))
        given = [name for name, on in options if on]
        if len(given) > 1 and set(given) not in REDUCTION_STACKS:
            other = next(name for name in given[1:] if {given[0], name} not in REDUCTION_STACKS)
            raise OptionError(f"--{given[0]} does not take --{other}")

    def _check_daemon(self) -> None:
        """--daemon reads its clients' lines, one pass, and answers them on the sockets: no data
        files, passes, cache, per-example outputs or text models; its own options need it."""
        if not self.daemon:
            for name in DAEMON_ONLY:
                if name in self.explicit or getattr(self, name) != REGISTRY[name].default:
                    raise OptionError(f"{REGISTRY[name].flag} needs --daemon")
            return
        refused = (("data", "-d/--data or paths (the clients send the examples)"),
                   ("passes", "--passes > 1 (the clients' lines are read once)"),
                   ("cache", "-c/--cache"), ("cache_file", "--cache_file"),
                   ("dask", "--dask"), ("save_per_pass", "--save_per_pass"),
                   ("predictions", "-p/--predictions (the clients get the predictions)"),
                   ("raw_predictions", "-r/--raw_predictions"), ("audit", "-a/--audit"),
                   ("readable_model", "--readable_model"), ("invert_hash", "--invert_hash"),
                   ("learning_curve", "--learning_curve"))
        for name, what in refused:
            if getattr(self, name) != default(REGISTRY[name]):
                raise OptionError(f"--daemon does not take {what}")

    @property
    def experts(self) -> bool:
        """Exponential weights (EG, BOA, SAEW) instead of gradient descent."""
        return any(getattr(self, name) for name in EXPERT_LEARNERS)

    @property
    def expert_learner(self) -> str:
        return next(name for name in EXPERT_LEARNERS if getattr(self, name))

    @property
    def subroutine(self) -> str:
        """The experts' algorithm: EG or BOA (alone, or inside SAEW)."""
        return "eg" if self.eg else "boa" if self.boa else self.saew_sub

    @staticmethod
    def _parse_progress(text: str | None) -> tuple[bool, float]:
        """``-P N`` (integer) prints every N weighted examples; ``-P x.y`` multiplies."""
        if text is None:
            return False, 2.0
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise OptionError(f"-P/--progress expects a number, got {text!r}") from None
        if not (math.isfinite(value) and value > 0):
            raise OptionError(f"-P/--progress must be finite and > 0, got {text!r}")
        if "." not in str(text) and "e" not in str(text).lower():
            return True, value
        return False, value + 1 if value <= 1 else value

    def model_options(self) -> dict:
        """The options a model file keeps."""
        return {name: getattr(self, name) for name in MODEL_OPTIONS}

    def parsing_options(self) -> dict:
        """The options a cache of parsed examples depends on."""
        return {name: getattr(self, name) for name in PARSING_OPTIONS}

    @property
    def loss(self) -> Loss:
        return losses.BY_NAME[self.loss_function]

    @property
    def loss_param(self) -> float:
        """The loss's parameter (0 for a loss without one)."""
        return getattr(self, self.loss.parameter) if self.loss.parameter else 0.0

    @property
    def update_rule(self) -> tuple[bool, bool, bool]:
        """(adaptive, normalized, invariant): all three unless some are named (VW's rule);
        none under --rank (VW's gd_mf has a plain rule of its own)."""
        if self.rank is not None:
            return False, False, False
        if not (self.sgd or self.adaptive or self.normalized or self.invariant):
            return True, True, True
        return self.adaptive, self.normalized, self.invariant

    @property
    def holdout(self) -> bool:
        """VW holds out examples when there are several passes, or with --holdout_after."""
        return not self.holdout_off and (self.passes > 1 or self.holdout_after > 0)

    @property
    def regularized(self) -> bool:
        return self.l1 > 0 or self.l2 > 0

    @property
    def eta(self) -> float:
        """The learning rate; with a plain rule named (no --adaptive, no --normalized), VW
        scales it by initial_t^power_t, as its first step's t^-power_t divides it back."""
        adaptive, normalized, _ = self.update_rule
        eta = self.learning_rate
        if eta is None:
            eta = 0.5 if adaptive and normalized else 10.0
        if not (adaptive or normalized):
            eta *= self.t0 ** self.power_t
        return eta

    @property
    def t0(self) -> float:
        if self.initial_t is not None:
            return self.initial_t
        adaptive, normalized, _ = self.update_rule
        return 0.0 if adaptive or normalized else 1.0

    @property
    def mask(self) -> int:
        return (1 << self.bit_precision) - 1


def _field(option: Option) -> tuple:
    if option.kind is list:
        return option.name, option.annotation, dataclasses.field(default_factory=list)
    return option.name, option.annotation, dataclasses.field(default=option.default)


# Options as VW names them; None means "VW's default for this configuration".
Config = dataclasses.make_dataclass(
    "Config", [*map(_field, REGISTRY.values()),
               # the options the user gave (the rest are defaults)
               ("explicit", "frozenset", dataclasses.field(default=frozenset()))],
    bases=(_Checked,))
Config.__module__ = __name__  # for pickle (--dask sends it to the workers)
