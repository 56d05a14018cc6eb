"""--csoaa: VW's cost-sensitive one-against-all (olearn/reductions/csoaa.py,
reductions/csoaa_kernels.py), its labels (olearn/data/labels.py) and --named_labels."""
import numpy as np
import pytest
from conftest import olearn_here, run_olearn
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import csoaa_predictions, parse_costs

from olearn.data.batch import ExampleBatch
from olearn.data.labels import LABEL_COSTS, NO_COST, labels_of
from olearn.data.parse import FORMAT_VW, IDENTITY, parse
from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.options.config import Config

BITS = 10


def _cost_examples(seed=3, n=300, classes=4):
    """Examples whose cheapest class is the smallest of ``classes`` linear scores: some list
    every class with a cost, some a few, some a class without a cost, some none."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(classes, 1 << BITS))
    examples = []
    for _ in range(n):
        idx = rng.choice(1 << BITS, size=rng.integers(1, 6), replace=False)
        val = rng.normal(size=len(idx))
        costs = truth[:, idx] @ val
        costs = costs - costs.min()
        kind = rng.random()
        if kind < 0.1:
            listed = []
        else:
            chosen = (range(1, classes + 1) if kind < 0.6
                      else sorted(rng.choice(classes, size=2, replace=False) + 1))
            listed = [(int(c), None if kind > 0.9 and c == chosen[0] else float(costs[c - 1]))
                      for c in chosen]
        examples.append((listed, list(zip(idx.tolist(), val.tolist()))))
    return examples


def _batch(examples):
    """An ExampleBatch of cost-sensitive examples ([(class, cost or None)], features)."""
    offsets = np.cumsum([0] + [len(f) for _, f in examples])
    cost_offsets = np.cumsum([0] + [len(c) for c, _ in examples])
    labeled = [any(cost is not None for _, cost in c) for c, _ in examples]
    numbers = np.array([[0.0 if known else np.nan, 1.0, 0.0] for known in labeled],
                       dtype=np.float32)
    empty = np.zeros((0, 4), dtype=np.int64)
    return ExampleBatch(
        np.zeros(0, np.uint8), "", 0, numbers, np.full((len(examples), 2), -1),
        np.zeros(len(examples), np.int64), offsets,
        np.array([j for _, f in examples for j, _ in f], dtype=np.uint32),
        np.array([x for _, f in examples for _, x in f], dtype=np.float32),
        np.zeros(offsets[-1], np.uint8), empty, empty, 0, 0, cost_offsets=cost_offsets,
        cost_class=np.array([c for cs, _ in examples for c, _ in cs], dtype=np.uint32),
        cost_value=np.array([NO_COST if x is None else x for cs, _ in examples for _, x in cs],
                            dtype=np.float32))


@pytest.mark.parametrize("rule", [{}, {"sgd": True}, {"normalized": True, "invariant": True}])
def test_csoaa_kernel_equals_the_reference_cost_sensitive_one_against_all(rule):
    examples = _cost_examples()
    config = Config(bit_precision=BITS, csoaa=4, indexing=1, quiet=True, **rule)
    learner = OnlineLearner(config)
    batch = _batch(examples)
    preds = learner.new_predictions(batch)
    learner.learn(batch, preds)
    want = csoaa_predictions(examples, 4, BITS, *config.update_rule, eta=config.eta,
                             power_t=config.power_t, t0=config.t0)
    classes, scores, counts, _ = learner.reduction.class_pairs(preds, True)
    for e, (best, listed) in enumerate(want):
        n = int(counts[e])
        assert [int(c) for c in classes[e, :n]] == [c for c, _ in listed]
        np.testing.assert_allclose(scores[e, :n], [x for _, x in listed], rtol=2e-4, atol=1e-5)
    raw = [min(x for _, x in listed) if listed else None for _, listed in want]
    clear = [e for e, (_, listed) in enumerate(want)
             if listed and sorted(x for _, x in listed)[:2][-1] - raw[e] > 1e-3]
    assert len(clear) > len(examples) / 4
    assert [int(preds[e, 0]) for e in clear] == [want[e][0] for e in clear]


def _parsed(text: bytes, names=None):
    buf = np.frombuffer(text, dtype=np.uint8)
    return parse(buf, FORMAT_VW, (1 << 18) - 1, 0, False, True, False, 0, index_of=IDENTITY,
                 labels=labels_of(LABEL_COSTS, names))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["1", "2", "17", "det", "a_b"]),
                          st.one_of(st.none(), st.just(""),
                                    st.floats(-1e3, 1e3).map(lambda x: f"{x:.3f}"))),
                max_size=5),
       st.sampled_from(["", " 'tag", " t"]), st.booleans())
def test_cost_labels_parse_as_the_reference_reads_them(tokens, tag, named):
    names = ["det", "17", "a_b"] if named else None
    section = " ".join(name if cost is None else f"{name}:{cost}" for name, cost in tokens)
    section = (section + tag).strip() + " "
    if tag == " t":
        section = section.rstrip()
    want, want_tag = parse_costs(section.encode(), names)
    batch = _parsed(section.encode() + b"|a x\n", names)
    lo, hi = batch.cost_offsets[0], batch.cost_offsets[1]
    got = [(int(c), None if v == NO_COST else float(v))
           for c, v in zip(batch.cost_class[lo:hi], batch.cost_value[lo:hi], strict=True)]
    assert [c for c, _ in got] == [c for c, _ in want]
    np.testing.assert_allclose([np.nan if v is None else v for _, v in got],
                               [np.nan if v is None else v for _, v in want], rtol=1e-6)
    start, end = batch.tags[0]
    assert (bytes(batch.text[start:end]) if start >= 0 else None) == want_tag
    assert np.isnan(batch.numbers[0, 0]) == all(v is None for _, v in want)


def test_unknown_name_is_class_zero_with_a_warning():
    batch = _parsed(b"det:0 verb:1 | x\n", ["det", "noun"])
    assert list(batch.cost_class) == [1, 0] and batch.n_warnings == 1


def _run(tmp_path, text, *options):
    data, preds, raw = tmp_path / "data.vw", tmp_path / "p.txt", tmp_path / "r.txt"
    data.write_text(text)
    code, _, err = run_olearn("-d", data, "-p", preds, "-r", raw, *options)
    read = lambda path: path.read_text() if path.exists() else ""  # noqa: E731
    return code, read(preds), read(raw), err


NAMED = "a:1 b:0 c:2 | x y\nb:1 c:0 |x z\n| x\nd:0 a:1 | y\n"


def test_named_classes_predict_and_report_as_vw(tmp_path):
    # VW 9.11.9's outputs of this command (its -p, -r and average loss)
    code, preds, raw, err = _run(tmp_path, NAMED, "--csoaa", "3", "--named_labels", "a,b,c")
    assert code == 0 and "parsed 3 named labels" in err
    assert preds.split("\n") == ["a", "b", "b", "a", ""]
    assert raw.split("\n") == ["1:0 2:0 3:0", "2:0 3:0.234298", "", "3:0.449589 1:0.386253", ""]
    assert "average loss = 1.000000" in err and "missing named label 'd'" in err
    assert "known              a        3" in err


def test_loss_is_the_cost_above_the_lowest_or_absolute(tmp_path):
    text = "1:1.0 2:3.0 3:2.0 | a b c\n1:5 2:4 | a\n"
    # VW 9.11.9: 0.5 relative, 3.0 with --cs_absolute_loss (the first prediction is class 1)
    assert "average loss = 0.500000" in _run(tmp_path, text, "--csoaa", "3")[3]
    assert "average loss = 3.000000" in _run(tmp_path, text, "--csoaa", "3",
                                             "--cs_absolute_loss")[3]


def test_class_outside_the_classes_is_the_last_class_with_a_warning(tmp_path):
    code, preds, raw, err = _run(tmp_path, "5:1.0 2:0.0 | a\n1:0 2:1 3:1 | a\n",
                                 "--csoaa", "3", "--indexing", "1")
    # VW 9.11.9: -r "3:0 2:0" then "1:0 2:0 3:0.506931", -p 2 then 1
    assert code == 0 and "class 5 is not in {1..3}; read as class 3" in err
    assert raw.splitlines() == ["3:0 2:0", "1:0 2:0 3:0.506931"]
    assert preds.split() == ["2", "1"]


def test_cache_and_model_reproduce_the_predictions(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{k % 3 + 1}:0 {(k + 1) % 3 + 1}:1 'e{k} | f{k % 5} g\n"
                            for k in range(30)))
    plain, cached, tested = (tmp_path / name for name in ("p1", "p2", "p3"))
    model = tmp_path / "m"
    olearn_here("-d", data, "--csoaa", "3", "-p", plain, "-f", model, "--quiet")
    olearn_here("-d", data, "--csoaa", "3", "-c", "-p", cached, "--quiet")
    olearn_here("-d", data, "-c", "--csoaa", "3", "-p", cached, "--quiet")  # from the cache
    olearn_here("-t", "-i", model, "-d", data, "-p", tested, "--quiet")
    assert plain.read_text() == cached.read_text()
    assert plain.read_text().splitlines()[0] == "1 e0"
    assert len(tested.read_text().splitlines()) == 30


@pytest.mark.parametrize(("options", "message"), [
    ({"csoaa": 3, "probabilities": True}, "--csoaa does not take --probabilities"),
    ({"csoaa": 3, "oaa": 3}, "--csoaa does not take --oaa"),
    ({"csoaa": 3, "boa": True}, "--csoaa works with gradient descent"),
    ({"csoaa": 5, "bit_precision": 2}, "needs at least 3 bits"),
    ({"cs_absolute_loss": True}, "--cs_absolute_loss needs --csoaa"),
    ({"oaa": 3, "named_labels": "a,b"}, "there are 2 named labels"),
    ({"oaa": 2, "named_labels": "a,b,a"}, "'a' is listed more than once"),
])
def test_csoaa_refuses_options_that_do_not_fit(options, message):
    with pytest.raises(OptionError, match=message):
        Config(**options)


def test_svmlight_input_is_refused_with_csoaa(tmp_path):
    data = tmp_path / "d.svm"
    data.write_text("1 1:0.5\n")
    code, _, err = run_olearn("--csoaa", "2", "-d", data, "--format", "svmlight")
    assert code != 0 and "not svmlight" in err and "Traceback" not in err


def test_prediction_array_lists_at_most_k_classes(tmp_path):
    code, _, raw, _ = _run(tmp_path, "1:0 1:1 2:1 1:0 | a\n", "--csoaa", "2")
    assert code == 0 and raw.split() == ["1:0", "1:0"]


def test_a_labeled_example_without_classes_reads_no_cost():
    # the kernel's arguments need not agree: a label with no class listed predicts every class
    batch = _batch([([], [(3, 1.0)]), ([(1, 0.5)], [(3, 1.0)])])
    batch.numbers[0, 0] = 0.0
    learner = OnlineLearner(Config(bit_precision=BITS, csoaa=3, quiet=True))
    preds = learner.new_predictions(batch)
    learner.learn(batch, preds)
    assert preds[0, 0] == 1.0 and preds[1, 0] == 1.0
