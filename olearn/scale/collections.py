"""Learner.fit on a Dask collection: data-parallel training on the client's cluster.

A Dask DataFrame or array (with ``y`` and ``sample_weight`` as Dask collections of the same
partitions), or a Dask bag of example lines, is computed partition by partition onto the
workers (partition k on worker k mod W, where its learner runs); the passes are then those of
``--dask``: a task per partition and pass, averaged (olearn/scale/per_pass.py), or with
``dask_sync`` long-lived learners merging every N examples (olearn/scale/sync.py). The
Learner's state is the merged model at the end, as after an ordinary fit.
"""
from __future__ import annotations

from olearn.data import matrices
from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.outputs.report import Console
from olearn.scale import per_pass, sync
from olearn.scale.partitions import InMemory
from olearn.scale.workers import placement


def _blocks(collection, what: str) -> list:
    """The collection's partitions as Dask delayed objects: a DataFrame's or Series', a bag's,
    or an array's blocks of rows (its columns joined into one block)."""
    if collection is None:
        return []
    if not matrices.is_dask(collection):
        raise OptionError(f"fit on a Dask collection: {what} must be a Dask collection with the "
                          f"same partitions as X, not a {type(collection).__name__}")
    if hasattr(collection, "chunks"):  # an array: one block per chunk of rows
        if collection.ndim == 2 and len(collection.chunks[1]) > 1:
            collection = collection.rechunk({1: -1})
        return list(collection.to_delayed().ravel())
    return list(collection.to_delayed())


def fit(learner: OnlineLearner, data, y=None, sample_weight=None,
        namespaces: dict | None = None) -> None:
    """Train ``learner`` on the Dask collection ``data`` (with ``y`` and ``sample_weight``)
    on the current Dask client's cluster."""
    try:
        from distributed import get_client
    except ImportError:
        raise OptionError("fit on a Dask collection needs distributed: pip install "
                          "'olearn[dask]'") from None
    try:
        client = get_client()
    except ValueError:
        raise OptionError("fit on a Dask collection trains on a Dask cluster: start a "
                          "distributed.Client first") from None
    config = learner.config
    per_pass.check_options(config)
    lines = hasattr(data, "map_partitions") and not hasattr(data, "columns") and not hasattr(
        data, "dtype")  # a bag
    if lines and (y is not None or sample_weight is not None):
        raise OptionError("fit on a Dask bag of example lines: the labels are in the lines, "
                          "not in y")
    if not lines and y is None:
        raise OptionError("fit(X, y): a Dask matrix needs its labels y")
    blocks = [_blocks(x, what) for x, what in ((data, "X"), (y, "y"),
                                                (sample_weight, "sample_weight"))]
    count = len(blocks[0])
    for found, what in zip(blocks[1:], ("y", "sample_weight")):
        if found and len(found) != count:
            raise OptionError(f"fit on a Dask collection: {what} has {len(found)} partitions "
                              f"and X {count}")
    workers = sorted(client.scheduler_info()["workers"])
    parts = []
    for k in range(count):
        where = placement(workers, k)
        futures = [client.compute(found[k], **where) if found else None for found in blocks]
        parts.append(InMemory(k, *futures, namespaces=namespaces))
    console = Console(True, None)
    if config.dask_sync:
        final, _ = sync.passes(client, config, parts, learner, console)
    else:
        final, _ = per_pass.passes(client, config, parts, learner, console, True)
    final.put(learner)
