"""How --dask combines the partitions' states, each field by the rule its layout declares
(olearn/core/fields.py); docs/algorithms.md §6.

How a state combines (once per pass):

* the weights w and the adaptive sums G: with --adaptive (VW's default), each coordinate's mean
  over the partitions weighted by how much each increased that coordinate's G during the pass
  (its sum of squared gradients), so that a partition that never saw a feature does not dilute
  what the others learned about it. VW's ``--span_server`` does the same, weighting by each
  node's whole G; the part of G from before the pass is common to all partitions, so we weight
  by its increase. G is averaged rather than summed, as in VW: each partition sized its steps by
  the G of the data it saw, and the next pass continues from the average of those learners.
  Coordinates that no partition moved, and all weights without --adaptive, take the mean
  weighted by the examples each partition learned from (importance weights);
* example-weighted means too: the global normalizer sums and t, --stage_poly's SSM sums and
  counters (the lazy --l1/--l2 is flushed at the end of every task, so its snapshots and
  accumulators are zero and do not travel);
* largest: the normalizer N of each weight (the largest |x| any partition saw), the top of the
  label range, and --stage_poly's parent flags (the union of the parents found);
* smallest: the bottom of the label range and each monomial's smallest depth;
* not at all: the weights' scratch rate, written before it is read in every update.

With --dask_sync the fields that average (w, G, the normalizer sums, t) instead take the
segment's start plus the sum of the partitions' changes (the largest and smallest are the
same): as if the partitions' segments had been learned one after another, each from the state
before them all, which keeps one process's step sizes (G and t grow with all the examples)
and its progress (averaging K partitions' states makes about one partition's progress per
merge, which matters when a pass is far from convergence). Summing overshoots when the
partitions move far between merges (once per pass it diverged on sst2), so N should be small
against a partition: 200 met the accuracy bar on all eight datasets of BENCHMARKS.md.
--stage_poly is refused with --dask_sync (its stages need whole passes).

Under either rule, a weight learned with a smaller normalizer N (its partition saw smaller |x|)
is first put in the units of the largest, as the learner rescales w when a larger |x| arrives
(keeping w·N^p; norm_power), so partitions' weights combine in the same units.

Each pass is a function of the state before it and the partitions alone: every task (and
every segment of a --dask_sync learner) is deterministic and the tree's order fixed, so the
model depends neither on which worker ran what nor on the number of workers, one partition
gives exactly the single-process model (up to rounding with --l1/--l2, flushed at each pass's
end; with --stage_poly, whose stage counters restart after pass 1 as stages stop, the
predictions only), and a task lost with its worker is simply run again (a --dask_sync learner
starts again from the merged state).

With --stage_poly, stages happen only in pass 1, on each partition separately; the union of the
parents found is then frozen, and later passes average the weights of that fixed feature set.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from olearn.engine.learner import OnlineLearner
from olearn.features import stage_poly
from olearn.kernel import layouts
from olearn.learners.weights import COLUMNS, W_G, W_N, W_W, WIDTH
from olearn.options.config import Config

MAX_WARNINGS = 100  # parse warnings reported per pass (the first ones, in partition order)
# How each field combines, as its layout declares it (olearn/core/fields.py): the weight columns
# averaged (by G's increase with --adaptive, else by examples) or taking the largest, the
# scratch rate not at all, the state's fields averaged by examples or taking the largest or
# smallest; with --dask_sync the averaged fields add up their changes instead.
W_MEAN = COLUMNS.merged_by("gradient") + COLUMNS.merged_by("mean")
W_MAX = COLUMNS.merged_by("max")
W_LOCAL = COLUMNS.merged_by("local")  # scratch: the fresh value in each task
W_IN_MEAN = W_MEAN.index(W_W)  # where w is among the averaged columns
S_MEAN, S_MAX, S_MIN = (layouts.STATE.merged_by(rule) for rule in ("mean", "max", "min"))
LABELS = layouts.STATS.merged_by("labels")
assert sorted(W_MEAN + W_MAX + W_LOCAL) == list(range(len(COLUMNS))) and W_MAX == [W_N]
assert sorted(S_MEAN + S_MAX + S_MIN) == list(range(layouts.STATE_SIZE))


@dataclasses.dataclass
class Snapshot:
    """A learner's state: what is broadcast each pass and what each partition sends back."""

    weights: np.ndarray
    state: np.ndarray
    poly: tuple  # min_depth, flags, ssm, counters (the origin is unused: no --invert_hash)
    # (no lazy regularization snapshots: every task ends with a flush, which zeroes them)
    family: tuple  # the family's merged state then the reduction's: averaged parts, maximal
    split: tuple = (0, 0)  # how many of the averaged and of the maximal parts are the family's

    @classmethod
    def of(cls, learner: OnlineLearner) -> "Snapshot":
        means, highs = learner.family.merged()
        more_means, more_highs = learner.reduction.merged()
        return cls(learner.weights, learner.state, learner.poly[:4],
                   (means + more_means, highs + more_highs), (len(means), len(highs)))

    def put(self, learner: OnlineLearner) -> None:
        learner.weights[:] = self.weights
        learner.state[:] = self.state
        for mine, theirs in zip(learner.poly, self.poly):
            mine[:] = theirs
        self.put_merged(learner)

    def copy(self) -> "Snapshot":
        """A copy whose arrays are its own."""
        return Snapshot(self.weights.copy(), self.state.copy(),
                        tuple(a.copy() for a in self.poly),
                        tuple(tuple(a.copy() for a in arrays) for arrays in self.family),
                        self.split)

    def put_merged(self, learner: OnlineLearner) -> None:
        """Give the family and the reduction their merged parts."""
        (means, highs), (m, h) = self.family, self.split
        learner.family.put_merged(means[:m], highs[:h])
        learner.reduction.put_merged(means[m:], highs[h:])

    def __sizeof__(self) -> int:
        # what Dask counts for memory and transfers (it would see only the object, not arrays)
        return _nbytes(self.weights, self.state, *self.poly, *self.family[0], *self.family[1])


def _nbytes(*arrays: np.ndarray | None) -> int:
    return 64 + sum(a.nbytes for a in arrays if a is not None)


@dataclasses.dataclass
class Partial:
    """Partitions combined so far: the means, maxima and minima of their states (see the
    module's docstring), and their loss statistics."""

    weight: float               # examples learned from (importance-weighted)
    rows: np.ndarray            # the weight rows' w, G, scratch: their mean
    gradient: np.ndarray | None  # --adaptive: the pass's increase of G, which weights ``rows``
    w_by_examples: np.ndarray | None  # --adaptive: w weighted by examples (None: rows' w)
    means: list[np.ndarray]     # weighted by examples
    highs: list[np.ndarray]
    lows: list[np.ndarray]
    stats: np.ndarray
    row: np.ndarray | None      # the last progress row of the last partition
    warnings: list[str]
    lines: int                  # the lines of the partitions learned to their end
    more: list[bool]            # per partition, in order: whether examples follow the segment
    norm_power: float           # w·N^norm_power is what --normalized keeps (0: no N)
    split: tuple                # Snapshot.split of the family's parts

    def __sizeof__(self) -> int:
        return _nbytes(self.rows, self.gradient, self.w_by_examples, *self.means, *self.highs,
                       *self.lows, self.stats)


def norm_power(config: Config) -> float:
    """The power p for which --normalized keeps w·N^p when N grows (gd.update rescales w by
    (N_old/N_new)^p: p is 1 with VW's defaults); 0 without --normalized."""
    adaptive, normalized, _ = config.update_rule
    if not normalized:
        return 0.0
    return 2.0 * (1.0 - config.power_t) if adaptive else 2.0


def partial_of(snap: Snapshot, start_g: np.ndarray | None, stats: np.ndarray,
             row: np.ndarray | None, warnings: list[str], lines: int, more: bool = False,
             power: float = 0.0) -> Partial:
    """A partition's final state as a Partial; ``start_g`` is G at the start of the pass
    (None without --adaptive, and with --dask_sync, which adds changes up instead), ``more``
    whether examples follow (--dask_sync) and ``power`` the normalizer's (norm_power). Arrays
    stay float32 on the wire; combine() works in float64."""
    depth, flags, ssm, counters = snap.poly
    gradient = None if start_g is None else _change(snap.weights[:, W_G], start_g)
    # flags hold only the PARENT bit between examples, so their max is the union of parents
    family_means, family_highs = snap.family
    return Partial(float(stats[layouts.R_W_LABELED]), snap.weights[:, W_MEAN], gradient, None,
                   [snap.state[S_MEAN], ssm, counters, *family_means],
                   [snap.weights[:, W_MAX], snap.state[S_MAX], flags, *family_highs],
                   [snap.state[S_MIN], depth], stats, row, warnings, lines, [more], power,
                   snap.split)


def merge_stats(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Progress statistics of two sets of examples, by each field's declared rule: sums add,
    flags take the largest, the first two distinct labels seen (VW's best-constant
    bookkeeping) are kept in order, and a third one sets the many-labels flag; ``a``'s own
    table bookkeeping is kept."""
    out = a.copy()
    added, highest = layouts.STATS.merged_by("sum"), layouts.STATS.merged_by("max")
    out[added] = a[added] + b[added]
    out[highest] = np.maximum(a[highest], b[highest])
    labels = []
    for label in (*a[LABELS], *b[LABELS]):
        if not math.isnan(label) and label not in labels:
            labels.append(label)
    out[LABELS] = (labels + [math.nan, math.nan])[:2]
    out[layouts.R_MANY_LABELS] = max(out[layouts.R_MANY_LABELS], float(len(labels) > 2))
    return out


def _change(x: np.ndarray, start: np.ndarray) -> np.ndarray:
    """x - start, in x's dtype; 0 where they are equal (an adaptive sum that overflowed float32
    to inf and stayed there did not change: inf - inf would be NaN)."""
    return np.subtract(x, start, out=np.zeros_like(x), where=x != start)


def _added(x: np.ndarray, y: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``start`` plus the changes to x and to y from it, x + y - start, in float64. Where that
    is inf - inf (an adaptive sum overflowed float32): start if it was infinite (it stayed),
    else the infinite side."""
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):
        total = x + y - start
    undefined = np.isnan(total) & ~(np.isnan(x) | np.isnan(y) | np.isnan(start))
    if undefined.any():
        begun = np.broadcast_to(start, total.shape)[undefined]
        total[undefined] = np.where(np.isinf(begun), begun, x[undefined] + np.broadcast_to(
            y, total.shape)[undefined])
    return total


def _mix(x: np.ndarray, y: np.ndarray, share) -> np.ndarray:
    """The running weighted mean: x moved ``share`` of the way to y, in float64 (exactly x
    where share is 0). Where a side is infinite (an adaptive sum overflowed float32), so is the
    mean: the infinite side's value, y's only where share is 1."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf, 0·inf: NaN, replaced below
        mixed = x + share * (y - x)
    undefined = np.isnan(mixed) & ~np.isnan(x) & ~np.isnan(y)
    if undefined.any():
        to_y = np.broadcast_to(share, mixed.shape)[undefined] == 1
        mixed[undefined] = np.where(to_y, np.broadcast_to(y, mixed.shape)[undefined],
                                    np.broadcast_to(x, mixed.shape)[undefined])
    return mixed


def in_frame(w: np.ndarray, norm: np.ndarray, top: np.ndarray, power: float) -> np.ndarray:
    """Weights learned with normalizers ``norm`` as they would be with the larger ``top``: the
    rescaling gd.update applies when a larger |x| arrives (w·N^power kept), so that weights of
    partitions that saw different largest |x| are averaged or added in the same units. Exactly
    ``w`` where the normalizer is already the largest (or not yet set)."""
    w = np.asarray(w, np.float64)
    if power == 0:
        return w
    ratio = np.divide(norm, top, out=np.ones(len(top)), where=(norm > 0) & (norm < top))
    return w * ratio ** power


def combine(a: Partial, b: Partial, start: Snapshot | None = None) -> Partial:
    """Two partials as one: averaged, or with ``start`` (--dask_sync: the state both began
    from) the start plus both partials' changes."""
    weight = a.weight + b.weight
    share = b.weight / weight if weight > 0 else 0.0
    highs = [np.maximum(x, y) for x, y in zip(a.highs, b.highs)]
    norm = highs[0][:, 0]  # the normalizers N (W_MAX is N's column alone)

    def rows_of(p: Partial | Snapshot) -> np.ndarray:  # the averaged columns, in norm's units
        rows, n = ((p.weights[:, W_MEAN], p.weights[:, W_N]) if isinstance(p, Snapshot)
                   else (p.rows, p.highs[0][:, 0]))
        rows = np.array(rows, np.float64)
        rows[:, W_IN_MEAN] = in_frame(rows[:, W_IN_MEAN], n, norm, a.norm_power)
        return rows

    w_by_examples = None
    gradient = None
    if start is not None:
        rows = _added(rows_of(a), rows_of(b), rows_of(start))
        begin = [start.state[S_MEAN], *start.poly[2:4], *start.family[0]]
        means = [_added(x, y, z) for x, y, z in zip(a.means, b.means, begin)]
    else:
        means = [_mix(x, y, share) for x, y in zip(a.means, b.means)]
        if a.gradient is None:
            rows = _mix(rows_of(a), rows_of(b), share)
        else:
            gradient = a.gradient.astype(np.float64) + b.gradient
            to_b = np.divide(b.gradient, gradient, out=np.zeros_like(gradient),
                             where=(gradient > 0) & np.isfinite(gradient))
            overflowed = np.isinf(gradient)  # the infinite increases share (inf / inf is NaN)
            infinite_a, infinite_b = np.isinf(a.gradient[overflowed]), np.isinf(
                b.gradient[overflowed])
            to_b[overflowed] = infinite_b / (infinite_a.astype(np.float64) + infinite_b)
            rows = _mix(rows_of(a), rows_of(b), to_b[:, None])
            w_by_examples = _mix(*(in_frame(p.rows[:, W_IN_MEAN] if p.w_by_examples is None
                                             else p.w_by_examples, p.highs[0][:, 0], norm,
                                             a.norm_power) for p in (a, b)), share)
    return Partial(weight, rows, gradient, w_by_examples, means, highs,
                   [np.minimum(x, y) for x, y in zip(a.lows, b.lows)],
                   merge_stats(a.stats, b.stats), b.row if b.row is not None else a.row,
                   (a.warnings + b.warnings)[:MAX_WARNINGS], a.lines + b.lines,
                   a.more + b.more, a.norm_power, a.split)


def finish(p: Partial, config: Config, first_pass: bool) -> Snapshot:
    """The state for the next pass. With --stage_poly no stage follows pass 1 (the parents are
    frozen), except that --batch_sz 0's stage at the end of pass 1 runs, on the averaged weights
    (the same on every partition), before pass 2's first example."""
    state_mean, ssm, counters, *family_means = p.means
    norm, top, flags, *family_highs = p.highs
    bottom, depth = p.lows
    weights = np.empty((len(norm), WIDTH), dtype=np.float32)
    weights[:, W_MEAN] = p.rows
    if p.w_by_examples is not None:
        # no partition's G moved: w changed only by regularization, or by steps too small
        # to show in G's float32; the mean by examples is the estimate there
        still = p.gradient <= 0
        weights[still, W_W] = p.w_by_examples[still]
    weights[:, W_MAX] = norm
    weights[:, W_LOCAL] = COLUMNS.defaults()[W_LOCAL]
    state = np.empty(layouts.STATE_SIZE)
    state[S_MEAN] = state_mean
    state[S_MAX], state[S_MIN] = top, bottom
    counters = counters.copy()
    if config.stage_poly:
        counters[stage_poly.C_PERIOD] = 0.0
        counters[stage_poly.C_COUNTER_BASE] = 0.0
        counters[stage_poly.C_PENDING] = float(first_pass and config.batch_sz == 0)
    return Snapshot(weights, state, (depth, flags, ssm, counters),
                    (tuple(family_means), tuple(family_highs)), p.split)


def report(p: Partial) -> tuple[np.ndarray, np.ndarray | None, list[str], int, list[bool]]:
    """What the client prints and needs next: statistics, last row, warnings, lines, and which
    partitions have examples after the segment (no state)."""
    return p.stats, p.row, p.warnings, p.lines, p.more


def tree(items: list, pair):
    """Combine ``items`` pairwise, level by level, by ``pair(a, b, level, i)`` (the i-th pair
    of its level): the order of every floating-point operation is fixed by the items' order,
    wherever it runs."""
    level = 0
    while len(items) > 1:
        items = [pair(items[i], items[i + 1], level, i // 2) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
        level += 1
    return items[0]
