"""``--dask``: data-parallel training on a Dask cluster, by parameter averaging
(docs/algorithms.md §6; the APPLE paper's parallel protocol, §5.1).

Each pass, one task per partition (a file, or a newline-aligned byte range of a plain file) runs
the ordinary learner over its partition, starting from the state broadcast for the pass; the
workers read the data where it lies. The partitions' final states are then combined, in a fixed
binary tree over the partitions (an AllReduce, run as Dask tasks), into the state broadcast for
the next pass; the client receives only the loss statistics, and the state itself when it saves
a model.

With --dask_sync N, the partitions merge every N examples of each instead (olearn/scale/sync.py:
each partition's learner lives on a worker for the whole run). The passes, holdout and table stay
those of run_passes: a table row is still a pass, summing all its segments' statistics, and the
holdout holds out the same lines (each example keeps its line number in its partition), scored
by the model current when it is reached.

How a state combines (each field by the rule its layout declares): olearn/scale/merge.py.

Workers parse their partitions' text in every pass; with -c each worker keeps a cache of the
partitions it learns in its local directory (Dask's scratch space), written in the first pass.
Partition k is learned on worker k mod W in every pass, so the caches are reused; a partition
that moves (its worker died) is parsed from the text again on its new worker.
"""
from __future__ import annotations

import uuid

import numpy as np

from olearn.engine.learner import OnlineLearner, parse_warnings
from olearn.engine.passes import Outcome, run_passes
from olearn.errors import OlearnError
from olearn.frontends.run import header
from olearn.learners.families import family_of
from olearn.learners.weights import W_G
from olearn.options.config import Config
from olearn.outputs.history import plot_learning_curve, require_matplotlib
from olearn.outputs.report import TABLE_HEADER, Console
from olearn.persistence import readable
from olearn.reductions.chosen import reduction_of
from olearn.scale import sync
from olearn.scale.merge import (
    MAX_WARNINGS,
    Partial,
    Snapshot,
    combine,
    finish,
    norm_power,
    partial_of,
    report,
    tree,
)
from olearn.scale.partitions import Partition, partitions
from olearn.scale.table import end_pass
from olearn.scale.workers import connect, placement, portable

# Unsupported with --dask, each with the reason given to the user.
UNSUPPORTED = {"audit": "--audit prints examples as they are learned, on the workers",
               "invert_hash": "--invert_hash collects feature names on the workers",
               "predictions": "-p: predict with the saved model instead (olearn -t -i MODEL -p)",
               "raw_predictions": "-r: predict with the saved model instead "
                                  "(olearn -t -i MODEL -r)",
               "testonly": "-t: test in one process (olearn -t -i MODEL)",
               "cache_file": "--cache_file names one file; -c makes each worker cache the "
                             "partitions it learns"}


def learn_partition(config: Config, part: Partition, pass_no: int, start: Snapshot | None,
                    params: np.ndarray) -> Partial:
    """One task: learn a pass over ``part`` from ``start`` (None: a fresh learner). Pure and
    deterministic, so Dask may run it again on another worker."""
    learner = OnlineLearner(config)
    if start is not None:
        start.put(learner)
    learner.params[:] = params
    start_g = learner.weights[:, W_G].copy() if config.update_rule[0] else None
    warnings: list[str] = []
    row = None
    lines = 0
    plan = part.plan(config, pass_no)
    try:
        for batch in plan.batches(learner, 0):
            warnings += parse_warnings(batch, config.strict_parse)[:MAX_WARNINGS - len(warnings)]
            rows = learner.learn(batch, np.empty((len(batch), learner.prediction_columns()),
                                                 dtype=np.float32))
            if len(rows):
                row = rows[-1]
            lines = batch.pass_line + batch.n_lines
    except BaseException as exc:
        plan.discard()  # no half-written cache
        raise portable(exc) from None
    learner.sync()  # the true weights; the lazy regularization's snapshots back at zero
    return partial_of(Snapshot.of(learner), start_g, learner.stats, row, warnings, lines,
                    power=norm_power(config))


def tree_reduce(client, futures: list, key: str):
    """Combine ``futures`` (Partials, in partition order) by :func:`tree`, as Dask tasks."""
    return tree(futures, lambda a, b, level, i: client.submit(
        combine, a, b, key=f"{key}-combine-{level}-{i}"))


def check_options(config: Config) -> None:
    """Refuse what --dask cannot do: the options above, and a learner family whose state has
    no merge rule (the family's ``UNMERGEABLE`` says why)."""
    for name, why in UNSUPPORTED.items():
        if getattr(config, name):
            raise OlearnError(f"not available with --dask: {why}")
    for why in (family_of(config).UNMERGEABLE, reduction_of(config).UNMERGEABLE):
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
            if config.dask_sync:
                final, done = sync.passes(client, config, parts, learner, console)
            else:
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
    current = client.scatter(Snapshot.of(learner)) if restored else None

    def learn_pass(pass_no: int) -> int:
        nonlocal current
        key = f"{run_key}-pass{pass_no}"
        # partition k goes to worker k mod W, so that the passes spread evenly over the workers
        # (Dask would otherwise favour the worker holding the state) and each worker rereads
        # the same files; "loose", so that Dask moves a task whose worker is gone
        # (none while a lost worker restarts: Dask then places the tasks itself)
        workers = sorted(client.scheduler_info()["workers"])
        tasks = [client.submit(learn_partition, config, part, pass_no, current,
                               learner.params.copy(), key=f"{key}-part{k}",
                               **placement(workers, k))
                 for k, part in enumerate(parts)]
        root = tree_reduce(client, tasks, key)
        current = client.submit(finish, root, config, pass_no == 0, key=f"{key}-state")
        stats, row, warnings, lines, _ = client.submit(report, root,
                                                       key=f"{key}-report").result()
        return end_pass(learner, console, pass_no, stats, row, warnings, lines)

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


