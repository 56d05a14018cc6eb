"""Contracts every learner family keeps (in the spirit of River's check_estimator).

For each configuration of FAMILIES, on a small generated dataset:

1. saving, loading and continuing equals one uninterrupted run;
2. predicting changes no state;
3. ``-t -i model`` predicts what the trained learner predicts;
4. a one-partition ``--dask`` run is the single-process run (merging one state is the identity);
5. ``--readable_model`` lists exactly the weights that differ from a fresh learner's.

Equalities are exact (``-p`` text, model bytes, arrays): every path runs the same kernels on
the same float32 state in the same order, so nothing may differ, not even in the last bit.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from conftest import model_state, olearn_here, readable_body

from olearn import Learner
from olearn.frontends.run import run as run_single
from olearn.options.config import Config
from olearn.outputs.predictions import format_predictions

BITS = 12
HALF = 300  # examples in each half of the training data
TEST = 60
# Each family's options (Learner keywords; _argv spells them for the command line).
FAMILIES: dict[str, dict] = {
    "gd": {},
    "sgd": {"sgd": True},
    "l1": {"l1": 1e-4},
    "elastic_net": {"l1": 1e-4, "l2": 1e-3},  # the lazy L2's other catch-up formula
    "quadratic": {"quadratic": ["ab"]},
    # stages after 50, 100, 200 and 400 examples: one of them in the second half
    "stage_poly": {"stage_poly": True, "batch_sz": 50},
    "eg": {"eg": True},
    "boa": {"boa": True},
    "saew": {"saew": True},
    "saew_calibrate": {"saew": True, "saew_calibrate": True},
    "logistic": {"loss_function": "logistic", "link": "logistic"},
    "quantile": {"loss_function": "quantile", "quantile_tau": 0.3},
    "oaa": {"oaa": 3},
    "ftrl": {"ftrl": True},
    "ftrl_l1": {"ftrl": True, "l1": 1e-3, "l2": 1e-2, "loss_function": "logistic"},
    "pistol": {"pistol": True},
    "coin": {"coin": True, "loss_function": "logistic"},
    "freegrad": {"freegrad": True, "project": True, "restart": True},
    # the reduction behind the expander, with another loss
    "oaa_stage_poly": {"oaa": 3, "stage_poly": True, "batch_sz": 50,
                       "loss_function": "logistic"},
    "noop": {"noop": True},
    "rank": {"rank": 2, "quadratic": ["ab"]},
    # an epoch of 7: a model saved after 300 examples holds 6 of them
    "oja_newton": {"oja_newton": True, "sketch_size": 3, "epoch_size": 7, "quadratic": ["ab"]},
}
EXPERTS = {"eg", "boa", "saew", "saew_calibrate"}
# learners/coordinates.py's families
COORDINATES = {"ftrl", "ftrl_l1", "pistol", "coin", "freegrad"}
SLOTS_ONLY = {"rank"}  # the whole model in the family's slots (learners/mf.py)
LEARNS_NOTHING = {"noop"}  # learners/no_learning.py: no weight moves
# make test keeps one of them (each family compiles loops of its own); make check runs all
CASES = [pytest.param(family, marks=pytest.mark.slow)
         if family in COORDINATES - {"ftrl"} | {"noop"} else family for family in FAMILIES]
KINDS = ("real", "binary", "classes")  # the labels of the generated datasets
NO_DASK = ("--dask refuses --eg/--boa/--saew (ExponentialWeights.UNMERGEABLE): exponential "
           "weights have no averaging rule to merge partitions with")
NO_DASK_OAA = "--dask refuses --oaa: its per-class normalizer sums have no merge rule yet"
NO_DASK_RANK = "--dask refuses --rank: its factors have no merge rule yet"
NO_DASK_OJA = "--dask refuses --OjaNewton (OjaNewton.UNMERGEABLE): its sketch has no merge rule"
DASK_FREEZES_STAGES = (
    "distributed.finish zeroes --stage_poly's stage period and counter base after every pass "
    "(stages only in pass 1, by design for several partitions), so even one partition's model "
    "differs from a single process's: poly_counters (0, 0) against (800, 1201) here; continued "
    "with -i it stages no more (after 1 pass on 300 examples and -i on 300 more: 15 parents "
    "against 20), and from 3 passes the single process's later stages change the weights")


def _argv(options: dict) -> list[str]:
    """``options`` as command-line arguments."""
    argv = []
    for name, value in options.items():
        for item in value if isinstance(value, list) else [value]:
            argv += [f"--{name}"] if item is True else [f"--{name}", str(item)]
    return argv


def _lines(rng: np.random.RandomState, n: int, kind: str) -> list[str]:
    """``n`` VW lines: namespace a (numeric x, y, w), b (a category, numeric v) in most; a
    label linear in them plus an a×b product and noise (its sign for ``kind`` "binary", one of
    three classes by its value for "classes"); a few lines unlabeled or with an importance
    weight."""
    lines = []
    for _ in range(n):
        x, y, w, v = np.round(rng.uniform(-1, 1, size=4), 2)
        cat = rng.randint(6)
        label = 0.5 + 1.2 * x - 0.8 * y + 0.3 * w + 0.9 * x * v + 0.2 * (cat - 2.5)
        label += rng.normal(scale=0.1)
        head = {"binary": "1" if label > 0 else "-1", "real": f"{label:.3f}",
                "classes": str(1 + (label > 0) + (label > 1))}[kind]
        variant = rng.randint(20)
        if variant == 0:
            head = ""
        elif variant == 1:
            head += " 2"
        b = f" |b c{cat} v:{v}" if variant != 2 else ""
        lines.append(f"{head} |a x:{x} y:{y} w:{w}{b}\n".lstrip())
    return lines


class Data:
    """The training data in halves (first, second, both) and a test set, as files."""

    def __init__(self, folder: Path, kind: str):
        rng = np.random.RandomState(7 + KINDS.index(kind))
        first, second, test = (_lines(rng, n, kind) for n in (HALF, HALF, TEST))
        self.first, self.second, self.both, self.test = (
            folder / f"{name}.vw" for name in ("first", "second", "both", "test"))
        for path, lines in ((self.first, first), (self.second, second),
                            (self.both, first + second), (self.test, test)):
            path.write_text("".join(lines))


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict[bool, Data]:
    """Data of each kind of label: real, ±1 (for the logistic loss), three classes (--oaa)."""
    return {kind: Data(tmp_path_factory.mktemp(kind), kind) for kind in KINDS}


def _data(datasets: dict[str, Data], family: str) -> Data:
    options = FAMILIES[family]
    if "oaa" in options:
        return datasets["classes"]
    return datasets["binary" if options.get("loss_function") == "logistic" else "real"]


def _test_only(model: Path, data: Path, out: Path) -> str:
    """The ``-p`` text of ``olearn -t -i model`` on ``data``."""
    olearn_here("-t", "-i", model, "-d", data, "-p", out, "--quiet")
    return out.read_text()


def _p_text(predictions: np.ndarray) -> str:
    """Predictions of untagged examples as a ``-p`` file writes them."""
    tags = np.full((len(predictions), 2), -1, dtype=np.int64)
    return bytes(format_predictions(predictions, tags, np.zeros(0, dtype=np.uint8))).decode()


# -- 1. save, load, continue -------------------------------------------------------------------

@pytest.fixture(scope="module")
def continued(datasets, tmp_path_factory) -> Callable[[str], dict[str, str | bytes]]:
    """Per family: -p of the second half continued from a model of the first (``continued``)
    and in one run over both halves (``one run``), -t -i of the test set with the two final
    models (``continued test``, ``one run test``) and those models' bytes (``... model``)."""
    def make(family: str) -> dict[str, str | bytes]:
        data, folder = _data(datasets, family), tmp_path_factory.mktemp(family)
        options = ["-b", BITS, *_argv(FAMILIES[family]), "--quiet"]
        m1, m2, m3 = (folder / f"m{k}.olearn" for k in (1, 2, 3))
        olearn_here("-d", data.first, *options, "-f", m1)
        # the model alone says how to continue: no options repeated
        olearn_here("-d", data.second, "-i", m1, "-f", m2, "-p", folder / "m2.p", "--quiet")
        olearn_here("-d", data.both, *options, "-f", m3, "-p", folder / "m3.p")
        whole = (folder / "m3.p").read_text().splitlines(keepends=True)
        return {"continued": (folder / "m2.p").read_text(), "one run": "".join(whole[HALF:]),
                "continued test": _test_only(m2, data.test, folder / "m2.test.p"),
                "one run test": _test_only(m3, data.test, folder / "m3.test.p"),
                "continued model": model_state(m2), "one run model": model_state(m3)}
    return functools.cache(make)  # once per family


@pytest.mark.parametrize("family", CASES)
def test_continued_model_predicts_the_second_half_as_one_run(continued, family: str) -> None:
    runs = continued(family)
    assert len(runs["continued"].splitlines()) == HALF
    assert runs["continued"].splitlines() == runs["one run"].splitlines()


@pytest.mark.parametrize("family", CASES)
def test_continued_model_predicts_the_test_set_as_one_runs_model(continued,
                                                                 family: str) -> None:
    runs = continued(family)
    assert runs["continued test"].splitlines() == runs["one run test"].splitlines()


@pytest.mark.parametrize("family", CASES)
def test_continued_model_is_one_runs_model(continued, family: str) -> None:
    runs = continued(family)
    assert runs["continued model"] == runs["one run model"]


# -- 2. predicting changes no state ------------------------------------------------------------

@pytest.mark.parametrize("family", CASES)
def test_predicting_between_fits_changes_no_state(datasets, family: str,
                                                  tmp_path: Path) -> None:
    data = _data(datasets, family)
    plain = Learner(bit_precision=BITS, **FAMILIES[family]).fit(data.first).fit(data.second)
    mixed = Learner(bit_precision=BITS, **FAMILIES[family])
    mixed.predict(data.test)  # before any example, too
    mixed.fit(data.first)
    mixed.predict(data.test)
    mixed.predict(data.first)
    mixed.fit(data.second)
    plain.save(tmp_path / "plain.olearn")
    mixed.save(tmp_path / "mixed.olearn")
    assert mixed.average_loss == plain.average_loss  # progressive validation saw the same
    assert model_state(tmp_path / "mixed.olearn") == model_state(tmp_path / "plain.olearn")


# -- 3. -t -i predicts what the trained learner predicts ---------------------------------------

@pytest.fixture(scope="module")
def trained(datasets, tmp_path_factory) -> Callable[[str], tuple[np.ndarray, Path, Data]]:
    """Per family: a Learner trained on both halves, its predictions of them (made before it
    was saved: an unsynced state must predict as a saved one), its model file and the data."""
    def make(family: str) -> tuple[np.ndarray, Path, Data]:
        data = _data(datasets, family)
        learner = Learner(bit_precision=BITS, **FAMILIES[family]).fit(data.both)
        predictions = learner.predict(data.both)
        path = tmp_path_factory.mktemp(family) / "model.olearn"
        learner.save(path)
        return predictions, path, data
    return functools.cache(make)  # once per family


@pytest.mark.parametrize("family", CASES)
def test_test_only_run_predicts_as_the_trained_learner(trained, family: str,
                                                       tmp_path: Path) -> None:
    predictions, path, data = trained(family)
    assert (_test_only(path, data.both, tmp_path / "t.p").splitlines()
            == _p_text(predictions).splitlines())


@pytest.mark.parametrize("family", CASES)
def test_loaded_learner_predicts_as_the_trained_learner(trained, family: str) -> None:
    predictions, path, data = trained(family)
    np.testing.assert_array_equal(Learner.load(path).predict(data.both), predictions)


# -- 4. merging one partition is the identity --------------------------------------------------

@pytest.fixture(scope="module")
def one_worker():
    """A Dask cluster of one worker process, one thread: what ``--dask local:1`` starts, but
    started once for every family (a cluster takes seconds to start)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def _dask_case(family: str):
    """``family`` as a parameter of the --dask contract, marked when it cannot keep it."""
    if family in EXPERTS:
        return pytest.param(family, marks=pytest.mark.skip(reason=NO_DASK))
    if "oaa" in FAMILIES[family]:
        return pytest.param(family, marks=pytest.mark.skip(reason=NO_DASK_OAA))
    if family == "rank":
        return pytest.param(family, marks=pytest.mark.skip(reason=NO_DASK_RANK))
    if family == "oja_newton":
        return pytest.param(family, marks=pytest.mark.skip(reason=NO_DASK_OJA))
    if family == "stage_poly":
        return pytest.param(family, marks=pytest.mark.xfail(strict=True,
                                                            reason=DASK_FREEZES_STAGES))
    return family


@pytest.mark.parametrize("family", [_dask_case(family) for family in FAMILIES])
def test_one_partition_dask_run_is_the_single_process_run(one_worker, datasets, family: str,
                                                          tmp_path: Path) -> None:
    from olearn.scale import distributed as olearn_dask  # needs dask: imported once it is there
    data = _data(datasets, family)
    # two passes: the first pass's merge and a later one's (they differ: distributed.finish)
    options = {"data": [str(data.both)], "bit_precision": BITS, "passes": 2, "cache": True,
               "quiet": True, **FAMILIES[family]}
    single, dask = tmp_path / "single.olearn", tmp_path / "dask.olearn"
    run_single(Config(cache_file=str(tmp_path / "cache"), final_regressor=str(single),
                      **options))
    olearn_dask.run(Config(dask=one_worker, final_regressor=str(dask), **options))
    assert (_test_only(dask, data.test, tmp_path / "dask.p")
            == _test_only(single, data.test, tmp_path / "single.p"))
    assert model_state(dask) == model_state(single)


# -- 5. --readable_model -----------------------------------------------------------------------

_ENTRY = re.compile(r"(\d+):(\S+(?: \S+)*)")


def _readable_entries(path: Path) -> dict[int, list[float]]:
    """index → values of a readable model (one ``index:w [more]`` per line after its header)."""
    entries = {}
    for line in readable_body(path.read_text()):
        match = _ENTRY.fullmatch(line)
        assert match, f"not an entry: {line!r}"
        entries[int(match[1])] = [float(x) for x in match[2].split()]
    return entries


@pytest.mark.parametrize("family", CASES)
def test_readable_model_lists_exactly_the_changed_weights(datasets, family: str,
                                                          tmp_path: Path) -> None:
    data, readable = _data(datasets, family), tmp_path / "readable.txt"
    olearn_here("-d", data.both, "-b", BITS, *_argv(FAMILIES[family]), "--readable_model",
                readable, "--quiet")
    learner = Learner(bit_precision=BITS, **FAMILIES[family]).fit(data.both)._learner
    learner.sync()
    fresh = Learner(bit_precision=BITS, **FAMILIES[family])._learner
    # the weight, then the family's columns per coordinate (--ftrl, --pistol, --coin); the
    # family's slots alone (--rank)
    state, fresh_state = ([one.family.slots] if family in SLOTS_ONLY else
                          [one.weights[:, :1], *([one.family.slots] if family in COORDINATES
                                                 else [])] for one in (learner, fresh))
    changed = np.flatnonzero(np.any(np.hstack(state) != np.hstack(fresh_state), axis=1))
    entries = _readable_entries(readable)
    assert (changed.size > 0) == (family not in LEARNS_NOTHING)
    assert sorted(entries) == changed.tolist()
    if not changed.size:
        return
    listed = np.array([entries[j] for j in changed.tolist()])
    values = (np.hstack(state) if family in COORDINATES | SLOTS_ONLY
              else learner.weights)[changed]
    # %g keeps 6 significant digits: each value within half a unit of the 6th
    np.testing.assert_allclose(listed, values[:, :listed.shape[1]], rtol=5e-6, atol=0)
