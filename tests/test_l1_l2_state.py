"""--l1_state/--l2_state: VW's pending regularization (its gravity and contraction), kept in
model files, overridden from the command line, applied to the weights before the first example
(olearn/learners/regularize.py ``settled``)."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import run_olearn

from olearn.learners import regularize


def _data(path, n: int = 60, seed: int = 3) -> None:
    """A small regression file: three named features per line, a noisy linear label."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        x = rng.normal(size=3)
        lines.append(f"{x @ [1.5, -2.0, 0.5] + 0.1 * rng.normal():.4f} "
                     f"| a:{x[0]:.4f} b:{x[1]:.4f} c:{x[2]:.4f}")
    path.write_text("\n".join(lines) + "\n")


def _resume(path) -> dict[str, str]:
    """The resume block's l1_state and l2_state lines of a readable model."""
    pairs = (line.split(" ", 1) for line in path.read_text().splitlines())
    return {k: v for k, *rest in pairs if k in ("l1_state", "l2_state") for v in rest}


def test_settled_truncates_then_scales_each_weight():
    rng = np.random.default_rng(0)
    w = rng.normal(size=50).astype(np.float32)
    gravity, factor = 0.4, 0.25
    expected = [(0.0 if abs(v) <= np.float32(gravity) else v - np.sign(v) * np.float32(gravity))
                * np.float32(factor) for v in w]
    np.testing.assert_array_equal(regularize.settled(w, gravity, factor),
                                  np.array(expected, dtype=np.float32))


def test_the_command_line_overrides_the_model_and_a_default_keeps_it(tmp_path):
    first, second, third = (tmp_path / f"m{i}" for i in range(3))
    assert run_olearn("--no_stdin", "-f", first)[0] == 0
    code, _, err = run_olearn("--no_stdin", "-i", first, "-f", second, "--l1_state", "5.34",
                              "--l2_state", "0.003", "--readable_model", tmp_path / "r2")
    assert code == 0, err
    assert _resume(tmp_path / "r2") == {"l1_state": "5.34", "l2_state": "0.003"}
    code, _, err = run_olearn("--no_stdin", "-i", second, "-f", third, "--l1_state", "89.4",
                              "--readable_model", tmp_path / "r3")
    assert code == 0, err
    assert _resume(tmp_path / "r3") == {"l1_state": "89.4", "l2_state": "0.003"}


def test_the_first_example_applies_the_pending_state(tmp_path):
    data, model = tmp_path / "d.vw", tmp_path / "m"
    _data(data)
    assert run_olearn("-d", data, "-f", model, "--quiet")[0] == 0
    plain, scaled = tmp_path / "p1", tmp_path / "p2"
    assert run_olearn("-d", data, "-i", model, "-t", "-p", plain, "--quiet")[0] == 0
    code, _, err = run_olearn("-d", data, "-i", model, "-t", "-p", scaled, "--quiet",
                              "--l2_state", "0.5", "--readable_model", tmp_path / "r")
    assert code == 0, err
    np.testing.assert_allclose(np.loadtxt(scaled), 0.5 * np.loadtxt(plain), atol=1e-6)
    assert _resume(tmp_path / "r") == {"l1_state": "0", "l2_state": "1"}


def test_predictions_match_vw_after_loading_with_a_pending_state(tmp_path, vw):
    data = tmp_path / "d.vw"
    _data(data)
    pending = ("--l1_state", "0.2", "--l2_state", "0.7")
    assert vw("-d", data, "-f", tmp_path / "v.model", "--quiet")[0] == 0
    assert vw("-d", data, "-i", tmp_path / "v.model", "-t", "-p", tmp_path / "vp", "--quiet",
              *pending)[0] == 0
    assert run_olearn("-d", data, "-f", tmp_path / "o.model", "--quiet")[0] == 0
    code, _, err = run_olearn("-d", data, "-i", tmp_path / "o.model", "-t", "-p",
                              tmp_path / "op", "--quiet", *pending)
    assert code == 0, err
    np.testing.assert_allclose(np.loadtxt(tmp_path / "op"), np.loadtxt(tmp_path / "vp"),
                               atol=2e-6)


@pytest.mark.parametrize("option", ["--ftrl", "--coin"])
def test_another_learner_family_is_a_usage_error(option):
    code, _, err = run_olearn("--no_stdin", option, "--l2_state", "0.5")
    assert code == 2
    assert "--l2_state works with gradient descent" in err


def test_a_value_that_is_not_a_number_is_a_usage_error():
    code, _, err = run_olearn("--no_stdin", "--l1_state", "much")
    assert code == 2
    assert "--l1_state" in err and "Traceback" not in err
