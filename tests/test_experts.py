"""EG±, BOA and SAEW (learners/experts/saew.py) against the dense numpy reference, and end to
end."""
import numpy as np
import pytest
from conftest import readable_body, run_olearn
from examples import kernel_predictions
from reference import experts_predictions
from test_model import _error_line

from olearn.engine.learner import OnlineLearner
from olearn.learners.experts import boa_corners
from olearn.options.config import Config


def _sparse_regression(seed=5, n=400, features=30, d0=4):
    """Labels from a sparse θ* (||θ*||₁ = 1); examples with a few of the features each, some
    unlabeled or weightless, features appearing for the first time throughout."""
    rng = np.random.default_rng(seed)
    theta = np.zeros(features)
    support = rng.choice(features, d0, replace=False)
    theta[support] = rng.normal(size=d0)
    theta /= np.abs(theta).sum()
    examples = []
    for t in range(n):
        pool = min(features, 5 + t // 4)
        idx = rng.choice(pool, size=rng.integers(1, 6), replace=False)
        val = rng.normal(size=len(idx))
        label = float(np.float32(theta[idx] @ val + rng.normal(scale=0.1)))
        if rng.random() < 0.05:
            label = None
        imp = float(rng.choice([1.0, 1.0, 1.0, 0.5, 0.0]))
        examples.append((label, imp, [(int(j), float(np.float32(x))) for j, x in zip(idx, val)]))
    return examples


def _exported(config, examples):
    learner = OnlineLearner(config)
    preds = kernel_predictions(examples, config, learner)
    learner.sync()
    weights = learner.weights[:, 0]
    return preds, {j: float(weights[j]) for j in np.flatnonzero(weights)}


CASES = {
    "boa": ({"boa": True, "radius": 0.5}, {"sub": "boa", "radius": 0.5}),
    "eg": ({"eg": True}, {"sub": "eg"}),
    "saew-boa-average": ({"saew": True, "saew_C": 0.05, "saew_center": "average"},
                         {"sub": "boa", "sessions": True, "C": 0.05}),
    "saew-boa-last": ({"saew": True, "saew_C": 0.05, "saew_center": "last"},
                      {"sub": "boa", "sessions": True, "C": 0.05, "center_last": True}),
    "saew-eg": ({"saew": True, "saew_sub": "eg", "saew_C": 0.05, "saew_d0": 3, "radius": 2.0,
                 "saew_center": "average"},
                {"sub": "eg", "sessions": True, "C": 0.05, "d0": 3, "radius": 2.0}),
    "saew-sgd-last": ({"saew": True, "saew_sub": "sgd", "saew_C": 0.05, "saew_center": "last",
                       "saew_sgd_eta": 0.5, "saew_sgd_l1": 0.1},
                      {"sub": "sgd", "sessions": True, "C": 0.05, "center_last": True,
                       "sgd_eta": 0.5, "sgd_l1": 0.1}),
    "saew-sgd-average": ({"saew": True, "saew_sub": "sgd", "saew_C": 0.05, "saew_d0": 3,
                          "saew_center": "average", "saew_sgd_eta": 2.0, "saew_sgd_l1": 0.3},
                         {"sub": "sgd", "sessions": True, "C": 0.05, "d0": 3, "sgd_eta": 2.0,
                          "sgd_l1": 0.3}),
}


@pytest.mark.parametrize("output", ["iterate", "average", "sparse"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_matches_dense_reference(case, output):
    options, settings = CASES[case]
    examples = _sparse_regression()
    config = Config(bit_precision=8, noconstant=True, saew_output=output, **options)
    got, theta = _exported(config, examples)
    want_theta = {}
    want = experts_predictions(examples, final=want_theta, output=output, **settings)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    keys = sorted(set(theta) | {j for j, v in want_theta.items() if v != 0})
    np.testing.assert_allclose([theta.get(j, 0.0) for j in keys],
                               [want_theta.get(j, 0.0) for j in keys], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("output", ["iterate", "average"])
def test_boa_between_full_steps_matches_dense_reference(output):
    """On examples with a few of 150 features, most steps are lazy (only the touched corners
    step, the others' frozen rates settle on their next touch): the kernel still gives the
    dense reference's predictions and θ."""
    examples = _sparse_regression(seed=8, n=600, features=150)
    config = Config(bit_precision=10, noconstant=True, boa=True, radius=0.5, saew_output=output)
    got, theta = _exported(config, examples)
    want_theta, counts = {}, {}
    want = experts_predictions(examples, final=want_theta, output=output, sub="boa",
                               radius=0.5, counts=counts)
    assert counts["full_steps"] < len(examples) / 4
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    keys = sorted(want_theta)
    np.testing.assert_allclose([theta.get(j, 0.0) for j in keys], [want_theta[j] for j in keys],
                               rtol=1e-6, atol=1e-9)


def test_boa_on_dense_examples_takes_only_full_steps():
    """Every coordinate in every example: each step is dense BOA's."""
    rng = np.random.default_rng(3)
    examples = [(float(rng.normal()), 1.0, [(j, float(rng.normal())) for j in range(6)])
                for _ in range(50)]
    counts = {}
    experts_predictions(examples, sub="boa", counts=counts)
    assert counts["full_steps"] == len(examples)


@pytest.mark.parametrize("case", sorted(CASES))
def test_examples_without_features_before_any_feature_are_learned_as_nothing(case):
    """An empty example leaves every corner as it was (zero gradient), also when no
    coordinate exists yet (the kernels divided by the empty weight sum)."""
    options, settings = CASES[case]
    examples = [(1.0, 1.0, [])] * 3 + _sparse_regression(n=100)
    config = Config(bit_precision=8, noconstant=True, saew_output="average", **options)
    got, theta = _exported(config, examples)
    want_theta = {}
    want = experts_predictions(examples, final=want_theta, output="average", **settings)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    keys = sorted(set(theta) | set(want_theta))
    np.testing.assert_allclose([theta.get(j, 0.0) for j in keys],
                               [want_theta.get(j, 0.0) for j in keys], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("sub", ["boa", "eg", "sgd"])
def test_calibration_matches_dense_reference(sub):
    from reference import calibrated_predictions

    from olearn.learners.experts.family import calibration_grid
    examples = _sparse_regression(n=150)
    sgd = {"sgd_eta": 0.5, "sgd_l1": 0.1} if sub == "sgd" else {}
    config = Config(bit_precision=8, noconstant=True, saew_calibrate=True, saew_sub=sub,
                    saew_grid_d0=2, saew_grid_alpha=1, saew_grid_radius=3, saew_grid_B=1,
                    saew_C=0.05, saew_center="average",
                    **{f"saew_{name}": value for name, value in sgd.items()})
    grid = calibration_grid(config)
    assert grid.shape == (6, 5) and sorted(grid[:, 4]) == [0, 0, 1, 1, 1, 1]
    got = kernel_predictions(examples, config)
    want = calibrated_predictions(examples, grid, sub=sub, C=0.05, **sgd)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_calibration_grid_grows_with_the_blocks():
    """The paper's G_j has k in -j..j: an instance 4^k away from the center joins at |k|."""
    from olearn.learners.experts.family import calibration_grid
    config = Config(saew_calibrate=True, saew_grid_d0=1, saew_grid_alpha=5, saew_grid_radius=1,
                    saew_grid_B=2)
    grid = calibration_grid(config)
    alpha_steps = np.log(grid[:, 1]) / np.log(4)
    b_steps = np.log(grid[:, 3]) / np.log(4)
    np.testing.assert_array_equal(grid[:, 4], np.floor(np.maximum(abs(alpha_steps),
                                                                  abs(b_steps))))
    assert sorted(set(grid[:, 4])) == [0, 1, 2]


@pytest.mark.parametrize("t, j", [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2), (1023, 9), (1024, 10)])
def test_block_of_an_example(t, j):
    from olearn.learners.experts.saew import block
    assert block(t) == j


@pytest.fixture
def halves(tmp_path):
    rng = np.random.default_rng(11)
    lines = []
    for i in range(300):
        x = rng.normal(size=6)
        y = 0.6 * x[0] - 0.3 * x[3] + 0.1 * rng.normal()
        feats = " ".join(f"f{j}:{x[j]:.4f}" for j in range(6) if rng.random() < 0.7)
        lines.append(f"{y:.4f} |a {feats}\n")
    first, second, whole = tmp_path / "a.vw", tmp_path / "b.vw", tmp_path / "all.vw"
    first.write_text("".join(lines[:150]))
    second.write_text("".join(lines[150:]))
    whole.write_text("".join(lines))
    return first, second, whole


LEARNERS = [("--boa",), ("--eg", "--radius", "2"), ("--saew", "--saew_C", "0.05"),
            ("--saew", "--saew_sub", "eg", "--saew_C", "0.05", "--saew_output", "sparse"),
            ("--saew", "--saew_d0", "1", "--saew_regrow", "0.5"),
            ("--saew", "--saew_sub", "sgd", "--saew_C", "0.05", "--saew_sgd_l1", "0.5",
             "--saew_center", "average", "--saew_output", "average"),
            ("--saew_calibrate", "--saew_grid_d0", "2", "--saew_grid_alpha", "1",
             "--saew_grid_B", "1")]


@pytest.mark.parametrize("learner", LEARNERS, ids=" ".join)
def test_continued_training_equals_an_uninterrupted_run(tmp_path, halves, learner):
    first, second, whole = halves
    model = tmp_path / "m.olearn"
    assert run_olearn("--quiet", "-d", whole, "-p", tmp_path / "all.p", *learner)[0] == 0
    assert run_olearn("--quiet", "-d", first, "-f", model, "-p", tmp_path / "a.p", *learner)[0] == 0
    assert run_olearn("--quiet", "-d", second, "-i", model, "-p", tmp_path / "b.p")[0] == 0
    joined = np.concatenate([np.loadtxt(tmp_path / "a.p"), np.loadtxt(tmp_path / "b.p")])
    np.testing.assert_allclose(joined, np.loadtxt(tmp_path / "all.p"), rtol=1e-4, atol=1e-5)


def test_testonly_predicts_with_the_exported_sparse_model(tmp_path, halves):
    import olearn
    _, second, whole = halves
    options = {"saew": True, "saew_C": 0.05, "saew_output": "sparse", "saew_d0": 2,
               "saew_regrow_floor": 0.0}
    learner = olearn.Learner(**options)
    learner.fit(str(whole))
    learner.save(tmp_path / "m.olearn")
    assert 0 < np.count_nonzero(learner._learner.weights[:, 0]) <= 3  # d0 and the constant
    code, _, _ = run_olearn("--quiet", "-t", "-i", tmp_path / "m.olearn", "-d", second,
                            "-p", tmp_path / "t.p")
    assert code == 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "t.p"), learner.predict(str(second)),
                               rtol=1e-5, atol=1e-6)


def test_testonly_predicts_by_the_runs_saew_output(tmp_path, halves):
    _, second, whole = halves
    options = ("--saew", "--saew_C", "0.05", "--saew_d0", "2", "--saew_regrow_floor", "0")
    for output in ("iterate", "sparse"):
        assert run_olearn("--quiet", "-d", whole, "-f", tmp_path / f"{output}.olearn",
                          *options, "--saew_output", output)[0] == 0
    for model, output in (("iterate", "sparse"), ("sparse", "iterate")):
        assert run_olearn("--quiet", "-t", "-i", tmp_path / f"{model}.olearn", "-d", second,
                          "-p", tmp_path / f"{model}-as-{output}.p",
                          "--saew_output", output)[0] == 0
        assert run_olearn("--quiet", "-t", "-i", tmp_path / f"{output}.olearn", "-d", second,
                          "-p", tmp_path / f"{output}.p")[0] == 0
        np.testing.assert_array_equal(np.loadtxt(tmp_path / f"{model}-as-{output}.p"),
                                      np.loadtxt(tmp_path / f"{output}.p"))
    assert not np.array_equal(np.loadtxt(tmp_path / "sparse.p"),
                              np.loadtxt(tmp_path / "iterate.p"))


def _truncated(values, d0, keep=-1, budget=np.inf, floor=0.0):
    from olearn.learners.experts.saew import _truncate
    values = np.array(values)
    out = np.full(len(values) + 2, 7.0)  # past n: left alone
    _truncate(values, out, len(values), d0, keep, budget, floor)
    assert (out[len(values):] == 7.0).all()
    return out[:len(values)].tolist()


def test_truncation_keeps_the_d0_largest():
    assert _truncated([0.5, -0.02, 0.3, 0.01, -0.2], 2) == [0.5, 0, 0.3, 0, 0]


def test_truncation_keeps_the_constant_beyond_d0():
    assert _truncated([0.5, -0.02, 0.3, 0.01, -0.2], 1, keep=3) == [0.5, 0, 0, 0.01, 0]


def test_truncation_keeps_more_than_d0_while_it_would_drop_over_the_budget():
    # dropping 0.01, 0.02 and 0.2 would remove 0.23 > 0.1: only the first two go
    assert _truncated([0.5, -0.02, 0.3, 0.01, -0.2], 1, budget=0.1) == [0.5, 0, 0.3, 0, -0.2]


def test_truncation_keeps_what_stands_above_the_noise_floor():
    # median |value| 0.02: with floor 5, 0.3 and -0.2 stand above 0.1, the rest are noise
    values = [0.5, -0.02, 0.3, 0.01, -0.2, 0.015, 0.012]
    assert _truncated(values, 1, floor=5.0) == [0.5, 0, 0.3, 0, -0.2, 0, 0]
    assert _truncated(values, 1) == [0.5, 0, 0, 0, 0, 0, 0]


def test_truncation_ignores_a_floor_over_a_median_of_zero():
    assert _truncated([0.5, 0.0, 0.3, 0.0, 0.0], 1, floor=5.0) == [0.5, 0, 0, 0, 0]


def _truncated_slowly(values, d0, keep, budget, floor):
    """The truncation by its definition: drop the smallest |values| (the constant ``keep``
    aside) one at a time, while more than d0 are left, the dropped mass stays within the
    budget and (floor > 0, over a median above 0) the magnitude is at most floor times the
    median magnitude."""
    out = list(values)
    others = sorted((abs(v), s) for s, v in enumerate(values) if s != keep)
    level = floor * float(np.median([m for m, _ in others])) if others else 0.0
    dropped = 0.0
    for magnitude, s in others[:max(len(others) - d0, 0)]:
        dropped += magnitude
        if dropped > budget or 0 < level < magnitude:
            break
        out[s] = 0.0
    return out


@pytest.mark.parametrize("seed", range(20))
def test_truncation_matches_its_definition(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    values = rng.normal(size=n) * (rng.random(n) < 0.7)  # zeros: ties at magnitude 0
    d0 = int(rng.integers(0, n + 1))
    keep = int(rng.integers(-1, n))
    budget = float(rng.choice([np.inf, rng.random() * 2]))
    floor = float(rng.choice([0.0, rng.random() * 4]))
    assert _truncated(values, d0, keep, budget, floor) == _truncated_slowly(
        values.tolist(), d0, keep, budget, floor)


@pytest.mark.parametrize("regrow, grows", [(0.75, True), (0.0, False)])
def test_d0_grows_when_a_center_would_drop_too_much(halves, regrow, grows):
    """y = 0.6 x0 - 0.3 x3: with d0 = 1, dropping x3 (mass 0.3) exceeds 0.75 × the radius
    once it is below 0.4, so the centers keep 2 coordinates and d0 becomes 2."""
    import olearn
    from olearn.learners.experts import state
    learner = olearn.Learner(saew=True, saew_d0=1, saew_regrow=regrow, saew_regrow_floor=0.0,
                             noconstant=True)
    learner.fit(str(halves[2]))
    es = learner._learner.family.ew[6]
    assert es[0, state.E_SESSION] >= 4
    assert (es[0, state.E_GROWN] >= 2) == grows


def test_the_sparse_model_keeps_the_constant():
    """y = 0.8 x + 0.05: with d0 = 1 the intercept is the smallest coordinate, kept anyway."""
    from olearn.sklearn import OlearnRegressor
    x = np.random.default_rng(3).normal(size=(400, 1))
    model = OlearnRegressor("--saew --saew_d0 1 --saew_regrow 0 "
                            "--saew_output sparse").fit(x, 0.8 * x[:, 0] + 0.05)
    assert model.coef_[0] == pytest.approx(0.8, abs=0.02)
    assert model.intercept_ == pytest.approx(0.05, abs=0.02)


@pytest.mark.parametrize("args, message", [
    (("--eg", "--boa"), "choose one of --eg, --boa and --saew"),
    (("--saew", "--l1", "1e-6"), "--l1 works with gradient descent, not with --saew"),
    (("--boa", "--stage_poly"), "--stage_poly works with gradient descent, not with --boa"),
    (("--saew", "--radius", "0"), "--radius must be finite and > 0, got 0.0"),
    (("--saew_sub", "sgd"), "--saew_sub needs --saew"),
    (("--boa", "--saew_sub", "sgd"), "--saew_sub needs --saew"),
    (("--eg", "--saew_sub", "eg"), "--saew_sub needs --saew"),
    (("--saew", "--saew_sgd_l1", "0.5"), "--saew_sgd_l1 needs --saew_sub sgd"),
    (("--saew", "--saew_sub", "eg", "--saew_sgd_eta", "2"),
     "--saew_sgd_eta needs --saew_sub sgd"),
    (("--saew", "--saew_sub", "sgd", "--saew_sgd_eta", "0"),
     "--saew_sgd_eta must be finite and > 0, got 0.0"),
    (("--saew", "--saew_sub", "sgd", "--saew_sgd_l1", "-1"),
     "--saew_sgd_l1 must be finite and >= 0, got -1.0"),
    (("--saew", "--saew_sub", "adam"), "argument --saew_sub: invalid choice: 'adam' (choose from "
                                        "'boa', 'eg', 'sgd')"),
])
def test_conflicting_options_are_one_line_errors(halves, args, message):
    assert _error_line(run_olearn("--quiet", "-d", halves[2], *args), 2).startswith(
        f"olearn: error: {message}")


def test_invert_hash_names_theta_with_quantile_loss_and_passes(tmp_path, halves):
    code, _, err = run_olearn("-d", halves[2], "--saew", "--loss_function", "quantile",
                              "--quantile_tau", "0.8", "-c", "--passes", "3",
                              "--invert_hash", tmp_path / "theta.txt")
    assert code == 0, err
    assert "passes used = 3" in err and " h\n" in err
    entries = [line for line in (tmp_path / "theta.txt").read_text().splitlines()
               if line.startswith("a^f")]
    assert sorted(e.split(":")[0] for e in entries) == [f"a^f{j}" for j in range(6)]


def test_boa_stays_in_its_l1_ball(tmp_path, halves):
    assert run_olearn("--quiet", "-d", halves[2], "--boa", "--radius", "0.5",
                      "--readable_model", tmp_path / "r.txt")[0] == 0
    weights = [float(line.split(":")[1])
               for line in readable_body((tmp_path / "r.txt").read_text())]
    assert len(weights) == 7 and 0.2 < sum(abs(w) for w in weights) <= 0.5 + 1e-6


def test_model_refuses_a_different_calibration_grid(tmp_path, halves):
    model = tmp_path / "m.olearn"
    assert run_olearn("--quiet", "-d", halves[0], "--saew_calibrate", "-f", model)[0] == 0
    assert "does not fit these options" in _error_line(
        run_olearn("--quiet", "-d", halves[1], "-i", model, "--saew_grid_d0", "2"))


def test_state_too_large_for_the_address_space_is_a_clear_error(halves):
    assert "use a smaller -b or calibration grid" in _error_line(
        run_olearn("--quiet", "-d", halves[2], "--saew_calibrate", "-b", "22"), 2)


def test_audit_shows_the_theta_each_example_is_predicted_with(halves):
    code, out, err = run_olearn("--quiet", "-d", halves[0], "--boa", "--audit")
    assert code == 0, err
    lines = out.splitlines()
    first, later = lines[1], lines[-1]  # feature lines follow each prediction line
    assert all(entry.rsplit(":", 1)[1] == "0" for entry in first.split("\t")[1:])
    weights = [float(entry.rsplit(":", 1)[1]) for entry in later.split("\t")[1:]]
    assert any(w != 0 for w in weights) and not any("@" in e for e in later.split("\t"))


@pytest.mark.parametrize("seed", range(4))
def test_sgd_projection_onto_the_l1_ball_matches_the_sorting_one(seed):
    from reference import _Instance

    from olearn.learners.experts.l1_sgd import project
    rng = np.random.default_rng(seed)
    n = 50
    inst = _Instance(n, "sgd", 5, 1.0, 1.0)
    inst.center = rng.normal(size=n) * (rng.random(n) < 0.2)
    inst.eps = [0.3, 1.0, 5.0, 1e3][seed]  # the last leaves the values as they are
    values = inst.center + rng.laplace(scale=0.2, size=n)
    got = np.append(values, 9.0)  # past n: left alone
    project(got, inst.center, n, inst.eps)
    assert got[n] == 9.0
    want = inst.projected(values)
    np.testing.assert_allclose(got[:n], want, rtol=1e-12, atol=1e-14)
    assert np.abs(got[:n] - inst.center).sum() <= inst.eps * (1 + 1e-12)


def test_sgd_session_touches_only_the_example_coordinates():
    """Lazy SGD (no session end, C huge): an example changes the state of its own coordinates
    only, so its cost does not grow with the features seen."""
    from olearn.learners.experts import state
    examples = _sparse_regression(n=200)
    config = Config(bit_precision=8, noconstant=True, saew=True, saew_sub="sgd", saew_C=1e9,
                    saew_sgd_l1=1.0)
    learner = OnlineLearner(config)
    kernel_predictions(examples, config, learner)
    slot, coord = learner.family.ew[0], learner.family.ew[5]
    before = coord.copy()
    feats = [(3, 0.5), (7, -1.0)]
    kernel_predictions([(0.4, 1.0, feats)], config, learner)
    changed = np.flatnonzero((coord[0, :state.K_SCRATCH] != before[0, :state.K_SCRATCH])
                             .any(axis=0))
    assert sorted(changed) == sorted(slot[j] for j, _ in feats)


def test_sgd_model_resumes_exactly(tmp_path, halves):
    """A model saved mid-run with --saew_sub sgd continues bit for bit as the run would have."""
    import olearn
    first, second, whole = halves
    options = {"saew": True, "saew_sub": "sgd", "saew_C": 0.05, "saew_sgd_l1": 0.5,
               "saew_center": "average", "saew_output": "sparse"}
    uninterrupted = olearn.Learner(**options)
    uninterrupted.fit(str(first))
    uninterrupted.save(tmp_path / "m.olearn")
    uninterrupted.fit(str(second))
    resumed = olearn.Learner.load(tmp_path / "m.olearn")
    resumed.fit(str(second))
    for a, b in zip(uninterrupted._learner.family.ew, resumed._learner.family.ew):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(uninterrupted.predict(str(whole)), resumed.predict(str(whole)))


def test_sgd_model_keeps_its_subroutine(tmp_path, halves):
    model = tmp_path / "m.olearn"
    assert run_olearn("--quiet", "-d", halves[0], "--saew", "--saew_sub", "sgd",
                      "-f", model)[0] == 0
    code, _, err = run_olearn("-d", halves[1], "-i", model, "--saew_sgd_l1", "0.25")
    assert code == 0 and "saew (sgd, eta 0.1, l1 0.25," in err
    assert "--saew --saew_sub sgd, the command line asks for --saew --saew_sub boa" in _error_line(
        run_olearn("--quiet", "-d", halves[1], "-i", model, "--saew_sub", "boa"))


@pytest.mark.parametrize("option", [["--saew_sub", "sgd"], ["--saew_sgd_eta", "0.5"]])
def test_subroutine_options_are_refused_for_a_gradient_descent_model(tmp_path, halves, option):
    model = tmp_path / "m.olearn"
    assert run_olearn("--quiet", "-d", halves[0], "-f", model)[0] == 0
    assert f"{option[0]} needs --saew" in _error_line(
        run_olearn("--quiet", "-d", halves[1], "-i", model, *option))


def test_sgd_options_are_refused_for_a_model_of_another_subroutine(tmp_path, halves):
    model = tmp_path / "m.olearn"
    assert run_olearn("--quiet", "-d", halves[0], "--saew", "-f", model)[0] == 0
    assert "--saew_sgd_l1 needs --saew_sub sgd" in _error_line(
        run_olearn("--quiet", "-d", halves[1], "-i", model, "--saew_sgd_l1", "0.25"))


def test_vectorized_levels_equal_level_below_and_rate_of():
    rng = np.random.default_rng(5)
    rates = np.concatenate([np.exp(rng.uniform(-800, 20, 5000)),
                            [0.0, np.nan, np.inf, 1e-305, 2.0 ** -1000, 2.0 ** 20, 2.0 ** 25,
                             2.0 ** (3 / 16), np.nextafter(2.0 ** (3 / 16), 0)]])
    corners = np.zeros((boa_corners.ROWS, len(rates)))
    corners[boa_corners.T] = rates
    boa_corners._freeze_all(corners, 0, len(rates))
    levels = [boa_corners.level_below(r) for r in rates]
    assert np.array_equal(corners[boa_corners.LEVEL], levels)
    assert np.array_equal(corners[boa_corners.ETA], [boa_corners.rate_of(k) for k in levels])
