"""--lrq, --lrqfa and --lrqdropout (olearn/reductions/lrq.py, reductions/lrq_kernels.py): VW's
low-rank quadratic features, against the plain-Python reference and VW 9.11.9's outputs."""
import numpy as np
import pytest
from conftest import readable_body, run_olearn
from examples import kernel_predictions
from reference import lrq_predictions

from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.options.config import Config
from olearn.reductions import lrq

# VW's core tests 78 and 149 read train-sets/0080.dat: its third line has an empty namespace a
VW_0080 = ("1 B/038e|u 71 |a 1 2 |c 1\n2 R/0c56|u 24 |a 3 5 |c 2\n1 R/0c96|u 18 |a |c 8\n"
           "2 R/0c56|u 24 |a 3 5 |c 2\n")
VALUES = ("1 |u 71:0.3 |a 1:0.37 2:1.3 |c 1:0.7\n2 |u 24 |a 3:0.11 5:2.1 |c 2\n"
          "1 |u 18 |a |c 8:0.4\n2 |u 24:0.9 |a 3:0.3 5 |c 2\n")


def _namespaced_examples(seed=5, n=200, bits=8):
    """Random examples whose features carry namespaces 1..3 (each namespace's together),
    some unlabeled or of importance 0."""
    rng = np.random.default_rng(seed)
    examples = []
    for _ in range(n):
        feats = []
        for ns in (1, 2, 3):
            for j in rng.choice(1 << bits, size=rng.integers(0, 4), replace=False).tolist():
                feats.append((j, float(np.float32(rng.normal())), ns))
        label = float(np.float32(rng.normal())) if rng.random() > 0.1 else None
        examples.append((label, float(rng.choice([1.0, 1.0, 0.5, 2.0, 0.0])), feats))
    return examples


@pytest.mark.parametrize("options", [{"lrq": ["\\x01\\x022"]},
                                     {"lrq": ["\\x02\\x033", "\\x01\\x021"]},
                                     {"lrqfa": "\\x01\\x02\\x032"},
                                     {"lrqfa": "\\x01\\x012"}])
def test_low_rank_features_learn_as_the_reference(options):
    examples = _namespaced_examples()
    config = Config(bit_precision=8, **options)
    want = lrq_predictions(examples, lrq.pairs_of(config).tolist(), lrq.width_of(config),
                           int(config.lrqfa is not None), 8, config.eta)
    got = kernel_predictions(examples, config)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_pairs_are_vw_s_sorted_set_and_fields_every_two_in_order():
    config = Config(lrq=["ba2", "ab1", "ab1"])
    assert lrq.pairs_of(config).tolist() == [[97, 98, 1, 0, 0], [98, 97, 2, 0, 0]]
    fields = Config(lrqfa="abc3")
    assert lrq.pairs_of(fields).tolist() == [[97, 98, 3, 0, 1], [97, 99, 3, 0, 2],
                                             [98, 99, 3, 1, 2]]


@pytest.mark.parametrize(("options", "width"), [({"lrq": ["aa3"]}, 4),
                                                ({"lrq": ["ab1", "cd4"]}, 8),
                                                ({"lrqfa": "aa3"}, 8), ({"lrqfa": "abc2"}, 8)])
def test_feature_width_is_vw_s(options, width):
    assert lrq.width_of(Config(**options)) == width


def _run(tmp_path, text, *options):
    data, preds = tmp_path / "d.vw", tmp_path / "p"
    data.write_text(text)
    code, _, err = run_olearn("-d", data, "-p", preds, *options)
    assert code == 0, err
    return [float(line.split()[0]) for line in preds.read_text().splitlines()], err


# VW 9.11.9's average loss, -p, and -p of ``-t -i`` its model, on each data
@pytest.mark.parametrize(("data", "options", "loss", "predictions", "tested"), [
    (VW_0080, ("--lrq", "aa3"), "0.250000", [1, 2, 0, 2], None),
    (VW_0080, ("--lrqfa", "aa3"), "0.902073", [0.303918, 0.468539, 0.117736, 2], None),
    (VALUES, ("--lrq", "aa3"), "0.250000", [1, 2, 0, 2], [2, 2, 0.810679, 2]),
    (VALUES, ("--lrqfa", "aa3"), "0.825050", [0.185311, 0.621022, 0.142736, 2],
     [2, 1.964175, 0.613228, 2]),
    (VALUES, ("--lrq", "ua2", "--lrqdropout"), "1.242465", [0, 0.132470, 0.305600, 2],
     [1.176502, 1.428276, 0.802437, 1.764580]),
    (VALUES, ("--lrqfa", "uac2"), "1.427684", [0, 0.057248, 0.137250, 1.561694],
     [0.948921, 1.470182, 0.884403, 1.381995]),
    (VALUES, ("--lrq", "ua2", "--lrq", "ca1"), "1.316627", [0, 0.088493, 0.217282, 2],
     [1.337547, 1.916187, 0.689215, 2]),
])
def test_predictions_loss_and_saved_model_are_vw_s(tmp_path, data, options, loss, predictions,
                                                   tested):
    model = tmp_path / "m"
    got, err = _run(tmp_path, data, *options, "-f", model)
    assert f"average loss = {loss}" in err
    np.testing.assert_allclose(got, predictions, atol=2e-6)
    if tested is not None:
        again, _ = _run(tmp_path, data, "-t", "-i", model)
        np.testing.assert_allclose(again, tested, atol=2e-6)


# VW 9.11.9's -p over passes: its example counter counts each pass's end as an example
@pytest.mark.parametrize(("options", "predictions"), [
    (("--lrq", "ua2", "--passes", "3"),
     [0, 0.096736, 0.245644, 1.926403, 1.354775, 1.465590, 0.815902, 2, 1.022812, 1.995188,
      0.932872, 2]),
    (("--lrqfa", "uac2", "--passes", "2"),
     [0, 0.057248, 0.137250, 1.561694, 0.948921, 1.474259, 0.901263, 1.982228]),
])
def test_the_sides_alternate_over_passes_as_vw_s(tmp_path, options, predictions):
    got, _ = _run(tmp_path, VALUES, *options, "-c", "--holdout_off")
    np.testing.assert_allclose(got, predictions, atol=2e-6)


def test_readable_model_lists_the_factors_vw_lists(tmp_path):
    """VW 9.11.9's --readable_model of --lrq aa3 on VW_0080: the three linear weights the
    third example moved, and the left factors its learned examples started at their draw."""
    model = tmp_path / "m.txt"
    _run(tmp_path, VW_0080, "--lrq", "aa3", "--readable_model", model)
    body = readable_body(model.read_text())
    assert body == ["60360:0.270226 4.70768 1", "108237:0.538193 0 0", "108238:0.144997 0 0",
                    "108239:0.7518 0 0", "108241:0.965407 0 0", "108242:0.572211 0 0",
                    "108243:0.179015 0 0", "108245:0.392622 0 0", "108246:0.999426 0 0",
                    "108247:0.606229 0 0", "108253:0.247051 0 0", "108254:0.853855 0 0",
                    "108255:0.460658 0 0", "202096:0.270226 4.70768 1",
                    "219548:0.270226 4.70768 1"]


def test_the_header_names_the_pairs(tmp_path):
    _, err = _run(tmp_path, VW_0080, "--lrq", "ac1", "--lrq", "aa3", "--lrqdropout")
    assert "lrq (ac1 aa3)" in err
    assert "creating low rank quadratic features for pairs: (using dropout) aa3 ac1" in err


@pytest.mark.parametrize(("options", "message"), [
    ({"lrq": ["a"]}, "two sets and a rank"), ({"lrq": ["abx"]}, "two sets and a rank"),
    ({"lrq": ["a:2"]}, "wildcards"), ({"lrqfa": "ab:"}, "wildcards"),
    ({"lrqdropout": True}, "needs --lrq"), ({"lrqfa": "ab2", "lrqdropout": True}, "needs --lrq"),
    ({"lrq": ["ab2"], "lrqfa": "ab2"}, "do not go together"),
    ({"lrqfa": "abc2", "nn": 2}, "--nn does not take --lrqfa"),
    ({"lrq": ["ab2"], "quadratic": ["ab"]}, "--lrq does not take --quadratic"),
    ({"lrq": ["ab2"], "oaa": 3}, "--lrq does not take --oaa"),
    ({"lrqfa": "ab2", "invert_hash": "h"}, "--lrqfa does not take --invert_hash"),
    ({"lrq": ["ab2"], "ftrl": True}, "gradient descent"),
    ({"lrq": ["ab9"], "bit_precision": 3}, "needs at least 4 bits"),
])
def test_refused_options(options, message):
    with pytest.raises(OptionError, match=message):
        Config(**options)


@pytest.mark.parametrize("bad", ["namespace", "field", "spans", "counters"])
def test_a_malformed_state_is_refused_before_any_example(bad):
    learner = OnlineLearner(Config(bit_precision=8, lrqfa="ab2"))
    state = learner.reduction
    if bad == "namespace":
        state.pairs[0, lrq.PAIR_B] = 256
    elif bad == "field":
        state.pairs[0, lrq.PAIR_FIELD_A] = -1
    elif bad == "spans":
        state.spans = state.spans[:, :3]
    else:
        state.counters = state.counters[:1]
    with pytest.raises(ValueError, match="reduction"):
        kernel_predictions([(1.0, 1.0, [(1, 1.0, 97), (2, 1.0, 98)])], learner.config, learner)


def test_a_bad_rank_is_a_usage_error(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(VW_0080)
    code, _, err = run_olearn("-d", data, "--lrq", "ab")
    assert code == 2 and "--lrq ab" in err and "Traceback" not in err
