"""--ect: VW's error-correcting tournament (olearn/reductions/ect.py,
reductions/ect_kernels.py)."""
import numpy as np
import pytest
from conftest import olearn_here, run_olearn
from examples import kernel_outputs
from reference import ect_predictions, parse_vw_line
from test_vw_oracle import _both, _table_and_summary, assert_same_layout

from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.options.config import Config
from olearn.reductions.ect import N_LAST, N_WINNER, circuit, problem_count

BITS = 10
# VW's test 12 (test/core.vwtest.json): its train-sets/multiclass
MULTICLASS = "".join(f"{k} | {name}\n" for k, name in enumerate(
    "one two three four five six seven eight nine ten".split(), 1))


def _class_examples(seed=7, n=300, classes=5):
    """Examples whose class is the largest of ``classes`` linear scores, some unlabeled, some
    weighted, some labeled outside 1..K."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(classes, 1 << BITS))
    examples = []
    for _ in range(n):
        idx = rng.choice(1 << BITS, size=rng.integers(1, 6), replace=False)
        val = rng.normal(size=len(idx)).astype(np.float32)
        label = float(np.argmax(truth[:, idx] @ val) + 1) if rng.random() > 0.1 else None
        if label is not None and rng.random() < 0.03:
            label = float(classes + 1)
        imp = float(rng.choice([1.0, 1.0, 0.5, 2.0]))
        examples.append((label, imp, list(zip(idx.tolist(), val.tolist()))))
    return examples


@pytest.mark.parametrize("errors", [0, 1, 3])
@pytest.mark.parametrize("rule", [{}, {"invariant": True}])
def test_ect_kernel_equals_the_reference_tournament(errors, rule):
    examples = _class_examples()
    config = Config(bit_precision=BITS, ect=5, error=errors, quiet=True, **rule)
    got = kernel_outputs(examples, config, OnlineLearner(config))[:, 0]
    want = ect_predictions(examples, 5, errors, BITS, *config.update_rule, eta=config.eta,
                           power_t=config.power_t, t0=config.t0)
    # no call so far within float32's rounding of a tie
    clear = np.array([margin > 1e-4 for _, margin in want])
    assert clear.mean() > 0.3
    np.testing.assert_array_equal(got[clear], np.array([c for c, _ in want])[clear])
    assert len({c for c, _ in want}) == 5


@pytest.mark.parametrize(("k", "errors"), [(2, 0), (5, 0), (10, 3), (7, 6), (16, 2)])
def test_every_class_plays_up_to_a_final(k, errors):
    """Following winners from any class reaches one of the E tournaments' finals, whose
    matches are all the problems before the final tournament's."""
    nodes, finals = circuit(k, errors)
    assert len(finals) == errors + 1
    assert len(nodes) - k == (k - 1) * (errors + 1)
    assert problem_count(k, errors) == len(nodes) - k + errors
    for c in range(k):
        node = nodes[c, N_WINNER]
        while not nodes[node, N_LAST]:
            assert node > 0
            node = nodes[node, N_WINNER]
        assert node == finals[0]


def test_a_saved_model_predicts_as_the_tournament_trained(tmp_path):
    """-f keeps every problem's weights and sums: -i -t predicts as the reference after the
    same training."""
    rng = np.random.default_rng(3)
    lines = [f"{rng.integers(1, 5)} |a " + " ".join(f"f{j}:{rng.normal():.3f}"
                                                    for j in rng.choice(30, 3, replace=False))
             for _ in range(160)]
    train, test = tmp_path / "train.vw", tmp_path / "test.vw"
    train.write_text("\n".join(lines[:120]) + "\n")
    test.write_text("\n".join(lines[120:]) + "\n")
    model, preds = tmp_path / "m", tmp_path / "p"
    olearn_here("-d", train, "-f", model, "-b", BITS, "--ect", 4, "--error", 2, "--quiet")
    olearn_here("-d", test, "-i", model, "-t", "-p", preds, "--quiet")
    examples = [(float(y) if i < 120 else None, imp,
                 [(j, float(np.float32(x))) for j, x, _ in feats])
                for i, (y, imp, _, _, feats) in enumerate(parse_vw_line(line.encode(), BITS)
                                                           for line in lines)]
    want = [c for c, _ in ect_predictions(examples, 4, 2, BITS)[120:]]
    assert [int(p) for p in preds.read_text().split()] == want
    assert len(set(want)) > 1


def test_a_label_outside_the_classes_is_warned_and_not_learned(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("9 |a x\n2 |a x\n")
    code, _, err = run_olearn("-d", data, "--ect", 3)
    assert code == 0 and "d.vw:1: label 9 is not in {1..3}; not learned" in err
    assert "average loss = 1.000000" in err


def test_a_label_that_is_not_a_class_names_its_line(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x\n2.5 |a y\n")
    code, _, err = run_olearn("-d", data, "--ect", 3)
    assert code == 1 and "d.vw:2" in err and "2.5 is not a class" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("options", "message"), [
    ({"ect": 3, "oaa": 3}, "--ect does not take --oaa"),
    ({"ect": 3, "link": "logistic"}, "--ect does not take --link"),
    ({"ect": 40000, "error": 1000, "bit_precision": 18}, "needs at least 26 bits"),
    ({"error": 2, "explicit": frozenset({"error"})}, "--error needs --ect"),
])
def test_ect_refuses_what_it_cannot_combine(options, message):
    with pytest.raises(OptionError, match=message):
        Config(**options)


def test_raw_predictions_are_empty_as_vw(tmp_path):
    data, raw = tmp_path / "d.vw", tmp_path / "r"
    data.write_text(MULTICLASS)
    olearn_here("-d", data, "--ect", 10, "-r", raw, "--quiet")
    assert raw.read_text() == ""


@pytest.mark.parametrize("options", [
    ["--ect", "10", "--error", "3", "-c", "--passes", "10", "--invariant", "-k",
     "--holdout_off"],  # VW's test 12
    ["--ect", "10", "--error", "1"],
])
def test_ect_table_and_predictions_match_vw(vw, tmp_path, options):
    data = tmp_path / "multiclass"
    data.write_text(MULTICLASS * 3)
    ours, theirs = _both(["-d", data, *options, "-p", tmp_path / "o.p"],
                         ["-d", data, *options, "-p", tmp_path / "v.p"])
    for a, b in zip(_table_and_summary(ours[2]), _table_and_summary(theirs[2]), strict=True):
        if "cache" not in a:
            assert_same_layout(a, b, "table")
    assert (tmp_path / "o.p").read_text() == (tmp_path / "v.p").read_text()
