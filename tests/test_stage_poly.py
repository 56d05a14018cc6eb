"""--stage_poly (APPLE): the kernels against slow references, and whole runs against VW."""
from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest
from conftest import run_olearn
from reference import best_monomials, stage_poly_synthetic
from test_vw_oracle import (
    _both,
    _split_summary,
    _table_and_summary,
    assert_same_layout,
    average_loss,
)

from olearn.features import stage_poly
from olearn.kernel.bundles import Features, Synthetic

BITS = 10
MASK = (1 << BITS) - 1
CONSTANT = 11650396 & MASK


def _random_example(rng, n):
    idx = rng.sample(range(40), n) + [CONSTANT]  # few input features: monomials of them abound
    return [(j, rng.choice([0.5, 1.0, 2.0, -1.5])) for j in idx]


@pytest.mark.parametrize("training", [True, False], ids=["training", "predicting"])
def test_expansion_kernel_matches_reference(training):
    rng = random.Random(5)
    min_depth = np.full(1 << BITS, stage_poly.NEVER, dtype=np.uint8)
    flags = np.zeros(1 << BITS, dtype=np.uint8)
    ref_depth, ref_parents = {}, set()
    origin = np.zeros((1, 2), dtype=np.int64)
    for step in range(200):
        example = _random_example(rng, rng.randint(1, 6))
        if step % 20 == 19:  # new parents, some of them deep monomials
            for j in rng.sample(sorted(ref_depth), min(4, len(ref_depth))):
                ref_parents.add(j)
                flags[j] |= stage_poly.PARENT
        learn = training or step < 100
        want = stage_poly_synthetic(example, CONSTANT, MASK, ref_depth, ref_parents, learn)
        idx = np.array([j for j, _ in example], dtype=np.uint32)
        val = np.array([v for _, v in example], dtype=np.float32)
        out_idx = np.empty(1 << BITS, np.uint32)  # a row per slot, as the kernels size it
        out_val = np.empty(1 << BITS, np.float32)
        n = stage_poly.expand(Features(idx, val, 0, len(idx), np.zeros(len(idx), np.uint8)),
                              CONSTANT, MASK,
                              (min_depth, flags, np.empty(0), np.empty(0), origin), learn,
                              Synthetic(out_idx, out_val, stage_poly.new_stack()), 0)
        assert [(int(j), float(v)) for j, v in zip(out_idx[:n], out_val[:n])] == want
        assert {int(j) for j in np.flatnonzero(flags & stage_poly.PARENT)} == ref_parents
        assert not (flags & stage_poly.CYCLE).any()
    assert max(ref_depth.values()) >= 2  # the walk went below the first level of children


@pytest.mark.parametrize("heuristic", ["weight", "ssm"])
def test_parent_selection_keeps_the_best_scores(heuristic):
    rng = np.random.default_rng(3)
    W = np.zeros((1 << BITS, 4), dtype=np.float32)
    W[:, 0] = rng.normal(size=1 << BITS) * (rng.random(1 << BITS) < 0.5)
    W[:, 2] = rng.random(1 << BITS)
    ssm = np.zeros((1 << BITS, 2))
    ssm[:, 0] = rng.random(1 << BITS)
    ssm[:, 1] = rng.random(1 << BITS) * (rng.random(1 << BITS) < 0.7)
    flags = np.zeros(1 << BITS, dtype=np.uint8)
    already = set(rng.choice(1 << BITS, 10, replace=False).tolist())
    flags[list(already)] = stage_poly.PARENT
    if heuristic == "weight":
        scores = np.abs(W[:, 0] * W[:, 2]).astype(np.float64)
    else:
        scores = np.divide(ssm[:, 0], ssm[:, 1], out=np.zeros(1 << BITS), where=ssm[:, 1] > 0)
    want = best_monomials(scores, 17, already | {CONSTANT}) | already
    min_depth = np.zeros(1 << BITS, dtype=np.uint8)
    added = stage_poly.add_parents(W, flags, ssm, min_depth, CONSTANT, 17,
                                   stage_poly.HEURISTICS[heuristic], True, False)
    assert added == 17
    assert set(np.flatnonzero(flags & stage_poly.PARENT).tolist()) == want


def _fallback_table(seed):
    """A weight table, monomial depths (some never seen) and a few parents already."""
    rng = np.random.default_rng(seed)
    W = np.zeros((1 << BITS, 4), dtype=np.float32)
    W[:, 0] = rng.normal(size=1 << BITS) * (rng.random(1 << BITS) < 0.5)
    W[:, 2] = rng.random(1 << BITS)
    min_depth = rng.choice(np.array([1, 2, 3, stage_poly.NEVER], dtype=np.uint8), 1 << BITS)
    flags = np.zeros(1 << BITS, dtype=np.uint8)
    flags[rng.choice(1 << BITS, 10, replace=False)] = stage_poly.PARENT
    return W, min_depth, flags


def _fallback_reference(W, min_depth, flags, count):
    """count - 1 parents by |w|·N, then the shallowest seen non-parent (best score, then the
    lowest index)."""
    scores = np.abs(W[:, 0] * W[:, 2]).astype(np.float64)
    already = set(np.flatnonzero(flags & stage_poly.PARENT).tolist())
    chosen = best_monomials(scores, count - 1, already | {CONSTANT})
    left = [j for j in range(len(scores)) if j not in already | chosen | {CONSTANT}
            and min_depth[j] != stage_poly.NEVER]
    shallowest = min(left, key=lambda j: (min_depth[j], -scores[j], j))
    return already | chosen | {shallowest}


@pytest.mark.parametrize("seed", range(4))
def test_fallback_adds_the_shallowest_non_parent(seed):
    W, min_depth, flags = _fallback_table(seed)
    want = _fallback_reference(W, min_depth, flags, 17)
    added = stage_poly.add_parents(W, flags, np.zeros((1, 2)), min_depth, CONSTANT, 17, 0, True,
                                   True)
    assert added == 17
    assert set(np.flatnonzero(flags & stage_poly.PARENT).tolist()) == want


def test_fallback_takes_a_monomial_of_zero_weight():
    W, min_depth, flags = _fallback_table(0)
    W[:, 0] = 0.0  # no candidate by weight: only the fallback adds a parent
    shallow = int(np.flatnonzero(min_depth == 1)[0])
    min_depth[shallow] = 0
    flags[shallow] = 0
    assert stage_poly.add_parents(W, flags, np.zeros((1, 2)), min_depth, CONSTANT, 5, 0, True,
                                  True) == 1
    assert flags[shallow] & stage_poly.PARENT


@pytest.mark.parametrize("fallback", [False, True])
def test_a_stage_of_no_parents_adds_none(fallback):
    W, min_depth, flags = _fallback_table(1)
    before = flags.copy()
    assert stage_poly.add_parents(W, flags, np.zeros((1, 2)), min_depth, CONSTANT, 0, 0, True,
                                  fallback) == 0
    assert np.array_equal(flags, before)


def _regression_file(path, n=1000, seed=1):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            a, b, z = (rng.random() for _ in range(3))
            y = 2 * a * b - b + 0.5 * z * z
            f.write(f"{y:.4f} |a x:{a:.3f} y:{b:.3f} |b z:{z:.3f}\n")
    return path


STAGE_OPTIONS = {
    "doubling50": ["--batch_sz", "50"],
    "fixed100_sqrt": ["--batch_sz", "100", "--batch_sz_no_doubling", "--sched_exponent", "0.5"],
    "pass_end": ["--batch_sz", "0", "--passes", "3", "--holdout_off"],
    "holdout_passes": ["--batch_sz", "200", "--passes", "2"],
}


@pytest.mark.parametrize("options", list(STAGE_OPTIONS))
def test_stage_poly_loss_table_and_features_match_vw(vw, tmp_path, options):
    data = _regression_file(tmp_path / "d.vw")

    def args(tool):
        return ["-d", data, "--stage_poly", *STAGE_OPTIONS[options],
                "--cache_file", tmp_path / f"{tool}.cache"]
    ol, ref = _both(args("olearn"), args("vw"))
    ours, theirs = _table_and_summary(ol[2]), _table_and_summary(ref[2])
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_same_layout(a, b, f"line {i + 1}")
    assert int(re.search(r"total feature number = (\d+)", ol[2]).group(1)) > 5 * 4 * 1000


def test_stage_poly_with_hash_collisions_is_close_to_vw(vw, tmp_path):
    # with -b 10 near-tied parent candidates are common; VW's float32 arithmetic and ours
    # (float64 inside an update) can pick different ones (vw-reference.md §7.4)
    data = _regression_file(tmp_path / "d.vw")
    args = ["-d", data, "--stage_poly", "--batch_sz", "20", "-b", "10"]
    ol, ref = _both(args, args)
    assert math.isclose(average_loss(ol[2]), average_loss(ref[2]), rel_tol=0.02)


def test_stage_poly_expands_interactions_too(tmp_path):
    data = _regression_file(tmp_path / "d.vw")
    counts = []
    for extra in ([], ["-q", "ab"]):
        code, _, err = run_olearn("-d", data, "--stage_poly", "--batch_sz", "64", *extra)
        assert code == 0, err
        counts.append(int(re.search(r"total feature number = (\d+)", err).group(1)))
    assert counts[1] > counts[0]


def test_testonly_predictions_equal_the_trained_models(vw, tmp_path):
    import olearn
    data = _regression_file(tmp_path / "d.vw")
    model = tmp_path / "m.olearn"
    assert run_olearn("-d", data, "--stage_poly", "--batch_sz", "50", "-f", model,
                      "--quiet")[0] == 0
    code, _, err = run_olearn("-t", "-i", model, "-d", data, "-p", tmp_path / "t.p")
    assert code == 0, err
    cli = np.loadtxt(tmp_path / "t.p")
    learner = olearn.Learner(stage_poly=True, batch_sz=50).fit(str(data))
    np.testing.assert_allclose(cli, learner.predict(str(data)), atol=2e-6)
    assert np.count_nonzero(cli) == len(cli)
    vw_model = tmp_path / "vw.model"
    _, ref = _both(["-d", data, "--quiet"], ["-d", data, "--stage_poly", "--batch_sz", "50",
                                              "-f", vw_model, "--quiet"])
    _, ref = _both(["-d", data, "--quiet"], ["-t", "-i", vw_model, "-d", data])
    ours, theirs = (_split_summary(_table_and_summary(r))[1] for r in (err, ref[2]))
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_same_layout(a, b, f"summary line {i + 1}")


def test_continued_training_equals_an_uninterrupted_run(tmp_path):
    data = _regression_file(tmp_path / "d.vw")
    lines = data.read_text().splitlines(keepends=True)
    first, second = tmp_path / "a.vw", tmp_path / "b.vw"
    first.write_text("".join(lines[:500]))
    second.write_text("".join(lines[500:]))
    opts = ("--stage_poly", "--batch_sz", "64", "--quiet")
    model = tmp_path / "m.olearn"
    assert run_olearn("-d", data, "-p", tmp_path / "all.p", *opts)[0] == 0
    assert run_olearn("-d", first, "-f", model, "-p", tmp_path / "a.p", *opts)[0] == 0
    assert run_olearn("-d", second, "-i", model, "-p", tmp_path / "b.p", "--quiet")[0] == 0
    joined = (tmp_path / "a.p").read_text() + (tmp_path / "b.p").read_text()
    assert joined == (tmp_path / "all.p").read_text()


def test_invert_hash_names_each_monomial_by_its_features(tmp_path):
    data = _regression_file(tmp_path / "d.vw")
    names = tmp_path / "names.txt"
    assert run_olearn("-d", data, "--stage_poly", "--batch_sz", "50", "--invert_hash", names,
                      "--quiet")[0] == 0
    atoms = {}
    entries = re.findall(r"^([^:\n]+):(\d+):", names.read_text(), re.M)
    for name, index in entries:
        if "*" not in name:
            atoms[name] = int(index)
    entries = [(name, int(index)) for name, index in entries]
    deep = [name for name, _ in entries if name.count("*") >= 2]
    assert deep, "no monomial of degree 3 or more"
    for name, index in entries:
        parts = name.split("*")
        g = atoms[parts[0]]
        for part in parts[1:]:
            g = (atoms[part] ^ (16777619 * g)) & ((1 << 18) - 1)
        assert g == index, name


def test_ssm_heuristic_chooses_other_parents(tmp_path):
    data = _regression_file(tmp_path / "d.vw")
    parents = {}
    for heuristic in ("weight", "ssm"):
        names = tmp_path / f"{heuristic}.txt"
        code, _, err = run_olearn("-d", data, "--stage_poly", "--batch_sz", "50",
                                  "--poly_heuristic", heuristic, "--invert_hash", names)
        assert code == 0, err
        assert f"stage_poly ({heuristic})" in err
        parents[heuristic] = {n for n in re.findall(r"^([^:\n]+):\d+:", names.read_text(), re.M)
                              if n.count("*") >= 2}
    assert parents["weight"] and parents["ssm"] and parents["weight"] != parents["ssm"]


def _parent_depths(path):
    """The depths of a saved model's parent monomials, and its options."""
    from olearn.persistence import model
    saved = model.load(str(path))
    parents = saved.arrays["poly_flags"] & stage_poly.PARENT != 0
    return sorted(saved.arrays["poly_depth"][parents].tolist()), saved.options


@pytest.mark.parametrize("passes", [1, 3])
def test_stages_makes_k_equal_epochs_of_k_minus_1_stages(tmp_path, passes):
    data = _regression_file(tmp_path / "d.vw")
    model = tmp_path / "m.olearn"
    # alpha 0: one parent per stage, so the parents count the stages
    code, _, err = run_olearn("-d", data, "--stage_poly", "--stages", 5, "--sched_exponent", 0,
                              "--passes", passes, "-c", "--holdout_off", "-f", model)
    assert code == 0, err
    depths, options = _parent_depths(model)
    assert len(depths) == 4
    assert options["batch_sz_no_doubling"]
    # the last epoch ends at VW's last example counter: 1000 lines a pass, one more per pass end
    assert options["batch_sz"] == math.ceil((passes * 1001 - 1) / 5)


def test_stages_equals_the_batch_size_it_stands_for(tmp_path):
    data = _regression_file(tmp_path / "d.vw")
    outputs = []
    for schedule in (["--stages", "6"], ["--batch_sz", "167", "--batch_sz_no_doubling"]):
        code, _, err = run_olearn("-d", data, "--stage_poly", *schedule, "-p",
                                  tmp_path / "p", "--quiet")
        assert code == 0, err
        outputs.append((tmp_path / "p").read_text())
    assert outputs[0] == outputs[1]


def test_stages_warns_once(tmp_path):
    data = _regression_file(tmp_path / "d.vw", n=10)
    code, _, err = run_olearn("-d", data, "--stage_poly", "--stages", "2", "-q", "aa", "-q", "aa")
    assert code == 0, err
    assert err.count("duplicate interaction 'aa' removed") == 1


@pytest.mark.parametrize("args, message", [
    (["--stages", "6"], "--stages needs --stage_poly"),
    (["--stage_poly_fallback"], "--stage_poly_fallback needs --stage_poly"),
    (["--stage_poly", "--stages", "6", "--batch_sz", "10"], "not with --batch_sz"),
    (["--stage_poly", "--stages", "6", "--batch_sz_no_doubling"],
     "not with --batch_sz_no_doubling"),
])
def test_stage_options_refused_in_bad_company(tmp_path, args, message):
    data = _regression_file(tmp_path / "d.vw", n=10)
    code, _, err = run_olearn("-d", data, *args)
    assert code != 0 and message in err


def test_stages_refuses_stdin():
    code, _, err = run_olearn("--stage_poly", "--stages", "6", input="1 |a x\n")
    assert code != 0 and "not stdin" in err


def test_fallback_expands_breadth_first_at_alpha_0(tmp_path):
    # one parent per stage, all chosen by the fallback: the 3 input features, then a product
    data = _regression_file(tmp_path / "d.vw")
    model = tmp_path / "m.olearn"
    code, _, err = run_olearn("-d", data, "--stage_poly", "--stage_poly_fallback", "--stages", 5,
                              "--sched_exponent", 0, "-f", model)
    assert code == 0, err
    depths, options = _parent_depths(model)
    assert depths == [0, 0, 0, 1]
    assert options["stage_poly_fallback"]
