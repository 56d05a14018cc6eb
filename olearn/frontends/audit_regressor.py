"""``--audit_regressor FILE``: VW's listing of a model's weights by the names the data gives
them (docs/vw-reference.md §6.2).

The model (-i) is read, then the data once, without learning: each example's features and
interactions (with --oaa and the like, each class's copy, the class written first) whose
weight is not zero are written ``name:index:weight``, the weight then marked written (zeroed in
the run's copy), until every nonzero weight is written or the data ends. For inspection, as
--audit: a line of Python per feature.
"""
from __future__ import annotations

import numpy as np

from olearn.core.atomic import AtomicOutput
from olearn.data import sources
from olearn.engine.learner import OnlineLearner
from olearn.engine.passes import DataPlan
from olearn.errors import OptionError
from olearn.learners.weights import W_W
from olearn.options.config import Config
from olearn.outputs.audit import expanded_features
from olearn.outputs.report import Console


def check(config: Config) -> None:
    """One pass over text (VW refuses a cache and several passes)."""
    if config.audit_regressor is None:
        return
    for name, on in (("cache", config.cache or config.cache_file is not None),
                     ("passes", config.passes > 1), ("daemon", config.daemon),
                     ("dask", config.dask is not None)):
        if on:
            raise OptionError(f"--audit_regressor reads the data once, as text: not with "
                              f"--{name}")


def run(config: Config) -> None:
    """List the model's weights named by the data (the module's docstring)."""
    paths = config.data or ([] if config.no_stdin else ["-"])
    sources.check_readable(paths)
    learner = OnlineLearner.start(config)
    learner.sync()
    config = learner.config
    weights = learner.weights[:, W_W].copy()
    total = int(np.count_nonzero(weights))
    if total == 0:
        raise OptionError("--audit_regressor: the model has no nonzero weight: nothing to list")
    console = Console(config.quiet, None)
    console.print(f"Regressor contains {total} values\n"
                  f"{'example':<12}{'values':<14}{'total':<8}\n"
                  f"{'counter':<12}{'audited':<14}{'progress':<8}")
    classes = learner.reduction.k if learner.reduction.on else 1
    out = AtomicOutput(config.audit_regressor)
    audited = examples = 0
    next_row = 1
    try:
        for batch, index, e in _examples(learner, config, paths):
            examples += 1
            lines = []
            for k in range(classes):
                prefix = f"{k}:" if classes > 1 else ""
                for name, j, _ in expanded_features(batch, e, learner.terms, config, index):
                    slot = (j + k) & config.mask
                    if weights[slot] != 0:
                        lines.append(f"{prefix}{name}:{slot}:{float(weights[slot]):g}\n")
                        weights[slot] = 0
            audited += len(lines)
            out.write("".join(lines).encode())
            if examples >= next_row or audited == total:
                console.print(f"{examples:<12}{audited:<14}{100 * audited // total}%")
                next_row *= 2
            if audited == total:  # VW stops reading here
                break
        if audited < total:
            console.print(f"Note: for some reason audit couldn't find all regressor values in "
                          f"dataset ({audited} of {total} found).")
        out.commit()
    except BaseException:
        out.discard()
        raise
    finally:
        console.close()


def _examples(learner: OnlineLearner, config: Config, paths: list[str]):
    """Each example of one pass: its batch, the batch's (widened) indices, its position."""
    for batch in DataPlan(config, paths).batches(learner, 1):
        index = learner.reduction.widen(batch.index)
        for e in range(len(batch)):
            yield batch, index, e
