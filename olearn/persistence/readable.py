"""--readable_model and --invert_hash: the model as text, in VW's layout
(docs/vw-reference.md §6.1)."""
from __future__ import annotations

import dataclasses
import zlib

import numpy as np

import olearn
from olearn.core.atomic import write_whole
from olearn.kernel import layouts
from olearn.learners.weights import W_W
from olearn.options.config import MODEL_OPTIONS, REGISTRY, Config
from olearn.reductions.oaa import CLASS_NORM, CLASS_TOTAL

_DEFAULTS = Config()


# VW writes these last, each one's namespaces merged, deduplicated and sorted.
_MERGED = ("ignore", "ignore_linear", "keep")


def _kept_options(config: Config) -> str:
    """Model options that differ from the defaults, as command-line flags (VW's spelling: the
    first long one, --OjaNewton) in VW's order: alphabetically, then --ignore, --ignore_linear
    and --keep with their namespaces merged."""
    flags, merged = [], []
    spelled = {name: next(f for f in REGISTRY[name].flags if f.startswith("--"))
               for name in MODEL_OPTIONS}
    for name in sorted(MODEL_OPTIONS, key=spelled.get):
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


def _resume_lines(learner, passes: int, table: bool) -> list[str]:
    """VW's resume block: the learner's sums and the progress counters. olearn's own
    regularization is applied to the weights written (``sync``); l1_state and l2_state are
    what --l1_state/--l2_state left pending (VW's gravity and contraction, in float32), which
    the first example applies. VW advances its table's counters only when it
    prints the table: with --quiet (or no ``table`` kept in the stats) they stay at their
    start. VW's t counts the held-out examples too (its rate subtracts them)."""
    config, state, stats = learner.config, learner.state, learner.stats
    sum_loss = stats[layouts.R_SUM_LOSS]
    counters = stats.copy()  # the table's counters: where it last printed, and when it prints next
    if config.quiet or not table:
        counters[[layouts.R_LAST_LOSS, layouts.R_DUMP_AT, layouts.R_LAST_W_LABELED]] = 0.0, 1.0, 0.0
    norm, total = state[layouts.S_NORM], state[layouts.S_TOTAL]
    if learner.reduction.on:  # VW writes its first per-model state's (class or copy 0's)
        classes = learner.reduction.classes
        norm, total = classes[0, CLASS_NORM], classes[0, CLASS_TOTAL]
    return [":1", f"initial_t {config.t0:g}", f"norm normalizer {norm:g}",
            f"t {state[layouts.S_T] + stats[layouts.R_HOLDOUT_W]:g}", f"sum_loss {sum_loss:g}",
            f"sum_loss_since_last_dump {sum_loss - counters[layouts.R_LAST_LOSS]:g}",
            f"dump_interval {counters[layouts.R_DUMP_AT]:g}",
            f"min_label {state[layouts.S_MIN]:g}", f"max_label {state[layouts.S_MAX]:g}",
            f"weighted_labeled_examples {stats[layouts.R_W_LABELED]:g}",
            f"weighted_labels {stats[layouts.R_W_LABEL_SUM]:g}",
            f"weighted_unlabeled_examples {stats[layouts.R_W_UNLABELED]:g}",
            f"example_number {stats[layouts.R_EXAMPLES]:g}",
            f"total_features {stats[layouts.R_FEATURES]:g}",
            f"total_weight {total:g}",
            f"sd::oec.weighted_labeled_examples {counters[layouts.R_LAST_W_LABELED]:g}",
            f"current_pass {passes}", f"l1_state {np.float32(state[layouts.S_L1_STATE]):g}",
            f"l2_state {np.float32(state[layouts.S_L2_STATE]):g}"]


def header_lines(config: Config, state: np.ndarray, values: np.ndarray, options: str
                 ) -> list[str]:
    """VW's header of a text model: olearn's version, the label range, the bits, the kept
    ``options`` and a CRC-32 of the ``values`` written (olearn's checksum)."""
    checksum = zlib.crc32(np.ascontiguousarray(values).tobytes())
    return [f"Version olearn {olearn.__version__}", "Id ",
            f"Min label:{state[layouts.S_MIN]:g}", f"Max label:{state[layouts.S_MAX]:g}",
            f"bits:{config.bit_precision}", "lda:0", "0 ngram:", "0 skip:",
            f"options: {options}".rstrip(), f"Checksum: {checksum}"]


def vw_kept_options(config: Config) -> str:
    """The model options VW itself keeps in a model's header (it keeps no --l1 or --l2)."""
    return _kept_options(dataclasses.replace(config, l1=0.0, l2=0.0))


def write(path: str, learner, passes: int, names: dict[int, str] | None = None,
          table: bool = True, own_names: dict[int, str] | None = None) -> None:
    """Write ``learner``'s model (an OnlineLearner after ``passes`` passes) as text: a header,
    the reduction's own lines (``readable_lines``), the resume block (with a reduction, its
    first class's or copy's normalizer sums, as VW's), then a line ``index:values`` per
    coordinate the learner family lists (learners/family.py ``readable_rows``: ``index:w G N``
    per nonzero weight for gradient descent, ``index:w`` with --predict_only_model), each
    prefixed by the feature's name with --invert_hash. ``table``: whether the stats kept the
    progress table's counters (--dask prints its table from the passes' sums); ``own_names``:
    with --invert_hash, the names of the reduction's own entries (--marginal's ids)."""
    config, weights, state = learner.config, learner.weights, learner.state
    predict_only = config.predict_only_model
    nonzero = np.flatnonzero(weights[:, W_W])
    lines = header_lines(config, state, weights[nonzero, W_W], _kept_options(config))
    lines += learner.reduction.readable_lines(own_names)
    lines += [":0"] if predict_only else _resume_lines(learner, passes, table)
    listed, values = learner.family.readable_rows(weights, predict_only)
    for j, row in zip(listed.tolist(), values.tolist()):
        entry = f"{j}:{' '.join(f'{v:g}' for v in row)}"
        if names is not None:
            entry = f"{names.get(j, '')}:{entry}"  # VW: an unseen feature, no name
        lines.append(entry)
    write_whole(path, ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
