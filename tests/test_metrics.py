"""--metric auc: the AUC against a pairwise count and scikit-learn, and whole runs."""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import run_olearn

from olearn.outputs.metrics import auc


def _pairwise_auc(labels, scores, weights):
    """Every (positive, negative) pair: 1 if the positive scores higher, 1/2 on a tie."""
    won = total = 0.0
    for yp, sp, wp in zip(labels, scores, weights):
        for yn, sn, wn in zip(labels, scores, weights):
            if yp > 0 >= yn:
                won += wp * wn * (1.0 if sp > sn else 0.5 if sp == sn else 0.0)
                total += wp * wn
    return won / total


def _sample(seed, n=200):
    rng = np.random.default_rng(seed)
    labels = rng.choice([-1.0, 1.0], n)
    scores = np.round(labels * 0.3 + rng.normal(size=n), 1)  # rounded: many ties
    weights = rng.choice([0.0, 0.5, 1.0, 3.0], n)
    return labels, scores, weights


@pytest.mark.parametrize("seed", range(5))
def test_auc_matches_the_pairwise_count_with_ties_and_weights(seed):
    labels, scores, weights = _sample(seed)
    assert auc(labels, scores, weights) == pytest.approx(_pairwise_auc(labels, scores, weights),
                                                         rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_auc_matches_scikit_learn(seed):
    metrics = pytest.importorskip("sklearn.metrics")
    labels, scores, weights = _sample(seed, 2000)
    assert auc(labels, scores, weights) == pytest.approx(
        metrics.roc_auc_score(labels > 0, scores, sample_weight=weights), rel=1e-12)
    assert auc(labels, scores) == pytest.approx(metrics.roc_auc_score(labels > 0, scores),
                                                rel=1e-12)


def test_auc_of_zero_one_labels_counts_one_as_positive():
    assert auc(np.array([0, 1, 0, 1]), np.array([0.1, 0.3, 0.35, 0.8])) == 0.75


@pytest.mark.parametrize("labels", [[1, 1, 1], [-1, -1, -1], []])
def test_auc_without_both_classes_is_nan(labels):
    assert math.isnan(auc(np.array(labels), np.arange(len(labels), dtype=float)))


@pytest.fixture
def binary(tmp_path):
    """300 lines: the label is the sign of a noisy linear score of 5 features."""
    rng = np.random.default_rng(7)
    lines = []
    for _ in range(300):
        x = rng.normal(size=5)
        y = 1 if x @ [1.0, -0.5, 0.3, 0.0, 2.0] + rng.normal() > 0 else -1
        lines.append(f"{y} |f " + " ".join(f"x{j}:{v:.4f}" for j, v in enumerate(x)))
    path = tmp_path / "binary.vw"
    path.write_text("\n".join(lines) + "\n")
    return path


def _labels(path):
    return np.array([float(line.split()[0]) for line in path.read_text().splitlines()])


def _auc_line(err):
    return next(line for line in err.splitlines() if line.startswith("auc = "))


def test_progressive_auc_is_the_auc_of_the_raw_predictions(binary, tmp_path):
    raw = tmp_path / "raw"
    code, _, err = run_olearn("-d", binary, "--metric", "auc", "-r", raw)
    assert code == 0, err
    expected = auc(_labels(binary), np.loadtxt(raw))
    assert 0.6 < expected < 1  # the scores do rank: the test could fail
    assert _auc_line(err) == f"auc = {expected:.6f}"


def test_test_only_auc_is_the_test_sets(binary, tmp_path):
    model, raw = tmp_path / "m", tmp_path / "raw"
    assert run_olearn("-d", binary, "-f", model, "--quiet")[0] == 0
    code, _, err = run_olearn("-t", "-i", model, "-d", binary, "--metric", "auc", "-r", raw)
    assert code == 0, err
    assert _auc_line(err) == f"auc = {auc(_labels(binary), np.loadtxt(raw)):.6f}"


def test_holdout_auc_is_the_held_out_examples(binary, tmp_path):
    raw = tmp_path / "raw"
    code, _, err = run_olearn("-d", binary, "--metric", "auc", "-r", raw, "--holdout_after",
                              200)
    assert code == 0, err
    held = slice(200, None)  # the lines after the 200th
    expected = auc(_labels(binary)[held], np.loadtxt(raw)[held])
    assert _auc_line(err) == f"auc = {expected:.6f} h"


def test_no_auc_line_without_the_option(binary):
    code, _, err = run_olearn("-d", binary)
    assert code == 0 and "auc = " not in err


def test_auc_of_more_than_two_labels_is_not_available(tmp_path):
    path = tmp_path / "three.vw"
    path.write_text("1 |f a\n-1 |f b\n2 |f c\n")
    code, _, err = run_olearn("-d", path, "--metric", "auc")
    assert code == 0, err
    assert _auc_line(err) == "auc = n.a. (more than two labels)"


def test_auc_is_refused_with_oaa(binary):
    code, _, err = run_olearn("-d", binary, "--metric", "auc", "--oaa", "2")
    assert code != 0 and "--metric auc" in err and "--oaa" in err


def test_holdout_auc_is_the_best_passes():
    from types import SimpleNamespace

    from olearn.kernel import layouts
    from olearn.outputs.metrics import AucMeter
    params = np.zeros(layouts.PARAMS_SIZE)
    params[layouts.P.holdout_period] = 2  # lines 2, 4, ... (1-based) are held out
    meter = AucMeter(params)
    labels = np.array([1.0, 1.0, -1.0, -1.0, 1.0, -1.0])
    batch = SimpleNamespace(numbers=np.column_stack([labels, np.ones(6)]), pass_line=0,
                            lines=np.arange(6))
    # held out: rows 1, 3, 5 (labels 1, -1, -1); the others score 0, a tie
    for scores, best in (([0, 0.9, 0, 0.1, 0, 0.2], True), ([0, 0.1, 0, 0.9, 0, 0.2], False)):
        meter.add(batch, np.column_stack([np.zeros(6), scores]).astype(np.float32))
        meter.end_pass(best)
    assert meter.value(holdout=True) == 1.0  # the first pass's ranking, not the last's
    assert meter.value(holdout=False) == 0.5  # both passes' rows 0, 2, 4
