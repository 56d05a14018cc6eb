"""--autolink (reductions/autolink.py): the prediction's powers as features, against the
plain-Python reference; --examples, which VW's autolink tests take."""
import numpy as np
import pytest
from examples import kernel_predictions, random_examples
from reference import autolink_predictions

from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.options.config import Config
from olearn.reductions.autolink import AUTOCONSTANT, rows_of


def _as_float32(examples):
    return [(None if y is None else float(np.float32(y)), imp,
             [(j, float(np.float32(x))) for j, x in f]) for y, imp, f in examples]


@pytest.mark.parametrize("degree", [1, 3])
def test_autolink_learns_as_the_reference(degree):
    examples = _as_float32(random_examples(n=300))
    config = Config(bit_precision=8, autolink=degree)
    rows = rows_of(degree, config.mask)
    want = autolink_predictions(examples, rows.tolist(), config.eta)
    got = kernel_predictions(examples, config, OnlineLearner(config))
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_autolink_rows_are_vw_s_indices_in_its_strided_table():
    rows = rows_of(3, (1 << 18) - 1)
    assert rows.tolist() == [(AUTOCONSTANT // 4 + i) % (1 << 18) for i in range(3)]


@pytest.mark.parametrize("other", [{"oaa": 3}, {"stage_poly": True}, {"ftrl": True}])
def test_autolink_refuses_other_reductions_and_families(other):
    with pytest.raises(OptionError, match="autolink"):
        Config(autolink=2, **other)


def test_examples_reads_only_the_first_n(tmp_path):
    from conftest import run_olearn
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{i % 2} | x{i}\n" for i in range(10)) + "1 | bad:x\n")
    rc, _, err = run_olearn("-d", data, "--examples", "4")
    assert rc == 0, err
    assert "number of examples = 4" in err and "warning" not in err


def test_examples_refuses_a_cache(tmp_path):
    from conftest import run_olearn
    data = tmp_path / "d.vw"
    data.write_text("1 | a\n")
    rc, _, err = run_olearn("-d", data, "--examples", "4", "-c")
    assert rc != 0 and "--examples" in err
