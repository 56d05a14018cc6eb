"""``--dask``: data-parallel training on a Dask cluster, by parameter averaging
(docs/algorithms.md §6; the APPLE paper's parallel protocol, §5.1).

Each pass, one task per partition (a file, or a newline-aligned byte range of a plain file) runs
the ordinary learner over its partition, starting from the state broadcast for the pass; the
workers read the data where it lies. The partitions' final states are then combined, in a fixed
binary tree over the partitions (an AllReduce, run as Dask tasks), into the state broadcast for
the next pass; the client receives only the loss statistics, and the state itself when it saves
a model.

With --dask_sync N, a pass is learned in segments: segment j of every partition (its examples
j·N to (j+1)·N, learned from the merged state of segment j-1; the task reads past the earlier
examples, from the worker's cache with -c) is one task, and the states merge after each
segment. The passes, holdout and table stay those of run_passes: a table row is still a pass,
summing all its segments' statistics, and the holdout holds out the same lines (each example
keeps its line number in its partition), scored by the model current when it is reached.

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

Each pass is a function of the state before it and the partitions alone: every task is
deterministic and the tree's order fixed, so the model depends neither on which worker ran what
nor on the number of workers, one partition gives exactly the single-process model (up to
rounding with --l1/--l2, flushed at each pass's end; with --stage_poly, whose stage counters
restart after pass 1 as stages stop, the predictions only), and a task lost with its worker
is simply run again. Each field merges by the rule its layout declares (olearn/core/fields.py).

With --stage_poly, stages happen only in pass 1, on each partition separately; the union of the
parents found is then frozen, and later passes average the weights of that fixed feature set.
Workers parse their partitions' text in every pass; with -c each worker keeps a cache of the
partitions it learns in its local directory (Dask's scratch space), written in the first pass.
Partition k is learned on worker k mod W in every pass, so the caches are reused; a partition
that moves (its worker died) is parsed from the text again on its new worker.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import glob
import hashlib
import json
import logging
import math
import os
import uuid
from typing import Iterator

import numpy as np

from olearn.data import cache, sources
from olearn.engine.learner import OnlineLearner, parse_warnings
from olearn.engine.passes import DataPlan, Outcome, run_passes
from olearn.errors import OlearnError, OptionError
from olearn.features import stage_poly
from olearn.frontends.run import header
from olearn.kernel import layouts
from olearn.learners.families import family_of
from olearn.learners.weights import COLUMNS, W_G, W_N, W_W, WIDTH
from olearn.options.config import Config
from olearn.outputs.history import plot_learning_curve, require_matplotlib
from olearn.outputs.report import TABLE_HEADER, Console, format_row
from olearn.persistence import readable

GZIP_MAGIC = b"\x1f\x8b"
MAX_WARNINGS = 100  # parse warnings reported per pass (the first ones, in partition order)
# Unsupported with --dask, each with the reason given to the user.
UNSUPPORTED = {"audit": "--audit prints examples as they are learned, on the workers",
               "invert_hash": "--invert_hash collects feature names on the workers",
               "predictions": "-p: predict with the saved model instead (olearn -t -i MODEL -p)",
               "raw_predictions": "-r: predict with the saved model instead "
                                  "(olearn -t -i MODEL -r)",
               "testonly": "-t: test in one process (olearn -t -i MODEL)",
               "cache_file": "--cache_file names one file; -c makes each worker cache the "
                             "partitions it learns",
               "oaa": "--oaa's per-class normalizer sums have no merge rule yet",
               "csoaa": "--csoaa's per-class normalizer sums have no merge rule yet",
               "multilabel_oaa": "--multilabel_oaa's per-class normalizer sums have no merge "
                                 "rule yet",
               "boosting": "--boosting's weak learners (their sums, α and v, and its "
                           "generator) have no merge rule yet",
               "ect": "--ect's per-problem normalizer sums have no merge rule yet",
               "log_multi": "--log_multi's tree has no merge rule yet",
               "marginal": "--marginal's sums and experts have no merge rule yet"}

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


@dataclasses.dataclass(frozen=True)
class Partition:
    """One task's data: a whole file, or the lines of a plain file starting in a byte range."""

    path: str
    byte_range: tuple[int, int] | None = None

    def __str__(self) -> str:
        if self.byte_range is None:
            return self.path
        return f"{self.path}[{self.byte_range[0]}:{self.byte_range[1]}]"

    def fingerprint(self, config: Config) -> dict:
        """What a cache of the partition depends on: the file's name, size and time, the byte
        range and the parsing options."""
        found = cache.fingerprint(config, [self.path])
        found["sources"][0][0] = str(self)  # also the cached batches' source name
        return found

    def plan(self, config: Config, pass_no: int) -> DataPlan:
        """Where a task reads the partition: with -c, from a cache in its worker's local
        directory, written by the first pass that runs the partition there (-k: rebuilt in
        pass 1); otherwise the text, in every pass."""
        if not config.cache:
            return DataPlan(dataclasses.replace(config, passes=1), [self.path], self.blocks)
        from distributed import get_worker
        fingerprint = self.fingerprint(config)
        name = hashlib.sha1(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:24]
        path = os.path.join(get_worker().local_directory, f"olearn-{name}.cache")
        return DataPlan(dataclasses.replace(config, cache_file=path,
                                            kill_cache=config.kill_cache and pass_no == 0),
                        [self.path], self.blocks, fingerprint)

    def blocks(self) -> Iterator[sources.Block]:
        for block in sources.blocks_of(self.path, [0], byte_range=self.byte_range):
            block.source = str(self)  # a pass over a partition is a pass over one source
            yield block


def _is_gzip(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def partitions(patterns: list[str], minimum: int = 0) -> list[Partition]:
    """The partitions of ``-d`` (globs expanded, in sorted order within each pattern): one per
    file, and plain-text files split at line boundaries into parts of about equal size when
    that is needed for at least ``minimum`` partitions (a gzip stream can only be read from its
    start, so a .gz file is always one partition)."""
    if not patterns or "-" in patterns:
        raise OptionError("--dask reads data files (-d), not stdin: the workers open them")
    files = []
    for pattern in patterns:
        found = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not found:
            raise OlearnError("no file matches this pattern", pattern)
        files += found
    sources.check_readable(files)
    plain = [path for path in files if not _is_gzip(path)]
    sizes = {path: os.path.getsize(path) for path in plain}
    wanted = minimum - (len(files) - len(plain))
    total = sum(sizes.values())
    if minimum <= len(files) or total == 0:
        return [Partition(path) for path in files]
    out = []
    for path in files:
        if path not in sizes or sizes[path] == 0:
            out.append(Partition(path))
            continue
        size = sizes[path]
        parts = min(size, max(1, math.ceil(wanted * size / total)))
        cuts = [size * k // parts for k in range(parts + 1)]
        out += [Partition(path, (a, b)) for a, b in zip(cuts, cuts[1:])]
    return out


# -- the state that travels ------------------------------------------------------------------

@dataclasses.dataclass
class Snapshot:
    """A learner's state: what is broadcast each pass and what each partition sends back."""

    weights: np.ndarray
    state: np.ndarray
    poly: tuple  # min_depth, flags, ssm, counters (the origin is unused: no --invert_hash)
    # (no lazy regularization snapshots: every task ends with a flush, which zeroes them)
    family: tuple  # the family's own state: its averaged parts, its maximal parts

    @classmethod
    def of(cls, learner: OnlineLearner) -> "Snapshot":
        return cls(learner.weights, learner.state, learner.poly[:4], learner.family.merged())

    def put(self, learner: OnlineLearner) -> None:
        learner.weights[:] = self.weights
        learner.state[:] = self.state
        for mine, theirs in zip(learner.poly, self.poly):
            mine[:] = theirs
        learner.family.put_merged(*self.family)

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


def _partial(snap: Snapshot, start_g: np.ndarray | None, stats: np.ndarray,
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
                   [snap.state[S_MIN], depth], stats, row, warnings, lines, [more], power)


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


def _in_frame(w: np.ndarray, norm: np.ndarray, top: np.ndarray, power: float) -> np.ndarray:
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
        rows[:, W_IN_MEAN] = _in_frame(rows[:, W_IN_MEAN], n, norm, a.norm_power)
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
            w_by_examples = _mix(*(_in_frame(p.rows[:, W_IN_MEAN] if p.w_by_examples is None
                                             else p.w_by_examples, p.highs[0][:, 0], norm,
                                             a.norm_power) for p in (a, b)), share)
    return Partial(weight, rows, gradient, w_by_examples, means, highs,
                   [np.minimum(x, y) for x, y in zip(a.lows, b.lows)],
                   merge_stats(a.stats, b.stats), b.row if b.row is not None else a.row,
                   (a.warnings + b.warnings)[:MAX_WARNINGS], a.lines + b.lines,
                   a.more + b.more, a.norm_power)


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
                    (tuple(family_means), tuple(family_highs)))


def report(p: Partial) -> tuple[np.ndarray, np.ndarray | None, list[str], int, list[bool]]:
    """What the client prints and needs next: statistics, last row, warnings, lines, and which
    partitions have examples after the segment (no state)."""
    return p.stats, p.row, p.warnings, p.lines, p.more


def learn_partition(config: Config, part: Partition, pass_no: int, start: Snapshot | None,
                    params: np.ndarray, segment: int = 0) -> Partial:
    """One task: learn a pass over ``part`` from ``start`` (None: a fresh learner); with
    --dask_sync N, only its examples ``segment``·N to (``segment`` + 1)·N, reading past the
    earlier ones (their lines keep their numbers, so the holdout holds out the same lines).
    Pure and deterministic, so Dask may run it again on another worker."""
    learner = OnlineLearner(config)
    if start is not None:
        start.put(learner)
    learner.params[:] = params
    sync = config.dask_sync
    start_g = learner.weights[:, W_G].copy() if config.update_rule[0] and not sync else None
    first, end = (segment * sync, (segment + 1) * sync) if sync else (0, math.inf)
    warnings: list[str] = []
    row = None
    lines = seen = 0
    more = False
    plan = part.plan(config, pass_no)
    batches = plan.batches(learner, 0)
    try:
        for batch in batches:
            lo, hi = max(first - seen, 0), min(end - seen, len(batch))
            seen += len(batch)
            if lo == 0:  # the segment the batch starts in reports its warnings
                warnings += parse_warnings(batch, config.strict_parse)[
                    :MAX_WARNINGS - len(warnings)]
            if lo < hi:
                rows = learner.learn(batch.examples(lo, hi),
                                     np.empty((hi - lo, 2), dtype=np.float32))
                if len(rows):
                    row = rows[-1]
            lines = batch.pass_line + batch.n_lines
            if seen >= end:
                more = seen > end or next(batches, None) is not None
                break
        batches.close()
        if more:
            plan.discard()  # the cache is written by the segment that reads to the end
    except BaseException as exc:
        plan.discard()  # no half-written cache
        if isinstance(exc, OlearnError):
            # rebuilt from its text alone, so that it pickles to the client whole
            raise OlearnError(str(exc)) from None
        raise
    learner.sync()  # the true weights; the lazy regularization's snapshots back at zero
    return _partial(Snapshot.of(learner), start_g, learner.stats, row, warnings,
                    0 if more else lines, more, norm_power(config))


def tree_reduce(client, futures: list, key: str, start=None):
    """Combine ``futures`` (Partials, in partition order) pairwise, level by level: the order
    of every floating-point operation is fixed, whichever worker runs it. ``start``: the
    state they began from, with --dask_sync (combine adds changes up)."""
    level = 0
    while len(futures) > 1:
        futures = [client.submit(combine, futures[i], futures[i + 1], start,
                                 key=f"{key}-combine-{level}-{i // 2}")
                   if i + 1 < len(futures) else futures[i] for i in range(0, len(futures), 2)]
        level += 1
    return futures[0]


# -- the cluster -----------------------------------------------------------------------------

@contextlib.contextmanager
def connect(address: str) -> Iterator:
    """A Dask client: ``local`` or ``local:N`` starts a cluster of N worker processes (one
    thread each; N defaults to the number of cores), anything else is a scheduler's address."""
    try:
        import dask
        from distributed import Client, KilledWorker, LocalCluster
    except ImportError:
        raise OlearnError("--dask needs Dask: pip install 'olearn[dask]'") from None
    timeout = dask.config.get("distributed.comm.timeouts.connect")
    with contextlib.ExitStack() as stack:
        if address == "local" or address.startswith("local:"):
            count = address.partition(":")[2] or str(os.cpu_count() or 1)
            if not count.isdigit() or int(count) < 1:
                raise OptionError(
                    f"--dask local:N needs a number of workers N >= 1, got {count!r}")
            cluster = stack.enter_context(LocalCluster(
                n_workers=int(count), threads_per_worker=1, processes=True,
                dashboard_address=":0", silence_logs=logging.ERROR))
            client = stack.enter_context(Client(cluster))
        else:
            try:
                client = stack.enter_context(Client(address))
            except (OSError, TimeoutError, ValueError) as exc:
                raise OlearnError(
                    f"cannot reach the Dask scheduler at {address} "
                    f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            raise OlearnError(f"the Dask scheduler at {address} has no workers") from None
        try:
            yield client
        except KilledWorker as exc:
            raise OlearnError(f"Dask workers kept dying while running {exc.task} (see their "
                              "logs)") from None
        except (OSError, asyncio.CancelledError) as exc:
            raise OlearnError(f"lost the Dask scheduler at {address} ({type(exc).__name__}: "
                              f"{exc})") from None


def check_options(config: Config) -> None:
    """Refuse what --dask cannot do: the options above, and a learner family whose state has
    no merge rule (the family's ``UNMERGEABLE`` says why)."""
    for name, why in UNSUPPORTED.items():
        if getattr(config, name):
            raise OlearnError(f"not available with --dask: {why}")
    why = family_of(config).UNMERGEABLE
    if why:
        raise OlearnError(f"not available with --dask: {why}")
    if config.dask_sync and config.stage_poly:
        raise OlearnError("not available with --dask_sync: --stage_poly (its stages pick "
                          "parents on each partition over whole passes)")


def run(config: Config) -> OnlineLearner:
    """``olearn --dask``: as run.run, with each pass learned in parallel over the partitions."""
    check_options(config)
    if config.learning_curve:
        require_matplotlib()
    parts = partitions(config.data, config.dask_partitions)
    learner = OnlineLearner.start(config)
    config = learner.config
    console = Console(config.quiet, None)
    try:
        with connect(config.dask) as client:
            workers = len(client.scheduler_info()["workers"])
            console.print(header(config, [
                f"dask scheduler = {client.scheduler.address} ({workers} workers)",
                f"partitions = {len(parts)} ("
                + ("each worker caches those it learns)" if config.cache
                   else "parsed in every pass; -c caches them on the workers)"),
                "Reading datafile = " + ", ".join(config.data)]) + TABLE_HEADER.rstrip("\n"))
            final, done = _passes(client, config, parts, learner, console,
                                  config.initial_regressor is not None)
    finally:
        console.close()
    final.put(learner)
    if config.readable_model:
        readable.write(config.readable_model, learner, done.passes, table=False)
    if config.learning_curve:
        plot_learning_curve(learner.history, config.learning_curve)
    console.print(learner.summary(done.passes, done.holdout_loss))
    return learner


def _passes(client, config: Config, parts: list[Partition], learner: OnlineLearner,
            console: Console, restored: bool) -> tuple[Snapshot, Outcome]:
    """Every pass (passes.run_passes): the partitions' tasks from the current state, their
    combination and the pass's table row. ``learner`` keeps the run's statistics and parameters
    (the decayed learning rate), and the states saved (-f); returns the last pass's state (as
    the single process ends with, for --readable_model) and the passes' outcome."""
    run_key = f"olearn-{uuid.uuid4().hex[:12]}"  # the run's tasks, apart from other clients'
    # --dask_sync's merge adds the changes from the start, so it needs the fresh state too
    current = (client.scatter(Snapshot.of(learner)) if restored or config.dask_sync
               else None)

    def learn_segment(pass_no: int, segment: int, learning: list[int]) -> tuple:
        """The partitions ``learning`` learn a segment (the whole pass without --dask_sync)
        from ``current``, which becomes their merged state; returns their report."""
        nonlocal current
        key = f"{run_key}-pass{pass_no}-segment{segment}"
        # partition k goes to worker k mod W, so that the passes spread evenly over the workers
        # (Dask would otherwise favour the worker holding the state) and each worker rereads
        # the same files; "loose", so that Dask moves a task whose worker is gone
        # (none while a lost worker restarts: Dask then places the tasks itself)
        workers = sorted(client.scheduler_info()["workers"])
        tasks = [client.submit(learn_partition, config, parts[k], pass_no, current,
                               learner.params.copy(), segment, key=f"{key}-part{k}",
                               workers=[workers[k % len(workers)]] if workers else None,
                               allow_other_workers=True)
                 for k in learning]
        root = tree_reduce(client, tasks, key, current if config.dask_sync else None)
        current = client.submit(finish, root, config, pass_no == 0, key=f"{key}-state")
        return client.submit(report, root, key=f"{key}-report").result()

    def learn_pass(pass_no: int) -> int:
        """A pass: every partition's segments in turn, merged after each; the pass's table row
        sums the statistics of all of them."""
        stats, row, lines = learner.new_stats(), None, 0
        learning = list(range(len(parts)))
        segment = 0
        while learning:
            found, last, warnings, done, more = learn_segment(pass_no, segment, learning)
            for message in warnings if pass_no == 0 else []:  # later passes warn the same
                console.print(message)
            stats = merge_stats(stats, found)
            row = last if last is not None else row
            lines += done
            learning = [k for k, going in zip(learning, more) if going]
            segment += 1
        learner.stats = merge_stats(learner.stats, stats)
        console.progress(0, int(learner.stats[layouts.R_EXAMPLES]))
        if row is not None:
            row = _pass_row(learner.stats, stats, row, bool(learner.params[layouts.P.holdout_rows]))
            learner.history.add(row[None])
            console.print(format_row(row))
        return lines

    fetched = (None, None)  # a pass's state future and its result: fetched once, saved often

    def state() -> Snapshot:
        nonlocal fetched
        if fetched[0] is not current:
            fetched = (current, current.result())
        return fetched[1]

    def save(path: str) -> None:
        state().put(learner)
        learner.save(path)

    done = run_passes(learner, learn_pass, save)
    return state(), done


def _pass_row(total: np.ndarray, this_pass: np.ndarray, row: np.ndarray,
              holdout_rows: bool) -> np.ndarray:
    """A pass's table row: the average loss over everything so far and "since last" over this
    pass (on held-out examples from pass 2 on, as VW), the examples and weight so far, and the
    label, prediction, features and probability of the last row the last partition printed."""
    loss, weight = ((layouts.R_HOLDOUT_LOSS, layouts.R_HOLDOUT_W) if holdout_rows
                    else (layouts.R_SUM_LOSS, layouts.R_W_LABELED))

    def average(stats: np.ndarray) -> float:
        return stats[loss] / stats[weight] if stats[weight] > 0 else math.nan

    return np.array([total[layouts.R_EXAMPLES],
                     total[layouts.R_W_LABELED] + total[layouts.R_W_UNLABELED],
                     row[2], row[3], row[4], average(total), average(this_pass),
                     float(holdout_rows), row[8], math.nan])
