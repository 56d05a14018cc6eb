"""The progressive-validation history (Learner.history) and the learning curve
(olearn.plot_learning_curve, --learning_curve)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_olearn

import olearn
from olearn import Learner

PNG = b"\x89PNG\r\n\x1a\n"
ROW = re.compile(r"^(\S+) +(\S+) +(\d+) +(\S+) +\S+ +\S+ +\d+( h)?$")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("history") / "d.vw"
    rng = np.random.default_rng(3)
    path.write_text("".join(f"{rng.normal():.3f} |a x:{rng.normal():.3f} y{i % 7} |b z{i % 3}\n"
                            for i in range(3000)))
    return path


def _table(stderr: str) -> list[tuple[float, float, int, float, bool]]:
    """(average loss, since last, examples, weight, holdout) of each table row."""
    rows = []
    for line in stderr.splitlines():
        match = ROW.match(line.strip())
        if match and not line.startswith("average"):
            rows.append((float(match[1]), float(match[2]), int(match[3]), float(match[4]),
                         match[5] is not None))
    return rows


@pytest.mark.parametrize("options", [[], ["--passes", "3", "-c", "--holdout_period", "4"]],
                         ids=["one pass", "holdout"])
def test_history_is_the_printed_table(data, tmp_path, options):
    rc, _, err = run_olearn("-d", data, *options, "--cache_file", tmp_path / "c")
    assert rc == 0, err
    learner = Learner(" ".join(options) + f" --cache_file {tmp_path / 'c2'}")
    learner.fit(data)
    history = learner.history
    printed = _table(err)
    assert len(printed) == len(history.examples) > 5
    np.testing.assert_allclose([r[0] for r in printed], history.average_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([r[1] for r in printed], history.since_last, rtol=1e-5, atol=1e-6)
    assert [r[2] for r in printed] == history.examples.astype(int).tolist()
    assert [r[4] for r in printed] == history.holdout.tolist()


def test_history_holds_each_passs_holdout_loss(data, tmp_path):
    rc, _, err = run_olearn("-d", data, "--passes", "3", "-c", "--cache_file", tmp_path / "c")
    assert rc == 0, err
    best = float(re.search(r"average loss = (\S+) h", err)[1])
    learner = Learner(f"--passes 3 --cache_file {tmp_path / 'c2'}").fit(data)
    assert len(learner.history.pass_holdout) == 3
    assert min(learner.history.pass_holdout) == pytest.approx(best, rel=1e-5)


def test_predicting_adds_no_history(data):
    learner = Learner().fit(data)
    rows = len(learner.history.examples)
    learner.predict(data)
    assert len(learner.history.examples) == rows


def test_learning_curve_option_writes_a_png(data, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "curve.png"
    rc, _, err = run_olearn("-d", data, "--learning_curve", path, "--quiet")
    assert rc == 0, err
    assert path.read_bytes().startswith(PNG) and path.stat().st_size > 5000


def test_plot_learning_curve_takes_a_learner_or_its_history(data, tmp_path):
    pytest.importorskip("matplotlib")
    learner = Learner("--passes 2 --holdout_period 4", cache_file=str(tmp_path / "c"))
    learner.fit(data)
    for what, name in ((learner, "a.png"), (learner.history, "b.png")):
        olearn.plot_learning_curve(what, tmp_path / name)
        assert (tmp_path / name).read_bytes().startswith(PNG)


def test_learning_curve_without_matplotlib_fails_before_training(data, tmp_path):
    model = tmp_path / "m.olearn"
    code = ("import sys; sys.modules['matplotlib'] = None; from olearn.frontends.cli import main; "
            f"sys.argv = ['olearn', '-d', {str(data)!r}, '--learning_curve', "
            f"{str(tmp_path / 'c.png')!r}, '-f', {str(model)!r}]; main()")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    assert "--learning_curve needs matplotlib" in result.stderr
    assert "Traceback" not in result.stderr and not model.exists()


def test_learning_curve_may_not_overwrite_an_input(data):
    rc, _, err = run_olearn("-d", data, "--learning_curve", data)
    assert rc == 2 and "--learning_curve" in err


def test_history_prints_as_the_table(data, tmp_path):
    learner = Learner(f"--passes 3 --holdout_period 4 --cache_file {tmp_path / 'c'}").fit(data)
    history = learner.history
    text = repr(history)
    rows = [ROW_PRINTED.match(line) for line in text.splitlines()[2:]]
    rows = [row for row in rows if row]
    assert len(rows) == len(history.examples)
    assert [int(row[3]) for row in rows] == history.examples.astype(int).tolist()
    assert [row[5] is not None for row in rows] == history.holdout.tolist()
    np.testing.assert_allclose([float(row[1]) for row in rows], history.average_loss, rtol=1e-5)
    assert text.count("holdout loss") == len(history.pass_holdout) == 3
    assert "object at 0x" not in text


ROW_PRINTED = re.compile(r"^ *(\S+) +(\S+) +(\d+) +(\S+)( h)?$")


def test_history_as_a_dataframe(data):
    pytest.importorskip("pandas")
    history = Learner().fit(data).history
    frame = history.to_pandas()
    assert list(frame.columns) == ["examples", "weight", "average_loss", "since_last", "holdout"]
    np.testing.assert_array_equal(frame["average_loss"].to_numpy(), history.average_loss)
    np.testing.assert_array_equal(frame["holdout"].to_numpy(), history.holdout)


def test_learning_curve_marks_each_passs_holdout_loss(data, tmp_path):
    pytest.importorskip("matplotlib")
    from olearn.outputs.history import _figure
    learner = Learner(f"--passes 3 --holdout_period 4 --cache_file {tmp_path / 'c'}").fit(data)
    history = learner.history
    assert len(history.pass_examples) == 3
    assert history.pass_examples == sorted(history.pass_examples)
    marks = [line for line in _figure(history).axes[0].get_lines()
             if line.get_label() == "holdout loss at each pass's end"]
    assert len(marks) == 1
    np.testing.assert_allclose(marks[0].get_ydata(), history.pass_holdout)
    np.testing.assert_allclose(marks[0].get_xdata(), history.pass_examples)
