"""``--lrq ABk`` and ``--lrqfa FIELDSk``: VW's low-rank quadratic features (lrq.cc, lrqfa.cc).

A pair of namespaces (a, b) of rank k adds, per feature l of the *left* namespace, each
feature r of the *right* one and each n in 1..k, a feature at slot ``r + n`` whose value is
``w[l + n]·x_l·x_r``: the weight of the left feature's n-th factor, read from the table when
the example is expanded. The family then learns the right features' factors with the left
ones held fixed. A learned example is expanded, predicted and learned twice, left and right
swapped the second time (which side is left alternates with the example's number, VW's
example counter), and its first prediction is the one shown; an example that is not learned
is expanded once. A left factor still at 0 when a learned example reads it first takes a
fixed draw of VW's generator seeded by its index (VW's way off the saddle point at 0).

``--lrq`` pairs: VW's set of pair strings (sorted, once each); the n-th factor of a feature of
namespace a is slot ``h·W + n``. ``--lrqfa``: one string of namespaces (fields) and k; every
two fields in order make a pair, and a feature's factors are per field of the other side:
``h·W + field·k + n`` (field: the namespace's position in the string, its last). Its left
factors start at draw·0.5/√k; it never uses the example's offset for them (VW's). W is VW's
feature width, the smallest power of two >= 1 + k (``--lrq``, the largest k) or
1 + fields·k (``--lrqfa``); every index of the batch is widened to ``h·W`` by the kernels.

``--lrqdropout`` (``--lrq`` only): when learning, each (left feature, n) is kept by a draw of
a generator seeded with ``random_seed | 8675309``; when predicting, every factor counts half.

:class:`LowRankQuadratic` holds the configuration; the kernels are reductions/lrq_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.option import flag, option_bytes, repeated, text
from olearn.reductions.oaa import OneAgainstAll, feature_width

OPTIONS = (
    repeated("--lrq", metavar="ABk", model=True,
             help="Low-rank quadratic features of rank k for namespaces A and B (repeatable)."),
    text("--lrqfa", metavar="FIELDSk", model=True,
         help="Field-aware low-rank quadratic features of rank k for every two of the "
              "namespaces FIELDS."),
    flag("--lrqdropout", model=True,
         help="With --lrq: train the low-rank quadratic features with dropout."),
)

DROPOUT_SEED = 8675309  # VW's lrq seeds its dropout generator with random_seed | this

# Per pair (a row each): namespace a, namespace b, rank k, a's field and b's field (--lrqfa's
# positions; 0 for --lrq).
PAIR_A, PAIR_B, PAIR_K, PAIR_FIELD_A, PAIR_FIELD_B = range(5)

# ``pairs`` as above; ``settings``: [W, VW's stride shift, --lrqfa (1) or --lrq (0),
# --lrqdropout]; ``counters``: [the dropout generator's state, the example counter];
# ``spans``: scratch the kernels refill per example, a row per namespace (``SPAN_*``).
LowRankState = namedtuple("LowRankState", ["pairs", "settings", "counters", "spans"])
SET_WIDTH, SET_STRIDE_SHIFT, SET_FIELD_AWARE, SET_DROPOUT = range(4)
COUNT_RANDOM, COUNT_EXAMPLE = range(2)
# An example's namespace's features: how many, its first row and its last row; where in the
# copy the low-rank features it received start, and how many (the first expansion's).
SPAN_COUNT, SPAN_FIRST, SPAN_LAST, SPAN_PUSHED_AT, SPAN_PUSHED = range(5)
MAX_RANK = 1 << 16


def chosen(config) -> bool:
    """Whether --lrq or --lrqfa is given."""
    return bool(config.lrq) or config.lrqfa is not None


def _rank(digits: bytes, what: str) -> int:
    """The rank after a pair's namespaces (an OptionError unless digits, at most MAX_RANK)."""
    from olearn.errors import OptionError
    if not digits.isdigit() or int(digits) > MAX_RANK:
        raise OptionError(f"{what}: low-rank quadratic features must involve two sets and a "
                          f"rank (at most {MAX_RANK})")
    return int(digits)


def _fields(config) -> tuple[bytes, int]:
    """--lrqfa's namespaces and rank."""
    spec = option_bytes(config.lrqfa)
    fields = spec.rstrip(b"0123456789")
    return fields, _rank(spec[len(fields):] or b"0", f"--lrqfa {config.lrqfa}")


def pairs_of(config) -> np.ndarray:
    """The pair table (``PAIR_*`` columns) of --lrq's strings or --lrqfa's string."""
    rows = []
    if config.lrqfa is not None:
        fields, k = _fields(config)
        field = {ns: i for i, ns in enumerate(fields)}  # a repeated namespace: its last
        rows = [(a, b, k, field[a], field[b])
                for i, a in enumerate(fields) for b in fields[i + 1:]]
    for name in sorted({option_bytes(name) for name in config.lrq}):
        # fewer than three bytes: no rank (refused by _rank)
        rank = _rank(name[2:], f"--lrq {name.decode(errors='replace')}")
        rows.append((name[0], name[1], rank, 0, 0))
    return np.array(rows, dtype=np.int64).reshape(-1, 5)


def width_of(config) -> int:
    """VW's feature width: the smallest power of two >= 1 + k (the largest of --lrq's) or
    1 + fields·k (--lrqfa)."""
    if config.lrqfa is not None:
        fields, k = _fields(config)
        return feature_width(1 + len(fields) * k)
    return feature_width(1 + int(pairs_of(config)[:, PAIR_K].max(initial=0)))


def check(config) -> None:
    """The options --lrq and --lrqfa refuse (they expand the example's own namespaces for one
    scalar problem of gradient descent), their strings, and room in the table for W."""
    from olearn.errors import OptionError
    if not chosen(config):
        if config.lrqdropout:
            raise OptionError("--lrqdropout needs --lrq")
        return
    name = "lrqfa" if config.lrqfa is not None else "lrq"
    if config.lrq and config.lrqfa is not None:
        raise OptionError("--lrq and --lrqfa do not go together")
    if config.lrqdropout and config.lrqfa is not None:
        raise OptionError("--lrqdropout needs --lrq (not --lrqfa)")
    for spec in (config.lrqfa, *config.lrq):
        if spec is not None and ":" in spec:
            raise OptionError(f"--{name} does not support wildcards ':'")
    for other, on in (("quadratic", bool(config.quadratic)), ("cubic", bool(config.cubic)),
                      ("interactions", bool(config.interactions)),
                      ("ignore_linear", bool(config.ignore_linear)),
                      ("stage_poly", config.stage_poly), ("audit", config.audit),
                      ("invert_hash", config.invert_hash is not None),
                      ("audit_regressor", config.audit_regressor is not None)):
        if on:
            raise OptionError(f"--{name} does not take --{other}")
    width = width_of(config)
    if width > 1 << config.bit_precision:
        raise OptionError(f"--{name} needs at least {width.bit_length() - 1} bits (-b)")


class LowRankQuadratic(OneAgainstAll):
    """--lrq's and --lrqfa's configuration: the pair table, W, VW's stride shift and the
    dropout generator; one scalar problem (no classes, no saved state of its own)."""

    BUNDLE = LowRankState
    MULTICLASS = False

    def __init__(self, config):
        from olearn.reductions.nn import stride_shift
        super().__init__(config, 0)
        self.pairs = pairs_of(config)
        self.settings = np.array([width_of(config), stride_shift(config),
                                  config.lrqfa is not None, config.lrqdropout], dtype=np.int64)
        self.counters = np.array([config.random_seed | DROPOUT_SEED, 0], dtype=np.uint64)
        self.spans = np.zeros((256, 5), dtype=np.int64)

    def bundle(self) -> tuple:
        return self.BUNDLE(self.pairs, self.settings, self.counters, self.spans)

    def end_pass(self) -> None:
        """VW's example counter counts the end of a pass as one more example."""
        self.counters[COUNT_EXAMPLE] += np.uint64(1)
