"""--classweight (olearn/reductions/classweight.py) and values that start with '-' on the
command line."""
import numpy as np
import pytest
from conftest import run_olearn

from olearn import Learner
from olearn.errors import OptionError
from olearn.reductions.classweight import ClassWeights


def test_learned_rows_are_weighted_by_their_class_as_a_uint32():
    weights = ClassWeights({1: 2.0, 0: 3.0, 0xFFFFFFFF: 5.0})
    numbers = np.array([[1, 1, 0], [0, 0.5, 0], [-1, 1, 0], [0.7, 1, 0], [7, 1, 0],
                        [np.nan, 1, 0], [1, 1, 0]], dtype=np.float32)
    learned = np.array([True] * 6 + [False])
    got = weights.weighted(numbers, learned)
    assert list(got[:, 1]) == [2.0, 1.5, 5.0, 3.0, 1.0, 1.0, 1.0]
    assert list(numbers[:, 1]) == [1, 0.5, 1, 1, 1, 1, 1]  # the batch's own are left alone


def test_a_weight_scales_the_update_as_the_importance_does(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x\n0 |a y\n1 |a z x\n")
    weighted = tmp_path / "w.vw"
    weighted.write_text("1 2 |a x\n0 |a y\n1 2 |a z x\n")
    one = run_olearn("-d", data, "--classweight", "1:2", "--quiet", "-p", tmp_path / "p1")
    two = run_olearn("-d", weighted, "--quiet", "-p", tmp_path / "p2")
    assert one[0] == two[0] == 0
    assert (tmp_path / "p1").read_text() == (tmp_path / "p2").read_text()


def test_test_only_runs_keep_the_importance(tmp_path):
    data, model = tmp_path / "d.vw", tmp_path / "m"
    data.write_text("1 |a x\n0 |a y\n")
    run_olearn("-d", data, "-f", model, "--quiet")
    _, _, plain = run_olearn("-t", "-i", model, "-d", data)
    _, _, weighted = run_olearn("-t", "-i", model, "-d", data, "--classweight", "1:9")
    assert plain.split("finished run")[1] == weighted.split("finished run")[1]


def test_negative_class_after_the_option_is_its_value(tmp_path):
    code, _, err = run_olearn("--classweight", "-1:0.5", "--no_stdin")
    assert code == 0 and "average loss = n.a." in err


@pytest.mark.parametrize(("options", "message"), [
    ({"classweight": ["1:x"]}, "cannot read '1:x'"), ({"classweight": ["a:1"]}, "cannot read"),
    ({"classweight": ["1:2"], "csoaa": 3}, "does not take --csoaa"),
])
def test_malformed_class_weights_are_refused(options, message):
    with pytest.raises(OptionError, match=message):
        Learner(**options)
