"""``--marginal NAMESPACES``: VW's marginal reduction (docs/vw-reference.md §9.11).

In each of the NAMESPACES an example's features come in pairs ``x id``: the pair becomes one
feature, x's index with the value of the id's *marginal*, a running ratio num/den of the
labels seen with that id (both sums start at --initial_numerator and --initial_denominator).
Each learned example then adds its label times its importance (1 with --unweighted_marginals)
to num and its importance to den of each of its ids, both sums first multiplied by
1 - --decay. A pair whose values are not both 1 is dropped from the example (its id's sums
are still updated, from 0/0 when new, as VW's); an odd last feature is dropped.

--compete mixes, per example, the learner's prediction and each id's marginal with
AdaNormalHedge weights: each id keeps two experts (its marginal, the learner), each with a
regret sum, a sum of squared regrets and a weight; the prediction shown is the weighted mean
and the regrets are against the mixture's loss. --update_before_learn updates the marginals
before the learner learns the example (its shown prediction is the one before); as VW 9.11.9's,
that update reads the example already marginalized (reductions/marginal_kernels.py
``update``).

The marginals and experts are tables over the weight table's rows (an id's key is its
feature index), with a flag for the ids seen; a model file keeps the seen ones.
:class:`Marginal` holds them; the kernels are reductions/marginal_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.checks import increasing_below, require
from olearn.core.fields import Field, Layout
from olearn.core.option import flag, number, option_bytes, text
from olearn.reductions.oaa import OneAgainstAll

OPTIONS = (
    text("--marginal", model=True, metavar="NAMESPACES",
         help="Substitute marginal label estimates for ids: in these namespaces, each pair of "
              "features 'x id' becomes x with the id's running mean label."),
    number("--initial_numerator", kind=float, default=0.5,
           help="--marginal: each id's numerator before any label."),
    number("--initial_denominator", kind=float, default=1.0,
           help="--marginal: each id's denominator before any label."),
    number("--decay", kind=float, default=0.0,
           help="--marginal: the sums' decay per learned example (1e-3 for example)."),
    flag("--compete", help="--marginal: mix the learner's prediction with the marginals "
                           "(AdaNormalHedge experts per id)."),
    flag("--update_before_learn", help="--marginal: update the marginals before learning."),
    flag("--unweighted_marginals",
         help="--marginal: ignore importance weights in the marginals."),
)
_OWN = ("initial_numerator", "initial_denominator", "decay", "compete", "update_before_learn",
        "unweighted_marginals")

# An id's marginal: numerator and denominator (VW's doubles). No merge rule (--dask refuses
# --marginal).
SUMS = Layout("marginal_sums",
              Field("num", "the id's numerator: decayed sum of importance-weighted labels"),
              Field("den", "the id's denominator: decayed sum of importances"))
M_NUM, M_DEN = SUMS.indices("num", "den")
SUMS.check_constants(globals(), "M_")
# An id's two experts under --compete (VW's floats): its marginal's, then the learner's.
EXPERTS = Layout("marginal_experts",
                 Field("regret", "the marginal expert's regret sum"),
                 Field("abs_regret", "the marginal expert's sum of squared regrets"),
                 Field("weight", "the marginal expert's weight", default=1.0),
                 Field("feature_regret", "the learner expert's regret sum"),
                 Field("feature_abs_regret", "the learner expert's sum of squared regrets"),
                 Field("feature_weight", "the learner expert's weight",
                       default=1.0))
(X_REGRET, X_ABS_REGRET, X_WEIGHT, X_FEATURE_REGRET, X_FEATURE_ABS_REGRET,
 X_FEATURE_WEIGHT) = range(len(EXPERTS))
EXPERTS.check_constants(globals(), "X_")
# The kernel's settings array: the options, in this order.
(O_NUMERATOR, O_DENOMINATOR, O_DECAY, O_COMPETE, O_BEFORE, O_UNWEIGHTED) = range(len(_OWN))

# ``namespaces``: a flag per namespace index; ``seen``: a flag per key (weight row);
# ``sums``/``experts``: a row per key (experts: none without --compete); ``options``: _OWN.
MarginalState = namedtuple("MarginalState", ["namespaces", "seen", "sums", "experts",
                                             "options"])


def check(config) -> None:
    """Its options need --marginal (or -i, whose model may have it: the merged options are
    checked again); it refuses the reductions and expansions it cannot sit under (its pairs
    are read from the example's own features)."""
    from olearn.errors import OptionError
    if config.marginal is None:
        if config.initial_regressor is not None:
            return
        for name in _OWN:
            if name in config.explicit:
                raise OptionError(f"--{name} needs --marginal")
        return
    if ":" in config.marginal:
        raise OptionError("--marginal: cannot use the wildcard ':' with marginal")
    # (another reduction: Config's check of one reduction refuses it)
    for name, on in (("stage_poly", config.stage_poly),
                     ("quadratic", bool(config.quadratic)), ("cubic", bool(config.cubic)),
                     ("interactions", bool(config.interactions)),
                     ("ignore_linear", bool(config.ignore_linear))):
        if on:
            raise OptionError(f"--marginal does not take --{name}")


class Marginal(OneAgainstAll):
    """--marginal's configuration and state: one scalar problem, the marginal namespaces,
    each key's seen flag, sums and (--compete) experts."""

    UNMERGEABLE = "--marginal's sums and experts have no merge rule yet"

    BUNDLE = MarginalState
    MULTICLASS = False
    CLASS_PAIRS = False
    AUDITED_PER_CLASS = False
    ARRAYS = {"marginal_index": ("<u4", (None,)), "marginal_sums": ("<f8", (None, len(SUMS))),
              "marginal_experts": ("<f4", (None, len(EXPERTS)))}
    NAMED = {"marginal_sums": (SUMS, 1), "marginal_experts": (EXPERTS, 1)}

    def __init__(self, config):
        super().__init__(config, 0)
        size = config.mask + 1
        self.namespaces = self.flags(config.marginal)
        self.compete = bool(config.compete)
        self.seen = np.zeros(size, dtype=np.bool_)
        self.sums = np.zeros((size, len(SUMS)))
        self.experts = np.tile(EXPERTS.defaults().astype(np.float32),
                               (size if self.compete else 0, 1))
        self.options = np.array([float(getattr(config, name)) for name in _OWN])

    @staticmethod
    def flags(namespaces: str) -> np.ndarray:
        """A flag per namespace index: those of ``namespaces`` (``\\xHH`` escapes decoded)."""
        flags = np.zeros(256, dtype=np.bool_)
        flags[list(option_bytes(namespaces))] = True
        return flags

    def bundle(self) -> tuple:
        return self.BUNDLE(self.namespaces, self.seen, self.sums, self.experts, self.options)

    def model_arrays(self) -> dict:
        """The seen keys, their sums and (with --compete; else none) their experts."""
        keys = np.flatnonzero(self.seen)
        experts = self.experts[keys] if self.compete else np.empty((0, len(EXPERTS)))
        return {"marginal_index": keys, "marginal_sums": self.sums[keys],
                "marginal_experts": experts}

    @classmethod
    def saved(cls, config) -> set[str]:
        return set(cls.ARRAYS)

    def restore(self, arrays: dict) -> None:
        """A model's keys and sums; experts where it kept them (a key without takes fresh
        experts, as VW's table gives a key it lacks)."""
        keys = arrays["marginal_index"].astype(np.int64)
        self.seen[keys] = True
        self.sums[keys] = arrays["marginal_sums"]
        if self.compete and len(arrays["marginal_experts"]):
            self.experts[keys] = arrays["marginal_experts"]

    @staticmethod
    def check(arrays: dict, config) -> None:
        """Keys in the table, increasing; a row of sums per key, experts a row per key or
        none; all finite."""
        keys, sums, experts = (arrays["marginal_index"], arrays["marginal_sums"],
                               arrays["marginal_experts"])
        require(increasing_below(keys, 1 << config.bit_precision),
                "marginal_index: out of range, unsorted or repeated")
        require(len(sums) == len(keys), "marginal_sums: not a row per key")
        require(len(experts) in (0, len(keys)), "marginal_experts: not a row per key")
        require(bool(np.isfinite(sums).all() and np.isfinite(experts).all()),
                "marginal sums or experts not finite")

    def readable_lines(self, names: dict[int, str] | None = None) -> list[str]:
        """VW's: ``marginals size = N`` and ``key:num:den`` per seen key (by key; with
        --invert_hash ``names``, the pair's name ``ns^x*id`` for the key), then with --compete
        ``expert_state size = N`` and ``key:`` with each expert's regret, squared regrets and
        weight (VW lists these in its hash table's order, olearn by key)."""
        keys = np.flatnonzero(self.seen).tolist()
        lines = [f"marginals size = {len(keys)}"]
        for key in keys:
            num, den = self.sums[key]
            label = names.get(key, "") if names is not None else key
            lines.append(f"{label}:{num:g}:{den:g}")
        if self.compete:
            lines.append(f"expert_state size = {len(keys)}")
            lines += [f"{key}:" + ":".join(f"{float(v):g}" for v in self.experts[key])
                      for key in keys]
        return lines

    def check_labels(self, batch, indexing: float, prefix: str) -> list[str]:
        """Any label: a scalar problem."""
        return []
