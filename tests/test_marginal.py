"""--marginal (reductions/marginal.py): pairs ``x id`` replaced by the id's marginal, against
the plain-Python reference; --compete's experts, --update_before_learn, model files, the
readable model's marginals, VW's own outputs (oracle) and the options it refuses."""
import math

import numpy as np
import pytest
from conftest import readable_body, run_olearn
from examples import kernel_predictions
from reference import marginal_predictions

from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.options.config import Config
from olearn.reductions.marginal_kernels import hedge_weight

F = ord("f")


def _examples(seed=5, n=300):
    """Examples of a few plain features (namespace 0) then pairs ``x id`` in namespace f:
    ids drawn from a few, now and then a pair of value 2 (dropped) or an odd last feature."""
    rng = np.random.default_rng(seed)
    examples = []
    for _ in range(n):
        plain = rng.choice(np.arange(0, 40), size=rng.integers(0, 3), replace=False)
        feats = [(int(j), float(np.float32(rng.normal())), 0) for j in plain]
        pairs = rng.integers(1, 4)
        xs = rng.choice(np.arange(40, 80), size=pairs, replace=False)
        for x in xs:
            bad = rng.random() < 0.1
            feats += [(int(x), 2.0 if bad else 1.0, F), (int(rng.integers(80, 90)), 1.0, F)]
        if rng.random() < 0.1:
            feats.append((int(rng.integers(90, 100)), 1.0, F))
        label = float(np.float32(rng.random())) if rng.random() > 0.1 else None
        imp = float(rng.choice([1.0, 1.0, 0.5, 2.0, 0.0]))
        examples.append((label, imp, feats))
    return examples


CASES = [{}, {"compete": True}, {"update_before_learn": True},
         {"compete": True, "update_before_learn": True},
         {"decay": 0.01, "unweighted_marginals": True, "initial_numerator": 0.2,
          "initial_denominator": 2.0}]


@pytest.mark.parametrize("options", CASES)
def test_marginal_learns_as_the_reference(options):
    examples = _examples()
    config = Config(bit_precision=8, marginal="f", **options)
    want, sums = marginal_predictions(
        examples, {F}, numerator=config.initial_numerator,
        denominator=config.initial_denominator, decay=config.decay, compete=config.compete,
        before=config.update_before_learn, unweighted=config.unweighted_marginals)
    learner = OnlineLearner(config)
    got = kernel_predictions(examples, config, learner)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
    marginal = learner.reduction
    assert sorted(np.flatnonzero(marginal.seen).tolist()) == sorted(sums)
    for key, (num, den) in sums.items():
        np.testing.assert_allclose(marginal.sums[key], [num, den], rtol=1e-5, atol=1e-6)


def test_a_pair_not_of_values_one_is_dropped_but_its_id_learns_from_zero():
    config = Config(bit_precision=8, marginal="f")
    learner = OnlineLearner(config)
    kernel_predictions([(0.5, 1.0, [(1, 2.0, F), (2, 1.0, F)])], config, learner)
    assert learner.reduction.sums[2].tolist() == [0.5, 1.0]  # from 0/0, not 0.5/1
    assert not learner.weights[1].any()  # x was not in the example the learner saw


def test_hedge_weight_is_adanormalhedge_s():
    r, c = np.float32(0.3), np.float32(0.05)
    assert hedge_weight(r, c) == pytest.approx(2 * 0.3 * math.exp(0.09 / 0.15) / 0.15,
                                               rel=1e-6)
    assert hedge_weight(np.float32(-1.0), c) == 0 and hedge_weight(r, np.float32(0.0)) == 0
    assert hedge_weight(np.float32(np.nan), np.float32(np.nan)) == 0


DATA = ("0.5 |f constant id1 constant2 id5\n1.0 |f constant id2 constant2 id5\n"
        "0.25 |f constant id3 constant2 id6\n0.5 |f constant id4 constant2 id6\n")
OPTIONS = ("--marginal", "f", "--noconstant", "--decay", "0.001")


def _marginal_lines(path):
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("marginals size"))
    end = lines.index(":1")
    return lines[start:end]


def test_a_saved_model_keeps_the_marginals_and_experts(tmp_path):
    data = tmp_path / "m.vw"
    data.write_text(DATA)
    model, first, second = tmp_path / "m.model", tmp_path / "r1.txt", tmp_path / "r2.txt"
    rc, _, err = run_olearn("-d", data, *OPTIONS, "--compete", "--passes", "3", "-c", "-k",
                            "--holdout_off", "-f", model, "--readable_model", first)
    assert rc == 0, err
    rc, _, err = run_olearn("-d", data, "-i", model, "-t", "--compete", "--readable_model",
                            second)
    assert rc == 0, err
    lines = _marginal_lines(first)
    assert lines[0] == "marginals size = 6" and "expert_state size = 6" in lines
    assert _marginal_lines(second) == lines
    assert readable_body(second.read_text()) == readable_body(first.read_text())


def test_marginal_refuses_other_reductions_and_interactions():
    for other in ({"oaa": 3}, {"quadratic": ["ff"]}, {"stage_poly": True}):
        with pytest.raises(OptionError, match="--marginal does not take"):
            Config(marginal="f", **other)
    with pytest.raises(OptionError, match="wildcard"):
        Config(marginal="f:")


def test_its_options_need_marginal_on_the_command_line(tmp_path):
    data = tmp_path / "m.vw"
    data.write_text(DATA)
    rc, _, err = run_olearn("-d", data, "--compete")
    assert rc == 2 and "--compete needs --marginal" in err


@pytest.mark.parametrize("options", [(), ("--compete",), ("--update_before_learn",),
                                     ("--compete", "--update_before_learn")])
def test_predictions_are_vw_s(tmp_path, vw, options):
    data = tmp_path / "m.vw"
    data.write_text(DATA * 3)
    args = ("-d", data, *OPTIONS, *options, "-p")
    rc, _, err = run_olearn(*args, tmp_path / "o.p")
    assert rc == 0, err
    rc, _, err = vw(*args, tmp_path / "v.p")
    assert rc == 0, err
    got, want = (np.loadtxt(tmp_path / name) for name in ("o.p", "v.p"))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_invert_hash_names_the_marginals_as_vw(tmp_path, vw):
    data = tmp_path / "m.vw"
    data.write_text(DATA)
    for run, name in ((run_olearn, "o.txt"), (vw, "v.txt")):
        rc, _, err = run("-d", data, *OPTIONS, "--invert_hash", tmp_path / name)
        assert rc == 0, err
    got, want = (_marginal_lines(tmp_path / name) for name in ("o.txt", "v.txt"))
    assert [line.split(":")[0] for line in got] == [line.split(":")[0] for line in want]
    for o, v in zip(got[1:], want[1:]):
        np.testing.assert_allclose([float(x) for x in o.split(":")[1:]],
                                   [float(x) for x in v.split(":")[1:]], rtol=1e-4)
