"""The options of a run as a whole: its data, outputs, passes, console, --dask and --daemon.

The front ends own them (run.py, passes.py, api.py, distributed.py, daemon.py); they are
declared here, apart from those modules, because every front end imports olearn/options/config.py,
which gathers the options (a module that declared options and imported config would import
itself).
"""
from olearn.core.option import MAX_COUNT, Option, choice, flag, number, repeated, text


def _as_given(value: object) -> object:
    """-P's text or number, read by Config (an integer and a decimal mean different things)."""
    return value


DATA = (
    repeated("-d", "--data", metavar="PATH",
             help="Example file (VW text or svmlight, plain or gzip); '-' or none reads stdin. "
                  "Repeatable; positional paths are read too, in order."),
    flag("--strict_parse", help="Make parse warnings fatal."),
    number("--examples", kind=int, default=None, low=-1, high=MAX_COUNT, metavar="N",
           help="Read only the first N examples (-1: all, VW's default); not with a cache."),
    flag("--no_stdin", help="With no -d or path, read no examples (not stdin): e.g. to write a "
                            "fresh or loaded model's files."),
    flag("--onethread",
         help="Accepted for VW's command lines: parsing overlaps learning on a second thread "
              "either way, and the results are the same."),
)

OUTPUTS = (
    text("--audit_regressor", metavar="FILE",
         help="With -i: write the model's nonzero weights as name:index:weight, named by the "
              "data's features (read once, nothing learned), as VW."),
    flag("--dont_output_best_constant",
         help="Leave the best constant (and the label sum) out of the summary, as VW."),
    text("-p", "--predictions", metavar="FILE", help="File to output predictions to."),
    text("-r", "--raw_predictions", metavar="FILE",
         help="File to output raw scores to (before clipping and link)."),
    text("-f", "--final_regressor", metavar="FILE",
         help="Save the model (state and options) to FILE after training."),
    choice("--model_format", choices=("olearn", "vw"), default="olearn",
           help="The format -f writes: olearn's (every learner's whole state) or VW's binary "
                "model file, which VW's -i loads (gradient descent, --ftrl, --pistol, --coin, "
                "the feature options and the reductions whose state is all in the weights: "
                "--oaa, --csoaa, --nn, ...; others are refused before learning). -i reads "
                "both, by their content."),
    text("--readable_model", metavar="FILE",
         help="Write the model as text (index:weight and its state) after training."),
    text("--invert_hash", metavar="FILE",
         help="As --readable_model, each weight named by its feature (e.g. a^x:55432:...)."),
    text("--learning_curve", metavar="FILE.png",
         help="Draw the progressive loss (and each pass's holdout loss) to a PNG after "
              "training (needs matplotlib: pip install 'olearn[plot]')."),
    flag("--predict_only_model",
         help="Text models hold only the weights, not the optimizer state."),
    flag("--save_resume",
         help="Accepted for VW's command lines: model files keep the optimizer state "
              "unless --predict_only_model (VW 9's default too)."),
    text("-i", "--initial_regressor", metavar="FILE",
         help="Start from a saved model: continue training, or predict with -t."),
    flag("--preserve_performance_counters",
         help="With -i, training: continue the model's progress counters (examples, weights, "
              "losses, passes) instead of starting them at 0, as VW."),
    flag("-t", "--testonly",
         help="Ignore labels for learning: predict (and report the loss) only."),
    choice("--metric", choices=("none", "auc"), default="none",
           help="Also report in the summary: auc, a binary task's area under the ROC curve of "
                "the raw scores (positives: label > 0), progressive (with -t: the test set's) "
                "or, with a holdout, the best pass's held-out examples'."),
)

PASSES = (
    number("--passes", kind=int, default=1, low=1, high=MAX_COUNT,
           help="Number of passes over the data (needs -c or --cache_file when > 1)."),
    flag("-c", "--cache",
         help="Use a cache of parsed examples, <first data file>.cache: created by the "
              "first run, read instead of the text by later passes and runs."),
    text("--cache_file", metavar="FILE", help="Use FILE as the cache (implies -c)."),
    flag("-k", "--kill_cache", help="Rebuild the cache even if it is valid."),
    flag("--holdout_off", help="No holdout, even with several passes."),
    number("--holdout_period", kind=int, default=10, low=1, high=MAX_COUNT,
           help="With several passes, hold out every N-th line of each pass."),
    number("--holdout_after", kind=int, default=0, low=0, high=MAX_COUNT, show_default=False,
           help="Hold out every line after the N-th of each pass (even with one pass)."),
    number("--early_terminate", kind=int, default=3, low=1, high=MAX_COUNT,
           help="Stop after N passes in a row without a better holdout loss."),
    number("--decay_learning_rate", kind=float, default=1.0, low=0.0, low_allowed=False,
           help="Multiply the learning rate by this after each pass."),
    flag("--save_per_pass", help="Also save the model after each pass, as <-f file>.<pass>."),
)

DASK = (
    text("--dask", metavar="ADDRESS",
         help="Train data-parallel on a Dask cluster, averaging the workers' states after "
              "each pass (or merging every --dask_sync N examples): local:N starts N local "
              "worker processes, tcp://HOST:PORT joins a "
              "running scheduler. -d takes globs; each file is a partition. Needs olearn[dask]."),
    number("--dask_partitions", kind=int, default=0, low=0, high=MAX_COUNT, metavar="N",
           show_default=False,
           help="With --dask: split plain-text (not gzip) files at line boundaries into at "
                "least N partitions [default: one per file]."),
    number("--dask_sync", kind=int, default=0, low=0, high=MAX_COUNT, metavar="N",
           show_default=False,
           help="With --dask: merge the partitions' states every N examples of each partition, "
                "adding up their changes since the last merge (damped where the merges "
                "overshoot), instead of averaging their states once per pass; each partition's "
                "learner stays on its worker [default: 0, once per pass]."),
)

DAEMON = (
    flag("--daemon",
         help="Serve predictions over TCP instead of reading data: each example line a client "
              "sends is answered with its prediction (and tag) as -p writes it, or with "
              "'error: ...'; learns from labeled lines unless -t."),
    number("--port", kind=int, default=26542, low=0, high=65535,
           help="With --daemon: the TCP port; 0 picks a free one (printed on stderr)."),
    Option(("--host",), str, "127.0.0.1", show_default=True, metavar="ADDRESS",
           help="With --daemon: the address to listen on (0.0.0.0: every interface)."),
    text("--pid_file", metavar="FILE",
         help="With --daemon: write the server's process id to FILE (removed when it stops)."),
    text("--port_file", metavar="FILE",
         help="With --daemon: write the port listened on to FILE (removed when it stops)."),
    # VW's, so that VW's daemon command lines run: olearn neither forks nor detaches
    number("--num_children", kind=int, default=None, low=1, high=MAX_COUNT,
           help="With --daemon: accepted as VW's and ignored (one process serves every "
                "client from one model; VW forks N)."),
    flag("--foreground",
         help="With --daemon: accepted as VW's (olearn always stays in the foreground)."),
    # olearn's: what one client may cost the others (VW has no limits)
    number("--daemon_max_line", kind=int, default=1 << 20, low=1, high=MAX_COUNT,
           metavar="BYTES",
           help="With --daemon: the longest line a client may send; a longer one is answered "
                "'error: line longer than BYTES bytes; skipped' and dropped up to its newline, "
                "so a connection buffers at most BYTES plus one 64 KiB read."),
    number("--daemon_max_features", kind=int, default=1 << 24, low=1, high=1 << 62,
           metavar="N",
           help="With --daemon: the most features a line may have after interactions (-q, "
                "--cubic, --interactions), counted before learning; a line with more is "
                "answered 'error: ...' and neither predicted nor learned."),
    number("--daemon_idle_timeout", kind=float, default=300.0, low=0.0, metavar="SECONDS",
           help="With --daemon: close a connection that has sent and read nothing for "
                "SECONDS (0: never)."),
    number("--daemon_max_clients", kind=int, default=512, low=1, high=MAX_COUNT, metavar="N",
           help="With --daemon: connections served at once; when all are taken, a new one "
                "takes the slot of the connection idle the longest."),
)

CONSOLE = (
    flag("--quiet", help="Don't output diagnostics or progress updates."),
    flag("-a", "--audit",
         help="Print each example's features (ns^name:index:value:weight@G) to stdout."),
    text("-P", "--progress", metavar="N|X.Y", convert=_as_given,
         help="Progress rows every N weighted examples (integer) or at weights growing by "
              "a factor X.Y (float) [default: 2.0]."),
)
