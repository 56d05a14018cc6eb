"""One command-line run: header, the streaming loop, outputs and summary."""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable

from olearn.core.atomic import AtomicOutput, check_writable
from olearn.data import formats, sources
from olearn.data.batch import ExampleBatch
from olearn.data.labels import names_of
from olearn.data.parse import FORMAT_CSV
from olearn.engine.learner import OnlineLearner
from olearn.engine.passes import DataPlan, run_passes
from olearn.features import stage_poly
from olearn.kernel import aot, layouts, loop
from olearn.learners.families import FAMILIES, family_of
from olearn.options.config import Config
from olearn.outputs.audit import NameCollector, printed_examples
from olearn.outputs.history import plot_learning_curve, require_matplotlib
from olearn.outputs.report import TABLE_HEADER, Console
from olearn.persistence import readable, regularizer
from olearn.reductions.oaa import class_count


def header(config: Config, data_lines: list[str], notes: tuple[str, ...] = ()) -> str:
    """VW's header: the options, the data, ``notes`` (the dictionaries read) and the
    learners."""
    lines = []
    names = names_of(config)
    if names is not None and class_count(config):
        lines.append(f"parsed {len(names)} named labels")
    for size, what in ((2, "quadratic features for pairs"), (3, "cubic features for triples")):
        chosen = [t for t in config.terms if len(t) == size]
        if chosen:
            lines.append(f"creating {what}: {' '.join(chosen)}")
    longer = [t for t in config.terms if len(t) > 3]
    if longer:
        lines.append(f"creating features for following interactions: {' '.join(longer)}")
    if config.lrq:  # VW's: its set of pairs, in order
        lines.append("creating low rank quadratic features for pairs: "
                     + ("(using dropout) " if config.lrqdropout else "")
                     + " ".join(sorted(set(config.lrq))))
    if config.testonly:
        lines.append("only testing")
    for name in ("l1", "l2"):
        if getattr(config, name) > 0:
            lines.append(f"using {name} regularization = {getattr(config, name):g}")
    if config.final_regressor:
        lines.append(f"final_regressor = {config.final_regressor}")
    if config.predictions:
        lines.append(f"predictions = {config.predictions}")
    if config.raw_predictions:
        lines.append(f"raw predictions = {config.raw_predictions}")
    lines += family_of(config).header_lines(config)
    lines += data_lines
    lines += [f"num sources = {len(config.data) or (0 if config.no_stdin else 1)}",
              f"Num weight bits = {config.bit_precision}",
              f"learning rate = {config.eta:g}",
              f"initial_t = {config.t0:g}",
              f"power_t = {config.power_t:g}"]
    if config.passes > 1:
        lines.append(f"decay_learning_rate = {config.decay_learning_rate:g}")
    lines += notes
    copies = config.bootstrap is not None and config.oaa is None
    boosts = config.boosting is not None
    network = config.nn is not None
    multiclass = class_count(config) > 0 and not copies and not boosts and not network
    reduction = ("csoaa" if config.csoaa is not None else "multilabel_oaa"
                 if config.multilabel_oaa is not None else "bootstrap" if copies
                 else "boosting" if boosts else "nn" if network
                 else "ect" if config.ect is not None
                 else "log_multi" if config.log_multi is not None else "oaa")
    count = (f"{class_count(config)} copies, {config.bs_type}" if copies
             else f"{class_count(config)} weak learners, {config.alg}" if boosts
             else f"{config.nn} hidden units" if network
             else f"{config.ect} classes, {config.error} errors" if config.ect is not None
             else f"{config.log_multi} classes" if config.log_multi is not None
             else f"{class_count(config)} classes")
    ldf_mode = config.ldf_override or config.csoaa_ldf or config.wap_ldf
    ldf_name = "wap_ldf" if config.wap_ldf else "csoaa_ldf"
    lines += [f"Enabled learners: {family_of(config).describe(config)}, "
              + (f"stage_poly ({config.poly_heuristic}), " if config.stage_poly else "")
              + (f"{reduction} ({count}), " if class_count(config) else "")
              + (f"bootstrap ({config.bootstrap} copies of each class, {config.bs_type}), "
                 if config.bootstrap is not None and not copies else "")
              + (f"{ldf_name} ({ldf_mode}), " if ldf_mode else "")
              + (f"autolink ({config.autolink}), " if config.autolink is not None else "")
              + (f"lrq ({' '.join(config.lrq)}), " if config.lrq else "")
              + (f"lrqfa ({config.lrqfa}), " if config.lrqfa is not None else "")
              + ("confidence, " if config.confidence else "")
              + ("baseline, " if config.baseline else "")
              + f"loss = {config.loss.describe(config.loss_param)}"
              + (f", link = {config.link}" if config.link != "identity" else "")
              + (", binary" if config.binary else ""),
              "Input label = " + ("CS" if config.csoaa is not None or ldf_mode
                                  else "MULTILABEL" if config.multilabel_oaa is not None
                                  else "MULTICLASS" if multiclass else "SIMPLE"),
              "Output pred = " + ("ACTION_SCORES" if ldf_mode and config.csoaa_rank
                                  else "SCALARS" if (multiclass or ldf_mode) and (
                                      config.scores or config.probabilities)
                                  else "MULTICLASS" if ldf_mode
                                  else "MULTILABELS" if config.multilabel_oaa is not None
                                  else "MULTICLASS" if multiclass else "SCALAR")]
    return "\n".join(lines) + "\n"


def compile_ahead(learner: OnlineLearner, config: Config, paths: list[str]) -> None:
    """Compile (or load from numba's cache) the run's kernels before it starts: the parser of
    the first source's format in a forked process while this one compiles the example loop.
    numba compiles one function at a time in a process, and a first run's compile is most of its
    time: on 2 cores the two overlap (the parser is about a third). Nothing without numba (the
    start-up module), fork or a second core, nor in a process with other threads (a lock one
    of them held at the fork would never be released in the child). The format is read from
    the options and the first source's name only: a source it misreads has its parser
    compiled when read."""
    if not (hasattr(loop.learn_batch, "compile") and hasattr(os, "fork")
            and len(os.sched_getaffinity(0)) > 1 and threading.active_count() == 1):
        return
    fmt = formats.detect(formats.requested(config), paths[0] if paths else "-", b"")
    child = os.fork() if fmt != FORMAT_CSV else 0  # a CSV block needs its source's header
    if child == 0 and fmt != FORMAT_CSV:
        try:  # the parser thread's first call, without the bytes: numba caches its kernel
            learner.parse_block(sources.Block(b"", "", 0), fmt)
        finally:
            os._exit(0)  # nothing of the parent's (buffers, outputs, exit handlers) runs here
    learner.compile_loops(both=False)
    if child:
        os.waitpid(child, 0)


def run(config: Config, ahead: bool = True) -> OnlineLearner:
    """Train online over every source, for each pass; print VW's table and summary; write the
    outputs (-p, -r, -f, text models). ``ahead``: compile the kernels first
    (:func:`compile_ahead`)."""
    paths = config.data or ([] if config.no_stdin else ["-"])
    sources.check_readable(paths)
    for path in (config.final_regressor, config.readable_model, config.invert_hash):
        if path:  # before training, not after
            check_writable(path)
    if config.learning_curve:
        require_matplotlib()  # before training, not after
    if config.stages:  # the schedule needs a pass's length: a first read of the data
        config = stage_poly.with_stages(config, sources.count_lines(paths))
    learner = OnlineLearner.start(config)
    config = learner.config
    if ahead:
        compile_ahead(learner, config, paths)
    plan = DataPlan(config, paths)
    sizes = [sources.file_size(p) for p in paths]
    console = Console(config.quiet, None if None in sizes or config.passes > 1 else sum(sizes))
    table = learner.family.PROGRESS_TABLE
    notes = learner.dictionaries.lines if learner.dictionaries else ()
    console.print(header(config, plan.header_lines(), notes) + TABLE_HEADER.rstrip("\n") * table)
    names = NameCollector(config) if config.invert_hash else None
    outputs = [(AtomicOutput(path), raw) for path, raw in
               ((config.predictions, False), (config.raw_predictions, True)) if path]
    bytes_done = 0  # of the passes before, for the progress bar

    def learn_piece(batch: ExampleBatch) -> None:
        preds = learner.new_predictions(batch)
        if config.audit:
            rows = learner.learn_audited(batch, preds, sys.stdout.write)
        else:
            rows = learner.learn(batch, preds)
        if config.print and len(batch):
            console.print(printed_examples(batch))
        if names is not None:
            names.add(batch, learner.terms)
        for out, raw in outputs:
            out.write(learner.prediction_lines(preds, batch, raw))
        for row in rows if table else ():
            console.print(learner.table_row(row, batch, preds))

    def learn_pass(pass_no: int) -> int:
        nonlocal bytes_done
        bytes_read = lines = 0
        for batch in plan.batches(learner, pass_no):
            for message in learner.warnings(batch, config.strict_parse):
                console.print(message)
            for piece in learner.pieces(batch):
                learn_piece(piece)
            bytes_read = batch.bytes_read
            lines = batch.pass_line + batch.n_lines
            console.progress(bytes_done + bytes_read, int(learner.stats[layouts.R_EXAMPLES]))
        bytes_done += bytes_read
        for out, _ in outputs:  # a closed pipe fails the run here, before -f is saved
            out.flush()
        if config.audit:
            sys.stdout.flush()
        return lines

    try:
        done = run_passes(learner, learn_pass, learner.save)
        regularizer.write_outputs(learner)
        console.close()
        learner.sync()
        passes = done.passes if paths else 0  # VW counts no pass without a source
        for path, known in ((config.readable_model, None), (config.invert_hash, names)):
            if path:
                readable.write(path, learner, passes,
                               learner.feature_names(known.names) if known else None,
                               own_names=known.pairs if known else None)
        if config.learning_curve:
            plot_learning_curve(learner.history, config.learning_curve)
        for out, _ in outputs:
            out.commit()
    except BaseException:
        console.close()
        plan.discard()
        for out, _ in outputs:
            out.discard()
        raise
    console.print(learner.summary(done.passes, done.holdout_loss))
    return learner


# Warm-up runs: between them they call every kernel entry point with every argument type the
# command line uses (text and cache input, -p and -r, audit and names, regularization, experts).
# A value of TEMPORARY names a new file in a temporary folder (FOLDER: the folder, where the
# input files are); --oaa reads a file of classes,
# --csoaa one of named classes and costs, --multilabel_oaa one of lists of classes, --csoaa_ldf
# and --wap_ldf one of multi-line examples.
TEMPORARY = "<temporary file>"
FOLDER = ["<temporary folder>"]  # a list of that folder (--dictionary_path)
WARM_UP_OPTIONS = ({}, {"audit": True, "keep": ["ab "], "redefine": ["z:=a"], "ngram": ["2"]},
                   {"audit": True, "feature_limit": ["1", "b3"]},
                   {"audit": True, "interact": "ab"},
                   {"affix": "+2,-1a", "quadratic": ["ab"]}, {"affix": "-3", "audit": True},
                   {"sgd": True, "raw_predictions": TEMPORARY, "ngram": ["a3"], "skips": ["1"]},
                   {"invert_hash": TEMPORARY, "l1": 1e-6, "stage_poly": True,
                    "quadratic": ["ab"]},
                   {"cache": True, "passes": 2, "readable_model": TEMPORARY},
                   # each other family's run, saving and printing its model
                   *({**family.WARM_UP, "final_regressor": TEMPORARY,
                      "readable_model": TEMPORARY} for family in FAMILIES if family.WARM_UP),
                   {"oaa": 3, "probabilities": True, "raw_predictions": TEMPORARY},
                   {"oaa": 3, "oaa_subsample": 1},
                   {"csoaa": 3, "named_labels": "a,b,c", "raw_predictions": TEMPORARY,
                    "cache": True, "passes": 2},
                   {"multilabel_oaa": 3, "probabilities": True},
                   {"bootstrap": 2, "bs_type": "vote", "raw_predictions": TEMPORARY},
                   {"bootstrap": 2, "oaa": 3},
                   {"boosting": 2, "alg": "adaptive", "raw_predictions": TEMPORARY},
                   {"nn": 2, "dropout": True, "final_regressor": TEMPORARY},
                   {"nn": 2, "inpass": True, "quadratic": ["ab"]},
                   {"csv": True, "audit": True},
                   {"csoaa_ldf": "mc", "probabilities": True, "raw_predictions": TEMPORARY,
                    "cache": True, "passes": 2},
                   {"csoaa_ldf": "m", "csoaa_rank": True, "quadratic": ["ab"],
                    "predictions": TEMPORARY},
                   {"wap_ldf": "m"},
                   {"autolink": 2},
                   {"marginal": "a", "compete": True, "invert_hash": TEMPORARY,
                    "final_regressor": TEMPORARY},
                   {"marginal": "b", "update_before_learn": True, "readable_model": TEMPORARY},
                   {"lrq": ["ab2"], "lrqdropout": True, "final_regressor": TEMPORARY},
                   {"lrqfa": "ab2"},
                   {"ect": 3, "error": 1, "raw_predictions": TEMPORARY},
                   {"log_multi": 3, "final_regressor": TEMPORARY},
                   {"dictionary": ["a:warm.dict", "warm.dict"], "dictionary_path": FOLDER},
                   {"confidence": True, "confidence_after_training": True,
                    "predictions": TEMPORARY},
                   {"baseline": True}, {"baseline": True, "global_only": True,
                                        "check_enabled": True, "lr_multiplier": 0.0})


WARM_UP_CLASSES = b"1 |a x\n3 2 'tag |b y\n|c z\n"
WARM_UP_ACTIONS = b"shared |a s\n1:1 |b x\n2:0 'tag |b y\n\n1:0 |b x\n3 |a z\n"
# The warm-up's input files: (the option that reads them, None for the others; name; bytes).
WARM_UP_INPUTS = ((None, "warm.vw", b"1 2 0.5 'tag |a x:1 y |b:2 z:abc :3\n-1 |c w\n\n|d q\n"),
                  (None, "warm.svm", b"1 1:0.5 2:1\n-1 qid:3 3:2 # c\n"),
                  ("oaa", "warm-classes.vw", WARM_UP_CLASSES),
                  ("ect", "warm-tournament.vw", WARM_UP_CLASSES),
                  ("log_multi", "warm-tree.vw", WARM_UP_CLASSES),
                  ("csoaa", "warm-costs.vw", b"a:1 b:0.5 |a x\nc:0 'tag |b y\n|c z\n"),
                  ("multilabel_oaa", "warm-lists.vw", b"0,2 |a x\n1 'tag |b y\n|c z\n"),
                  ("csoaa_ldf", "warm-actions.vw", WARM_UP_ACTIONS),
                  ("wap_ldf", "warm-pairs.vw", WARM_UP_ACTIONS),
                  ("csv", "warm.csv", b'_tag,_label,a|x,|,b|y\nt,1 2,0.5,3,"s ""q"""\n,-1,,1,z\n'),
                  ("<dictionary>", "warm.dict", b"x d:0.5 e\nw 3\n"))


def warm_up(runs: Iterable[int]) -> None:
    """The warm-up runs numbered ``runs``: WARM_UP_OPTIONS' in order, then (the last number)
    the Python API's kept calls (olearn/kernel/kept.py), about 10 s each to compile."""
    import tempfile  # only here: it would cost every run ~9 ms of start-up
    with tempfile.TemporaryDirectory() as tmp:
        inputs = {}  # the warm-up's files, by the option whose labels or format they hold
        for option, name, text in WARM_UP_INPUTS:
            inputs.setdefault(option, []).append(os.path.join(tmp, name))
            with open(inputs[option][-1], "wb") as f:
                f.write(text)
        stdout = sys.stdout
        with open(os.devnull, "w") as sys.stdout:
            try:
                for i in runs:
                    if i == len(WARM_UP_OPTIONS):
                        _kept_calls()
                        continue
                    options = WARM_UP_OPTIONS[i]
                    files = {name: os.path.join(tmp, name) if value == TEMPORARY else [tmp]
                             for name, value in options.items() if value in (TEMPORARY, FOLDER)}
                    data = next((paths for option, paths in inputs.items()
                                 if option and options.get(option)), inputs[None])
                    learner = run(Config(**{"data": data, "quiet": True,
                                            "predictions": os.path.join(tmp, "p"), **options,
                                            **files}), ahead=False)
                    # the run compiled the example loop it needed; the module needs both
                    learner.compile_loops(both=True)
            finally:
                sys.stdout = stdout


def _kept_calls() -> None:
    from olearn.frontends.api import Learner  # only here: the API is not the command line's
    one = Learner()
    one.learn_one({"x": 1.0, "y": 2.0}, 1.0)
    one.predict_one({"x": 1.0, "y": 2.0})


def compile_in_parallel(runs: Iterable[int], jobs: int) -> None:
    """Each of ``runs`` in one of ``jobs`` processes: numba compiles one function at a time per
    process, so the processes fill its on-disk cache together in a fraction of the time. A run
    that fails here fails again, with its message, when the caller runs it."""
    import concurrent.futures  # only here: the command line's start-up does not need them
    import multiprocessing
    context = multiprocessing.get_context("spawn")  # no fork of a process with threads
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
        # The slowest first (the kept calls), so that no process is left with a long run last.
        futures = [pool.submit(warm_up, [i]) for i in reversed(runs)]
        concurrent.futures.wait(futures)


def warm_cache() -> None:
    """Compile every kernel once (numba caches them on disk) on a tiny built-in input, then
    byte-compile olearn and build the ahead-of-time kernels the command line starts with
    (olearn/kernel/aot.py); with OLEARN_NO_BUILD set, compile the kernels only."""
    compile_kernels()
    if os.environ.get(aot.NO_BUILD):
        return
    with aot.build_lock(wait=True):  # after a background build, if one is running
        try:
            aot.build()
        except Exception as exc:  # no C compiler, say: the command line keeps using numba
            sys.stderr.write(f"[warning] ahead-of-time kernels not built ({exc}); "
                             "olearn starts more slowly\n")


def compile_kernels() -> None:
    """Compile every kernel once, on every core, then again in this process from numba's
    cache (the ahead-of-time build exports the signatures this process has called), and
    byte-compile olearn."""
    runs = range(len(WARM_UP_OPTIONS) + 1)
    jobs = min(len(os.sched_getaffinity(0)), 4)
    if jobs > 1:
        compile_in_parallel(runs, jobs)
    # Again in this process, from numba's cache now: the ahead-of-time build exports the
    # signatures this process has called.
    warm_up(runs)
    # Environments with PYTHONDONTWRITEBYTECODE never cache olearn's bytecode: do it here, for
    # the whole package (compiling its ~120 modules from source costs each run ~0.25 s).
    import compileall  # only here: its import costs every run ~2 ms
    compileall.compile_dir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           quiet=1)
