"""--baseline (reductions/baseline.py): a baseline from the constant feature (or a global
constant of its own) learned before the residual, which starts from its prediction."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import run_olearn

# plain SGD steps, a fixed clipping range wide enough never to clip
FIXED = ("--sgd", "--power_t", "0", "-l", "0.1", "--min_prediction", "-100",
         "--max_prediction", "100")


def _data(path, n: int = 40, seed: int = 11, flag_every: int = 0) -> list[tuple]:
    """Regression lines over features a, b, c (labels around 4, so the baseline matters);
    with ``flag_every``, every such line holds VW's flag namespace (\\x89) too. Returns
    (label, {feature: value}) per line."""
    rng = np.random.default_rng(seed)
    rows, lines = [], []
    for i in range(n):
        x = dict(zip("abc", np.round(rng.normal(size=3), 3)))
        y = round(4.0 + x["a"] - 0.5 * x["c"] + 0.1 * rng.normal(), 3)
        rows.append((y, x))
        flag = " |\x89 f" if flag_every and i % flag_every == 0 else ""
        lines.append(f"{y} |n " + " ".join(f"{k}:{v}" for k, v in x.items()) + flag)
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    return rows


def _reference(rows, rate: float) -> list[float]:
    """Plain --sgd --power_t 0 (step -η·2(p − y)·x) with VW's baseline: predict whole, then
    the constant alone learns from 0 at η·rate, then the rest from the baseline's
    prediction."""
    eta, w, constant, preds = 0.1, dict.fromkeys("abc", 0.0), 0.0, []
    for y, x in rows:
        preds.append(constant + sum(w[k] * v for k, v in x.items()))
        base = constant
        constant -= eta * rate * 2 * (base - y)
        residual = base + sum(w[k] * v for k, v in x.items())
        for k, v in x.items():
            w[k] -= eta * 2 * (residual - y) * v
    return preds


def test_predictions_follow_a_plain_reference(tmp_path):
    data = tmp_path / "d.vw"
    rows = _data(data)
    code, _, err = run_olearn("-d", data, "--baseline", "--lr_multiplier", "2", "-p",
                              tmp_path / "p", *FIXED, "--quiet")
    assert code == 0, err
    np.testing.assert_allclose(np.loadtxt(tmp_path / "p"), _reference(rows, 2.0), atol=2e-5)


@pytest.mark.parametrize("options", [(), ("--global_only",), ("--lr_multiplier", "0"),
                                     ("--global_only", "-q", "nn"), ("--check_enabled",)])
def test_losses_and_predictions_match_vw(tmp_path, vw, options):
    data = tmp_path / "d.vw"
    _data(data, flag_every=3)
    run = ("-d", data, "--baseline", *options, "-p")
    code, _, vw_err = vw(*run, tmp_path / "v")
    assert code == 0, vw_err
    code, _, err = run_olearn(*run, tmp_path / "o")
    assert code == 0, err
    losses = [float(next(line for line in text.splitlines()
                         if line.startswith("average loss")).split("=")[1])
              for text in (err, vw_err)]
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    np.testing.assert_allclose(np.loadtxt(tmp_path / "o"), np.loadtxt(tmp_path / "v"),
                               atol=2e-6)


def test_a_saved_model_predicts_as_vw(tmp_path, vw):
    data = tmp_path / "d.vw"
    _data(data)
    for run, name in ((vw, "v"), (run_olearn, "o")):
        model = tmp_path / f"{name}.model"
        assert run("-d", data, "--baseline", "--global_only", "-f", model, "--quiet")[0] == 0
        code, _, err = run("-d", data, "-t", "-i", model, "-p", tmp_path / name, "--quiet")
        assert code == 0, err
    np.testing.assert_allclose(np.loadtxt(tmp_path / "o"), np.loadtxt(tmp_path / "v"),
                               atol=2e-6)


@pytest.mark.parametrize("options", [("--global_only",), ("--baseline", "--oaa", "3"),
                                     ("--baseline", "--ftrl")])
def test_an_option_combination_it_cannot_take_is_a_usage_error(options):
    code, _, err = run_olearn("--no_stdin", *options)
    assert code == 2
    assert "--baseline" in err and "Traceback" not in err
