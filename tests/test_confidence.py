"""--confidence (reductions/confidence.py): each prediction's |p| over the learner's sensitivity
(learners/gd.py ``sensitivity``), before or after the example is learned."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import run_olearn

from olearn.kernel import layouts
from olearn.kernel.bundles import Model
from olearn.learners import gd
from olearn.learners.weights import W_G, W_N, W_W, WIDTH
from olearn.options.config import Config
from olearn.outputs.predictions import format_confidence


def _sensitivity_reference(W, index, value, p, y, imp, eta, norm, total):
    """VW's stateless sensitivity for the default rule (adaptive, normalized, power_t 0.5,
    squared loss), feature by feature in plain Python."""
    g2 = imp * (2.0 * (p - y)) ** 2
    ppu = norm_x = 0.0
    for j, x in zip(index, value):
        x2 = float(x) ** 2
        g = float(np.float32(W[j, W_G] + np.float32(g2 * x2)))
        n = max(float(W[j, W_N]), abs(float(x)))
        ppu += x2 / np.sqrt(g) / n
        norm_x += x2 / n ** 2
    total, norm = float(np.float32(total)) + imp, float(np.float32(norm)) + imp * norm_x
    multiplier = np.sqrt(total / norm)
    return eta * ppu * multiplier


def test_sensitivity_matches_a_plain_reference():
    rng = np.random.default_rng(7)
    W = np.zeros((64, WIDTH), dtype=np.float32)
    W[:, W_W] = rng.normal(size=64)
    W[:, W_G] = rng.uniform(0.1, 3.0, size=64)
    W[:, W_N] = rng.uniform(0.0, 1.5, size=64)
    config = Config()
    state = layouts.STATE.defaults()
    state[layouts.S_NORM], state[layouts.S_TOTAL] = 4.5, 7.0
    model = Model(W, state, layouts.PARAMS.of(config))
    index = rng.choice(64, size=300).astype(np.uint32)  # repeats, and more than one block
    value = rng.normal(size=300).astype(np.float32)
    work = np.empty((3, 16))
    got = gd.sensitivity(model, index, value, 0, 300, 0.3, -1.0, 2.0, work)
    expected = _sensitivity_reference(W, index, value, 0.3, -1.0, 2.0, config.eta, 4.5, 7.0)
    assert got == pytest.approx(expected, rel=1e-7)  # rates from float32 sums


def test_sensitivity_writes_nothing_but_its_scratch():
    W = np.ones((8, WIDTH), dtype=np.float32)
    state = layouts.STATE.defaults()
    before = W.copy(), state.copy()
    gd.sensitivity(Model(W, state, layouts.PARAMS.of(Config())),
                   np.arange(8, dtype=np.uint32), np.full(8, 2.0, dtype=np.float32), 0, 8, 0.5,
                   1.0, 1.0, np.empty((3, 4)))
    np.testing.assert_array_equal(W, before[0])
    np.testing.assert_array_equal(state, before[1])


def test_lines_hold_the_prediction_the_confidence_and_the_tag():
    text = np.frombuffer(b"tagged", dtype=np.uint8)
    tags = np.array([[0, 6], [-1, -1]], dtype=np.int64)
    lines = format_confidence(np.array([0.25, -1.5], dtype=np.float32),
                              np.array([3.0, 0.125], dtype=np.float32), tags, text)
    assert bytes(lines) == b"0.250000 3.000000 tagged\n-1.500000 0.125000 \n"


def _binary(path, n: int = 80, seed: int = 5, unlabeled: bool = False) -> None:
    """Binary labels of a noisy linear rule on four features; every fifth line unlabeled."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        x = rng.normal(size=4)
        label = "1" if x @ [1.0, -1.0, 0.5, 0.2] + 0.3 * rng.normal() > 0 else "-1"
        if unlabeled and i % 5 == 4:
            label = ""
        lines.append(f"{label} |a p:{x[0]:.3f} q:{x[1]:.3f} |b r:{x[2]:.3f} s:{x[3]:.3f}")
    path.write_text("\n".join(lines) + "\n")


def _columns(path) -> np.ndarray:
    return np.array([[float(v) for v in line.split()] for line in path.read_text().splitlines()])


@pytest.mark.parametrize("after", [(), ("--confidence_after_training",)])
def test_confidences_match_vw(tmp_path, vw, after):
    data = tmp_path / "d.vw"
    _binary(data, unlabeled=True)
    options = ("--confidence", *after, "-d", data, "--initial_t", "0.1", "--quiet", "-p")
    assert vw(*options, tmp_path / "v")[0] == 0
    code, _, err = run_olearn(*options, tmp_path / "o")
    assert code == 0, err
    np.testing.assert_allclose(_columns(tmp_path / "o"), _columns(tmp_path / "v"), rtol=1e-4,
                               atol=2e-6)


def test_the_first_prediction_of_a_fresh_model_has_confidence_zero(tmp_path):
    data = tmp_path / "d.vw"
    _binary(data, n=3)
    code, _, err = run_olearn("--confidence", "-d", data, "-p", tmp_path / "p", "--quiet")
    assert code == 0, err
    assert (tmp_path / "p").read_text().splitlines()[0] == "0.000000 0.000000 "


def test_a_saved_model_keeps_confidence(tmp_path):
    data, model = tmp_path / "d.vw", tmp_path / "m"
    _binary(data, n=20)
    assert run_olearn("--confidence", "-d", data, "-f", model, "--quiet")[0] == 0
    code, _, err = run_olearn("-i", model, "-d", data, "-p", tmp_path / "p", "--quiet")
    assert code == 0, err
    confidences = _columns(tmp_path / "p")[:, 1]
    assert confidences.shape == (20,) and (confidences > 0).all()


@pytest.mark.parametrize("options", [("-t",), ("--oaa", "3"), ("--ftrl",)])
def test_an_option_it_cannot_take_is_a_usage_error(options):
    code, _, err = run_olearn("--no_stdin", "--confidence", *options)
    assert code == 2
    assert "--confidence" in err and "Traceback" not in err
