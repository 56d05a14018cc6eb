"""``--dask`` once per pass: a task per partition learns the pass from the state broadcast for
it, and the partitions' states combine in a fixed binary tree of tasks (merge.py's rules) into
the next pass's state; the client receives only the loss statistics, and the state itself when
it saves a model. Also the options --dask cannot honour (``check_options``)."""
from __future__ import annotations

import uuid

import numpy as np

from olearn.engine.learner import OnlineLearner, parse_warnings
from olearn.engine.passes import Outcome, run_passes
from olearn.errors import OlearnError
from olearn.learners.families import family_of
from olearn.learners.weights import W_G
from olearn.options.config import Config
from olearn.outputs.report import Console
from olearn.reductions.chosen import reduction_of
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
from olearn.scale.partitions import Partition, received, shipped
from olearn.scale.table import end_pass
from olearn.scale.workers import placement, portable

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
    part = received(part)
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


def passes(client, config: Config, parts: list[Partition], learner: OnlineLearner,
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
        tasks = [client.submit(learn_partition, config, shipped(part), pass_no, current,
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


