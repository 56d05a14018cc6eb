"""--noop and --print (olearn/learners/no_learning.py): predict 0, learn nothing."""
import pytest
from conftest import run_olearn

from olearn import Learner
from olearn.errors import OptionError
from olearn.learners.weights import W_W


@pytest.mark.parametrize("flag", ["noop", "print"])
def test_pseudo_learners_predict_zero_and_keep_the_weights(flag):
    learner = Learner(bit_precision=8, **{flag: True})
    learner.fit(["1 |a x:2 y", "0 |b z", "3 |a x"])
    assert not learner._learner.weights[:, W_W].any()
    assert learner.predict(["|a x", "|b z"]).tolist() == [0.0, 0.0]


def test_loss_is_the_zero_prediction_s_and_the_best_constant_is_reported(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x\n3 |a y\n")
    code, _, err = run_olearn("-d", data, "--noop")
    # VW 9.11.9: average loss 5 (squared loss of 0 against 1 and 3), best constant 2
    assert code == 0 and "average loss = 5.000000" in err and "best constant = 2.000000" in err


def test_print_writes_each_example_as_vw_s_print_learner(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x:2 y\n0 2 'tg|b z\n|c w\n")
    code, _, err = run_olearn("-d", data, "--print", "-b", "18")
    # VW 9.11.9's lines (which it writes twice each, and with the constant's unmasked index)
    assert "1 | 55432:2 42847 116060 \n" in err and "0 2 'tg| 124687 116060 \n" in err
    assert "| 64070 116060 \n" in err


@pytest.mark.parametrize(("options", "message"), [
    ({"noop": True, "print": True}, "choose one of --noop and --print"),
    ({"noop": True, "oaa": 3}, "--oaa learns"), ({"print": True, "ftrl": True}, "choose one"),
])
def test_pseudo_learners_refuse_what_learns(options, message):
    with pytest.raises(OptionError, match=message):
        Learner(**options)
