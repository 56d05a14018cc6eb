"""The online learner: state arrays plus the loop that streams batches through the kernels."""
from __future__ import annotations

import dataclasses
import sys
from collections import deque
from typing import Callable, Iterator

import numpy as np

from olearn.data import formats, sources
from olearn.data.batch import ExampleBatch
from olearn.data.csv_header import CsvError, CsvHeader, header_of
from olearn.data.hashing import namespace_hash
from olearn.data.labels import label_kind, labels_of, names_of
from olearn.data.multiline import POSITION as multiline_position
from olearn.data.multiline import Grouping
from olearn.data.parse import FORMAT_CSV, FORMAT_SVMLIGHT, FORMAT_VW, IDENTITY, NO_CSV, parse
from olearn.data.parsed import FATAL
from olearn.data.svmlight import SVM_NAMESPACE
from olearn.engine.pool import Pool
from olearn.errors import OlearnError
from olearn.features import interactions, namespaces, ngrams, stage_poly
from olearn.features.affixes import Affixes
from olearn.features.dictionary import DEFAULT_NAMESPACE, Dictionaries
from olearn.features.feature_limit import FeatureLimit
from olearn.features.interact import Interact
from olearn.kernel import layouts, loop
from olearn.kernel.bundles import Examples, Expander, Model, Out
from olearn.learners import gd, regularize
from olearn.learners.families import family_of
from olearn.learners.weights import W_G, W_W, WIDTH, initialize
from olearn.options.config import Config
from olearn.outputs import report
from olearn.outputs.audit import audit_line
from olearn.outputs.history import History
from olearn.outputs.metrics import AucMeter
from olearn.outputs.predictions import (
    format_class_sets,
    format_confidence,
    format_intervals,
    format_names,
    format_pairs,
    format_predictions,
)
from olearn.outputs.report import format_row, summary, warning_lines, warning_text
from olearn.persistence import model, regularizer, vw_model
from olearn.reductions import bootstrap, confidence, ldf, multilabel
from olearn.reductions.chosen import reduction_of
from olearn.reductions.classweight import ClassWeights
from olearn.reductions.ldf import LabelDependent

PARSE_THREADS = 2
IN_FLIGHT = 3  # parsed batches ahead of the learner
ROWS_PER_BATCH = 64
# the most prediction values one kernel call fills: a batch of short lines (a 1 MB block holds
# up to 500k) times --oaa's K columns would otherwise size the prediction array, and -r's text,
# by the input's shape (150k lines with --oaa 10000: 6 GB)
PREDICTIONS_PER_CALL = 1 << 18
# an example whose interactions expand to more features is named when memory runs out
WIDE_EXAMPLE = 1 << 24
KEPT_CALLS = 256  # the most kept calls a learner holds per mode (DictExamples' makes 64)
# the learner's arrays a kept call holds: rebinding one drops the kept calls
KEPT_ARRAYS = frozenset({"weights", "family", "poly", "reduction", "state", "stats", "params",
                         "terms", "linear", "_kept_rows"})


class OnlineLearner:
    """Weights and optimizer state for one configuration, and the streaming loop over data."""

    def __init__(self, config: Config):
        vw_model.check_writable(config)  # before any learning: -f's format must hold the model
        self.config = config
        adaptive, normalized, invariant = config.update_rule
        self.weights = np.zeros((1 << config.bit_precision, WIDTH), dtype=np.float32)
        initialize(self.weights, config)
        t0 = config.t0
        if adaptive and t0 > 0:
            self.weights[:, W_G] = t0
        # the learner family (learners/families.py) and its state beyond the weight table
        self.family = family_of(config)(config)
        # the expander in front of the family: --stage_poly's monomials (interactions are
        # stateless: their terms below)
        self.expander = stage_poly.StagePoly(config)
        self.poly = self.expander.state
        # the reduction between them: one scalar problem, --oaa's or --csoaa's K classes
        self.reduction = reduction_of(config)(config)
        # how labels read: simple or cost-sensitive, named by --named_labels with K classes
        self.names = names_of(config) if self.reduction.on else None
        # whether predictions are classes (--oaa and the like; not --bootstrap's means)
        self.classes_out = self.reduction.on and self.reduction.MULTICLASS
        self.labels = labels_of(label_kind(config), self.names)
        self._exported = False  # whether sync has put the current model into the weights
        # kept calls (_kept_call) by batch: learning's, then test-only's; None: none possible
        # (--oaa widens a batch's indices into a new array each call; the command line's
        # compiled kernels, olearn/kernel/aot.py, have no numba)
        # --classweight: learned examples' importances times their class's weight (a copy of
        # each batch's, which a kept call could not see)
        self.class_weights = ClassWeights.of(config)
        self._kept_calls: tuple[dict, dict] | None = (
            ({}, {}) if hasattr(loop.learn_batch, "overloads") and not self.reduction.on
            and self.family.KEPT_CALLS
            and self.class_weights is None else None)
        self._kept_rows = np.empty((ROWS_PER_BATCH, layouts.ROW_COLS))  # kept learning calls' rows
        self._no_rows = self._kept_rows[:0]
        self.state = self._fresh_state()
        self.stats = self.new_stats()
        # passes: this run's, and with --preserve_performance_counters the model's before
        self.passes_done = self.passes_before = 0
        self.history = History()  # the table's rows, for Learner.history and --learning_curve
        # name spans in parsed batches: for --audit, --invert_hash and Learner(names=True)
        self.parse_names = (config.audit or config.invert_hash is not None
                            or config.audit_regressor is not None)
        params = layouts.PARAMS.of(config)  # the options the kernels read
        self.params = params
        # --metric auc: every example's score, kept for the summary
        self.auc = AucMeter(params) if config.metric == "auc" else None
        self._selection = namespaces.Selection.of(config)
        self._grams = ngrams.Grams.of(config)
        self._limit = FeatureLimit.of(config)
        self._interact = Interact.of(config)
        self._affixes = Affixes.of(config)
        self._grouping = Grouping.of(config)
        self.linear = namespaces.linear_terms(config)
        self._wildcards = any(interactions.WILDCARD in t for t in config.terms)
        self._namespaces = np.zeros(256, dtype=np.bool_)
        # the expander's terms (--rank factors its pair itself)
        self.terms = interactions.encode(interactions.with_wildcards(
            [] if self.family.OWNS_TERMS else config.terms, [],
            config.leave_duplicate_interactions))
        hash_all = config.hash == "all"
        self._ns_hash = {FORMAT_SVMLIGHT: namespace_hash(SVM_NAMESPACE, config.hash_seed, hash_all),
                         FORMAT_VW: namespace_hash(b" ", config.hash_seed, hash_all),
                         FORMAT_CSV: 0}  # unused: a CSV column brings its namespace's hash
        # --dictionary: read once, looked up on the parse threads
        self.dictionaries = Dictionaries.of(config, self._default_features)

    def _default_features(self, lines: list[bytes]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each of ``lines`` (VW text without a label) parsed as this learner hashes: its
        default namespace's indices and values (a --dictionary's entries)."""
        cfg = self.config
        text = np.frombuffer(b"".join(line + b"\n" for line in lines), dtype=np.uint8)
        batch = parse(text, FORMAT_VW, cfg.mask, cfg.hash_seed, cfg.hash == "all", False, False,
                      self._ns_hash[FORMAT_VW], "dictionary")
        rows = []
        for e in range(len(batch)):
            lo, hi = batch.offsets[e], batch.offsets[e + 1]
            default = batch.namespace[lo:hi] == DEFAULT_NAMESPACE
            rows.append((batch.index[lo:hi][default], batch.value[lo:hi][default]))
        return rows

    @classmethod
    def start(cls, config: Config) -> "OnlineLearner":
        """A fresh learner, or with -i (``initial_regressor``) the saved one, its options merged
        with ``config``'s (a warning per override unless quiet)."""
        if not config.initial_regressor:
            learner = cls(config)
            if config.feature_mask is not None:
                learner.start_from_mask(config.feature_mask)
            regularizer.load_input(learner)
            return learner
        path = config.initial_regressor
        saved = model.load(path)
        config = model.merged_config(config, saved, path,
                                     lambda text: config.quiet or sys.stderr.write(text + "\n"))
        try:
            learner = cls(config)
        except OlearnError as exc:  # the model's options (e.g. its -b) can be the cause
            raise OlearnError(exc.message, exc.file or path) from None
        saved.restore(learner, path)
        # a model file's weights are its experts' θ as exported when it was saved, by its
        # --saew_output: a test-only run predicts from them unless it asks for another θ
        learner._exported = saved.options.get("saew_output") == config.saew_output
        regularizer.load_input(learner)
        if (config.preserve_performance_counters and not config.testonly
                and "counters" in saved.arrays):
            learner.passes_before = report.preserve(learner.stats, saved.arrays["counters"])
        return learner

    def start_from_mask(self, path: str) -> None:
        """--feature_mask without -i: the mask model's weights are the initial weights (VW's),
        and its label range the starting one; nothing else of it is kept."""
        saved = model.load(path)
        bits = saved.options["bit_precision"]
        if bits != self.config.bit_precision:
            raise OlearnError(f"the feature mask has -b {bits}, the run -b "
                              f"{self.config.bit_precision}", path)
        self.weights[:, W_W] = saved.weights(self.config)[:, W_W]
        for field in (layouts.S_MIN, layouts.S_MAX):
            self.state[field] = saved.state[field]
        self._apply_fixed_options(self.state)

    def feature_names(self, names: dict[int, str]) -> dict[int, str]:
        """``names`` of the input features (with --oaa, of each class's copy), and with
        --stage_poly those of the monomials."""
        return self.expander.feature_names(self.reduction.feature_names(names),
                                           int(self.params[layouts.P.constant]))

    def end_pass(self, lines: int, last: bool, holdout: float | None = None) -> bool:
        """After a pass of ``lines`` lines (the expander counts VW's example counter), the
        family's end of the pass (``holdout``: the pass's held-out loss, see
        learners/family.py); True when the family has finished the run."""
        self.expander.end_pass(lines, last)
        self.reduction.end_pass()
        self.passes_done += 1
        if self.config.testonly:
            return False
        return self.family.end_pass(self.weights, self.params, holdout)

    def _fresh_state(self) -> np.ndarray:
        """The learner state before any example."""
        state = layouts.STATE.defaults()
        state[layouts.S_T] = self.config.t0
        state[layouts.S_MIN], state[layouts.S_MAX] = self.config.loss.start_range
        self.family.start(state)
        self._apply_fixed_options(state)
        return state

    def _apply_fixed_options(self, state: np.ndarray) -> None:
        """--min_prediction/--max_prediction fix the clipping range, --indexing the classes;
        --l1_state/--l2_state, unless at their defaults, the pending regularization (VW's rule:
        the command line's, else the model's)."""
        if self.config.l1_state != 0.0:
            state[layouts.S_L1_STATE] = self.config.l1_state
        if self.config.l2_state != 1.0:
            state[layouts.S_L2_STATE] = self.config.l2_state
        if self.config.min_prediction is not None:
            state[layouts.S_MIN] = self.config.min_prediction
        if self.config.max_prediction is not None:
            state[layouts.S_MAX] = self.config.max_prediction
        if self.config.indexing is not None:
            state[layouts.S_INDEXING] = self.config.indexing

    def restore(self, weights: np.ndarray, state: np.ndarray) -> None:
        """Continue from a saved state (the fixed range of this run's options still applies)."""
        self.weights[:] = weights
        self.state[:] = state
        self._apply_fixed_options(self.state)

    def sync(self) -> None:
        """Put the model itself into ``weights``: the family applies every pending
        regularization step, or exports the experts' θ.

        Called before a model is saved or printed; learning continues exactly as without it.
        """
        self.family.sync(self.weights, self.state)
        self._exported = True

    def settle(self) -> None:
        """Apply the pending regularization (--l1_state/--l2_state) to the weights, as VW's
        before its first example; none is pending afterwards."""
        state = self.state
        self.weights[:, W_W] = regularize.settled(self.weights[:, W_W], state[layouts.S_L1_STATE],
                                                  state[layouts.S_L2_STATE])
        state[layouts.S_L1_STATE], state[layouts.S_L2_STATE] = 0.0, 1.0

    def save(self, path: str, model_format: str | None = None) -> None:
        """Write the model file of the state as it is now, in ``model_format`` (olearn's,
        persistence/model.py, or VW's, persistence/vw_model.py; default: --model_format's); a
        state that is not finite (inputs of too large a magnitude) is refused rather than
        saved."""
        self.sync()
        if not (self.family.storable(self.weights) and np.isfinite(self.state).all()):
            raise OlearnError("the model holds NaN or infinite weights (feature values or labels "
                              "too large?); not saved", path)
        if (model_format or self.config.model_format) == "vw":
            vw_model.write(path, self, self.passes_done)
            return
        weights, state = self.weights, self.state
        counters = report.counters_of(self.stats, self.passes_before + self.passes_done)
        if self.config.predict_only_model:  # VW's: the weights and label range, no resume state
            weights, state = model.without_resume_state(weights, self.config), self._fresh_state()
            # no resume state to keep a pending regularization in: the weights take it
            weights[:, W_W] = regularize.settled(weights[:, W_W], self.state[layouts.S_L1_STATE],
                                                 self.state[layouts.S_L2_STATE])
            for field in (layouts.S_MIN, layouts.S_MAX, layouts.S_INDEXING):
                state[field] = self.state[field]
            counters = None
        model.save(path, self.config, weights, state, (self.expander, self.reduction, self.family),
                   counters)

    def new_stats(self) -> np.ndarray:
        stats = np.zeros(layouts.STATS_SIZE)
        # VW's first row comes at weight 1, or at N with an integer -P N
        stats[layouts.R_DUMP_AT] = self.config.progress_arg if self.config.progress_add else 1.0
        stats[layouts.R_LABEL1] = stats[layouts.R_LABEL2] = np.nan
        return stats

    # -- parsing ---------------------------------------------------------------------------

    def parse_block(self, block: sources.Block, fmt: int,
                    header: CsvHeader | None = None) -> ExampleBatch:
        """One block of whole lines parsed into a batch as this learner's options say
        (``fmt``: a ``data.parse.FORMAT_*``; ``header``: a CSV source's columns)."""
        cfg = self.config
        selection = self._selection  # --ignore, --keep, --redefine
        text = np.frombuffer(block.data, dtype=np.uint8)
        text.flags.writeable = False  # a bytearray's too: the kernels' one type for the bytes
        if fmt == FORMAT_SVMLIGHT and cfg.csoaa is not None:
            raise OlearnError("--csoaa reads cost-sensitive labels of VW text, not svmlight",
                              block.source)
        if fmt != FORMAT_VW and self._grouping is not None:
            raise OlearnError("--csoaa_ldf and --wap_ldf read multi-line examples of VW text",
                              block.source)
        affixing = self._affixes is not None and fmt == FORMAT_VW
        looking_up = self.dictionaries is not None and fmt == FORMAT_VW
        batch = parse(text, fmt, cfg.mask, cfg.hash_seed, cfg.hash == "all", not cfg.noconstant,
                      self.parse_names or affixing or looking_up, self._ns_hash[fmt],
                      block.source,
                      index_of=selection.index_of if selection else IDENTITY,
                      labels=self.labels,
                      csv=header.block(text, block.starts_source) if header else NO_CSV)
        batch.bytes_read = block.bytes_read
        if looking_up:  # VW's text parser looks words up as it reads them: before --ignore
            batch = self.dictionaries.apply(batch, not cfg.noconstant, cfg.hash_seed)
        if selection is not None:
            # VW's text parser applies --redefine itself, its CSV reader not at all (VW's)
            batch = selection.apply(batch, not cfg.noconstant,
                                    redefined=fmt != FORMAT_SVMLIGHT)
        if affixing:  # from the names (parsed for them), after --ignore, before --ngram: VW's
            batch = self._affixes.apply(batch, not cfg.noconstant, cfg.mask, cfg.hash_seed,
                                        cfg.hash == "all", self._ns_hash[fmt])
        if (affixing or looking_up) and not self.parse_names:
            batch = dataclasses.replace(batch, audit=batch.audit[:0])
        if self._grams is not None:  # --ngram, --skips: after --ignore, as VW
            batch = self._grams.apply(batch, not cfg.noconstant, cfg.mask)
        if self._limit is not None:  # --feature_limit: after the constant, as VW
            batch = self._limit.apply(batch)
        if self._interact is not None:  # VW's interact reduction: before learning
            batch = self._interact.apply(batch)
        if self._grouping is not None:  # --csoaa_ldf: shared features merged, as VW's merger
            batch = self._grouping.apply(batch)
        return batch

    def _csv_header(self, block: sources.Block, fmt: int) -> CsvHeader | None:
        """A CSV source's columns, from its first block or --csv_header (None for another
        format); once per source, and a warning when no column is ``_label`` (VW's)."""
        if fmt != FORMAT_CSV:
            return None
        try:
            header = header_of(self.config, block.data)
        except CsvError as error:
            raise OlearnError(f"malformed CSV header: {error}", block.source, 1) from None
        if not header.has_label and not self.config.quiet:
            sys.stderr.write("[warning] No '_label' column found in the header/CSV first "
                             "line!\n")
        return header

    def batches(self, blocks: Iterator[sources.Block]) -> Iterator[ExampleBatch]:
        """Parsed batches, in order, their lines numbered (each source's from 0, the pass's
        across sources): blocks read ahead on one thread, parsed on two."""
        reader = sources.ReadAhead(blocks)
        pool = Pool(PARSE_THREADS)
        pending: deque = deque()
        fmt_of: dict[str, int] = {}
        header_of_source: dict[str, CsvHeader | None] = {}
        line = pass_line = 0

        def numbered(starts_source: bool, batch: ExampleBatch) -> ExampleBatch:
            nonlocal line, pass_line
            line = 0 if starts_source else line
            batch.first_line, batch.pass_line = line, pass_line
            line += batch.n_lines
            pass_line += batch.n_lines
            return batch

        try:
            for block in reader:
                if block.starts_source or block.source not in fmt_of:
                    fmt_of[block.source] = formats.detect(formats.requested(self.config),
                                                          block.source, block.data)
                    header_of_source[block.source] = self._csv_header(block, fmt_of[block.source])
                pending.append((block.starts_source,
                                pool.submit(self.parse_block, block, fmt_of[block.source],
                                            header_of_source[block.source])))
                if len(pending) >= IN_FLIGHT:
                    starts, future = pending.popleft()
                    yield numbered(starts, future.result())
            while pending:
                starts, future = pending.popleft()
                yield numbered(starts, future.result())
        finally:
            for _, future in pending:
                future.cancel()
            pool.shutdown()
            reader.close()

    # -- learning --------------------------------------------------------------------------

    def expansion_terms(self, batch: ExampleBatch) -> np.ndarray:
        """The interaction terms ``batch``'s examples will expand with, the learner unchanged:
        with a ``:`` wildcard, also the terms of the namespaces ``batch`` brings (as VW, which
        regenerates its interactions when an example brings a new namespace)."""
        if not self._wildcards:
            return self.terms
        present = np.bincount(batch.namespace, minlength=256) > 0
        if not (present & ~self._namespaces).any():
            return self.terms
        return interactions.encode(interactions.with_wildcards(
            self.config.terms, np.flatnonzero(self._namespaces | present).tolist(),
            self.config.leave_duplicate_interactions))

    def _see_namespaces(self, batch: ExampleBatch) -> None:
        """With a ``:`` wildcard, new namespaces in ``batch`` add interaction terms."""
        terms = self.expansion_terms(batch)
        if terms is not self.terms:
            self._namespaces |= np.bincount(batch.namespace, minlength=256) > 0
            self.terms = terms

    def learn(self, batch: ExampleBatch, preds: np.ndarray) -> np.ndarray:
        """Predict, report and learn every example of ``batch``; returns the table rows.

        ``preds`` (shape (len(batch), :meth:`prediction_columns`)) receives each output and raw
        score (with --oaa, then each class's score or probability).
        """
        if self.config.testonly:  # nothing is learned: the experts' θ, exported once, holds
            self._before_predicting(batch)  # (by this run's --saew_output)
        else:
            if self._wildcards:
                self._see_namespaces(batch)
            if self._exported:  # (a test: setting an attribute runs __setattr__, in Python)
                self._exported = False
        rows = np.empty((len(batch) if self.config.progress_add else ROWS_PER_BATCH,
                         layouts.ROW_COLS))
        rows = rows[:self._kernel(batch, preds, rows, self.params, self.state, self.stats)]
        self._learned(batch, preds, rows)
        return rows

    def learn_kept(self, batch: ExampleBatch, preds: np.ndarray) -> bool:
        """:meth:`learn` of a kept batch (matrices.DictExamples.fast: its values not checked
        yet) by its kept call (:meth:`_kept_call`); False, with nothing done, when one of its
        values is 0 or not finite (the general path drops or refuses such a feature)."""
        if self._kept_calls is None:
            if not _nonzero_finite(batch.value):
                return False
            self.learn(batch, preds)
            return True
        # (inline, as in predict_kept: each Python call here is a few percent of learn_one's)
        if self._wildcards:
            self._see_namespaces(batch)
        if self._exported:  # (a test: setting an attribute runs __setattr__, in Python)
            self._exported = False
        call = self._kept_calls[0].get(id(batch))
        if call is None or call[1] is not preds:
            call = self._kept_call(batch, preds, False)
        n = call[2](call[3])
        if n < 0:
            return False
        if n or self.auc is not None:  # a table row comes once in a while
            self._learned(batch, preds, self._kept_rows[:n])
        return True

    def _learned(self, batch: ExampleBatch, preds: np.ndarray, rows: np.ndarray) -> None:
        """What follows a learned batch: its table rows and --metric's scores."""
        self.history.add(rows)
        if self.auc is not None:
            self.auc.add(batch, preds)

    def predict(self, batch: ExampleBatch, preds: np.ndarray) -> None:
        """Predict every example of ``batch`` without learning or touching the statistics."""
        self._before_predicting(batch)
        params = self.params.copy()
        params[layouts.P.test_only] = 1
        self._kernel(batch, preds, self._no_rows, params, self.state.copy(),
                     self.new_stats())

    def predict_kept(self, batch: ExampleBatch, preds: np.ndarray) -> bool:
        """:meth:`predict` of a kept batch by its kept call, as :meth:`learn_kept`."""
        if self._kept_calls is None:
            if not _nonzero_finite(batch.value):
                return False
            self.predict(batch, preds)
            return True
        self._before_predicting(batch)
        call = self._kept_calls[1].get(id(batch))
        if call is None or call[1] is not preds:
            call = self._kept_call(batch, preds, True)
        return call[2](call[3]) >= 0

    def _before_predicting(self, batch: ExampleBatch) -> None:
        if self._wildcards:
            self._see_namespaces(batch)
        if self.config.experts and not self._exported:  # test-only prediction reads weights
            self.sync()

    def prediction_columns(self) -> int:
        """The width of the prediction array :meth:`learn` and :meth:`predict` fill."""
        return (self.reduction.prediction_columns() if self.reduction.on or self.config.confidence
                else 2)

    def scores(self, preds: np.ndarray) -> np.ndarray:
        """The raw scores in a prediction array; with classes, a column per class."""
        return self.reduction.class_scores(preds) if self.reduction.on else preds[:, 1]

    def pieces(self, batch: ExampleBatch) -> Iterator[ExampleBatch]:
        """``batch`` in consecutive pieces whose prediction arrays hold at most
        PREDICTIONS_PER_CALL values (one piece unless the classes are many); a multi-line
        example (--csoaa_ldf's two columns per line) is never split."""
        size = max(1, PREDICTIONS_PER_CALL // self.prediction_columns())
        if len(batch) <= size or isinstance(self.reduction, LabelDependent):
            yield batch
            return
        for first in range(0, len(batch), size):
            yield batch.examples(first, min(first + size, len(batch)))

    def new_predictions(self, batch: ExampleBatch) -> np.ndarray:
        return np.empty((len(batch), self.prediction_columns()), dtype=np.float32)

    def prediction_lines(self, preds: np.ndarray, batch: ExampleBatch, raw: bool) -> np.ndarray:
        """The -p (or, ``raw``, -r) lines of a batch's predictions, as bytes: the output or raw
        score; with --oaa, the class (its name with --named_labels), and every class's score
        for -r, --scores and --probabilities; with --csoaa, the class, and for -r each listed
        class's raw score."""
        if isinstance(self.reduction, LabelDependent):
            return self.reduction.prediction_lines(preds, batch, raw)
        if raw and self.reduction.on and not self.reduction.RAW_LINES:
            return np.empty(0, dtype=np.uint8)
        if not self.reduction.MULTICLASS and self.config.bootstrap is not None and not raw:
            return format_intervals(preds[:, 0], preds[:, bootstrap.LOW_COLUMN],
                                    preds[:, bootstrap.HIGH_COLUMN], batch.tags, batch.text)
        if self.config.confidence and not raw:
            return format_confidence(preds[:, 0], preds[:, confidence.CONFIDENCE_COLUMN],
                                     batch.tags, batch.text)
        if self.config.multilabel_oaa is not None and not raw:
            return format_class_sets(preds[:, multilabel.OUTPUT_COLUMN:],
                                     preds[:, multilabel.THRESHOLD_COLUMN],
                                     self.reduction.probabilities, batch.tags, batch.text)
        if self.reduction.on and self.reduction.CLASS_PAIRS and (raw or self.reduction.scores):
            classes, scores, counts, lead = self.reduction.class_pairs(preds, raw)
            return format_pairs(classes, scores, counts, lead, batch.tags, batch.text, False)
        if self.names is not None and not raw:
            return format_names(preds[:, 0], self.labels.names, self.labels.name_ends,
                                batch.tags, batch.text)
        return format_predictions(preds[:, 1 if raw else 0], batch.tags, batch.text)

    def table_row(self, row: np.ndarray, batch: ExampleBatch, preds: np.ndarray) -> str:
        """A progress-table row (outputs/report.py) of ``batch`` learned into ``preds``, as
        this learner's labels read (--multilabel_oaa's label and prediction are lists)."""
        texts = None
        if self.config.multilabel_oaa is not None:
            e = int(row[layouts.ROW_COLS - 1])
            given = batch.cost_class[batch.cost_offsets[e]:batch.cost_offsets[e + 1]]
            chosen = np.flatnonzero(self.reduction.predicted(preds[e:e + 1])[0])
            texts = (",".join(map(str, given)) or "unknown", ",".join(map(str, chosen)))
        multiline = isinstance(self.reduction, LabelDependent)
        return format_row(row, self.classes_out or multiline,
                          self.config.csoaa is not None or multiline, self.names, texts)

    def warnings(self, batch: ExampleBatch, strict: bool, prefix: str = "[warning] ") -> list[str]:
        """The batch's parse warnings (:func:`parse_warnings`) and, with --oaa, its labels'
        (olearn/reductions/oaa.py): a label that is not a class stops the run (an OlearnError)."""
        lines = parse_warnings(batch, strict, prefix)
        if self.reduction.on:
            lines += self.reduction.check_labels(batch, self.state[layouts.S_INDEXING], prefix)
        return lines

    def _kernel(self, batch: ExampleBatch, preds: np.ndarray, rows: np.ndarray,
                params: np.ndarray, state: np.ndarray, stats: np.ndarray) -> int:
        """loop.learn_batch on this learner's arrays: the table row count. Running out of
        memory is an OlearnError naming the batch's widest example (:meth:`_out_of_memory`)."""
        try:
            self.family.before_batch(batch, self.terms)
            return loop.batch_kernel(self.terms, self.linear, params)(
                *self._arguments(batch, preds, rows, params, state, stats))
        except MemoryError:
            raise self._out_of_memory(batch) from None

    def compile_loops(self, both: bool) -> None:
        """Compile (or load from numba's cache) the example loop this learner's batches need
        (loop.batch_kernel) or, ``both``, both loops (loop.learn_batch and
        learn_expanded_batch), for the parser's batches (``ExampleBatch.empty``), without
        running them. A run compiles the loop it needs only, and the start-up module
        (kernel/aot.py) exports what the warm-up compiled, for runs that may need either.
        Needs numba."""
        import numba  # only here: the command line's compiled kernels run without it
        empty = ExampleBatch.empty()
        arguments = self._bundles(empty, self.new_predictions(empty), self._no_rows,
                                  self.params.copy(), self.state.copy(), self.new_stats())
        signature = tuple(numba.typeof(argument) for argument in arguments)
        for kernel in ((loop.learn_batch, loop.learn_expanded_batch) if both else
                       (loop.batch_kernel(self.terms, self.linear, self.params),)):
            kernel.compile(signature)

    def _out_of_memory(self, batch: ExampleBatch) -> OlearnError:
        """The error of a batch whose learning ran out of memory: where an example's
        interactions expand to many features (8 bytes each in the kernel's scratch), that
        example's file and line."""
        sizes = interactions.expanded_sizes(batch.offsets, batch.namespace,
                                            self.expansion_terms(batch))
        if len(sizes) == 0 or sizes.max() < WIDE_EXAMPLE:
            return OlearnError(f"{batch.source}: out of memory")
        e = int(np.argmax(sizes))
        return OlearnError(
            f"{batch.source}:{batch.first_line + int(batch.lines[e]) + 1}: out of memory: this "
            f"example's interactions take up to {int(sizes[e]):,} features "
            f"({8 * int(sizes[e]) / 2 ** 30:,.1f} GiB)")

    def _kept_call(self, batch: ExampleBatch, preds: np.ndarray, test_only: bool) -> tuple:
        """A new kept call (olearn/kernel/kept.py: the kernel's arguments in one object, the
        compiled code called without numba's dispatcher) of a kept batch, learning or
        (``test_only``) predicting: (batch, preds, compiled code, its argument). A kept batch and
        ``preds`` are the caller's, made once and handed again each call with new contents: their
        arrays and line are the same objects each time (matrices.DictExamples' kept batches). The
        learner keeps a call per batch (for its last ``preds``) in each mode, and drops them all
        when one of its own arrays is replaced (``terms`` with a ``:`` wildcard, for one:
        :meth:`__setattr__`)."""
        from olearn.kernel import kept  # numba's structrefs: the Python API's only
        calls = self._kept_calls[test_only]
        if len(calls) >= KEPT_CALLS:
            calls.clear()
        if test_only:
            arguments = self._arguments(batch, preds, self._no_rows, self.params.copy(),
                                        self.state.copy(), self.new_stats())
            call = kept.kept(arguments, self.params, self.state, self.new_stats())
        else:
            call = kept.kept(self._arguments(batch, preds, self._kept_rows, self.params,
                                             self.state, self.stats))
        # the batch is kept with its call: no other object takes its id
        calls[id(batch)] = found = (batch, preds, *call)
        return found

    def __setattr__(self, name: str, value) -> None:
        """Replacing one of the learner's arrays a kept call holds drops the kept calls."""
        if name in KEPT_ARRAYS and self.__dict__.get("_kept_calls"):
            for calls in self._kept_calls:
                calls.clear()
        object.__setattr__(self, name, value)

    def _arguments(self, batch: ExampleBatch, preds: np.ndarray, rows: np.ndarray,
                   params: np.ndarray, state: np.ndarray, stats: np.ndarray) -> tuple:
        """loop.learn_batch's arguments: its bundles (kernel/bundles.py). The pending
        regularization (--l1_state/--l2_state) reaches the weights first."""
        if self.state[layouts.S_L1_STATE] != 0.0 or self.state[layouts.S_L2_STATE] != 1.0:
            self.settle()
        return self._bundles(batch, preds, rows, params, state, stats)

    def _bundles(self, batch: ExampleBatch, preds: np.ndarray, rows: np.ndarray,
                 params: np.ndarray, state: np.ndarray, stats: np.ndarray) -> tuple:
        """:meth:`_arguments`, the learner left as it is."""
        numbers = batch.numbers
        if self.class_weights is not None and params[layouts.P.test_only] == 0:
            numbers = self.class_weights.weighted(numbers, ~self._held_out(batch, params))
        return (Model(self.weights, state, params), self.family.bundle(),
                Expander(self.terms, self.linear, self.poly), self.reduction.bundle(),
                Examples(numbers, batch.offsets, self.reduction.widen(batch.index),
                         batch.value, batch.namespace, batch.lines, batch.pass_line,
                         batch.cost_offsets, batch.cost_class, batch.cost_value),
                Out(stats, preds, rows))

    @staticmethod
    def _held_out(batch: ExampleBatch, params: np.ndarray) -> np.ndarray:
        """Which examples of ``batch`` VW's holdout keeps from learning (numpy)."""
        period = np.int64(params[layouts.P.holdout_period])
        if period == 0:
            return np.zeros(len(batch), dtype=np.bool_)
        return loop.held_out(period, np.int64(params[layouts.P.holdout_after]),
                             batch.pass_line + batch.lines + 1)

    def summary(self, passes: int, holdout_loss: float | None) -> str:
        """The run's 'finished run' block (outputs/report.py ``summary``) of this learner."""
        cfg = self.config
        return summary(self.stats, cfg.loss, cfg.loss_param, passes + self.passes_before,
                       holdout_loss,
                       not (self.classes_out or ldf.chosen(cfg) or cfg.dont_output_best_constant),
                       cfg.probabilities and (cfg.oaa is not None or ldf.chosen(cfg)),
                       self.auc)

    @property
    def average_loss(self) -> float:
        weight = self.stats[layouts.R_W_LABELED]
        return float(self.stats[layouts.R_SUM_LOSS] / weight) if weight > 0 else float("nan")

    def learn_audited(self, batch: ExampleBatch, preds: np.ndarray,
                      emit: Callable[[str], None]) -> np.ndarray:
        """As :meth:`learn`, one example at a time, emitting each example's audit lines (with
        --oaa, as VW: a line per class, its score and its features' weights)."""
        self._see_namespaces(batch)
        exported = self.family.AUDIT_SYNC
        adaptive = self.config.update_rule[0] and isinstance(self.family, gd.GradientDescent)
        index = self.reduction.widen(batch.index)
        per_class = self.reduction.on and self.reduction.AUDITED_PER_CLASS
        classes = range(self.reduction.k) if per_class else range(1)
        multiline = isinstance(self.reduction, LabelDependent)
        # an example's lines: one, or a multi-line example's (its actions, audited as VW's
        # prediction pass writes them: each once, with its raw score)
        starts = (np.flatnonzero(batch.numbers[:, multiline_position] == 0) if multiline
                  else np.arange(len(batch)))
        rows = []
        for e, end in zip(starts, np.append(starts[1:], len(batch))):
            if exported:  # the weights this example is predicted with (O(d): for inspection)
                self.sync()
            features = [audit_line(batch, j, self.weights, adaptive, self.terms, self.config,
                                   index, k) for j in range(e, end) for k in classes]
            row = np.empty((1, layouts.ROW_COLS))
            self._exported = False
            one = batch.examples(e, end)
            if self._kernel(one, preds[e:end], row, self.params, self.state, self.stats):
                rows.append(row)
            if multiline:
                lines = [format_predictions(preds[j:j + 1, 1], batch.tags[j:j + 1], one.text)
                         for j in range(e, end)]
            elif per_class:
                lines = [format_predictions(self.scores(preds[e:e + 1])[:, k], one.tags, one.text)
                         for k in classes]
            else:
                lines = [self.prediction_lines(preds[e:e + 1], one, False)]
            emit("".join(bytes(line).decode("utf-8", "surrogateescape") + text + "\n"
                         for line, text in zip(lines, features)))
        rows = np.concatenate(rows) if rows else np.empty((0, layouts.ROW_COLS))
        self._learned(batch, preds, rows)
        return rows


def _nonzero_finite(values: np.ndarray) -> bool:
    """Whether every value is nonzero and finite: a kept batch's check where no kept call
    makes it (olearn/kernel/kept.py)."""
    from olearn.kernel import kept
    return kept.nonzero_finite(values)


def parse_warnings(batch: ExampleBatch, strict: bool, prefix: str = "[warning] ") -> list[str]:
    """Messages for the parse warnings of ``batch``, each naming the file and line; a fatal
    one (malformed CSV) stops the run (an OlearnError), and with --strict_parse any one."""
    fatal = np.flatnonzero(np.isin(batch.warnings[:, 1], FATAL))
    if len(fatal):
        line, text = warning_text(batch, int(fatal[0]), fatal=True)
        raise OlearnError(text, batch.source, line)
    if strict and batch.n_warnings:
        line, text = warning_text(batch, 0, fatal=True)
        raise OlearnError(text + " (--strict_parse)", batch.source, line)
    return warning_lines(batch, prefix)
