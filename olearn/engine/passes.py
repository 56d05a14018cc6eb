"""Several passes over the data (docs/vw-reference.md §8): where each pass reads its examples (the
text or the cache), the holdout bookkeeping that ends training early, and the pass loop.

As VW has one driver loop, :func:`run_passes` is the loop of the command line (run.py), the
Python API (api.py) and --dask (distributed.py): it owns the holdout, the end of each pass,
early termination and when -f is saved. A front end supplies how one pass is learned (batches
with console output, batches with Python warnings, Dask tasks) and how its state is saved, if
at all (the API never saves)."""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Iterator, NamedTuple

import numpy as np

from olearn.data import cache, sources
from olearn.data.batch import ExampleBatch
from olearn.data.multiline import chosen as multiline_examples
from olearn.errors import OptionError
from olearn.kernel import layouts
from olearn.options.config import Config


class DataPlan:
    """The examples of each pass: parsed from the text, or read back from the cache.

    Without a usable cache, the first pass parses the text and writes the cache, which appears
    when that pass is complete; later passes and later runs read it. The cache holds no feature
    names, so ``--audit`` parses the text in every pass, and ``--invert_hash`` (or
    ``Learner(names=True)``: the learner's ``parse_names``) in the first.
    """

    def __init__(self, config: Config, paths: list[str],
                 blocks: Callable[[], Iterator[sources.Block]] | None = None,
                 fingerprint: dict | None = None):
        """``blocks`` and ``fingerprint`` replace reading ``paths`` whole and what a cache of
        them depends on (a --dask partition is a part of a file)."""
        self.config = config
        self.paths = paths
        multiline = multiline_examples(config)
        self._blocks = blocks or (lambda: sources.all_blocks(paths, multiline=multiline))
        self.path = config.cache_file or (cache.default_path(paths) if config.cache else None)
        # --examples N: the first N examples of the data (VW's, per pass; -1 is no limit)
        self.limit = (config.examples if config.examples is not None and config.examples >= 0
                      else None)
        if config.passes > 1 and self.path is None:
            raise OptionError("need a cache file for multiple passes: try using --cache (-c) "
                              "or --cache_file <name>")
        if self.limit is not None and self.path is not None:
            raise OptionError("--examples reads a part of the data, which a cache would keep "
                              "as the whole: not with -c/--cache_file")
        if config.passes > 1 and config.audit and "-" in paths:
            raise OptionError("--audit with --passes parses the text in every pass, "
                              "and stdin can be read only once")
        self._fingerprint = fingerprint or (cache.fingerprint(config, paths) if self.path
                                            else None)
        self.usable = (self.path is not None and not config.kill_cache
                       and cache.matches(self.path, self._fingerprint))
        self._writer: cache.Writer | None = None

    def header_lines(self) -> list[str]:
        reading = "Reading datafile = " + (", ".join(map(sources.display_name, self.paths))
                                           or "none")
        if self.path is None:
            return ["using no cache", reading]
        if self.usable:
            return [f"using cache_file = {self.path}",
                    "ignoring text input in favor of cache input"]
        return [f"creating cache_file = {self.path}", reading]

    def _reads_text(self, pass_no: int, names: bool) -> bool:
        if not self.usable or self.config.audit:
            return True
        return pass_no == 0 and names

    def batches(self, learner, pass_no: int) -> Iterator[ExampleBatch]:
        """The pass's batches: the cache's, or the text's (writing the cache), as far as
        --examples reaches."""
        if self.limit is None:
            yield from self._all_batches(learner, pass_no)
            return
        left = self.limit
        batches = self._all_batches(learner, pass_no)
        try:
            for batch in batches:
                if left <= 0:
                    return
                if len(batch) > left:
                    batch = _first(batch, left)
                left -= len(batch)
                yield batch
        finally:
            batches.close()

    def _all_batches(self, learner, pass_no: int) -> Iterator[ExampleBatch]:
        if not self._reads_text(pass_no, learner.parse_names):
            yield from sources.read_ahead(cache.read(self.path, self.config.mask))
            return
        if self.path is not None and not self.usable and self._writer is None:
            self._writer = cache.Writer(self.path, self._fingerprint)
        for batch in learner.batches(self._blocks()):
            if self._writer is not None:
                self._writer.add(batch)
            yield batch
        if self._writer is not None:
            self._writer.commit()
            self._writer = None
            self.usable = True

    def discard(self) -> None:
        """After a failure: no cache file (a half-written one would be wrong)."""
        if self._writer is not None:
            self._writer.discard()
            self._writer = None


def _first(batch: ExampleBatch, n: int) -> ExampleBatch:
    """The first ``n`` examples of ``batch``, with the warnings of their lines only."""
    head = batch.examples(0, n)
    warned = batch.warnings[:, 0] <= (head.lines[-1] if n else -1)
    return dataclasses.replace(head, warnings=batch.warnings[warned],
                               n_warnings=int(warned.sum()))


class Holdout:
    """VW's holdout over passes: the best pass's holdout loss, and early termination after
    ``--early_terminate`` passes in a row without improvement."""

    def __init__(self, config: Config):
        self.active = config.holdout
        self.patience = config.early_terminate
        self.best = math.inf
        self._no_win = 0
        self.stopped_early = False
        self.last = math.inf  # the last pass's holdout loss

    @staticmethod
    def pass_loss(stats: np.ndarray) -> float:
        """The held-out loss of the pass just finished (NaN: nothing held out)."""
        weight = stats[layouts.R_HOLDOUT_W_PASS]
        return stats[layouts.R_HOLDOUT_LOSS_PASS] / weight if weight > 0 else math.nan

    def end_pass(self, stats: np.ndarray) -> bool:
        """Score the pass just finished; True when it is the best so far."""
        loss = self.pass_loss(stats)
        loss = math.inf if math.isnan(loss) else loss
        self.last = loss
        stats[layouts.R_HOLDOUT_LOSS_PASS] = stats[layouts.R_HOLDOUT_W_PASS] = 0.0
        if not self.active:
            return False
        if loss < self.best:
            self.best = loss
            self._no_win = 0
            return True
        if math.isfinite(loss) or math.isfinite(self.best):
            self._no_win += 1
        self.stopped_early = self._no_win >= self.patience
        return False


class Outcome(NamedTuple):
    """What the summary says of the passes."""

    passes: int                 # passes learned (fewer than --passes after an early stop)
    holdout_loss: float | None  # the best pass's holdout loss; None when nothing is held out


def run_passes(learner, learn_pass: Callable[[int], int],
               save: Callable[[str], None] | None = None) -> Outcome:
    """Learn ``learner.config.passes`` passes, each by ``learn_pass(pass_no)`` (which returns
    the number of lines it read), with VW's holdout and early termination.

    With -f, ``save(path)`` writes the state the last pass left: to -f whenever the holdout
    improves and after the last pass (not after an early stop: -f keeps the best pass, as
    VW's), and to -f.N after pass N with --save_per_pass.
    """
    config = learner.config
    path = config.final_regressor if save is not None else None
    holdout = Holdout(config)
    passes = 0
    while passes < config.passes and not holdout.stopped_early:
        learner.params[layouts.P.holdout_rows] = holdout.active and passes > 0
        lines = learn_pass(passes)
        passes += 1
        # VW's end of a pass: the example counter, the holdout's verdict, the decayed rate
        finished = learner.end_pass(lines, passes == config.passes, holdout.pass_loss(
            learner.stats) if holdout.active and passes > 1 else None)
        improved = holdout.end_pass(learner.stats)
        if learner.auc is not None:
            learner.auc.end_pass(improved)
        learner.history.end_pass(holdout.last, learner.stats[layouts.R_EXAMPLES])
        learner.params[layouts.P.eta] *= config.decay_learning_rate
        if improved and path:
            save(path)
        if config.save_per_pass and path:
            save(f"{path}.{passes}")
        if finished:
            break
    if path and not holdout.stopped_early:
        save(path)
    return Outcome(passes, holdout.best if holdout.active else None)
