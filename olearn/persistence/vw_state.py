"""What VW's model files hold beside the weights, declared once for its text models
(--readable_model, --invert_hash) and its binary ones (-f with --model_format vw, -i): the
options a model keeps and gradient descent's resume block (docs/vw-model-files.md)."""
from __future__ import annotations

import dataclasses

import numpy as np

from olearn.kernel import layouts
from olearn.options.config import MODEL_OPTIONS, REGISTRY, Config
from olearn.reductions.oaa import CLASS_NORM, CLASS_TOTAL

_DEFAULTS = Config()

# VW writes these last, each one's namespaces merged, deduplicated and sorted.
_MERGED = ("ignore", "ignore_linear", "keep")

# The options VW's binary models keep (its options string) that olearn reads and writes: the
# features' and gradient descent's, those of the reductions of which VW's file holds no state
# (their weights are gradient descent's), and --ftrl, --pistol and --coin, whose state VW's
# records hold after each weight (docs/vw-model-files.md). The bits, --ngram and --skips
# travel in header fields of their own.
VW_KEPT = ("adaptive", "affix", "binary", "cubic", "hash", "hash_seed", "ignore",
           "ignore_linear", "indexing", "interactions", "invariant", "keep", "learning_rate",
           "link", "named_labels", "noconstant", "normalized", "power_t", "quadratic",
           "redefine", "sgd",
           "oaa", "csoaa", "multilabel_oaa", "ect", "error", "bootstrap", "bs_type", "nn",
           "inpass", "multitask", "dropout", "lrq", "lrqfa", "lrqdropout", "boosting",
           "csoaa_ldf", "wap_ldf", "baseline", "ftrl", "pistol", "coin")
# Model options VW does not keep whose effect a VW model still carries, or which VW asks for
# again on its command line: the label range (the header's), initial_t (the resume block's),
# the loss, the regularization and FTRL's alpha and beta (a continued run names them, as
# VW's).
VW_UNKEPT = ("bit_precision", "ngram", "skips", "initial_t", "min_prediction", "max_prediction",
             "loss_function", "quantile_tau", "expectile_q", "l1", "l2", "sparse_l2",
             "ftrl_alpha", "ftrl_beta")


@dataclasses.dataclass(frozen=True)
class ResumeField:
    """A field of VW's resume block: its name in text models, its binary type (struct's
    code), and the first VW version whose files have it (None: all)."""

    name: str
    fmt: str
    since: tuple[int, int, int] | None = None


# gd's online state, in VW's order.
RESUME = tuple(ResumeField(*spec) for spec in (
    ("initial_t", "f"), ("norm normalizer", "d"), ("t", "d"), ("sum_loss", "d"),
    ("sum_loss_since_last_dump", "d"), ("dump_interval", "f"), ("min_label", "f"),
    ("max_label", "f"), ("weighted_labeled_examples", "d"), ("weighted_labels", "d"),
    ("weighted_unlabeled_examples", "d"), ("example_number", "Q"), ("total_features", "Q"),
    ("total_weight", "d", (7, 10, 1)), ("sd::oec.weighted_labeled_examples", "d", (7, 10, 1)),
    ("current_pass", "Q", (7, 10, 1)), ("l1_state", "d", (9, 0, 0)),
    ("l2_state", "d", (9, 0, 0))))


def kept_options(config: Config, names: tuple[str, ...] = MODEL_OPTIONS) -> str:
    """The options of ``names`` that differ from the defaults, as command-line flags (VW's
    spelling: the first long one, --OjaNewton) in VW's order: alphabetically, then --ignore,
    --ignore_linear and --keep with their namespaces merged. -b is the header's own."""
    flags, merged = [], []
    spelled = {name: next(f for f in REGISTRY[name].flags if f.startswith("--"))
               for name in names}
    for name in sorted(names, key=spelled.get):
        value = getattr(config, name)
        if value == getattr(_DEFAULTS, name) or name == "bit_precision":
            continue
        flag = spelled[name]
        if name in _MERGED:
            merged.append(f"{flag} {''.join(sorted(set(''.join(value))))}")
        elif value is True:
            flags.append(flag)
        else:  # a repeatable option once per value, as VW writes it (--quadratic ab --quadratic cd)
            flags += [f"{flag} {v}" for v in (value if isinstance(value, (list, tuple))
                                             else [value])]
    return " ".join(flags + sorted(merged))


def resume_values(learner, passes: int, table: bool) -> list[float]:
    """VW's resume block of ``learner`` (an OnlineLearner after ``passes`` passes), a value
    per field of :data:`RESUME`: the learner's sums and the progress counters. olearn's own
    regularization is applied to the weights written (``sync``); l1_state and l2_state are
    what --l1_state/--l2_state left pending (VW's gravity and contraction, in float32), which
    the first example applies. VW advances its table's counters only when it prints the
    table: with --quiet (or no ``table`` kept in the stats) they stay at their start. VW's t
    counts the held-out examples too (its rate subtracts them)."""
    config, state, stats = learner.config, learner.state, learner.stats
    sum_loss = stats[layouts.R_SUM_LOSS]
    counters = stats.copy()  # the table's counters: where it last printed, and when it prints next
    if config.quiet or not table:
        counters[[layouts.R_LAST_LOSS, layouts.R_DUMP_AT, layouts.R_LAST_W_LABELED]] = 0.0, 1.0, 0.0
    norm, total = state[layouts.S_NORM], state[layouts.S_TOTAL]
    if learner.reduction.on:  # VW writes its first per-model state's (class or copy 0's)
        classes = learner.reduction.classes
        norm, total = classes[0, CLASS_NORM], classes[0, CLASS_TOTAL]
    return [config.t0, norm, state[layouts.S_T] + stats[layouts.R_HOLDOUT_W], sum_loss,
            sum_loss - counters[layouts.R_LAST_LOSS], counters[layouts.R_DUMP_AT],
            state[layouts.S_MIN], state[layouts.S_MAX], stats[layouts.R_W_LABELED],
            stats[layouts.R_W_LABEL_SUM], stats[layouts.R_W_UNLABELED],
            stats[layouts.R_EXAMPLES], stats[layouts.R_FEATURES], total,
            counters[layouts.R_LAST_W_LABELED], passes,
            float(np.float32(state[layouts.S_L1_STATE])),
            float(np.float32(state[layouts.S_L2_STATE]))]


def resume_lines(learner, passes: int, table: bool) -> list[str]:
    """The resume block as VW's text models write it: ``name value`` per field, integers
    whole and the rest as C++ streams print them (6 significant digits)."""
    return [f"{field.name} {int(value)}" if field.fmt == "Q" else f"{field.name} {value:g}"
            for field, value in zip(RESUME, resume_values(learner, passes, table))]
