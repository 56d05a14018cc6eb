"""--dask: data-parallel training on a local Dask cluster (worker processes on this machine)."""
import gzip
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from conftest import SHARED_DATA, model_state, olearn_cmd, run_cmd

import olearn
from olearn.engine.learner import OnlineLearner
from olearn.errors import OlearnError
from olearn.features import stage_poly
from olearn.frontends.run import run as run_single
from olearn.kernel import layouts
from olearn.learners.weights import W_G, W_N, W_W
from olearn.options.config import Config
from olearn.persistence import model

distributed = pytest.importorskip("distributed")
from dask import config as dask_config  # noqa: E402  (installed with distributed)

from olearn.scale import distributed as olearn_dask  # noqa: E402  (needs dask)
from olearn.scale import merge as olearn_merge  # noqa: E402
from olearn.scale import partitions as olearn_partitions  # noqa: E402
from olearn.scale import sync  # noqa: E402

FAST_CONNECT = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"}


def _write_examples(path, n, seed):
    """``n`` VW lines: 20 of 60 binary features, labels from a noisy linear rule."""
    rng = np.random.RandomState(seed)
    truth = rng.normal(size=60)
    with open(path, "w") as f:
        for _ in range(n):
            feats = np.sort(rng.choice(60, 20, replace=False))
            label = 1 if truth[feats].sum() + rng.normal() > 0 else -1
            f.write(f"{label} |f " + " ".join(f"x{j}" for j in feats) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    """Four partition files of 3000 examples."""
    folder = tmp_path_factory.mktemp("parts")
    return [_write_examples(folder / f"part-{k}.vw", 3000, k) for k in range(4)]


@pytest.fixture(scope="module")
def cluster():
    # A LocalCluster closes the nanny of a worker not back within lost-worker-timeout (15 s)
    # of its loss; the tests that kill a worker wait for its nanny's restart, which a loaded
    # machine (CI's parallel tests) can stretch beyond that.
    with dask_config.set({"distributed.deploy.lost-worker-timeout": "300s"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=":0") as local:
        yield local


def _train(address, data, out, **options):
    """Train with --dask in this process; returns the model file's state (conftest.py
    ``model_state``: its options and arrays but the progress counters)."""
    run_dask(address, data, final_regressor=str(out), **options)
    return model_state(out)


def run_dask(address, data, **options):
    options = {"bit_precision": 16, "quiet": True, **options}
    return olearn_dask.run(Config(data=list(data), dask=address, **options))


def _parents(path):
    arrays = model.load(str(path)).arrays
    return set(arrays["poly_index"][arrays["poly_flags"] & stage_poly.PARENT != 0].tolist())


# -- partitions -------------------------------------------------------------------------------

def test_glob_gives_one_partition_per_file_in_sorted_order(parts):
    pattern = os.path.join(os.path.dirname(parts[0]), "part-*.vw")
    assert [str(p) for p in olearn_dask.partitions([pattern])] == sorted(parts)


def test_split_plain_file_gives_every_line_to_one_partition(parts):
    found = olearn_dask.partitions([parts[0]], minimum=3)
    assert len(found) == 3 and all(p.byte_range for p in found)
    text = b"".join(block.data for part in found for block in part.blocks())
    with open(parts[0], "rb") as f:
        assert text == f.read()


def test_gzip_file_is_one_partition(tmp_path, parts):
    path = tmp_path / "data.vw.gz"
    with open(parts[0], "rb") as f:
        path.write_bytes(gzip.compress(f.read()))
    assert olearn_dask.partitions([str(path)], minimum=4) == [
        olearn_partitions.Partition(str(path))]


def test_pattern_matching_nothing_is_an_error(tmp_path):
    with pytest.raises(OlearnError, match="no file matches"):
        olearn_dask.partitions([str(tmp_path / "none-*.vw")])


# -- averaging --------------------------------------------------------------------------------

def test_one_partition_gives_the_single_process_model(cluster, parts, tmp_path):
    """Averaging one state is the identity: --dask on one file equals the ordinary run."""
    single = tmp_path / "single.model"
    run_single(Config(data=[parts[0]], bit_precision=16, quiet=True, passes=3, cache=True,
                      cache_file=str(tmp_path / "cache"), final_regressor=str(single)))
    assert _train(cluster.scheduler_address, [parts[0]], tmp_path / "dask.model",
                  passes=3) == model_state(single)


def _write_classes(path, n, seed, labels):
    """``n`` VW lines of 5 classes (the highest of 5 noisy linear scores over 10 of 40
    features), labelled as ``labels`` says: the class (--oaa, --ect), every class's cost (0 for
    it, 1 otherwise: --csoaa) or the class alone as a list, 0-based (--multilabel_oaa)."""
    rng = np.random.RandomState(seed)
    truth = rng.normal(size=(5, 40))
    with open(path, "w") as f:
        for _ in range(n):
            feats = np.sort(rng.choice(40, 10, replace=False))
            best = int(np.argmax(truth[:, feats].sum(axis=1) + rng.normal(size=5)))
            label = {"class": str(best + 1), "list": str(best),
                     "costs": " ".join(f"{k + 1}:{float(k != best)}" for k in range(5))}[labels]
            f.write(f"{label} |f " + " ".join(f"x{j}" for j in feats) + "\n")
    return str(path)


@pytest.mark.parametrize("sync", [0, 300])
@pytest.mark.parametrize("option, labels", [("oaa", "class"), ("ect", "class"),
                                            ("csoaa", "costs"), ("multilabel_oaa", "list")])
def test_class_reductions_on_one_partition_give_the_single_process_model(
        cluster, tmp_path, option, labels, sync):
    """The classes' normalizer sums travel with the state (averaged by examples, or added up
    with --dask_sync): one partition equals the ordinary run, for each class reduction."""
    data = _write_classes(tmp_path / "classes.vw", 2000, 5, labels)
    options = {option: 5, "passes": 2, "cache": True}
    single = tmp_path / "single.model"
    run_single(Config(data=[data], bit_precision=16, quiet=True, final_regressor=str(single),
                      cache_file=str(tmp_path / "cache"), **options))
    assert _train(cluster.scheduler_address, [data], tmp_path / "dask.model", dask_sync=sync,
                  **options) == model_state(single)


def test_oaa_on_four_partitions_learns_the_classes(cluster, tmp_path):
    """--oaa over 4 partitions with --dask_sync: the progressive 0/1 loss of 3 passes stays
    within 0.05 of one process's."""
    data = _write_classes(tmp_path / "classes.vw", 8000, 6, "class")
    single = run_single(Config(data=[data], bit_precision=16, quiet=True, oaa=5, passes=3,
                               cache=True, holdout_off=True))
    dask = run_dask(cluster.scheduler_address, [data], oaa=5, passes=3, cache=True,
                    holdout_off=True, dask_partitions=4, dask_sync=200)
    loss = [learner.stats[layouts.R_SUM_LOSS] / learner.stats[layouts.R_W_LABELED]
            for learner in (single, dask)]
    assert loss[1] <= loss[0] + 0.05


def test_one_partition_stops_early_as_the_single_process(cluster, tmp_path, capsys):
    """After an early stop, -f holds the best pass and --readable_model the last, as in one
    process (and VW)."""
    data = _write_examples(tmp_path / "d.vw", 1000, 5)
    with open(data, "a") as f:  # VW's holdout lines (every 10th) contradict the others
        f.writelines(f"{-1 if k % 10 == 9 else 1} |f x{k % 7}\n" for k in range(2000))
    options = dict(bit_precision=16, quiet=False, passes=20, early_terminate=1)
    outputs = {}
    for how in ("single", "dask"):
        files = {"final_regressor": str(tmp_path / f"{how}.model"),
                 "readable_model": str(tmp_path / f"{how}.txt")}
        if how == "single":
            run_single(Config(data=[data], cache_file=str(tmp_path / "cache"), **options,
                              **files))
        else:
            run_dask(cluster.scheduler_address, [data], **options, **files)
        outputs[how] = [model_state(files["final_regressor"]),
                        open(files["readable_model"], "rb").read()]
        assert "passes used = 2\n" in capsys.readouterr().err
    assert outputs["dask"][0] == outputs["single"][0]
    # the text models, but for the counters of the progress table, which --dask prints from
    # each pass's sums (readable.write's ``table``)
    counters = ("sum_loss_since_last_dump ", "dump_interval ", "sd::oec.")
    texts = [[line for line in outputs[how][1].decode().splitlines()
              if not line.startswith(counters)] for how in ("dask", "single")]
    assert texts[0] == texts[1]


def _one_pass_each(tmp_path, paths, options):
    """Weight rows (w, G, N, -) of a single-process pass over each of ``paths``."""
    config = Config(bit_precision=16, quiet=True, **options)
    rows = []
    for k, path in enumerate(paths):
        out = tmp_path / f"single{k}.model"
        run_single(Config(data=[path], bit_precision=16, quiet=True, final_regressor=str(out),
                          **options))
        rows.append(model.load(str(out)).weights(config).astype(np.float64))
    return rows


def _dask_rows(address, paths, tmp_path, options):
    run_dask(address, paths, final_regressor=str(tmp_path / "dask.model"), **options)
    return model.load(str(tmp_path / "dask.model")).weights(Config(bit_precision=16, **options))


@pytest.fixture
def uneven(parts, tmp_path):
    """Two partitions, the second half as large as the first."""
    return [parts[0], _write_examples(tmp_path / "half.vw", 1500, 9)]


def test_continuing_from_a_model_matches_the_single_process(cluster, parts, tmp_path):
    """-i: the saved state is broadcast to the first pass (one partition: exactly -i's run)."""
    first = tmp_path / "first.model"
    run_single(Config(data=[parts[0]], bit_precision=16, quiet=True, final_regressor=str(first)))
    single = tmp_path / "single.model"
    run_single(Config(data=[parts[1]], initial_regressor=str(first), quiet=True,
                      final_regressor=str(single)))
    assert _train(cluster.scheduler_address, [parts[1]], tmp_path / "dask.model",
                  initial_regressor=str(first)) == model_state(single)


def test_worker_caches_give_the_same_model_as_parsing(cluster, parts, tmp_path):
    """-c: pass 1 writes each partition's cache on its worker, later passes read it."""
    parsed = _train(cluster.scheduler_address, parts, tmp_path / "text.model", passes=3)
    assert _train(cluster.scheduler_address, parts, tmp_path / "cached.model", passes=3,
                  cache=True) == parsed


def test_sgd_weights_are_averaged_by_examples(cluster, uneven, tmp_path):
    """Without --adaptive, w is the mean of the partitions' models weighted by their examples
    (here the larger partition counts twice)."""
    a, b = _one_pass_each(tmp_path, uneven, {"sgd": True})
    averaged = _dask_rows(cluster.scheduler_address, uneven, tmp_path, {"sgd": True})
    np.testing.assert_allclose(averaged[:, 0], (2 * a[:, 0] + b[:, 0]) / 3, rtol=1e-6,
                               atol=1e-7)


def test_adaptive_weights_are_averaged_by_gradient_sums(cluster, uneven, tmp_path):
    """With --adaptive, each coordinate's w and G are averaged weighted by the partitions'
    increase of G (VW's --span_server rule; from a fresh start that is their G), and N is the
    largest of theirs."""
    a, b = _one_pass_each(tmp_path, uneven, {})
    averaged = _dask_rows(cluster.scheduler_address, uneven, tmp_path, {})
    g = a[:, 1] + b[:, 1]
    moved = g > 0
    for column in (0, 1):
        expected = (a[moved, 1] * a[moved, column] + b[moved, 1] * b[moved, column]) / g[moved]
        np.testing.assert_allclose(averaged[moved, column], expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(averaged[:, 2], np.maximum(a[:, 2], b[:, 2]))


@pytest.mark.parametrize("sync", [0, 700])
def test_two_runs_give_the_same_model(cluster, parts, tmp_path, sync):
    first = _train(cluster.scheduler_address, parts, tmp_path / "a.model", passes=3,
                   dask_sync=sync)
    assert _train(cluster.scheduler_address, parts, tmp_path / "b.model", passes=3,
                  dask_sync=sync) == first


# -- merging within a pass (--dask_sync) --------------------------------------------------------

def test_sync_model_does_not_depend_on_the_number_of_workers(cluster, parts, tmp_path):
    """4 partitions on 2 workers (two each) and on 3 (two, one, one): every worker merges the
    others' rows in the same order, so the models are the same."""
    two = _train(cluster.scheduler_address, parts, tmp_path / "two.model", passes=2,
                 dask_sync=300)
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as three:
        assert _train(three.scheduler_address, parts, tmp_path / "three.model", passes=2,
                      dask_sync=300) == two


def test_sync_with_one_partition_gives_the_single_process_model(cluster, parts, tmp_path):
    """A partition learned in segments of 700 examples, each from the merged state of the
    last, continues exactly as one process (merging one partition is the identity), holdout
    included."""
    single = tmp_path / "single.model"
    run_single(Config(data=[parts[0]], bit_precision=16, quiet=True, passes=3,
                      cache_file=str(tmp_path / "cache"), final_regressor=str(single)))
    assert _train(cluster.scheduler_address, [parts[0]], tmp_path / "dask.model", passes=3,
                  dask_sync=700, cache=True) == model_state(single)


def test_sync_adds_up_the_partitions_changes(cluster, uneven, tmp_path):
    """With one segment per partition (N larger than both), w and G are the fresh state plus
    both partitions' changes, that is their sum; N is the largest."""
    a, b = _one_pass_each(tmp_path, uneven, {})
    added = _dask_rows(cluster.scheduler_address, uneven, tmp_path, {"dask_sync": 10 ** 6})
    np.testing.assert_allclose(added[:, :2], a[:, :2] + b[:, :2], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(added[:, 2], np.maximum(a[:, 2], b[:, 2]))


def test_merging_more_often_changes_the_model(cluster, parts, tmp_path):
    once = _train(cluster.scheduler_address, parts, tmp_path / "once.model", passes=2)
    assert _train(cluster.scheduler_address, parts, tmp_path / "often.model", passes=2,
                  dask_sync=500) != once


def _leaf(w, g, n, start_g=None):
    """A one-weight partition result: w, G, N (1 example)."""
    learner = OnlineLearner(Config(bit_precision=1, quiet=True))
    learner.weights[0, [W_W, W_G, W_N]] = w, g, n
    learner.stats[layouts.R_W_LABELED] = 1.0
    return olearn_merge.partial_of(olearn_merge.Snapshot.of(learner), start_g, learner.stats, None,
                                [], 0, power=1.0), learner


def test_weights_learned_with_a_smaller_normalizer_are_rescaled_before_averaging():
    """A partition that saw |x| up to 1 and one that saw 4: the first's w counts as w/4 (as
    the learner itself rescales w by N_old/N_new), then the G-weighted mean."""
    a, _ = _leaf(2.0, 1.0, 1.0, start_g=np.zeros(2))
    b, _ = _leaf(3.0, 1.0, 4.0, start_g=np.zeros(2))
    assert olearn_merge.combine(a, b).rows[0, 0] == pytest.approx((2.0 / 4 + 3.0) / 2)


@pytest.mark.parametrize("g_b, w, share", [(5.0, 2.0, "a's"), (np.inf, 2.5, "equal")])
def test_an_overflowed_gradient_sum_weights_the_average_without_nan(g_b, w, share):
    """G over float32's range is inf: the partition whose G overflowed takes the whole weight
    against a finite one (inf / inf would make the merged w NaN), equal shares against another
    infinite one; the merged G stays inf."""
    a, _ = _leaf(2.0, np.inf, 1.0, start_g=np.zeros(2))
    b, _ = _leaf(3.0, g_b, 1.0, start_g=np.zeros(2))
    rows = olearn_merge.combine(a, b).rows
    assert rows[0, 0] == w and rows[0, 1] == np.inf, share


def test_a_gradient_sum_that_stays_inf_has_not_changed():
    a, _ = _leaf(2.0, np.inf, 1.0, start_g=np.array([np.inf, 0.0], dtype=np.float32))
    assert a.gradient[0] == 0


@pytest.mark.parametrize("g_start", [0.5, np.inf])
def test_sync_adds_an_overflowed_gradient_sum_as_inf(g_start):
    a, _ = _leaf(2.0, np.inf, 1.0)
    b, _ = _leaf(3.0, np.inf if g_start == np.inf else 1.0, 1.0)
    _, start = _leaf(1.0, g_start, 1.0)
    merged = olearn_merge.combine(a, b, olearn_merge.Snapshot.of(start))
    assert merged.rows[0, 0] == 4.0 and merged.rows[0, 1] == np.inf


def test_sync_adds_changes_in_the_largest_normalizers_units():
    """From w = 1 at N = 1: partitions reaching w = 2 at N = 1 and w = 3 at N = 4 add up to
    1/4 + (2/4 - 1/4) + (3 - 1/4)."""
    a, _ = _leaf(2.0, 1.0, 1.0)
    b, _ = _leaf(3.0, 1.0, 4.0)
    _, start = _leaf(1.0, 0.5, 1.0)
    merged = olearn_merge.combine(a, b, olearn_merge.Snapshot.of(start))
    assert merged.rows[0, 0] == pytest.approx(2.0 / 4 + 3.0 - 1.0 / 4)
    assert merged.rows[0, 1] == pytest.approx(1.5)


def test_killed_worker_gives_the_same_model(cluster, parts, tmp_path):
    address = cluster.scheduler_address
    reference = _train(address, parts, tmp_path / "reference.model", passes=4)
    with distributed.Client(address) as client:
        pids = client.run(os.getpid)
        killed = []

        def kill_a_busy_worker():
            """SIGKILL the first worker seen running one of the run's partition tasks."""
            deadline = time.monotonic() + 60
            while not killed and time.monotonic() < deadline:
                for worker, keys in client.processing().items():
                    if any("-part" in str(key) for key in keys):
                        os.kill(pids[worker], signal.SIGKILL)
                        killed.append(worker)
                        return
                time.sleep(0.005)

        killer = threading.Thread(target=kill_a_busy_worker)
        killer.start()
        try:
            result = _train(address, parts, tmp_path / "killed.model", passes=4)
        finally:
            killed.append(None)  # stops the killer if the run ended first
            killer.join()
        assert killed[0] is not None, "no partition task was seen running"
        client.wait_for_workers(2, timeout=60)
    assert result == reference


# -- APPLE's parallel protocol ----------------------------------------------------------------

def test_stage_poly_parents_are_the_union_of_the_partitions_then_frozen(cluster, parts, tmp_path):
    """Pass 1 runs stage_poly on each partition from scratch (as a single run on it would);
    the union of their parents is kept, unchanged by the two later passes."""
    options = {"bit_precision": 16, "quiet": True, "stage_poly": True, "batch_sz": 500,
               "batch_sz_no_doubling": True}
    union = set()
    for k, path in enumerate(parts[:2]):
        out = tmp_path / f"single{k}.model"
        run_single(Config(data=[path], final_regressor=str(out), **options))
        union |= _parents(out)
    out = tmp_path / "dask.model"
    run_dask(cluster.scheduler_address, parts[:2], final_regressor=str(out), passes=3,
             holdout_off=True, **options)
    assert len(union) > 0
    assert _parents(out) == union


# -- the command line -------------------------------------------------------------------------

@pytest.mark.skipif(not SHARED_DATA.exists(), reason="needs ../shared/data")
def test_local_cluster_matches_single_process_test_error(tmp_path):
    """a9a, 4 partitions on `--dask local:2`, 5 passes: the test error is within
    max(5% relative, 0.005) of a single-process 5-pass run's, and the model predicts in a
    plain `-t -i` run."""
    train = tmp_path / "train.vw"
    train.write_bytes(gzip.decompress((SHARED_DATA / "a9a" / "train.vw.gz").read_bytes()))
    test = SHARED_DATA / "a9a" / "test.vw.gz"
    common = ["--loss_function", "logistic", "-b", "18", "--passes", "5", "--quiet"]
    code, _, err = run_cmd(olearn_cmd("-d", train, "-c", "-f", tmp_path / "single.model",
                                      *common))
    assert code == 0, err
    code, _, err = run_cmd(olearn_cmd("-d", train, "--dask", "local:2", "--dask_partitions",
                                      "4", "-f", tmp_path / "dask.model", *common))
    assert code == 0, err
    labels = np.array([float(line.split()[0]) for line in gzip.open(test, "rt")])
    errors = {}
    for name in ("single", "dask"):
        code, _, err = run_cmd(olearn_cmd("-t", "-i", tmp_path / f"{name}.model", "-d", test,
                                          "-p", tmp_path / f"{name}.preds", "--quiet"))
        assert code == 0, err
        preds = np.loadtxt(tmp_path / f"{name}.preds")
        errors[name] = float(np.mean(np.where(preds > 0, 1, -1) != labels))
    assert errors["dask"] <= errors["single"] + max(0.05 * errors["single"], 0.005), errors


@pytest.mark.parametrize("sync", [(), ("--dask_sync", "700")])
def test_progress_table_has_one_row_per_pass(cluster, parts, sync):
    """With --dask_sync too: a row sums all of a pass's segments."""
    code, _, err = run_cmd(olearn_cmd("-d", *parts, "--dask", cluster.scheduler_address,
                                      "--passes", "3", "-b", "16", *sync))
    assert code == 0, err
    rows = [line for line in err.splitlines() if line[:1].isdigit()]
    assert len(rows) == 3 and rows[1].endswith(" h") and not rows[0].endswith(" h")
    assert "partitions = 4" in err and "passes used = 3" in err
    assert "number of examples per pass = 10800" in err


def _one_error_line(code, err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1 and lines[0].startswith("olearn: error: "), err
    return lines[0]


def test_unreachable_scheduler_is_one_line(parts):
    proc = subprocess.run(olearn_cmd("-d", parts[0], "--dask", "tcp://127.0.0.1:1"),
                          capture_output=True, text=True, env=FAST_CONNECT)
    line = _one_error_line(proc.returncode, proc.stderr)
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:1" in line


def test_scheduler_without_workers_is_one_line(parts):
    with distributed.LocalCluster(n_workers=0, dashboard_address=":0") as empty:
        proc = subprocess.run(olearn_cmd("-d", parts[0], "--dask", empty.scheduler_address),
                              capture_output=True, text=True, env=FAST_CONNECT)
    assert "has no workers" in _one_error_line(proc.returncode, proc.stderr)


def test_parse_error_on_a_worker_is_one_line_naming_the_partition(cluster, tmp_path):
    bad = tmp_path / "bad.vw"
    bad.write_text("1 |f a\nnot-a-number |f b\n")
    code, _, err = run_cmd(olearn_cmd("-d", bad, "--dask", cluster.scheduler_address,
                                      "--strict_parse", "--quiet"))
    line = _one_error_line(code, err)
    assert "bad.vw:2:" in line and "strict_parse" in line


@pytest.mark.parametrize("value", ["-1", "x", "1.5"])
def test_invalid_sync_interval_is_one_line(parts, value):
    code, _, err = run_cmd(olearn_cmd("-d", parts[0], "--dask", "local:1", "--dask_sync", value))
    assert "--dask_sync" in _one_error_line(code, err)


def test_sync_refuses_stage_poly(parts):
    code, _, err = run_cmd(olearn_cmd("-d", parts[0], "--dask", "local:1", "--dask_sync", "10",
                                      "--stage_poly"))
    assert "not available with --dask_sync: --stage_poly" in _one_error_line(code, err)


@pytest.mark.parametrize("option, message", [(("-p", "preds"), "-p"),
                                             (("--saew",), "--eg/--boa/--saew"),
                                             (("--log_multi", "3"), "--log_multi's tree")])
def test_options_without_a_parallel_meaning_are_refused(parts, option, message):
    code, _, err = run_cmd(olearn_cmd("-d", parts[0], "--dask", "local:1", *option))
    assert f"not available with --dask: {message}" in _one_error_line(code, err)


def test_without_dask_installed_the_option_is_one_line(parts):
    """`distributed` made unimportable: --dask says how to install it."""
    script = ("import sys; sys.modules['distributed'] = None\n"
              "from olearn.frontends.cli import main\n"
              f"main(['-d', {parts[0]!r}, '--dask', 'local:1'])\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert "pip install 'olearn[dask]'" in _one_error_line(proc.returncode, proc.stderr)


def test_python_api_refuses_dask():
    with pytest.raises(OlearnError, match="command line"):
        olearn.Learner(dask="local:1")


def test_core_does_not_import_dask():
    script = ("import sys, olearn.frontends.cli, olearn.frontends.run, olearn.frontends.api\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.stdout.strip() == "[]", proc.stderr


def test_merged_statistics_follow_each_fields_declared_rule():
    a, b = (np.zeros(layouts.STATS_SIZE) for _ in range(2))
    a[layouts.R_SUM_LOSS], b[layouts.R_SUM_LOSS] = 1.5, 2.0
    a[layouts.R_DUMP_AT], b[layouts.R_DUMP_AT] = 4.0, 8.0  # table bookkeeping: the first copy's
    a[[layouts.R_LABEL1, layouts.R_LABEL2]] = 1.0, np.nan
    b[[layouts.R_LABEL1, layouts.R_LABEL2]] = 1.0, -1.0
    out = olearn_merge.merge_stats(a, b)
    assert (out[layouts.R_SUM_LOSS], out[layouts.R_DUMP_AT]) == (3.5, 4.0)
    assert (out[layouts.R_LABEL1], out[layouts.R_LABEL2],
            out[layouts.R_MANY_LABELS]) == (1.0, -1.0, 0.0)
    b[layouts.R_LABEL2] = 7.0
    c = olearn_merge.merge_stats(olearn_merge.merge_stats(a, b), out)
    assert (c[layouts.R_LABEL1], c[layouts.R_LABEL2], c[layouts.R_MANY_LABELS]) == (1.0, 7.0, 1.0)


# -- --dask_sync's merges of the changed rows -------------------------------------------------

def _state(bits, rng):
    """A learner's state with random weight rows (w, G, N), as the client keeps it."""
    learner = OnlineLearner(Config(bit_precision=bits, quiet=True))
    n = len(learner.weights)
    learner.weights[:, [W_W, W_G, W_N]] = np.stack([rng.normal(size=n), rng.uniform(0, 4, n),
                                                    rng.uniform(0.5, 2, n)], axis=1)
    learner.state[:] = rng.uniform(1, 2, layouts.STATE_SIZE)
    return learner


def _moved(learner, rows, rng):
    """``learner``'s state with ``rows`` moved (w, G up, N up or not) and one more example."""
    moved = olearn_merge.Snapshot.of(learner).copy()
    moved.weights[rows, W_W] += rng.normal(size=len(rows))
    moved.weights[rows, W_G] += rng.uniform(0, 1, len(rows))
    moved.weights[rows, W_N] *= rng.choice([1.0, 1.5], len(rows))
    moved.state[:] += rng.uniform(0, 1, layouts.STATE_SIZE)
    return moved


@pytest.mark.parametrize("seed", range(5))
def test_merging_the_changed_rows_equals_merging_whole_states(seed):
    """The sparse merge (each partition's changed rows, the start elsewhere) gives the merge of
    the whole states bit for bit (merge.combine over the tree, then finish)."""
    rng = np.random.default_rng(seed)
    learner = _state(8, rng)
    start = olearn_merge.Snapshot.of(learner).copy()
    states = [_moved(learner, np.sort(rng.choice(256, rng.integers(0, 40), replace=False)), rng)
              for _ in range(int(rng.integers(1, 6)))]
    stats = learner.new_stats()
    stats[layouts.R_W_LABELED] = 1.0
    config = Config(bit_precision=8, quiet=True, dask_sync=10)
    dense = olearn_merge.tree([olearn_merge.partial_of(s, None, stats, None, [], 0, True, 1.0)
                              for s in states],
                             lambda a, b, level, i: olearn_merge.combine(a, b, start))
    dense = olearn_merge.finish(dense, config, False)
    segments = []
    for s in states:
        changed = np.flatnonzero((s.weights != start.weights).any(axis=1))
        segments.append(sync.Segment(sync.Rows(changed, sync.restrict(s, changed, 0)), stats,
                                     None, [], 0, True))
    kept = start.copy()
    merged, _ = sync.Merger(kept, config, 0).merge(segments, False)
    assert kept.weights.tobytes() == dense.weights.tobytes()
    assert kept.state.tobytes() == dense.state.tobytes()
    assert set(merged.index) == set().union(*(set(s.rows.index) for s in segments))


def _traffic(address, paths, capsys, **options):
    """The rows changed per merge and the bytes per merge that --dask_sync reports."""
    run_dask(address, paths, quiet=False, **options)
    line = next(line for line in capsys.readouterr().err.splitlines()
                if line.startswith("dask_sync:"))
    words = line.replace(",", "").split()
    return float(words[3]), float(words[words.index("merge:") + 1])


def test_sync_bytes_grow_with_the_rows_changed_not_the_table(cluster, parts, capsys):
    """The same data at -b 16 and -b 22 (64× the table) moves the same rows and bytes per
    merge: the 60 features and the constant, at most, each a row of a few numbers."""
    small = _traffic(cluster.scheduler_address, parts, capsys, dask_sync=500, bit_precision=16)
    large = _traffic(cluster.scheduler_address, parts, capsys, dask_sync=500, bit_precision=22)
    assert small == large
    rows, kilobytes = small
    assert 20 <= rows <= 61
    assert kilobytes * 1e3 < 4 * (rows * 32 + 2000)  # 4 partitions' rows up and down, + scalars


def test_sync_with_a_worker_killed_gives_the_same_model(cluster, parts, tmp_path, capsys):
    """A worker killed in the middle of a --dask_sync run: every partition starts the pass
    again on the workers left, and the model is the undisturbed run's."""
    address = cluster.scheduler_address
    options = {"passes": 3, "dask_sync": 20, "cache": True}
    reference = _train(address, parts, tmp_path / "reference.model", **options)
    with distributed.Client(address) as client:
        client.wait_for_workers(2, timeout=60)
        pids = client.run(os.getpid)

        def kill_a_learners_worker():
            """SIGKILL a worker 0.3 s after the run's learners (actors) appear on it."""
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                holders = [worker for key, workers in client.who_has().items()
                           if str(key).startswith("olearn-") for worker in workers]
                if holders:
                    time.sleep(0.3)
                    os.kill(pids[holders[0]], signal.SIGKILL)
                    return
                time.sleep(0.005)

        killer = threading.Thread(target=kill_a_learners_worker)
        killer.start()
        try:
            result = _train(address, parts, tmp_path / "killed.model", quiet=False, **options)
        finally:
            killer.join()
        client.wait_for_workers(2, timeout=60)
    assert "a Dask worker was lost" in capsys.readouterr().err
    assert result == reference


def test_sync_with_a_worker_killed_in_a_later_pass_gives_the_same_model(
        cluster, parts, tmp_path, capsys, monkeypatch):
    """A worker killed in pass 2: the pass starts again from the state (and the merges'
    damping) that pass 1 ended with."""
    address = cluster.scheduler_address
    options = {"passes": 3, "dask_sync": 20, "cache": True}
    reference = _train(address, parts, tmp_path / "reference.model", **options)
    with distributed.Client(address) as client:
        client.wait_for_workers(2, timeout=60)
        pids = list(client.run(os.getpid).values())
        run_pass = sync.Team.run_pass

        def killing_in_pass_2(team, pass_no, params):
            if pass_no == 1 and not team.restarts:
                threading.Timer(0.1, os.kill, (pids[0], signal.SIGKILL)).start()
            return run_pass(team, pass_no, params)

        monkeypatch.setattr(sync.Team, "run_pass", killing_in_pass_2)
        result = _train(address, parts, tmp_path / "killed.model", quiet=False, **options)
        client.wait_for_workers(2, timeout=60)
    assert "starts pass 2 again" in capsys.readouterr().err
    assert result == reference


def _segment_moving(merger, moves):
    """A segment of one partition per entry of ``moves``: row 0's w moved by it (G up by 1)."""
    segments = []
    for move in moves:
        rows = sync.restrict(merger.state, np.array([0]), 0)
        rows.weights[0, W_W] += move
        rows.weights[0, W_G] += 1.0
        stats = OnlineLearner(Config(bit_precision=4, quiet=True)).new_stats()
        stats[layouts.R_W_LABELED] = 1.0
        segments.append(sync.Segment(sync.Rows(np.array([0]), rows), stats, None, [], 0, True))
    return segments


def test_sync_damps_a_sum_that_overshoots_back_and_undamps_steady_progress():
    """Two partitions: +1 each adds up to +2; then -3 each turns back by more (-6 against +2),
    so the sum is halved (-3); a turn back by less (+1 each against -3) is not damped again;
    agreeing changes double the factor back to the sum."""
    learner = OnlineLearner(Config(bit_precision=4, quiet=True))
    learner.weights[0, W_N] = 1.0
    merger = sync.Merger(olearn_merge.Snapshot.of(learner).copy(),
                         Config(bit_precision=4, quiet=True, dask_sync=10), 0)
    w = []
    for moves in ([1, 1], [-3, -3], [1, 1], [0.5, 0.5], [0.5, 0.5]):
        merger.merge(_segment_moving(merger, moves), False)
        w.append(float(merger.state.weights[0, W_W]))
    assert np.diff([0.0] + w).tolist() == [2.0, -3.0, 1.0, 1.0, 1.0]
    assert merger.state.weights[0, W_G] == 10.0  # G adds up, undamped


def test_sync_damping_stops_at_the_mean():
    learner = OnlineLearner(Config(bit_precision=4, quiet=True))
    learner.weights[0, W_N] = 1.0
    merger = sync.Merger(olearn_merge.Snapshot.of(learner).copy(),
                         Config(bit_precision=4, quiet=True, dask_sync=10), 0)
    for k, moves in enumerate(([1, 1], [-4, -4], [16, 16], [-64, -64])):
        before = float(merger.state.weights[0, W_W])
        merger.merge(_segment_moving(merger, moves), False)
        change = float(merger.state.weights[0, W_W]) - before
        assert change == [2.0, -4.0, 16.0, -64.0][k]  # 1, 1/2, then the mean: 1/2 (K = 2)


# -- Learner.fit on Dask collections ----------------------------------------------------------

def _frame(n, seed):
    """A DataFrame of 8 numeric columns and ±1 labels from a noisy linear rule."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    y = np.where(X @ rng.normal(size=8) + rng.normal(size=n) > 0, 1.0, -1.0)
    return pd.DataFrame(X, columns=[f"c{j}" for j in range(8)]), pd.Series(y)


def test_fit_on_a_dask_dataframe_of_one_partition_equals_fit_on_the_frame(cluster):
    dd = pytest.importorskip("dask.dataframe")
    X, y = _frame(3000, 1)
    options = {"loss_function": "logistic", "passes": 2, "holdout_off": True}
    with distributed.Client(cluster.scheduler_address):
        dask = olearn.Learner(**options).fit(dd.from_pandas(X, npartitions=1),
                                            dd.from_pandas(y, npartitions=1))
    assert dask.weights() == olearn.Learner(**options).fit(X, y).weights()


@pytest.mark.parametrize("sync", [0, 300])
def test_fit_on_dask_arrays_and_bags_is_deterministic(cluster, sync):
    """Four partitions of a Dask array, or of a bag of the same examples as lines: two fits
    give the same model, and each learns about as well as one process on the lines."""
    da, db = pytest.importorskip("dask.array"), pytest.importorskip("dask.bag")
    X, y = _frame(4000, 2)
    lines = [f"{int(t)} |f " + " ".join(f"{j}:{float(v)}" for j, v in enumerate(row))
             for row, t in zip(X.to_numpy(), y)]
    options = {"loss_function": "logistic", "dask_sync": sync}
    with distributed.Client(cluster.scheduler_address):
        arrays = [olearn.Learner(**options).fit(da.from_array(X.to_numpy(), chunks=(1000, 4)),
                                                da.from_array(y.to_numpy(), chunks=1000))
                  for _ in range(2)]
        bags = [olearn.Learner(**options).fit(db.from_sequence(lines, npartitions=4))
                for _ in range(2)]
    single = olearn.Learner(loss_function="logistic").fit(lines).average_loss
    for fits in (arrays, bags):
        assert fits[0].weights() == fits[1].weights()
        assert fits[0].average_loss < single * 1.3


def test_fit_on_a_dask_collection_needs_y_partitioned_alike(cluster):
    dd = pytest.importorskip("dask.dataframe")
    X, y = _frame(100, 3)
    with distributed.Client(cluster.scheduler_address):
        with pytest.raises(OlearnError, match="y must be a Dask collection"):
            olearn.Learner().fit(dd.from_pandas(X, npartitions=2), y.to_numpy())
        with pytest.raises(OlearnError, match="y has 3 partitions and X 2"):
            olearn.Learner().fit(dd.from_pandas(X, npartitions=2), dd.from_pandas(y, npartitions=3))


def test_fit_on_a_dask_collection_without_a_client_is_an_error():
    dd = pytest.importorskip("dask.dataframe")
    X, y = _frame(100, 3)
    with pytest.raises(OlearnError, match="start a distributed.Client"):
        olearn.Learner().fit(dd.from_pandas(X, npartitions=2), dd.from_pandas(y, npartitions=2))


def _a9a_frame(split):
    """a9a's split as a DataFrame of its 123 binary columns, and its labels."""
    import pandas as pd
    rows, labels = [], []
    with gzip.open(SHARED_DATA / "a9a" / f"{split}.vw.gz", "rt") as f:
        for line in f:
            label, features = line.split("|f")
            labels.append(float(label))
            rows.append([int(word.split(":")[0]) for word in features.split()])
    X = np.zeros((len(rows), 124), dtype=np.float32)
    for i, columns in enumerate(rows):
        X[i, columns] = 1.0
    return pd.DataFrame(X, columns=[f"a{j}" for j in range(124)]), np.array(labels)


@pytest.mark.skipif(not SHARED_DATA.exists(), reason="needs ../shared/data")
def test_fit_on_a_dask_dataframe_reaches_the_single_process_error_on_a9a(cluster):
    """a9a as a Dask DataFrame of 4 partitions, 3 passes on the 2-worker cluster: the test 0/1
    error is within the single-process fit's plus max(5%, 0.005), with and without sync."""
    dd = pytest.importorskip("dask.dataframe")
    train, labels = _a9a_frame("train")
    test, truth = _a9a_frame("test")
    options = {"loss_function": "logistic", "passes": 3}

    def error(learner):
        return float(np.mean(np.where(learner.predict(test) > 0, 1.0, -1.0) != truth))

    single = error(olearn.Learner(**options).fit(train, labels))
    X = dd.from_pandas(train, npartitions=4)
    y = dd.from_pandas(__import__("pandas").Series(labels), npartitions=4)
    with distributed.Client(cluster.scheduler_address):
        errors = [error(olearn.Learner(**options, dask_sync=sync).fit(X, y)) for sync in (0, 200)]
    assert max(errors) <= single + max(0.05 * single, 0.005), (single, errors)


@pytest.mark.parametrize("estimator", ["OlearnRegressor", "OlearnClassifier"])
def test_sklearn_estimators_fit_dask_collections_as_their_matrices(cluster, estimator):
    """An estimator's fit on a Dask DataFrame and Series of one partition learns the model its
    fit on the pandas ones does (columns by position, classes computed from y), and predicts
    the pandas frame."""
    pytest.importorskip("sklearn")
    dd = pytest.importorskip("dask.dataframe")
    from olearn import sklearn as estimators
    X, y = _frame(2000, 4)
    labels = np.where(y > 0, "yes", "no") if estimator == "OlearnClassifier" else y
    import pandas as pd
    local = getattr(estimators, estimator)().fit(X, labels)
    with distributed.Client(cluster.scheduler_address):
        dask = getattr(estimators, estimator)().fit(dd.from_pandas(X, npartitions=1),
                                                  dd.from_pandas(pd.Series(labels), npartitions=1))
    assert list(dask.feature_names_in_) == list(X.columns)
    np.testing.assert_array_equal(dask.predict(X), local.predict(X))
    np.testing.assert_array_equal(dask.coef_, local.coef_)
