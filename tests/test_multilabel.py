"""--multilabel_oaa: VW's one-against-all multilabel reduction (olearn/reductions/multilabel.py,
reductions/multilabel_kernels.py) and its labels (olearn/data/labels.py)."""
import numpy as np
import pytest
from conftest import run_olearn
from reference import multilabel_predictions

from olearn.data.batch import ExampleBatch
from olearn.data.labels import LABEL_CLASSES, labels_of
from olearn.data.parse import FORMAT_VW, IDENTITY, parse
from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.options.config import Config

BITS = 10


def _label_examples(seed=11, n=300, classes=5):
    """Examples whose classes are those of positive linear scores (some unlabeled)."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(classes, 1 << BITS))
    examples = []
    for _ in range(n):
        idx = rng.choice(1 << BITS, size=rng.integers(1, 6), replace=False)
        val = rng.normal(size=len(idx))
        labels = [k for k in range(classes) if truth[k, idx] @ val > 0.3] or [0]
        examples.append((labels if rng.random() > 0.1 else None,
                         list(zip(idx.tolist(), val.tolist()))))
    return examples


def _batch(examples):
    offsets = np.cumsum([0] + [len(f) for _, f in examples])
    label_offsets = np.cumsum([0] + [len(labels or []) for labels, _ in examples])
    numbers = np.array([[np.nan if labels is None else 0.0, 1.0, 0.0] for labels, _ in examples],
                       dtype=np.float32)
    empty = np.zeros((0, 4), dtype=np.int64)
    classes = [k for labels, _ in examples for k in labels or []]
    return ExampleBatch(
        np.zeros(0, np.uint8), "", 0, numbers, np.full((len(examples), 2), -1),
        np.zeros(len(examples), np.int64), offsets,
        np.array([j for _, f in examples for j, _ in f], dtype=np.uint32),
        np.array([x for _, f in examples for _, x in f], dtype=np.float32),
        np.zeros(offsets[-1], np.uint8), empty, empty, 0, 0, cost_offsets=label_offsets,
        cost_class=np.array(classes, dtype=np.uint32),
        cost_value=np.zeros(len(classes), dtype=np.float32))


@pytest.mark.parametrize("rule", [{}, {"sgd": True}, {"adaptive": True}])
def test_multilabel_kernel_equals_the_reference_multilabel_one_against_all(rule):
    examples = _label_examples()
    config = Config(bit_precision=BITS, multilabel_oaa=5, quiet=True, **rule)
    learner = OnlineLearner(config)
    batch = _batch(examples)
    preds = learner.new_predictions(batch)
    learner.learn(batch, preds)
    want = multilabel_predictions(examples, 5, BITS, *config.update_rule, eta=config.eta,
                                  power_t=config.power_t, t0=config.t0)
    scores = np.array([s for _, s in want])
    np.testing.assert_allclose(learner.scores(preds), scores, rtol=2e-4, atol=1e-5)
    clear = np.abs(scores).min(axis=1) > 1e-3
    assert clear.sum() > len(examples) / 4
    got = learner.reduction.predicted(preds)
    assert all(list(np.flatnonzero(got[e])) == want[e][0] for e in np.flatnonzero(clear))


def test_multilabels_parse_into_classes():
    buf = np.frombuffer(b"0,3,17 'tag |a x\n|a y\n1,x |a z\n2 3 |a w\n", dtype=np.uint8)
    batch = parse(buf, FORMAT_VW, 255, 0, False, True, False, 0, index_of=IDENTITY,
                  labels=labels_of(LABEL_CLASSES, None))
    assert list(batch.cost_offsets) == [0, 3, 3, 5, 5]
    assert list(batch.cost_class) == [0, 3, 17, 1, 0]
    assert np.isnan(batch.numbers[1, 0]) and np.isnan(batch.numbers[3, 0])
    assert batch.n_warnings == 2  # 'x' is not an int; two tokens are not a multilabel


def _run(tmp_path, text, *options):
    data, preds = tmp_path / "data.vw", tmp_path / "p.txt"
    data.write_text(text)
    code, _, err = run_olearn("-d", data, "-p", preds, *options)
    return code, (preds.read_text() if preds.exists() else ""), err


LINES = "0,1 | one\n1,2 | two\n2,3 | three\n3,4 | four\n2,3,4,5 | five\n0,1 'tg | one\n"


def test_predictions_table_and_loss_are_vw_s(tmp_path):
    # VW 9.11.9's outputs of this command (its -p, average loss and table rows)
    code, preds, err = _run(tmp_path, LINES, "--multilabel_oaa", "6")
    assert code == 0
    assert preds.split("\n") == [" ", "0,1 ", "0,1 ", "1,2 ", "1 ", "1  tg", ""]
    assert "average loss = 3.000000" in err
    assert "2.000000 2.000000            2            2.0            1,2            0,1" in err


def test_probabilities_write_every_class_and_an_empty_set(tmp_path):
    code, preds, err = _run(tmp_path, LINES[:20], "--multilabel_oaa", "3", "--probabilities",
                            "--loss_function", "logistic")
    lines = preds.split("\n")
    assert code == 0 and lines[::2] == ["0:0.5 1:0.5 2:0.5", "0:0.5741 1:0.5741 2:0.4259", ""]
    assert lines[1::2] == [" ", " "]  # VW: 0.574099 and 0.425901 (float32; within 1e-5)
    assert "average loss = 2.000000" in err and "log loss" not in err


@pytest.mark.parametrize(("options", "message"), [
    ({"multilabel_oaa": 3, "oaa": 3}, "--multilabel_oaa does not take --oaa"),
    ({"multilabel_oaa": 3, "eg": True}, "--multilabel_oaa works with gradient descent"),
    ({"multilabel_oaa": 5, "bit_precision": 2}, "needs at least 3 bits"),
    ({"probabilities": True}, "--probabilities needs --oaa, --multilabel_oaa or --csoaa_ldf"),
])
def test_multilabel_refuses_options_that_do_not_fit(options, message):
    with pytest.raises(OptionError, match=message):
        Config(**options)


def test_class_beyond_the_classes_warns_naming_the_line(tmp_path):
    code, _, err = _run(tmp_path, "0,1 |a x\n1,7 |a y\n", "--multilabel_oaa", "3")
    assert code == 0 and "data.vw:2: class 7 is not in {0..2}" in err
