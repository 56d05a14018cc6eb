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

The passes: olearn/scale/per_pass.py (once per pass) and sync.py (--dask_sync); how a state
combines (each field by the rule its layout declares): olearn/scale/merge.py.

Workers parse their partitions' text in every pass; with -c each worker keeps a cache of the
partitions it learns in its local directory (Dask's scratch space), written in the first pass.
Partition k is learned on worker k mod W in every pass, so the caches are reused; a partition
that moves (its worker died) is parsed from the text again on its new worker.
"""
from __future__ import annotations

from olearn.engine.learner import OnlineLearner
from olearn.frontends.run import header
from olearn.options.config import Config
from olearn.outputs.history import plot_learning_curve, require_matplotlib
from olearn.outputs.report import TABLE_HEADER, Console
from olearn.persistence import readable
from olearn.scale import per_pass, sync
from olearn.scale.partitions import partitions
from olearn.scale.per_pass import check_options
from olearn.scale.workers import connect


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
                final, done = per_pass.passes(client, config, parts, learner, console,
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
