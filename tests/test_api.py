"""The Python API: the same kernels and options as the command line."""
import doctest

import numpy as np
import pytest
from conftest import olearn_cmd, run_cmd

import olearn
from olearn.errors import OlearnError

LINES = [f"{(i * 7) % 11 - 5} |a x:{i % 5} y:{(i * 3) % 7 - 3} |b z{i % 4}" for i in range(300)]


@pytest.mark.slow  # compiles the kept calls of every example's mode
def test_module_docstring_examples_run():
    import olearn.frontends.api
    assert doctest.testmod(olearn.frontends.api).failed == 0


def test_fit_on_a_path_matches_the_command_line(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("\n".join(LINES) + "\n")
    _, _, err = run_cmd(olearn_cmd("-d", data, "--loss_function", "quantile",
                                   "--quantile_tau", "0.3"))
    cli_loss = float(next(line for line in err.splitlines()
                          if line.startswith("average loss")).split()[-1])
    model = olearn.Learner(loss_function="quantile", quantile_tau=0.3).fit(data)
    assert round(model.average_loss, 6) == cli_loss


def test_fit_in_parts_equals_fit_at_once():
    whole = olearn.Learner().fit(LINES)
    parts = olearn.Learner().fit(LINES[:120]).partial_fit(LINES[120:])
    probe = ["|a x:1 y:2 |b z1", "|a x:4"]
    np.testing.assert_array_equal(whole.predict(probe), parts.predict(probe))


def test_predict_does_not_learn():
    model = olearn.Learner().fit(LINES[:100])
    first = model.predict(LINES[100:])
    np.testing.assert_array_equal(model.predict(LINES[100:]), first)
    assert len(first) == 200


def test_save_and_load_give_the_same_predictions(tmp_path):
    model = olearn.Learner(loss_function="logistic", link="logistic", bit_precision=12).fit(
        [("1 " if "x:1" in line else "-1 ") + line.split(" ", 1)[1] for line in LINES])
    model.save(tmp_path / "m.olearn")
    loaded = olearn.Learner.load(tmp_path / "m.olearn")
    assert loaded.config.link == "logistic" and loaded.config.bit_precision == 12
    np.testing.assert_array_equal(loaded.predict(LINES), model.predict(LINES))


def test_cli_reads_a_model_saved_from_python(tmp_path):
    olearn.Learner().fit(LINES).save(tmp_path / "m.olearn")
    data = tmp_path / "d.vw"
    data.write_text("\n".join(LINES) + "\n")
    code, out, _ = run_cmd(olearn_cmd("-t", "-i", tmp_path / "m.olearn", "-d", data,
                                      "-p", "/dev/stdout", "--quiet"))
    assert code == 0
    api = olearn.Learner.load(tmp_path / "m.olearn").predict(data)
    np.testing.assert_allclose([float(x) for x in out.split()], api, atol=1e-6)


@pytest.mark.parametrize("source", ["path", "list", "cache"])
def test_several_passes_match_the_command_line(tmp_path, source):
    data = tmp_path / "d.vw"
    data.write_text("\n".join(LINES) + "\n")
    model = tmp_path / "cli.olearn"
    code, _, err = run_cmd(olearn_cmd("-d", data, "--passes", "3", "-c", "--holdout_period", "7",
                                      "-f", model, "--quiet"))
    assert code == 0, err
    options = {"passes": 3, "holdout_period": 7, "cache": source == "cache"}
    learner = olearn.Learner(**options).fit(LINES if source == "list" else data)
    cli = olearn.Learner.load(model)
    np.testing.assert_array_equal(learner.predict(LINES), cli.predict(LINES))


def test_several_passes_over_a_one_time_iterable_are_refused():
    with pytest.raises(OlearnError, match="several passes"):
        olearn.Learner(passes=2).fit(iter(LINES))


def test_a_pickled_learner_predicts_and_continues_as_the_original():
    import pickle
    lines = [f"{i % 3} |a x:{i % 5} |b y{i % 4}" for i in range(200)]
    learner = olearn.Learner("-q ab --l1 1e-5").fit(lines[:100])
    copy = pickle.loads(pickle.dumps(learner))
    np.testing.assert_array_equal(copy.predict(lines), learner.predict(lines))
    np.testing.assert_array_equal(copy.fit(lines[100:]).predict(lines),
                                  learner.fit(lines[100:]).predict(lines))
