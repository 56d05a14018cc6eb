"""--log_multi: VW's logarithmic-time online multiclass tree (olearn/reductions/log_multi.py,
reductions/log_multi_kernels.py)."""
import math

import numpy as np
import pytest
from conftest import olearn_here, run_olearn
from examples import kernel_outputs
from reference import log_multi_predictions, parse_vw_line
from test_ect import MULTICLASS
from test_vw_oracle import _both, _table_and_summary, assert_same_layout

from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.options.config import Config
from olearn.reductions.log_multi import K_NODES, K_SWAPS, T_INTERNAL, T_LEFT, T_MAX_LABEL, T_RIGHT

BITS = 10


def _class_examples(seed=11, n=400, classes=6):
    """Examples whose class is the largest of ``classes`` linear scores of few features, some
    unlabeled, some weighted."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(classes, 1 << BITS))
    examples = []
    for _ in range(n):
        idx = rng.choice(1 << BITS, size=rng.integers(1, 5), replace=False)
        val = rng.normal(size=len(idx)).astype(np.float32)
        label = float(np.argmax(truth[:, idx] @ val) + 1) if rng.random() > 0.1 else None
        imp = float(rng.choice([1.0, 1.0, 0.5, 2.0]))
        examples.append((label, imp, list(zip(idx.tolist(), val.tolist()))))
    return examples


@pytest.mark.parametrize("resistance", [4, 0])
def test_log_multi_kernel_equals_the_reference_tree(resistance):
    examples = _class_examples()
    config = Config(bit_precision=BITS, log_multi=6, swap_resistance=resistance, quiet=True)
    learner = OnlineLearner(config)
    got = kernel_outputs(examples, config, learner)[:, 0]
    nodes = []
    want = log_multi_predictions(examples, 6, BITS, resistance, tree=nodes)
    np.testing.assert_array_equal(got, want)
    tree = learner.reduction.tree
    assert learner.reduction.counters[K_NODES] == len(nodes) == 11
    assert [bool(t) for t in tree[:, T_INTERNAL]] == [n["internal"] for n in nodes]
    assert list(tree[:, T_MAX_LABEL]) == [n["best"] for n in nodes]
    assert len(set(want)) > 3
    if resistance == 0:
        assert learner.reduction.counters[K_SWAPS] > 0


def test_a_swap_never_makes_a_node_its_own_child():
    """At resistance 0 this stream asks a leaf to take the problem of the swap walk's leaf,
    itself (VW then walks a cycle forever): the node stays a leaf and the tree stays a tree."""
    config = Config(bit_precision=BITS, log_multi=6, swap_resistance=0, quiet=True)
    learner = OnlineLearner(config)
    kernel_outputs(_class_examples(), config, learner)
    tree, used = learner.reduction.tree, learner.reduction.counters[K_NODES]
    reached, todo = set(), [0]
    while todo:
        node = todo.pop()
        assert node not in reached
        reached.add(node)
        if tree[node, T_INTERNAL]:
            todo += [tree[node, T_LEFT], tree[node, T_RIGHT]]
    assert len(reached) == used


def test_a_saved_model_keeps_the_tree(tmp_path):
    """-f keeps the tree and its statistics: -i -t predicts as the reference after the same
    training, and -i goes on learning where the first run stopped."""
    rng = np.random.default_rng(5)
    lines = []
    for _ in range(200):  # the label: the feature of the largest value, modulo 5
        js, xs = rng.choice(30, 3, replace=False), rng.normal(size=3).round(3)
        lines.append(f"{js[np.argmax(xs)] % 5 + 1} |a "
                     + " ".join(f"f{j}:{x:.3f}" for j, x in zip(js, xs)))
    train, test = tmp_path / "train.vw", tmp_path / "test.vw"
    train.write_text("\n".join(lines[:150]) + "\n")
    test.write_text("\n".join(lines[150:]) + "\n")
    model, preds = tmp_path / "m", tmp_path / "p"
    olearn_here("-d", train, "-f", model, "-b", BITS, "--log_multi", 5, "--quiet")
    olearn_here("-d", test, "-i", model, "-t", "-p", preds, "--quiet")
    examples = [(float(y) if i < 150 else None, imp,
                 [(j, float(np.float32(x))) for j, x, _ in feats])
                for i, (y, imp, _, _, feats) in enumerate(parse_vw_line(line.encode(), BITS)
                                                           for line in lines)]
    want = log_multi_predictions(examples, 5, BITS)[150:]
    assert [int(p) for p in preds.read_text().split()] == want
    assert len(set(want)) > 1


def test_a_model_whose_tree_links_outside_is_refused(tmp_path):
    from olearn.persistence import model as model_file
    data, saved = tmp_path / "d.vw", tmp_path / "m"
    data.write_text(MULTICLASS)
    olearn_here("-d", data, "-f", saved, "--log_multi", 10, "--quiet")
    arrays = {}
    original = model_file._arrays

    def corrupt(*args):
        arrays.update(original(*args))
        arrays["log_tree"][0, 4] = 99  # the root's left child
        return arrays
    model_file._arrays = corrupt
    try:
        with pytest.raises(Exception, match="log_multi: a node links outside the tree"):
            olearn_here("-d", data, "-i", saved, "-t", "--quiet")
    finally:
        model_file._arrays = original


def test_a_label_outside_the_classes_is_warned_and_not_learned(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("9 |a x\n2 |a x\n")
    code, _, err = run_olearn("-d", data, "--log_multi", 3)
    assert code == 0 and "d.vw:1: label 9 is not in {1..3}; not learned" in err


@pytest.mark.parametrize(("options", "message"), [
    ({"log_multi": 3, "oaa": 3}, "--log_multi does not take --oaa"),
    ({"log_multi": 3, "ect": 3}, "--ect does not take --log_multi"),
    ({"swap_resistance": 2, "explicit": frozenset({"swap_resistance"})},
     "--swap_resistance needs --log_multi"),
])
def test_log_multi_refuses_what_it_cannot_combine(options, message):
    with pytest.raises(OptionError, match=message):
        Config(**options)


def test_log_multi_learns_with_the_quantile_loss():
    config = Config(log_multi=3, loss_function="squared")
    assert config.loss_function == "quantile" and config.quantile_tau == 0.5


WORDS = "one two three four five six seven eight nine ten".split()
MIXED = "".join(f"{k % 4 + 1} | {w} {WORDS[(3 * k) % 10]}\n" for k, w in enumerate(WORDS))


@pytest.mark.parametrize(("options", "text"), [
    (["--log_multi", "10"], MULTICLASS),  # VW's test 73
    (["--log_multi", "10", "--passes", "2", "-k", "-c"], MULTICLASS),  # VW's test 545
    (["--log_multi", "10"], MULTICLASS * 3 + MIXED * 3),
    (["--log_multi", "4", "--swap_resistance", "0"], MIXED * 6),
])
def test_log_multi_table_and_predictions_match_vw(vw, tmp_path, options, text):
    data = tmp_path / "multiclass"
    data.write_text(text)
    ours, theirs = _both(["-d", data, *options, "-p", tmp_path / "o.p"],
                         ["-d", data, *options, "-p", tmp_path / "v.p"])
    for a, b in zip(_table_and_summary(ours[2]), _table_and_summary(theirs[2]), strict=True):
        assert_same_layout(a, b, "table")
    assert (tmp_path / "o.p").read_text() == (tmp_path / "v.p").read_text()


def test_readable_model_writes_the_tree_as_vw(vw, tmp_path):
    data = tmp_path / "multiclass"
    data.write_text(MULTICLASS * 2 + MIXED)
    ours, theirs = tmp_path / "o.txt", tmp_path / "v.txt"
    _both(["-d", data, "--log_multi", "10", "--readable_model", ours],
          ["-d", data, "--log_multi", "10", "--readable_model", theirs])

    def tree(path):
        lines = path.read_text().splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("Checksum")) + 1
        end = next(i for i, line in enumerate(lines) if line.startswith(":"))
        return lines[start:end]
    got, want = tree(ours), tree(theirs)
    assert len(got) > 20 and len(got) == len(want)
    for ours_line, vws_line in zip(got, want):  # the margins to float32 rounding (6 digits)
        a, b = ours_line.split(), vws_line.split()
        assert [_number(t) is None for t in a] == [_number(t) is None for t in b], ours_line
        for x, y in zip(a, b):
            if _number(x) is None:
                assert x == y, (ours_line, vws_line)
            else:
                assert math.isclose(_number(x), _number(y), rel_tol=1e-4, abs_tol=1e-6), (
                    ours_line, vws_line)


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None
