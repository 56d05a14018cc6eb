"""--oaa: VW's one-against-all multiclass reduction (olearn/reductions/oaa.py,
reductions/oaa_kernels.py)."""
import math
import re

import numpy as np
import pytest
from conftest import olearn_here, run_olearn
from examples import kernel_outputs
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import (
    oaa_predictions,
    oaa_subsample_predictions,
    parse_vw_line,
    subsample_order,
)

from olearn import Learner
from olearn.data.hashing import CONSTANT_HASH
from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.options.config import Config
from olearn.outputs.predictions import format_general
from olearn.reductions.subsample import shuffled

BITS = 10


def _class_examples(seed=5, n=400, classes=4):
    """Examples whose class is the largest of ``classes`` linear scores, some unlabeled, some
    weighted; features drawn from 2^BITS indices."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(classes, 1 << BITS))
    examples = []
    for _ in range(n):
        idx = rng.choice(1 << BITS, size=rng.integers(1, 6), replace=False)
        val = rng.normal(size=len(idx))
        label = float(np.argmax(truth[:, idx] @ val) + 1) if rng.random() > 0.1 else None
        imp = float(rng.choice([1.0, 1.0, 0.5, 2.0]))
        examples.append((label, imp, list(zip(idx.tolist(), val.tolist()))))
    return examples


@pytest.mark.parametrize("rule", [{}, {"sgd": True}, {"adaptive": True},
                                  {"normalized": True, "invariant": True}])
def test_oaa_kernel_equals_the_reference_one_against_all(rule):
    examples = _class_examples()
    config = Config(bit_precision=BITS, oaa=4, quiet=True, **rule)
    learner = OnlineLearner(config)
    got = kernel_outputs(examples, config, learner)
    want = oaa_predictions(examples, 4, BITS, *config.update_rule, eta=config.eta,
                           power_t=config.power_t, t0=config.t0)
    scores = np.array([s for _, s in want])
    np.testing.assert_allclose(learner.scores(got), scores, rtol=2e-4, atol=1e-5)
    top_two = np.sort(scores, axis=1)[:, -2:]
    clear = top_two[:, 1] - top_two[:, 0] > 1e-3  # not a tie within float32 rounding
    assert clear.sum() > len(examples) / 4
    np.testing.assert_array_equal(got[clear, 0], np.array([c for c, _ in want])[clear])


def test_class_k_of_feature_h_is_slot_h_times_the_feature_width_plus_k(tmp_path):
    data, readable = tmp_path / "one.vw", tmp_path / "readable.txt"
    data.write_text("2 |a x\n")
    olearn_here("-d", data, "--oaa", "3", "-b", 18, "--readable_model", readable, "--quiet")
    slots = {int(line.split(":")[0]) for line in readable.read_text().splitlines()
             if re.match(r"\d+:", line)}
    (_, _, _, _, feats) = parse_vw_line(b"2 |a x", 18)
    hashes = {j for j, _, _ in feats}
    assert hashes == {parse_vw_line(b"|a x", 18)[4][0][0], CONSTANT_HASH & (2 ** 18 - 1)}
    # width 4 (the power of two >= 3); classes 0, 1, 2 of each feature
    assert slots == {(4 * h + k) & (2 ** 18 - 1) for h in hashes for k in range(3)}


def _run(tmp_path, text, *options):
    data, preds = tmp_path / "data.vw", tmp_path / "p.txt"
    data.write_text(text)
    code, _, err = run_olearn("-d", data, "-p", preds, *options)
    return code, (preds.read_text() if preds.exists() else ""), err


def test_label_zero_makes_the_labels_zero_based(tmp_path):
    code, preds, err = _run(tmp_path, "0 |a x\n1 |a y\n2 |a z\n0 |a x\n", "--oaa", "3")
    assert code == 0 and "average loss = 0.750000" in err
    # the first prediction is made before label 0 is learned: class 1, as VW
    assert preds.split() == ["1", "0", "0", "0"]


def test_class_lists_are_numbered_as_the_example_label_left_the_indexing(tmp_path):
    code, preds, err = _run(tmp_path, "1 |a x\n0 |a y\n2 |a z\n", "--oaa", "3", "--scores")
    assert code == 0
    # VW writes the list after learning: label 0 makes its own example's classes 0-based
    assert [line.split()[0].split(":")[0] for line in preds.splitlines()] == ["1", "0", "0"]


def test_raw_scores_of_zero_based_classes_start_with_the_last_class_as_vw(tmp_path):
    data, raw, scores = tmp_path / "d.vw", tmp_path / "r.txt", tmp_path / "s.txt"
    data.write_text("0 |a x\n1 |a y\n2 |a x\n")
    olearn_here("-d", data, "--oaa", "3", "-r", raw, "--quiet")
    olearn_here("-d", data, "--oaa", "3", "--scores", "-p", scores, "--quiet")
    listed = [line.split() for line in scores.read_text().splitlines()]
    raw_lines = [line.split() for line in raw.read_text().splitlines()]
    assert [p.split(":")[0] for p in raw_lines[0]] == ["1", "2", "3"]  # before label 0
    for mine, plain in zip(raw_lines[1:], listed[1:], strict=True):
        assert [p.split(":")[0] for p in mine] == ["0", "1", "2"]
        assert [p.split(":")[1] for p in mine] == [p.split(":")[1] for p in plain[-1:] + plain[:-1]]


def test_indexing_option_fixes_the_labels_from_the_start(tmp_path):
    code, preds, _ = _run(tmp_path, "0 |a x\n1 |a y\n", "--oaa", "3", "--indexing", "0")
    assert code == 0 and preds.split()[0] == "0"


def test_label_that_is_not_a_class_is_an_error_naming_the_line(tmp_path):
    code, _, err = _run(tmp_path, "1 |a x\n1.5 |a y\n", "--oaa", "3")
    assert code != 0 and "data.vw:2:" in err and "not a class" in err
    assert "Traceback" not in err


def test_multiclass_label_with_a_third_number_is_an_error(tmp_path):
    code, _, err = _run(tmp_path, "1 2 0.5 |a x\n", "--oaa", "3")
    assert code != 0 and "data.vw:1:" in err and "third number" in err


def test_label_outside_the_classes_warns_and_counts_as_an_error(tmp_path):
    code, preds, err = _run(tmp_path, "3 |a x\n7 |a y\n", "--oaa", "3")
    assert code == 0 and "data.vw:2: label 7 is not in {0..3}" in err
    assert "average loss = 1.000000" in err and len(preds.split()) == 2


def test_probabilities_sum_to_one_and_the_summary_has_the_log_loss(tmp_path):
    code, preds, err = _run(tmp_path, "1 |a x\n2 'tag |a y\n3 |a z\n1 |a x\n",
                            "--oaa", "3", "--probabilities", "--loss_function", "logistic")
    assert code == 0
    lines = preds.splitlines()
    assert lines[1].endswith(" tag")
    for line in lines:
        pairs = [pair.split(":") for pair in line.split()[:3]]
        assert [c for c, _ in pairs] == ["1", "2", "3"]
        assert sum(float(p) for _, p in pairs) == pytest.approx(1, abs=1e-5)
    assert "1(33%)" in err
    log_loss = float(err.split("average multiclass log loss = ")[1].split()[0])
    first = [float(p.split(":")[1]) for p in lines[0].split()]
    assert log_loss > 0 and -math.log(first[0]) / 4 < log_loss


def test_scores_are_the_clipped_class_scores_of_the_api(tmp_path):
    text = "1 |a x\n2 |a y\n3 |a z\n1 |a x y\n"
    _, preds, _ = _run(tmp_path, text, "--oaa", "3", "--scores")
    learner = Learner(oaa=3)
    learner.fit(text.splitlines())
    scores = [[float(pair.split(":")[1]) for pair in line.split()] for line in preds.splitlines()]
    again = Learner(oaa=3)
    first = again.decision_function(text.splitlines()[:1])
    assert first.shape == (1, 3) and np.all(first == 0)
    assert scores[0] == [0.0, 0.0, 0.0] and len(scores) == 4
    assert np.array_equal(learner.predict(["|a x"]), [1.0])


def test_raw_predictions_write_every_class_score_after_a_space(tmp_path):
    data, raw = tmp_path / "d.vw", tmp_path / "r.txt"
    data.write_text("1 |a x\n2 |a y\n")
    olearn_here("-d", data, "--oaa", "2", "-r", raw, "--quiet")
    assert raw.read_text().splitlines()[0] == " 1:0 2:0"


@pytest.mark.parametrize("options, message", [
    ({"probabilities": True}, "--probabilities needs --oaa"),
    ({"oaa": 3, "boa": True}, "--oaa works with gradient descent"),
    ({"oaa": 3, "binary": True}, "--binary does not apply"),
    ({"oaa": 5, "bit_precision": 2}, "needs at least 3 bits"),
])
def test_oaa_refuses_options_that_do_not_fit(options, message):
    with pytest.raises(OptionError, match=message):
        Config(quiet=True, **options)


def test_oaa_model_keeps_the_class_count_and_predicts_as_trained(tmp_path):
    data, model, preds = tmp_path / "d.vw", tmp_path / "m.olearn", tmp_path / "p.txt"
    lines = [f"{1 + i % 3} |a x{i % 3} y{i % 5}" for i in range(60)]
    data.write_text("\n".join(lines) + "\n")
    olearn_here("-d", data, "--oaa", "3", "-f", model, "--quiet")
    olearn_here("-t", "-i", model, "-d", data, "-p", preds, "--quiet")
    learner = Learner.load(model)
    assert learner.config.oaa == 3
    assert preds.read_text().split() == [f"{c:g}" for c in learner.predict(lines)]


@settings(max_examples=500)
@given(st.floats(allow_nan=False, allow_infinity=False, width=32))
def test_scores_are_written_as_cpp_streams_write_floats(x):
    out = np.empty(64, dtype=np.uint8)
    n = format_general(out, 0, np.float64(x))
    assert bytes(out[:n]).decode() == "%g" % x


def test_invert_hash_names_each_class_of_a_feature_as_vw(tmp_path):
    data, names = tmp_path / "one.vw", tmp_path / "names.txt"
    data.write_text("1 |a x\n")
    olearn_here("-d", data, "--oaa", "3", "--invert_hash", names, "--quiet")
    lines = [line for line in names.read_text().splitlines() if line.startswith(("a^x", "Const"))]
    assert [line.split(":")[:2] for line in lines] == [
        ["Constant", "202096"], ["Constant[1]", "202097"], ["Constant[2]", "202098"],
        ["a^x", "221728"], ["a^x[1]", "221729"], ["a^x[2]", "221730"]]


@pytest.mark.parametrize("x", [5e-324, 1e-310, 1.7976931348623157e308, 1e-300])
def test_writing_any_float64_score_stays_in_its_buffer_and_ends(x):
    out = np.empty(64, dtype=np.uint8)
    assert 0 < format_general(out, 0, x) <= 16


@pytest.mark.parametrize("k, seed", [(10, 0), (10, 5), (7, 123)])
def test_subsample_order_is_vws_shuffle(k, seed):
    assert shuffled(k, seed).tolist() == subsample_order(k, seed)


@pytest.mark.parametrize("negatives", [1, 2])
def test_subsample_kernel_equals_the_reference(negatives):
    examples = _class_examples()
    config = Config(bit_precision=BITS, oaa=4, oaa_subsample=negatives, quiet=True)
    got = kernel_outputs(examples, config)[:, 0]
    want = oaa_subsample_predictions(examples, 4, BITS, negatives)
    np.testing.assert_array_equal(got, want)


def test_subsample_reports_no_progressive_loss(tmp_path, capsys):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x\n2 |a y\n3 |a z\n")
    olearn_here("-d", data, "--oaa", "3", "--oaa_subsample", "1")
    assert "average loss = n.a." in capsys.readouterr().err


@pytest.mark.parametrize("options, message", [
    ({"oaa_subsample": 2}, "--oaa_subsample needs --oaa"),
    ({"oaa": 4, "oaa_subsample": 2, "probabilities": True}, "does not take --probabilities"),
])
def test_subsample_refuses_options_that_do_not_fit(options, message):
    with pytest.raises(OptionError, match=message):
        Config(quiet=True, **options)


def test_probabilities_take_and_drop_a_link():
    """VW's oaa replaces --link by identity under --probabilities (suite test 352)."""
    config = Config(oaa=3, probabilities=True, loss_function="logistic", link="logistic")
    assert config.link == "identity"


def _many_class_lines(n=300, classes=40, seed=11):
    rng = np.random.default_rng(seed)
    return "".join(f"{rng.integers(1, classes + 1)} 'e{i} |a x{rng.integers(30)} "
                   f"y{rng.integers(30)}:{rng.normal():.3f}\n" for i in range(n))


def _outputs(tmp_path, name, data):
    out = {kind: tmp_path / f"{name}.{kind}" for kind in ("p", "r", "model")}
    olearn_here("-d", data, "--oaa", 40, "-b", 12, "--quiet", "-p", out["p"], "-r", out["r"],
                "-f", out["model"])
    return {kind: path.read_bytes() for kind, path in out.items()}


def test_oaa_batches_are_learned_in_pieces_of_bounded_prediction_arrays(tmp_path, monkeypatch):
    data = tmp_path / "classes.vw"
    data.write_text(_many_class_lines())
    whole = _outputs(tmp_path, "whole", data)
    widths = []
    learn = OnlineLearner.learn

    def learn_recorded(self, batch, preds):
        widths.append(preds.size)
        return learn(self, batch, preds)

    monkeypatch.setattr("olearn.engine.learner.PREDICTIONS_PER_CALL", 500)
    monkeypatch.setattr(OnlineLearner, "learn", learn_recorded)
    pieces = _outputs(tmp_path, "pieces", data)
    assert len(widths) > 20 and max(widths) <= 500  # 44 columns: 11 examples a call
    assert pieces == whole


def test_predict_with_many_classes_keeps_one_output_per_example(monkeypatch):
    lines = _many_class_lines().splitlines()
    learner = Learner("--oaa 40 -b 12 --quiet")
    learner.fit(lines)
    whole = learner.predict(lines), learner.decision_function(lines)
    monkeypatch.setattr("olearn.engine.learner.PREDICTIONS_PER_CALL", 500)
    pieces = learner.predict(lines), learner.decision_function(lines)
    assert whole[0].shape == (300,) and whole[1].shape == (300, 40)
    np.testing.assert_array_equal(pieces[0], whole[0])
    np.testing.assert_array_equal(pieces[1], whole[1])
