"""--nn (olearn/reductions/nn.py, reductions/nn_kernels.py): VW's neural network reduction,
its fast tanh, its predictions and its model files."""
import numpy as np
import pytest
from conftest import run_olearn
from hypothesis import given
from hypothesis import strategies as st
from reference import vw_fasttanh

from olearn.errors import OptionError
from olearn.options.config import Config
from olearn.reductions.nn_kernels import fasttanh

LINES = ("1 |a x:0.5 y |b z:2\n0 'two |a y:0.3 |b w\n1 2 |a x |b z:-1 w:0.5\n0 |b z\n"
         "1 |a y:-1 x:0.2\n0.5 |a x:0.1 |b w:3\n")


@given(st.floats(-20.0, 20.0, allow_nan=False, width=32))
def test_fasttanh_is_vw_s(p):
    assert float(fasttanh(np.float32(p))) == vw_fasttanh(p)


def test_fasttanh_is_close_to_tanh():
    p = np.linspace(-3, 3, 61, dtype=np.float32)
    np.testing.assert_allclose([fasttanh(x) for x in p], np.tanh(p), atol=1e-3)


def _run(tmp_path, *options):
    data, preds = tmp_path / "d.vw", tmp_path / "p"
    data.write_text(LINES)
    code, _, err = run_olearn("-d", data, "-p", preds, *options)
    assert code == 0, err
    return preds.read_text().split("\n")[:-1], err


# VW 9.11.9's average loss and -p of each command on LINES
@pytest.mark.parametrize(("options", "loss", "predictions"), [
    (("--nn", "2"), "0.434082",
     ["0", "0.421187 two", "0.267706", "0.659692", "0.429501", "0.667355"]),
    (("--nn", "2", "--dropout"), "0.534552",
     ["0", "0.620327 two", "0.310103", "0.945922", "0.468923", "0.977840"]),
    (("--nn", "2", "--inpass"), "0.396369",
     ["0", "0.273704 two", "0.380314", "0.395128", "0.122020", "0.568368"]),
    # VW's scorer sits above nn: the link maps the network's output, not its hidden units
    (("--nn", "2", "--link", "logistic", "--loss_function", "logistic"), "0.602402",
     ["0.500000", "0.610599 two", "0.588685", "0.693826", "0.667049", "0.710437"]),
])
def test_predictions_and_loss_are_vw_s(tmp_path, options, loss, predictions):
    got, err = _run(tmp_path, *options)
    assert f"average loss = {loss}" in err
    assert [line.split(" ", 1)[1:] for line in got] == [
        line.split(" ", 1)[1:] for line in predictions]
    np.testing.assert_allclose([float(line.split()[0]) for line in got],
                               [float(line.split()[0]) for line in predictions], atol=3e-6)


def test_a_saved_network_predicts_as_vw_s_with_t_and_i(tmp_path):
    model = tmp_path / "m"
    _run(tmp_path, "--nn", "3", "--inpass", "-f", model)
    tested, err = _run(tmp_path, "-t", "-i", model)
    # VW 9.11.9's -t -i of its own model of the same command
    assert "average loss = 0.097932" in err
    assert tested == ["0.665494", "0.391532 two", "0.889589", "0.428183", "0.543343",
                      "0.436188"]
    assert _run(tmp_path, "-t", "-i", model)[0] == tested  # predicting changed nothing


@pytest.mark.parametrize(("options", "message"), [
    ({"nn": 2, "oaa": 3}, "--nn does not take --oaa"),
    ({"inpass": True}, "--inpass needs --nn"),
    ({"nn": 2, "ftrl": True}, "--nn needs gradient descent"),
])
def test_nn_refuses_what_it_cannot_run(options, message):
    with pytest.raises(OptionError, match=message):
        Config(**options)


def test_meanfield_turns_dropout_off():
    assert not Config(nn=2, dropout=True, meanfield=True).dropout
