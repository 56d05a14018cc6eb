"""``--dask_sync N``: each partition's learner lives on a worker for the whole run and reads its
partition once per pass; after every N examples of each partition, the partitions send the rows
of the state they changed, the client merges them, and sends the merged rows back.

The learners of a worker's partitions are one Dask actor (an object that stays on its worker,
whose methods the client calls): a merge is one call to each worker's actor. The command line's
client goes straight to the workers (``direct_to_workers``; Dask otherwise relays an actor call
through the scheduler), and the calls' arguments and results travel ``packed``: a round trip to
2 actors with 25 KB each way takes about 1.5 ms on an idle machine here. Before, every segment
was a task per partition with a fresh learner, which read its partition from the start to reach
the segment: O(segments²) reading per pass.

The merge is the one merge.py states for --dask_sync (the start plus the partitions' changes;
the largest normalizers), computed on the rows that some partition changed, each partition's
row taken as the start where it changed nothing: a row no partition changed merges to its
start exactly, so the result is bit for bit the dense merge's, and the bytes a merge moves
grow with the rows changed, not with 2^b. The client combines the partitions in the fixed tree
over the partitions (merge.tree), so the model does not depend on the number of workers.

The client keeps the whole merged state. When a worker dies, each learner it held starts again
on another worker from that state, reads its partition past the examples it had learned in the
pass, and learns the segment again: the merge, and so the model, is the one an undisturbed
run gives.
"""
from __future__ import annotations

import dataclasses
import pickle
import uuid

import numpy as np

from olearn.engine.learner import OnlineLearner, parse_warnings
from olearn.engine.passes import Outcome, run_passes
from olearn.errors import OlearnError
from olearn.learners.families import family_of
from olearn.learners.weights import W_N, W_W
from olearn.options.config import Config
from olearn.outputs.history import History
from olearn.outputs.report import Console
from olearn.scale.merge import (
    MAX_WARNINGS,
    W_IN_MEAN,
    Snapshot,
    combine,
    finish,
    in_frame,
    merge_stats,
    norm_power,
    partial_of,
    report,
    tree,
)
from olearn.scale.partitions import Partition, received, shipped
from olearn.scale.table import end_pass
from olearn.scale.workers import placement, portable

RESTARTS = 3  # how often each partition's learner may be lost with its worker in a run


@dataclasses.dataclass
class Rows:
    """Some rows of a state (``index``: sorted coordinates) with its other parts whole: what a
    merge sends each way."""

    index: np.ndarray
    snap: Snapshot

    def __sizeof__(self) -> int:
        return self.index.nbytes + self.snap.__sizeof__()


def restrict(snap: Snapshot, index: np.ndarray, row_arrays: int) -> Snapshot:
    """The rows ``index`` of ``snap``'s weights and of its family's first ``row_arrays``
    merged arrays (a row per coordinate), with copies of the rest."""
    def rows(arrays: tuple) -> tuple:
        return tuple(a[index] if k < row_arrays else a.copy() for k, a in enumerate(arrays))
    return Snapshot(snap.weights[index], snap.state.copy(), tuple(a.copy() for a in snap.poly),
                    tuple(rows(arrays) for arrays in snap.family), snap.split)


def put_rows(target: Snapshot, rows: Rows, row_arrays: int) -> None:
    """Write ``rows`` into ``target``: its rows there, the rest whole."""
    target.weights[rows.index] = rows.snap.weights
    target.state[:] = rows.snap.state
    for mine, theirs in zip(target.poly, rows.snap.poly):
        mine[:] = theirs
    for mine_all, theirs_all in zip(target.family, rows.snap.family):
        for k, (mine, theirs) in enumerate(zip(mine_all, theirs_all)):
            if k < row_arrays:
                mine[rows.index] = theirs
            else:
                mine[...] = theirs


@dataclasses.dataclass
class Segment:
    """What a partition's learner sends after a segment: the rows it changed, its statistics,
    last table row and warnings, its lines (when it reached the end of the pass) and whether
    examples follow."""

    rows: Rows
    stats: np.ndarray
    row: np.ndarray | None
    warnings: list[str]
    lines: int
    more: bool


class PartitionLearner:
    """A partition's learner on its worker, from the first pass to the last.

    Between merges it holds the merged state as it received it (``base``), so that the rows it
    changed are the rows that differ from it.
    """

    def __init__(self, config: Config, part: Partition, start: Snapshot, directory: str):
        self.config, self.part, self.directory = config, part, directory
        self.learner = OnlineLearner(config)
        start.put(self.learner)
        self.row_arrays = self.learner.family.MERGED_ROWS
        self.base = [a.copy() for a in self._row_arrays()]
        self.plan = self.batches = self.pending = None
        self.lines = 0

    def _row_arrays(self) -> list[np.ndarray]:
        """The arrays with a row per coordinate: the weights (the learner's own), the
        family's (copies)."""
        means, highs = self.learner.family.merged()
        return [self.learner.weights, *means[:self.row_arrays], *highs[:self.row_arrays]]

    def _changed(self) -> np.ndarray:
        """The rows that differ from ``base`` (bit for bit: NaN rows too)."""
        changed = None
        for now, base in zip(self._row_arrays(), self.base):
            for a, b in zip(_columns(now), _columns(base)):
                differ = a != b
                changed = differ if changed is None else np.logical_or(changed, differ,
                                                                       out=changed)
        return np.flatnonzero(changed)

    def take(self, merged: Rows) -> None:
        """Take the merged rows; they are the new ``base``."""
        mine = Snapshot.of(self.learner)  # the weights, state and poly are the learner's own
        put_rows(mine, merged, self.row_arrays)
        mine.put_merged(self.learner)
        for base, rows in zip(self.base, self._row_arrays()):
            base[merged.index] = rows[merged.index]

    def begin_pass(self, pass_no: int, params: np.ndarray, skip: int = 0) -> None:
        """Start reading pass ``pass_no`` (past its first ``skip`` examples, unlearned), with
        the pass's parameters."""
        self.learner.params[:] = params
        if self.batches is not None:
            self.batches.close()
        self.plan = self.part.plan(self.config, pass_no, self.directory)
        self.batches = self.plan.batches(self.learner, 0)
        self.pending, self.lines = None, 0
        self._guarded(self._advance, skip, [], False)

    def learn(self) -> Segment:
        """Learn the next N examples of the pass."""
        learner = self.learner
        learner.stats = learner.new_stats()
        learner.history = History()  # the table is the client's: not kept over the run here
        warnings: list[str] = []
        row = self._guarded(self._advance, self.config.dask_sync, warnings, True)
        more = self._guarded(self._ahead, warnings)
        learner.sync()  # the true weights; the lazy regularization's snapshots back at zero
        index = self._changed()
        rows = Rows(index, restrict(Snapshot.of(learner), index, self.row_arrays))
        return Segment(rows, learner.stats.copy(), row, warnings, 0 if more else self.lines,
                       more)

    def _guarded(self, step, *args):
        try:
            return step(*args)
        except BaseException as exc:
            self.plan.discard()  # no half-written cache
            raise portable(exc) from None

    def _advance(self, count: int, warnings: list[str], learning: bool) -> np.ndarray | None:
        """Learn (or, not ``learning``, read past) the next ``count`` examples of the pass;
        returns the last table row."""
        row = None
        while count > 0 and self._ahead(warnings):
            batch, lo = self.pending
            hi = min(len(batch), lo + count)
            if learning:
                rows = self.learner.learn(batch.examples(lo, hi), np.empty(
                    (hi - lo, self.learner.prediction_columns()), dtype=np.float32))
                if len(rows):
                    row = rows[-1]
            count -= hi - lo
            self.pending = None if hi == len(batch) else (batch, hi)
        return row

    def _ahead(self, warnings: list[str]) -> bool:
        """Whether examples follow in the pass: the next batch with any is ``pending``."""
        while self.pending is None:
            batch = next(self.batches, None)
            if batch is None:
                return False
            warnings += parse_warnings(batch, self.config.strict_parse)[
                :MAX_WARNINGS - len(warnings)]
            self.lines = batch.pass_line + batch.n_lines
            if len(batch):
                self.pending = (batch, 0)
        return True


def _columns(rows: np.ndarray) -> list[np.ndarray]:
    """The columns of a C-contiguous array of rows as unsigned integers of 8 bytes (4 where a
    row's bytes do not divide by 8): compared a column at a time, a row's bits in a few
    vectorized passes."""
    rows = rows.reshape(len(rows), -1)
    kind = np.uint64 if rows.shape[1] * rows.itemsize % 8 == 0 else np.uint32
    bits = np.ascontiguousarray(rows).view(kind)
    return [bits[:, j] for j in range(bits.shape[1])]


def packed(value) -> bytes:
    """``value`` pickled as one frame, as the actors' arguments and results travel: Dask sends
    a dataclass of arrays as a frame per array, which made a merge's round trip to 2 actors
    about 0.5 ms slower (2.0 against 1.5 ms, 25 KB each way, idle)."""
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


class Learners:
    """A worker's partition learners (a Dask actor: one round trip per merge for all of
    them), each taking every merge. Merged rows come, and segments go, ``packed``."""

    def __init__(self, config: Config, parts: dict[int, Partition], start: Snapshot):
        from distributed import get_worker
        directory = get_worker().local_directory
        self.learners = {k: PartitionLearner(config, received(part), start, directory)
                         for k, part in parts.items()}

    def _take(self, merged: bytes) -> None:
        merged = pickle.loads(merged)
        for learner in self.learners.values() if merged is not None else ():
            learner.take(merged)

    def begin_pass(self, pass_no: int, params: np.ndarray, merged: bytes,
                   skip: int = 0) -> bytes:
        """Take the merged rows not yet taken, then start reading pass ``pass_no`` (past the
        first ``skip`` examples of each partition)."""
        self._take(merged)
        for learner in self.learners.values():
            learner.begin_pass(pass_no, params, skip)
        return packed(None)

    def learn(self, merged: bytes, which: list[int]) -> bytes:
        """Take the merged rows not yet taken, then learn a segment of the partitions
        ``which``."""
        self._take(merged)
        return packed({k: self.learners[k].learn() for k in which})


class Team:
    """The partitions' learners, partition k's on worker k mod W (a Learners actor per
    worker), and what each actor has not yet taken of the merged state (the client's
    ``state``, kept whole)."""

    def __init__(self, client, config: Config, parts: list[Partition], state: Snapshot,
                 console: Console):
        self.client, self.config, self.parts, self.state = client, config, parts, state
        self.console = console
        self.row_arrays = family_of(config).MERGED_ROWS
        self.key = f"olearn-{uuid.uuid4().hex[:12]}"
        workers = sorted(client.scheduler_info()["workers"])
        count = max(1, min(len(workers), len(parts)))
        self.groups = [list(range(g, len(parts), count)) for g in range(count)]
        self.actors: list = [None] * count  # each group's actor, with its future
        self.owed: list[list[np.ndarray]] = [[] for _ in self.groups]  # indices not taken
        self.restarts = 0
        self.sent = 0  # bytes sent to the actors
        self.pass_no, self.params = 0, None
        self._start(range(count), workers)

    def _start(self, groups, workers: list[str]) -> None:
        """(Re)start the actors of ``groups`` from the client's state."""
        state = self.client.scatter(self.state)
        futures = {g: self.client.submit(
            Learners, self.config, {k: shipped(self.parts[k]) for k in self.groups[g]}, state,
            actor=True, key=f"{self.key}-{g}-{uuid.uuid4().hex[:6]}", **placement(workers, g))
            for g in groups}
        for g, future in futures.items():
            self.actors[g] = (future, future.result())
            self.owed[g] = []  # the client's state holds every merge

    def _owed(self, g: int) -> bytes:
        """The merged rows actor ``g`` has not taken (packed; None when there are none)."""
        owed = self.owed[g]
        if not owed:
            return packed(None)
        index = owed[0] if len(owed) == 1 else np.unique(np.concatenate(owed))
        self.owed[g] = []
        rows = Rows(index, restrict(self.state, index, self.row_arrays))
        self.sent += rows.__sizeof__()
        return packed(rows)

    def owe(self, index: np.ndarray) -> None:
        for owed in self.owed:
            owed.append(index)

    def begin_pass(self, pass_no: int, params: np.ndarray) -> None:
        self.pass_no, self.params = pass_no, params
        self._call(range(len(self.groups)), "begin_pass",
                   lambda g: (pass_no, params, self._owed(g)), 0)

    def learn(self, which: list[int], segment: int) -> list[Segment]:
        """Segment ``segment`` of the partitions ``which`` (each learner's next N examples,
        from the merged state), in partition order."""
        learning = set(which)
        groups = [g for g, members in enumerate(self.groups) if learning.intersection(members)]
        found: dict[int, Segment] = {}
        for segments in self._call(groups, "learn", lambda g: (
                self._owed(g), [k for k in self.groups[g] if k in learning]), segment):
            found.update(segments)
        return [found[k] for k in which]

    def _call(self, groups, method: str, arguments, segment: int) -> list:
        """Call ``method`` of the actors of ``groups`` at once; an actor whose worker is lost
        starts again on another from the client's state, reads past the examples of the pass
        its partitions had learned, and is called again."""
        calls = {g: getattr(self.actors[g][1], method)(*arguments(g)) for g in groups}
        results = []
        for g, call in calls.items():
            while True:
                try:
                    results.append(pickle.loads(call.result()))
                    break
                except (RuntimeError, OSError) as exc:
                    if not _lost(exc):
                        raise
                    self._restart(g, segment)
                    call = getattr(self.actors[g][1], method)(*arguments(g))
        return results

    def _restart(self, g: int, segment: int) -> None:
        self.restarts += 1
        if self.restarts > RESTARTS * len(self.groups):
            raise OlearnError("Dask workers kept dying (see their logs)")
        self.console.print(f"a Dask worker was lost: partitions {self.groups[g]} start again "
                           f"from the merged state, at segment {segment + 1} of pass "
                           f"{self.pass_no + 1}")
        self._start([g], sorted(self.client.scheduler_info()["workers"]))
        self.actors[g][1].begin_pass(self.pass_no, self.params, packed(None),
                                     segment * self.config.dask_sync).result()

    def close(self) -> None:
        self.actors = []


def _lost(exc: BaseException) -> bool:
    """Whether ``exc`` says an actor's worker is gone (an OSError: its connection closed)."""
    return isinstance(exc, OSError) or "Actor was lost" in str(exc)


class Merger:
    """The client's side of the merges: the whole merged state, and each coordinate's damping
    of the partitions' summed changes to w.

    The partitions' changes add up (merge.py), as if their segments had been learned one after
    another, which is right while each segment moves a weight a small part of its way; but when
    each partition moves it most of its way (a long segment, or a fresh weight), K of them add up
    to an overshoot of about K times, the next merge overshoots back, and the merges diverge
    (the 200k-example benchmark file, 4 partitions: a progressive loss of 8.6 with N = 2000,
    against 0.48 with N = 500). So each coordinate's sum is multiplied by a factor ``alpha`` in
    [1/K, 1] (1: the sum; 1/K: the mean), doubled at each merge whose summed change keeps the
    direction of the coordinate's last merged change, and halved when it turns back by more
    than that change (an oscillation that grows: a sign-agreement rule, as delta-bar-delta's
    per-weight rates, Jacobs 1988): sums while the partitions make steady progress or their
    steps are noise around the optimum, means while the sums overshoot. (Halving at every turn
    also damped the noise, which slowed sst2: 0.108 against 0.104 at N = 200.) G and the
    other fields add up as before, so the step sizes stay those of one process.
    """

    def __init__(self, state: Snapshot, config: Config, row_arrays: int):
        self.state, self.config, self.row_arrays = state, config, row_arrays
        self.power = norm_power(config)
        self.alpha = np.ones(len(state.weights), dtype=np.float32)
        self.last = np.zeros(len(state.weights), dtype=np.float32)  # the last merged change

    def merge(self, segments: list[Segment], first_pass: bool) -> tuple[Rows, tuple]:
        """The partitions' segments merged (merge.combine with the start: the start plus their
        changes, w's damped) on the rows any of them changed, written into the state; returns
        the merged rows and the report (merge.report)."""
        row_arrays = self.row_arrays
        index = np.unique(np.concatenate([s.rows.index for s in segments]))
        start = restrict(self.state, index, row_arrays)
        partials = [partial_of(_over(start, np.searchsorted(index, s.rows.index), s.rows.snap,
                                     row_arrays), None, s.stats, s.row, s.warnings, s.lines,
                               s.more, self.power)
                    for s in segments]
        root = tree(partials, lambda a, b, level, i: combine(a, b, start))
        if len(segments) > 1:
            movers = np.zeros(len(index))  # how many partitions changed each row
            for s in segments:
                movers[np.searchsorted(index, s.rows.index)] += 1
            self._damp(root, start, index, movers, len(segments))
        merged = Rows(index, finish(root, self.config, first_pass))
        put_rows(self.state, merged, row_arrays)
        return merged, report(root)

    def _damp(self, root, start: Snapshot, index: np.ndarray, movers: np.ndarray,
              count: int) -> None:
        """Scale the summed changes of w in ``root`` (the start's w, in the units of the largest
        normalizer, plus the sum) by each coordinate's factor, updated first (at least 1/K,
        ``count`` partitions merging); a change that ``movers`` partitions made is never scaled
        below their mean (one partition's change: not at all)."""
        w = root.rows[:, W_IN_MEAN]
        begun = in_frame(start.weights[:, W_W], start.weights[:, W_N], root.highs[0][:, 0],
                         self.power)
        change = w - begun
        alpha, last = self.alpha[index], self.last[index]
        overshot = (change * last < 0) & (np.abs(change) > np.abs(last))
        alpha = np.where(overshot, np.maximum(alpha / 2, np.float32(1 / count)),
                         np.where(change * last > 0, np.minimum(alpha * 2, np.float32(1)),
                                  alpha))
        factor = np.maximum(alpha, 1 / movers)
        damped = factor * change
        self.alpha[index] = alpha
        self.last[index] = np.where(damped != 0, damped, last)
        w[:] = np.where(factor == 1, w, begun + damped)  # exactly the sum where undamped


def _over(start: Snapshot, at: np.ndarray, theirs: Snapshot, row_arrays: int) -> Snapshot:
    """A partition's state on ``start``'s rows: its own rows at positions ``at``, the start's
    elsewhere (it did not change them), and its other parts whole."""
    mine = start.copy()
    put_rows(mine, Rows(at, theirs), row_arrays)
    return mine


def passes(client, config: Config, parts: list[Partition], learner: OnlineLearner,
           console: Console) -> tuple[Snapshot, Outcome]:
    """Every pass (passes.run_passes) by the partitions' learners, merging every N examples;
    returns the last state and the passes' outcome, and reports the bytes per merge."""
    state = Snapshot.of(learner).copy()
    team = Team(client, config, parts, state, console)
    merger = Merger(state, config, team.row_arrays)
    merges = []

    def learn_pass(pass_no: int) -> int:
        team.begin_pass(pass_no, learner.params.copy())
        stats, last, lines, said = learner.new_stats(), None, 0, []
        learning = list(range(len(parts)))
        segment = 0
        while learning:
            sent = team.sent
            segments = team.learn(learning, segment)
            merged, (found, row, warnings, done, more) = merger.merge(segments, pass_no == 0)
            team.owe(merged.index)
            up = sum(s.rows.__sizeof__() for s in segments)
            merges.append((len(merged.index), up, team.sent - sent))
            stats = merge_stats(stats, found)
            last = row if row is not None else last
            lines += done
            learning = [k for k, going in zip(learning, more) if going]
            said += warnings[:MAX_WARNINGS - len(said)]
            segment += 1
        return end_pass(learner, console, pass_no, stats, last, said, lines)

    def save(path: str) -> None:
        state.put(learner)
        learner.save(path)

    try:
        done = run_passes(learner, learn_pass, save)
    finally:
        team.close()
    console.print(traffic(merges))
    return state, done


def traffic(merges: list[tuple[int, int, int]]) -> str:
    """The line that reports what the merges moved: rows, and bytes to and from the client."""
    if not merges:
        return "dask_sync: no merge"
    rows, up, down = np.array(merges, dtype=np.float64).T
    return (f"dask_sync: {len(merges)} merges, {rows.mean():.0f} rows changed per merge on "
            f"average; bytes per merge: {(up + down).mean() / 1e3:.1f} KB on average "
            f"({up.mean() / 1e3:.1f} KB from the learners, {down.mean() / 1e3:.1f} KB to them), "
            f"{(up + down).max() / 1e3:.1f} KB at most")
