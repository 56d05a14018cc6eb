"""--OjaNewton (learners/oja_newton.py) against a plain matrix-algebra reference of VW's
oja_newton.cc (tests/reference.py), against VW itself, and its options and model files."""
import numpy as np
import pytest
from conftest import run_olearn
from examples import kernel_outputs, random_examples
from reference import oja_newton_predictions, oja_sketch_start

from olearn import Learner
from olearn.errors import OptionError
from olearn.learners.oja_newton import fresh_sketch, initial_sketch
from olearn.options.config import Config

# (options, the scale of the feature values): without --normalize, values of 10 drive K
# toward 1e7 within 40 examples, where float32 and float64 part ways (an ill-conditioned K)
CASES = {"defaults": ({}, 1.0),
         "epoch": ({"epoch_size": 4, "sketch_size": 3}, 1.0),
         "unit start": ({"random_init": "false", "epoch_size": 3}, 1.0),
         "plain": ({"normalize": "no", "alpha_inverse": 0.5, "learning_rate_cnt": 0.5}, 0.1)}


def _as_float32(examples, scale=1.0):
    return [(None if y is None else float(np.float32(y)), imp,
             [(j, float(np.float32(x * scale))) for j, x in f]) for y, imp, f in examples]


@pytest.mark.parametrize("case", list(CASES))
def test_kernel_matches_reference(case):
    options, scale = CASES[case]
    examples = _as_float32(random_examples(n=300), scale)
    config = Config(bit_precision=8, oja_newton=True, **options)
    alpha = 1 / config.alpha_inverse if config.alpha_inverse else config.alpha
    want = oja_newton_predictions(examples, fresh_sketch(config), config.epoch_size, alpha,
                                  config.learning_rate_cnt, config.normalize == "true")
    got = kernel_outputs(examples, config)[:, 1]
    # float32 in VW's order against float64 algebra: rounding apart, not algorithms apart
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_random_start_is_vws_draws_orthonormalized():
    sketch = np.zeros((64, 4), dtype=np.float32)
    initial_sketch(sketch, True, True, np.array([5], dtype=np.uint64))
    np.testing.assert_allclose(sketch[:, :3], oja_sketch_start(64, 3, 5), atol=1e-5)
    np.testing.assert_array_equal(sketch[:, 3], np.float32(0.1))


def test_unit_start_is_coordinates_one_to_m():
    sketch = np.zeros((16, 4), dtype=np.float32)
    initial_sketch(sketch, False, False, np.array([0], dtype=np.uint64))
    want = np.zeros((16, 4), dtype=np.float32)
    want[[1, 2, 3], [0, 1, 2]] = 1
    np.testing.assert_array_equal(sketch, want)


def _vw_lines(n: int, seed: int) -> str:
    """VW text: namespace a of numeric features (some repeated), namespace b of categories
    (some empty), a few lines unlabeled or of importance 0 or 2.5."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        a = " ".join(f"f{rng.integers(30)}:{rng.normal():.3f}"
                     for _ in range(rng.integers(1, 6)))
        b = " ".join(f"g{rng.integers(10)}" for _ in range(rng.integers(0, 3)))
        label = f"{rng.normal():.3f}"
        head = rng.choice(["", f"{label} 0", f"{label} 2.5", label, label, label, label])
        lines.append(f"{head} |a {a} |b {b}\n")
    return "".join(lines)


@pytest.mark.parametrize("options", [[], ["--epoch_size", "8", "--sketch_size", "4"],
                                     ["--random_init", "false", "--normalize", "false",
                                      "-q", "ab", "--alpha", "2"]])
def test_raw_predictions_match_vw(vw, tmp_path, options):
    data = tmp_path / "data.vw"
    data.write_text(_vw_lines(300, 11))
    code, _, err = vw("--OjaNewton", "-d", data, "-r", tmp_path / "vw.r", "--quiet", *options)
    assert code == 0, err
    code, _, err = run_olearn("--OjaNewton", "-d", data, "-r", tmp_path / "ol.r", "--quiet",
                              *options)
    assert code == 0, err
    np.testing.assert_allclose(np.loadtxt(tmp_path / "ol.r"), np.loadtxt(tmp_path / "vw.r"),
                               rtol=2e-6, atol=2e-6)


def test_saved_model_continues_as_one_run(tmp_path):
    """An epoch half held at the save (300 = 7·42 + 6) comes back with the model."""
    first, second = tmp_path / "first.vw", tmp_path / "second.vw"
    text = _vw_lines(600, 3).splitlines(keepends=True)
    first.write_text("".join(text[:300]))
    second.write_text("".join(text[300:]))
    options = {"oja_newton": True, "epoch_size": 7, "bit_precision": 10}
    whole = Learner(**options).fit(first).fit(second)
    path = tmp_path / "half.model"
    Learner(**options).fit(first).save(path)
    continued = Learner.load(path).fit(second)
    np.testing.assert_array_equal(continued.predict(first), whole.predict(first))


def test_held_examples_of_a_model_keep_their_room(tmp_path):
    """Three long examples held at the save, short ones after: the buffer must hold both."""
    long, short = tmp_path / "long.vw", tmp_path / "short.vw"
    long.write_text("".join(f"1 |a {' '.join(f'f{k}:{j + 1}' for k in range(20))}\n"
                            for j in range(3)))
    short.write_text("0 |a g\n1 |a h\n" * 5)
    options = {"oja_newton": True, "epoch_size": 4, "bit_precision": 10}
    whole = Learner(**options).fit(long).fit(short)
    path = tmp_path / "held.model"
    Learner(**options).fit(long).save(path)
    continued = Learner.load(path).fit(short)
    np.testing.assert_array_equal(continued.predict(long), whole.predict(long))


def test_options_need_oja_newton():
    with pytest.raises(OptionError, match="--alpha works with --OjaNewton only"):
        Config(stage_poly=True, alpha=0.5, explicit=frozenset({"alpha"}))


@pytest.mark.parametrize("option", [{"oaa": 3}, {"stage_poly": True}, {"nn": 2}])
def test_refuses_the_reductions(option):
    with pytest.raises(OptionError, match="not with --OjaNewton"):
        Config(oja_newton=True, **option)


def test_bad_epoch_size_is_a_usage_error(tmp_path):
    code, _, err = run_olearn("--OjaNewton", "--epoch_size", "0", "-d", tmp_path / "none.vw")
    assert code == 2 and "epoch_size" in err and "Traceback" not in err


def test_corrupt_held_examples_are_refused(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(_vw_lines(5, 1))
    path = tmp_path / "m.model"
    learner = Learner(oja_newton=True, epoch_size=4, bit_precision=10).fit(data)
    family = learner._learner.family
    family.clock[1] = 1  # one example held, its features ending past the held ones
    family.held_offsets[1] = 10 ** 6
    learner.save(path)
    code, _, err = run_olearn("-t", "-i", path, "-d", data)
    assert code != 0 and "oja_held" in err and "Traceback" not in err
