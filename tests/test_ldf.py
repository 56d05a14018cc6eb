"""--csoaa_ldf and --wap_ldf: multi-line examples (olearn/data/multiline.py), the reduction
(olearn/reductions/ldf.py, ldf_kernels.py) and its outputs."""
import numpy as np
import pytest
from conftest import olearn_here, run_olearn
from reference import ldf_predictions, parse_vw_line

from olearn.data import sources
from olearn.data.multiline import POSITION
from olearn.data.parse import FORMAT_VW
from olearn.engine.learner import OnlineLearner
from olearn.errors import OlearnError, OptionError
from olearn.options.config import Config

BITS = 12


def _text(seed=5, n=60, shared_every=2):
    """Multi-line examples: sometimes a shared line, then 2-4 actions whose cost is a noisy
    linear score of their own features (each action's features its own, so that a --wap_ldf
    pair repeats none)."""
    rng = np.random.default_rng(seed)
    lines = []
    for g in range(n):
        if g % shared_every == 0:
            lines.append(f"shared |s u{rng.integers(5)} v:{rng.normal():.3f}")
        for a in range(int(rng.integers(2, 5))):
            feats = [f"f{a}_{rng.integers(8)}:{rng.normal():.3f}" for _ in range(3)]
            cost = max(0.0, float(rng.normal() + 0.3 * a))
            lines.append(f"{a + 1}:{cost:.3f} |a {' '.join(feats)}")
        lines.append("")
    return "\n".join(lines) + "\n"


def _learner(**options):
    return OnlineLearner(Config(bit_precision=BITS, quiet=True, **options))


def _batch(learner, text):
    return learner.parse_block(sources.Block(text.encode(), "t.vw", 0, True), FORMAT_VW)


def _actions(batch):
    """A batch's multi-line examples as the reference reads them: [(class, cost, features)]."""
    examples = []
    for e in range(len(batch)):
        if batch.numbers[e, POSITION] == 0:
            examples.append([])
        lo, hi = batch.offsets[e], batch.offsets[e + 1]
        c = batch.cost_offsets[e]
        examples[-1].append((int(batch.cost_class[c]), float(batch.cost_value[c]),
                             list(zip(batch.index[lo:hi].tolist(),
                                      batch.value[lo:hi].tolist()))))
    return examples


def test_shared_features_join_each_action_after_its_own():
    text = "shared |s u v:2\n1:0 |a x\n2:1 'no |a y\n\n1:1 |a z\n"
    batch = _batch(_learner(csoaa_ldf="m"), text)
    shared = [f for f in parse_vw_line(b"|s u v:2", BITS)[4] if f[2] != 128]
    want = [parse_vw_line(line.encode(), BITS)[4] + (shared if k < 2 else [])
            for k, line in enumerate(["|a x", "|a y", "|a z"])]
    assert len(batch) == 3
    for e, features in enumerate(want):
        lo, hi = batch.offsets[e], batch.offsets[e + 1]
        assert batch.index[lo:hi].tolist() == [j for j, _, _ in features]
        assert batch.value[lo:hi].tolist() == [x for _, x, _ in features]
    assert batch.numbers[:, POSITION].tolist() == [0, 1, 0]
    assert batch.cost_class.tolist() == [1, 2, 1]


def test_an_action_without_a_cost_makes_its_example_unlabeled():
    batch = _batch(_learner(csoaa_ldf="m"), "1:0 |a x\n2 |a y\n\n1:0 |a x\n2:1 |a y\n")
    assert np.isnan(batch.numbers[:2, 0]).all() and (batch.numbers[2:, 0] == 0).all()


def test_a_shared_line_after_an_action_names_its_line():
    with pytest.raises(OlearnError, match="'shared' line must be the first") as error:
        _batch(_learner(csoaa_ldf="m"), "1:0 |a x\n\n1:0 |a x\nshared |s u\n")
    assert error.value.line == 4


def test_blocks_end_only_after_a_blank_line():
    text = _text(n=40).encode()
    cuts = [bytes(b.data) for b in sources._cut_blocks([text[i:i + 7] for i in range(
        0, len(text), 7)], "t", [0], 50, multiline=True)]
    assert b"".join(cuts) == text and len(cuts) > 5
    assert all(block.endswith(b"\n\n") for block in cuts[:-1])


@pytest.mark.parametrize("mode, options", [("m", {"csoaa_ldf": "m"}),
                                           ("mc", {"csoaa_ldf": "mc"}),
                                           ("wap", {"wap_ldf": "m"}),
                                           ("m", {"csoaa_ldf": "m", "sgd": True})])
def test_kernel_equals_the_reference(mode, options):
    learner = _learner(**options)
    batch = _batch(learner, _text())
    preds = learner.new_predictions(batch)
    learner.learn(batch, preds)
    want = ldf_predictions(_actions(batch), mode, *learner.config.update_rule,
                           eta=learner.config.eta, power_t=learner.config.power_t,
                           t0=learner.config.t0)
    starts = np.flatnonzero(batch.numbers[:, POSITION] == 0)
    for start, (raws, best) in zip(starts, want):
        np.testing.assert_allclose(preds[start:start + len(raws), 1], raws, rtol=1e-3,
                                   atol=1e-4)
        if sorted(raws)[1] - min(raws) > 1e-3:  # a clear winner
            chosen = preds[start:start + len(raws), 0]
            assert chosen.max() == best


def test_predictions_write_each_action_then_a_blank_line(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1:1 |a x\n2:0 |a y\n\n1:0 |a x\n3:1 'tg |a z\n")
    olearn_here("-d", data, "--csoaa_ldf", "m", "-p", tmp_path / "p", "--quiet")
    lines = (tmp_path / "p").read_text().split("\n")
    assert lines[2] == "" and lines[5] == "" and len(lines) == 7
    assert lines[4].endswith(" tg") and lines[0] == "1" and lines[1] == "0"


def test_rank_writes_classes_by_increasing_score(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(_text(n=30))
    olearn_here("-d", data, "--csoaa_ldf", "m", "--csoaa_rank", "-p", tmp_path / "p",
                "-r", tmp_path / "r", "--quiet")
    groups = (tmp_path / "p").read_text().split("\n\n")[:-1]
    assert len(groups) == 30
    for line in groups:
        scores = [float(pair.split(":")[1]) for pair in line.split(",")]
        assert scores == sorted(scores)
    assert len((tmp_path / "r").read_text().splitlines()) == _text(n=30).count("|a ")


def test_probabilities_of_an_example_sum_to_one(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(_text(n=20))
    code, _, err = run_olearn("-d", data, "--csoaa_ldf", "mc", "--probabilities",
                              "--loss_function", "logistic", "-p", tmp_path / "p")
    assert code == 0 and "average multiclass log loss" in err
    for group in (tmp_path / "p").read_text().split("\n\n")[:-1]:
        assert abs(sum(map(float, group.split())) - 1) < 1e-5


def test_cache_and_model_reproduce_the_predictions(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(_text(n=50))
    olearn_here("-d", data, "--csoaa_ldf", "m", "-q", "as", "-c", "--passes", "3",
                "--holdout_off", "-f", tmp_path / "m", "--quiet")
    olearn_here("-d", data, "--csoaa_ldf", "m", "-q", "as", "-c", "--passes", "3",
                "--holdout_off", "-f", tmp_path / "m2", "--quiet")  # read from the cache
    assert (tmp_path / "m").read_bytes() == (tmp_path / "m2").read_bytes()
    olearn_here("-d", data, "-t", "-i", tmp_path / "m", "-p", tmp_path / "p1", "--quiet")
    olearn_here("-d", data, "-t", "-i", tmp_path / "m2", "-p", tmp_path / "p2", "--quiet")
    assert (tmp_path / "p1").read_text() == (tmp_path / "p2").read_text()
    assert (tmp_path / "p1").read_text().count("\n\n") == 50


@pytest.mark.parametrize("options, message", [
    ({"csoaa_ldf": "m", "oaa": 3}, "does not take --oaa"),
    ({"csoaa_ldf": "m", "wap_ldf": "m"}, "choose one"),
    ({"ldf_override": "m"}, "needs --csoaa_ldf"),
    ({"csoaa_ldf": "x"}, "must be one of")])
def test_refuses_options_that_do_not_fit(options, message):
    with pytest.raises(OptionError, match=message):
        Config(**options)


def test_svmlight_input_is_refused(tmp_path):
    data = tmp_path / "d.svm"
    data.write_text("1 1:1\n")
    code, _, err = run_olearn("-d", data, "--csoaa_ldf", "m")
    assert code != 0 and "multi-line examples of VW text" in err


def test_an_example_without_a_shared_line_gets_no_features_of_the_one_before():
    """Regression (found bounds-checked by the fuzzer): a shared-only example, then one
    without a shared line."""
    batch = _batch(_learner(csoaa_ldf="m"), "shared |a x\n\n1:0 |b y\n")
    assert len(batch) == 1 and batch.offsets.tolist() == [0, 2]
    assert batch.namespace.tolist() == [ord("b"), 128]


def test_raw_predictions_list_every_class_of_an_action_line(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("1:0 2:1 3:2 't |a x\n4:1 |a y\n\n5 |a z\n")
    olearn_here("-d", data, "--csoaa_ldf", "m", "-r", tmp_path / "r", "--quiet")
    lines = (tmp_path / "r").read_text().splitlines()
    assert [[pair.split(":")[0] for pair in line.split()] for line in lines] == [
        ["1", "2", "3", "t"], ["4"], ["5"]]
    assert len({line.split()[0].split(":")[1] for line in lines[:1]}) == 1
